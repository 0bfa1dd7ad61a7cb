//! The seam for page previews the desk shows: one page of a stored file as PNG bytes, turned
//! upright as its reading turned it. The binary injects the reading implementation; the API
//! depends only on this trait.

use ironclad_core::media::MediaType;
use std::path::Path;

/// Why a preview could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PreviewError {
    /// The page does not exist or the file cannot be rendered; asking again will not help.
    #[error("{0}")]
    Unrenderable(String),
    /// The machine failed (a tool could not start, the file could not be read).
    #[error("{0}")]
    Unavailable(String),
}

/// Renders page previews. Blocking: callers run it on the blocking pool.
pub trait PagePreviewer: Send + Sync {
    /// Page `index` (0-based) of the file at `path`, turned clockwise by `rotation` degrees,
    /// as PNG bytes whose longer side is at most `max_side` pixels.
    fn preview(
        &self,
        path: &Path,
        media: MediaType,
        index: u32,
        rotation: u16,
        max_side: u32,
    ) -> Result<Vec<u8>, PreviewError>;
}
