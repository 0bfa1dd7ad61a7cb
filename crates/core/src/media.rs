//! Media types Ironclad accepts, always decided from the bytes, never from a filename.

use crate::spelled_enum;

spelled_enum! {
    /// An accepted document format.
    pub enum MediaType: "media type" {
        /// PDF, text layer or scanned.
        Pdf = "application/pdf",
        /// PNG image.
        Png = "image/png",
        /// JPEG image.
        Jpeg = "image/jpeg",
        /// TIFF image, possibly several pages.
        Tiff = "image/tiff",
    }
}
