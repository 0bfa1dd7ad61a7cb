//! The dossiers a chaos run submits, drawn from the generated trade fixtures with a seeded
//! random generator: the same seed gives the same load in the fault-free and the chaos phase.
//!
//! - `clean`: two or three text PDFs of one shipment (their fields agree);
//! - `discrepant`: documents of two shipments (container, invoice and weights disagree);
//! - `scan`: a scanned (image-only) page read by OCR, with a text document of its shipment;
//! - `bad_*`: a truncated PDF, a password-protected PDF, HTML posing as a JPEG — intake must
//!   refuse them with a 4xx and commit nothing.

use ironclad_store::ledger::Expectation;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::Rng;
use std::path::Path;

/// One submission's content.
#[derive(Debug, Clone)]
pub struct Dossier {
    pub kind: &'static str,
    pub expect: Expectation,
    /// (file name, bytes).
    pub files: Vec<(String, Vec<u8>)>,
}

const DOCS: [&str; 4] = [
    "bill-of-lading",
    "commercial-invoice",
    "packing-list",
    "customs-declaration",
];

/// One document of a shipment: its name, its text PDF and its scanned PDF.
type Document = (&'static str, Vec<u8>, Vec<u8>);

/// The fixture files, loaded once.
pub struct Fixtures {
    /// Per shipment set, its four documents.
    sets: Vec<Vec<Document>>,
}

impl Fixtures {
    /// Reads `tests/fixtures/generated/set-*`.
    pub fn load(root: &Path) -> anyhow::Result<Self> {
        let dir = root.join("tests/fixtures/generated");
        let mut sets = Vec::new();
        for n in 1..=6 {
            let set = dir.join(format!("set-{n:02}"));
            let mut docs = Vec::new();
            for doc in DOCS {
                let text = std::fs::read(set.join(format!("{doc}.pdf")))?;
                let scan = std::fs::read(set.join(format!("{doc}.scan.pdf")))?;
                docs.push((doc, text, scan));
            }
            sets.push(docs);
        }
        anyhow::ensure!(!sets.is_empty(), "no fixture sets under {}", dir.display());
        Ok(Self { sets })
    }

    /// The next dossier.
    pub fn draw(&self, rng: &mut StdRng) -> Dossier {
        let roll: f64 = rng.random();
        let set = self.sets.choose(rng).unwrap_or(&self.sets[0]);
        let pick = |rng: &mut StdRng, set: &Vec<Document>, n: usize| {
            let mut docs: Vec<_> = set.iter().collect();
            docs.sort_by_key(|_| rng.random::<u32>());
            docs.truncate(n);
            docs.into_iter()
                .map(|(name, text, _)| (format!("{name}.pdf"), text.clone()))
                .collect::<Vec<_>>()
        };
        if roll < 0.45 {
            let n = rng.random_range(2..=3);
            Dossier {
                kind: "clean",
                expect: Expectation::Decided,
                files: pick(rng, set, n),
            }
        } else if roll < 0.70 {
            let other = self.sets.choose(rng).unwrap_or(&self.sets[0]);
            let mut files = pick(rng, set, 2);
            // A document of another shipment, under a name of its own (names are display only,
            // but the same bytes twice in one request would be refused).
            let extra: Vec<_> = pick(rng, other, 1)
                .into_iter()
                .map(|(name, bytes)| (format!("other-{name}"), bytes))
                .filter(|(_, bytes)| !files.iter().any(|(_, b)| b == bytes))
                .collect();
            files.extend(extra);
            Dossier {
                kind: "discrepant",
                expect: Expectation::Decided,
                files,
            }
        } else if roll < 0.90 {
            let (name, _, scan) = set.choose(rng).unwrap_or(&set[0]);
            let companion = set
                .iter()
                .find(|(other, _, _)| other != name)
                .map(|(other, text, _)| (format!("{other}.pdf"), text.clone()));
            let mut files = vec![(format!("{name}.scan.pdf"), scan.clone())];
            files.extend(companion);
            Dossier {
                kind: "scan",
                expect: Expectation::Decided,
                files,
            }
        } else {
            let (kind, name, bytes) = match rng.random_range(0..3) {
                0 => (
                    "bad_truncated",
                    "invoice.pdf",
                    ironclad_inspect::fixtures::truncated(&set[1].1),
                ),
                1 => (
                    "bad_encrypted",
                    "locked.pdf",
                    ironclad_inspect::fixtures::encrypted_pdf(),
                ),
                _ => (
                    "bad_html",
                    "photo.jpg",
                    ironclad_inspect::fixtures::html_as_jpeg(),
                ),
            };
            Dossier {
                kind,
                expect: Expectation::Refused,
                files: vec![(name.to_owned(), bytes)],
            }
        }
    }
}
