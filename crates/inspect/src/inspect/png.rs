//! PNG: signature, a sane `IHDR`, and a chunk walk that must reach `IEND`.

use super::{check_pixels, slice_at, InspectError, InspectLimits};

/// Largest chunk length the format allows (2^31 − 1).
const MAX_CHUNK_LEN: u32 = 0x7fff_ffff;

/// Checks a PNG (signature already sniffed). Chunk CRCs are verified for `IHDR` only: the
/// header decides the pixel check, while damaged image data is the decoder's concern later.
pub(super) fn check(bytes: &[u8], limits: &InspectLimits) -> Result<(), InspectError> {
    let truncated = || InspectError::unreadable("the PNG file is incomplete (truncated)");
    let mut pos = 8;
    let mut seen_header = false;
    let mut seen_data = false;
    loop {
        let head = slice_at(bytes, pos, 8).ok_or_else(truncated)?;
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
        let kind = [head[4], head[5], head[6], head[7]];
        if len > MAX_CHUNK_LEN || !kind.iter().all(u8::is_ascii_alphabetic) {
            return Err(InspectError::unreadable(
                "the PNG file is corrupt (bad chunk)",
            ));
        }
        // Chunk = length, type, data, CRC.
        let data = slice_at(bytes, pos + 8, len as usize).ok_or_else(truncated)?;
        let crc = slice_at(bytes, pos + 8 + len as usize, 4).ok_or_else(truncated)?;
        match &kind {
            b"IHDR" if !seen_header => {
                check_header(data, crc, limits)?;
                seen_header = true;
            }
            _ if !seen_header => {
                return Err(InspectError::unreadable("the PNG file has no header"));
            }
            b"IHDR" => return Err(InspectError::unreadable("the PNG file has two headers")),
            b"IDAT" => seen_data = true,
            b"IEND" if seen_data => return Ok(()),
            b"IEND" => return Err(InspectError::unreadable("the PNG file has no image data")),
            _ => {}
        }
        pos += 12 + len as usize;
    }
}

fn check_header(data: &[u8], crc: &[u8], limits: &InspectLimits) -> Result<(), InspectError> {
    let corrupt = || InspectError::unreadable("the PNG header is corrupt");
    if data.len() != 13 {
        return Err(corrupt());
    }
    let mut covered = b"IHDR".to_vec();
    covered.extend_from_slice(data);
    if crc32(&covered).to_be_bytes() != crc {
        return Err(corrupt());
    }
    let width = u32::from_be_bytes([data[0], data[1], data[2], data[3]]);
    let height = u32::from_be_bytes([data[4], data[5], data[6], data[7]]);
    let (depth, colour) = (data[8], data[9]);
    let valid_depth = match colour {
        0 => matches!(depth, 1 | 2 | 4 | 8 | 16),
        3 => matches!(depth, 1 | 2 | 4 | 8),
        2 | 4 | 6 => matches!(depth, 8 | 16),
        _ => false,
    };
    if width == 0 || height == 0 || width > MAX_CHUNK_LEN || height > MAX_CHUNK_LEN || !valid_depth
    {
        return Err(corrupt());
    }
    check_pixels(width.into(), height.into(), 1, limits)
}

/// CRC-32 as PNG (and zlib) define it.
pub(crate) fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}
