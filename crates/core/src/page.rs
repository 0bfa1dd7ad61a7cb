//! What reading a page produces: its words with positions and confidences, however it was
//! read. OCR, the PDF text layer and an external provider all produce this one shape, so
//! classification and extraction never care where the text came from.

use serde::{Deserialize, Serialize};

/// A rectangle in page-relative coordinates: (0, 0) is the top-left corner, (1, 1) the
/// bottom-right, so boxes survive any rendering resolution.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct BBox {
    /// Left edge, 0..=1.
    pub x0: f32,
    /// Top edge, 0..=1.
    pub y0: f32,
    /// Right edge, 0..=1.
    pub x1: f32,
    /// Bottom edge, 0..=1.
    pub y1: f32,
}

impl BBox {
    /// The smallest box holding both.
    pub fn union(self, other: BBox) -> BBox {
        BBox {
            x0: self.x0.min(other.x0),
            y0: self.y0.min(other.y0),
            x1: self.x1.max(other.x1),
            y1: self.y1.max(other.y1),
        }
    }

    /// Whether the centre of `other` lies inside this box (edges included): where a word
    /// belongs when boxes overlap only in part.
    pub fn contains_centre(self, other: BBox) -> bool {
        let (cx, cy) = ((other.x0 + other.x1) / 2.0, (other.y0 + other.y1) / 2.0);
        (self.x0..=self.x1).contains(&cx) && (self.y0..=self.y1).contains(&cy)
    }

    /// Clamps every edge into 0..=1 and orders the edges.
    pub fn normalized(self) -> BBox {
        let c = |v: f32| {
            if v.is_finite() {
                v.clamp(0.0, 1.0)
            } else {
                0.0
            }
        };
        BBox {
            x0: c(self.x0.min(self.x1)),
            y0: c(self.y0.min(self.y1)),
            x1: c(self.x0.max(self.x1)),
            y1: c(self.y0.max(self.y1)),
        }
    }
}

/// One word on a page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Word {
    /// The word as read.
    pub text: String,
    /// Where it is.
    pub bbox: BBox,
    /// How sure the reader is, 0..=1 (1 for a text layer).
    pub confidence: f32,
    /// Line number on the page (0-based), so lines can be rebuilt in reading order.
    pub line: u32,
}

/// How a page's text was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadMethod {
    /// The PDF's own text layer.
    TextLayer,
    /// Tesseract OCR of the rendered page.
    Ocr,
    /// An external provider.
    Provider,
}

/// One page as read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageText {
    /// 0-based page index within its source.
    pub index: u32,
    /// How it was read.
    pub method: ReadMethod,
    /// Mean word confidence, 0..=1.
    pub confidence: f32,
    /// Rotation applied before reading, in degrees clockwise (0, 90, 180, 270).
    pub rotation: u16,
    /// Width and height of the page as read (after rotation), in PDF points (1/72 inch), when
    /// known: what turns a rectangle given in pixels at some resolution into the page's
    /// normalized coordinates (invoice2data's `area`). An image without a resolution has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_pt: Option<[f32; 2]>,
    /// Words in reading order.
    pub words: Vec<Word>,
    /// The block each line belongs to, indexed by `Word::line`, when the reader grouped its
    /// lines into blocks (poppler does for a text layer; `pdftotext -layout` places columns
    /// block by block). Empty when it did not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub line_blocks: Vec<u32>,
}

impl PageText {
    /// The page's text, one line per `Word::line`, words separated by single spaces.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let mut current: Option<u32> = None;
        for w in &self.words {
            match current {
                Some(l) if l == w.line => out.push(' '),
                Some(_) => out.push('\n'),
                None => {}
            }
            out.push_str(&w.text);
            current = Some(w.line);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(text: &str, line: u32) -> Word {
        Word {
            text: text.into(),
            bbox: BBox::default(),
            confidence: 1.0,
            line,
        }
    }

    #[test]
    fn a_box_holds_what_its_centre_is_in() {
        // Edges that are exact in binary, so the centre on an edge is exactly on it.
        let cell = BBox {
            x0: 0.25,
            y0: 0.25,
            x1: 0.5,
            y1: 0.375,
        };
        let word = |x0: f32, x1: f32| BBox {
            x0,
            y0: 0.25,
            x1,
            y1: 0.375,
        };
        // Half out of the cell, centre in it.
        assert!(cell.contains_centre(word(0.125, 0.625)));
        // On the edge counts.
        assert!(cell.contains_centre(word(0.375, 0.625)));
        assert!(!cell.contains_centre(word(0.375, 0.75)));
        assert!(!cell.contains_centre(BBox {
            y0: 0.375,
            y1: 0.5,
            ..word(0.25, 0.5)
        }));
    }

    #[test]
    fn text_rebuilds_lines() {
        let page = PageText {
            line_blocks: Vec::new(),
            index: 0,
            method: ReadMethod::TextLayer,
            confidence: 1.0,
            rotation: 0,
            size_pt: None,
            words: vec![word("Invoice", 0), word("No.", 0), word("42", 1)],
        };
        assert_eq!(page.text(), "Invoice No.\n42");
    }

    #[test]
    fn boxes_normalize_and_union() {
        let b = BBox {
            x0: 0.9,
            y0: -1.0,
            x1: 0.1,
            y1: f32::NAN,
        }
        .normalized();
        assert_eq!(
            b,
            BBox {
                x0: 0.1,
                y0: 0.0,
                x1: 0.9,
                y1: 0.0
            }
        );
        let u = BBox {
            x0: 0.1,
            y0: 0.1,
            x1: 0.2,
            y1: 0.2,
        }
        .union(BBox {
            x0: 0.15,
            y0: 0.05,
            x1: 0.3,
            y1: 0.15,
        });
        assert_eq!(
            u,
            BBox {
                x0: 0.1,
                y0: 0.05,
                x1: 0.3,
                y1: 0.2
            }
        );
    }
}
