//! The seam for reading one region of a stored page again: a reviewer draws a box on a page
//! image and Ironclad reads what is printed there (the second look's crop reader), showing it
//! before anything is saved. The binary injects the reading implementation; the API depends
//! only on this trait.

use ironclad_core::media::MediaType;
use ironclad_core::page::{BBox, Word};
use std::path::Path;

/// One region of a page to read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Region {
    /// The page, 0-based, of a file of `page_count` pages.
    pub page: u32,
    /// Pages in the file.
    pub page_count: u32,
    /// How the page's reading turned it (degrees clockwise); `bbox` is on the upright page.
    pub rotation: u16,
    /// Where, in page fractions.
    pub bbox: BBox,
    /// The height of one line of text there, in page heights: what the crop is scaled by.
    pub line_height: f32,
}

/// Why a region could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RegionError {
    /// The file or page cannot be read; asking again will not help.
    #[error("{0}")]
    Unreadable(String),
    /// The machine failed (a tool could not start, the reader is busy past its deadline).
    #[error("{0}")]
    Unavailable(String),
}

/// Reads regions of stored pages. Blocking: callers run it on the blocking pool.
pub trait RegionReader: Send + Sync {
    /// The words printed in `region` of the file at `path`, boxes on the upright page.
    fn read_region(
        &self,
        path: &Path,
        media: MediaType,
        region: &Region,
    ) -> Result<Vec<Word>, RegionError>;
}
