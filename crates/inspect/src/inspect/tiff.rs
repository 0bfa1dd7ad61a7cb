//! TIFF: a walk of the IFD chain (one IFD per page), in either byte order.

use super::{check_pixels, slice_at, InspectError, InspectLimits};

const IMAGE_WIDTH: u16 = 256;
const IMAGE_LENGTH: u16 = 257;
const STRIP_OFFSETS: u16 = 273;
const STRIP_BYTE_COUNTS: u16 = 279;
const TILE_OFFSETS: u16 = 324;
const TILE_BYTE_COUNTS: u16 = 325;

/// Counts pages, checking each page's size and that its image data lies inside the file
/// (which is how a truncated TIFF shows: its IFDs often come first, the pixels after).
///
/// Loops in the chain are found with Brent's algorithm (a checkpoint offset moved at
/// powers of two), which needs no memory however long the chain.
///
/// The work is bounded by the file, not by what it declares: pages past `limits.max_pages`
/// are only counted (the file is refused anyway), and the strips checked across all pages
/// may not outnumber what the file has room for (see [`StripBudget`]).
pub(super) fn count_pages(bytes: &[u8], limits: &InspectLimits) -> Result<u32, InspectError> {
    let tiff = Tiff {
        bytes,
        little_endian: bytes.first() == Some(&b'I'),
    };
    let mut offset = tiff.u32_at(4).ok_or_else(truncated)?;
    if offset == 0 {
        return Err(InspectError::unreadable("the TIFF file has no pages"));
    }
    let mut budget = StripBudget::for_file(bytes);
    let (mut pages, mut checkpoint, mut power, mut steps) = (0u32, 0u32, 1u64, 0u64);
    while offset != 0 {
        if offset == checkpoint {
            return Err(InspectError::unreadable(
                "the TIFF file is corrupt (its page list loops)",
            ));
        }
        pages = pages
            .checked_add(1)
            .ok_or_else(|| InspectError::unreadable("the TIFF file is corrupt"))?;
        let next = if pages <= limits.max_pages {
            tiff.page(offset, pages, limits, &mut budget)?
        } else {
            tiff.next_page(offset)?
        };
        steps += 1;
        if steps == power {
            checkpoint = offset;
            power = power.saturating_mul(2);
        }
        offset = next;
    }
    Ok(pages)
}

/// How many strip (or tile) entries may still be checked. Each page's entries take at least
/// four bytes of their own (an offset and a size of two bytes or more; one or two strips sit
/// in the 24 bytes of their two IFD entries), so pages that do not share strip tables never
/// need more than a quarter of the file. Pages pointing at one shared table would otherwise
/// have it re-read once per page: 500 pages over a 3-million-entry table is 1.5·10⁹ reads.
struct StripBudget(u64);

impl StripBudget {
    fn for_file(bytes: &[u8]) -> Self {
        Self(bytes.len() as u64 / 4)
    }

    fn spend(&mut self, entries: u32) -> Result<(), InspectError> {
        self.0 = self.0.checked_sub(u64::from(entries)).ok_or_else(|| {
            InspectError::unreadable("the TIFF file is corrupt (its pages share strip tables)")
        })?;
        Ok(())
    }
}

fn truncated() -> InspectError {
    InspectError::unreadable("the TIFF file is incomplete (truncated)")
}

fn corrupt() -> InspectError {
    InspectError::unreadable("the TIFF file is corrupt")
}

struct Tiff<'a> {
    bytes: &'a [u8],
    little_endian: bool,
}

/// One IFD entry whose values may be read by index.
#[derive(Clone, Copy)]
struct Field {
    kind: u16,
    count: u32,
    /// Where the values start: inside the entry if they fit in 4 bytes, else at an offset.
    at: usize,
}

impl Tiff<'_> {
    fn u16_at(&self, at: usize) -> Option<u16> {
        let b = slice_at(self.bytes, at, 2)?;
        let b = [b[0], b[1]];
        Some(if self.little_endian {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        })
    }

    fn u32_at(&self, at: usize) -> Option<u32> {
        let b = slice_at(self.bytes, at, 4)?;
        let b = [b[0], b[1], b[2], b[3]];
        Some(if self.little_endian {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        })
    }

    /// The offset of the IFD after the one at `offset`, without checking this one's page.
    fn next_page(&self, offset: u32) -> Result<u32, InspectError> {
        self.ifd(offset).map(|(_, next)| next)
    }

    /// The entry count of the IFD at `offset` and the offset of the next IFD.
    fn ifd(&self, offset: u32) -> Result<(u16, u32), InspectError> {
        let at = offset as usize;
        if at < 8 {
            return Err(corrupt());
        }
        let entries = self.u16_at(at).ok_or_else(truncated)?;
        if entries == 0 {
            return Err(corrupt());
        }
        let next_at = at + 2 + usize::from(entries) * 12;
        let next = self.u32_at(next_at).ok_or_else(truncated)?;
        Ok((entries, next))
    }

    /// Checks the IFD at `offset` (page number `page`) and returns the next IFD's offset.
    fn page(
        &self,
        offset: u32,
        page: u32,
        limits: &InspectLimits,
        budget: &mut StripBudget,
    ) -> Result<u32, InspectError> {
        let at = offset as usize;
        let (entries, next) = self.ifd(offset)?;

        let (mut width, mut height) = (None, None);
        let (mut strips, mut strip_sizes, mut tiles, mut tile_sizes) = (None, None, None, None);
        for i in 0..usize::from(entries) {
            let entry = at + 2 + i * 12;
            let field = self.field(entry)?;
            match self.u16_at(entry).ok_or_else(truncated)? {
                IMAGE_WIDTH => width = Some(self.value(field, 0)?),
                IMAGE_LENGTH => height = Some(self.value(field, 0)?),
                STRIP_OFFSETS => strips = Some(field),
                STRIP_BYTE_COUNTS => strip_sizes = Some(field),
                TILE_OFFSETS => tiles = Some(field),
                TILE_BYTE_COUNTS => tile_sizes = Some(field),
                _ => {}
            }
        }
        let (Some(width), Some(height)) = (width, height) else {
            return Err(InspectError::unreadable(format!(
                "page {page} of the TIFF file does not declare its size"
            )));
        };
        if width == 0 || height == 0 {
            return Err(corrupt());
        }
        check_pixels(width.into(), height.into(), page, limits)?;
        let (offsets, sizes) = match (strips, strip_sizes, tiles, tile_sizes) {
            (Some(o), Some(s), _, _) | (None, None, Some(o), Some(s)) => (o, s),
            _ => {
                return Err(InspectError::unreadable(format!(
                    "page {page} of the TIFF file has no image data"
                )))
            }
        };
        if offsets.count != sizes.count || offsets.count == 0 {
            return Err(corrupt());
        }
        budget.spend(offsets.count)?;
        // Both arrays were bounds-checked in `field`, so this loop is bounded by the file.
        for k in 0..offsets.count {
            let start = u64::from(self.value(offsets, k)?);
            let len = u64::from(self.value(sizes, k)?);
            if start + len > self.bytes.len() as u64 {
                return Err(InspectError::unreadable(format!(
                    "page {page} of the TIFF file is cut off (truncated)"
                )));
            }
        }
        Ok(next)
    }

    /// Reads an entry's type and count and locates its values, checking they are in the file
    /// (for every known type: data cut off at the end of a file is how truncation shows when
    /// the IFDs come last).
    fn field(&self, entry: usize) -> Result<Field, InspectError> {
        let kind = self.u16_at(entry + 2).ok_or_else(truncated)?;
        let count = self.u32_at(entry + 4).ok_or_else(truncated)?;
        let size: u64 = match kind {
            1 | 2 | 6 | 7 => 1,   // BYTE, ASCII, SBYTE, UNDEFINED
            3 | 8 => 2,           // SHORT, SSHORT
            4 | 9 | 11 | 13 => 4, // LONG, SLONG, FLOAT, IFD
            5 | 10 | 12 => 8,     // RATIONAL, SRATIONAL, DOUBLE
            // Readers must skip unknown types; their bytes cannot be located.
            _ => return Ok(Field { kind, count, at: 0 }),
        };
        let total = u64::from(count) * size;
        let at = if total <= 4 {
            entry + 8
        } else {
            self.u32_at(entry + 8).ok_or_else(truncated)? as usize
        };
        if at as u64 + total > self.bytes.len() as u64 {
            return Err(truncated());
        }
        Ok(Field { kind, count, at })
    }

    /// The `k`-th value of a SHORT or LONG field.
    fn value(&self, field: Field, k: u32) -> Result<u32, InspectError> {
        if k >= field.count {
            return Err(corrupt());
        }
        let k = k as usize;
        match field.kind {
            3 => self.u16_at(field.at + 2 * k).map(u32::from),
            4 => self.u32_at(field.at + 4 * k),
            _ => None,
        }
        .ok_or_else(corrupt)
    }
}
