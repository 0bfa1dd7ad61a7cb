//! JPEG: a segment walk from `SOI` through the frame header and scans to `EOI`.

use super::{check_pixels, slice_at, InspectError, InspectLimits};

/// Checks a JPEG (SOI already sniffed). Only trailing zero bytes may follow `EOI`: some
/// scanners pad files, but anything else after the image means a damaged or disguised file.
pub(super) fn check(bytes: &[u8], limits: &InspectLimits) -> Result<(), InspectError> {
    let truncated = || InspectError::unreadable("the JPEG file is incomplete (truncated)");
    let corrupt = || InspectError::unreadable("the JPEG file is corrupt");
    let mut pos = 2;
    let mut frame = false;
    let mut scanned = false;
    loop {
        match bytes.get(pos) {
            Some(0xff) => {}
            Some(_) => return Err(corrupt()),
            None => return Err(truncated()),
        }
        // A marker may be preceded by any number of 0xFF fill bytes.
        while bytes.get(pos) == Some(&0xff) {
            pos += 1;
        }
        let marker = *bytes.get(pos).ok_or_else(truncated)?;
        pos += 1;
        match marker {
            0xd9 if frame && scanned => {
                return if bytes[pos..].iter().all(|&b| b == 0) {
                    Ok(())
                } else {
                    Err(InspectError::unreadable(
                        "the JPEG file has unexpected data after the image",
                    ))
                };
            }
            0xd9 => return Err(InspectError::unreadable("the JPEG file has no image data")),
            // Markers without a length field.
            0x01 | 0xd0..=0xd7 => continue,
            0x00 | 0xd8 => return Err(corrupt()),
            _ => {}
        }
        let len = slice_at(bytes, pos, 2).ok_or_else(truncated)?;
        let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
        if len < 2 {
            return Err(corrupt());
        }
        let data = slice_at(bytes, pos + 2, len - 2).ok_or_else(truncated)?;
        pos += len;
        if is_frame_header(marker) {
            if frame || data.len() < 6 {
                return Err(corrupt());
            }
            let height = u16::from_be_bytes([data[1], data[2]]);
            let width = u16::from_be_bytes([data[3], data[4]]);
            if width == 0 || height == 0 {
                return Err(InspectError::unreadable(
                    "the JPEG file does not declare its size",
                ));
            }
            check_pixels(width.into(), height.into(), 1, limits)?;
            frame = true;
        } else if marker == 0xda {
            if !frame {
                return Err(corrupt());
            }
            scanned = true;
            pos = skip_entropy_coded(bytes, pos).ok_or_else(truncated)?;
        }
    }
}

/// SOF0–SOF15, except DHT (C4), JPG (C8) and DAC (CC), which share the range.
fn is_frame_header(marker: u8) -> bool {
    matches!(marker, 0xc0..=0xcf) && !matches!(marker, 0xc4 | 0xc8 | 0xcc)
}

/// Skips a scan's entropy-coded data: returns the offset of the next real marker. Inside the
/// data, 0xFF is followed by 0x00 (a stuffed byte) or a restart marker.
fn skip_entropy_coded(bytes: &[u8], mut pos: usize) -> Option<usize> {
    loop {
        pos += memchr::memchr(0xff, bytes.get(pos..)?)?;
        match *bytes.get(pos + 1)? {
            0x00 | 0xd0..=0xd7 => pos += 2,
            0xff => pos += 1,
            _ => return Some(pos),
        }
    }
}
