//! Phrases found despite OCR noise: stray rule marks (`| Shipper`, `Bill of Lading —`), joined
//! or split words (`BILLOF LADING`, `Bill of Lad ing`) and letter slips (`Bi11 of Lading`).
//!
//! Both the phrase and the text are reduced to a *skeleton*: letters and digits only (spaces and
//! punctuation dropped, which absorbs stray marks and joined or split words), with the glyphs
//! OCR confuses most mapped to one class (`0`/`o`, `1`/`l`/`i`, `5`/`s`, `8`/`b`). The phrase's
//! skeleton is then searched for in the text's with at most `tolerance` edits (Myers'
//! bit-parallel approximate matching: one pass over the text per phrase, whatever the
//! tolerance), so finding a phrase costs about as much as a regex scan.

/// A text reduced for matching: see the module documentation. Besides letters and digits it
/// keeps `#` and reads `°` as `o`: in labels they carry meaning (`invoice #`, `N°`). Input is folded text
/// ([`ironclad_core::fold::fold`]: lower case, no accents).
pub(crate) fn skeleton(folded: &str) -> Vec<u8> {
    folded
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '#' || *c == '°')
        .map(|c| match c {
            // `N°` is `No`; `#` stays itself, so `invoice #` is not every `invoice`.
            '°' => b'o',
            '#' => b'#',
            '0' => b'o',
            '1' | 'i' => b'l',
            '5' => b's',
            '8' => b'b',
            c if c.is_ascii() => c as u8,
            // Letters outside ASCII (after folding: ß, ø, Greek, Cyrillic…) are kept as one
            // class: they still count as characters, so lengths and distances stay honest.
            _ => NON_ASCII,
        })
        .collect()
}

const NON_ASCII: u8 = 0xFF;

/// `skeleton` with each `ln` (`in`, `ln`, `In`) and `rn` as one `m`, the glyph a coarse scan
/// makes of them.
fn merge_m(skeleton: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(skeleton.len());
    let mut i = 0;
    while i < skeleton.len() {
        if matches!(skeleton[i], b'l' | b'r') && skeleton.get(i + 1) == Some(&b'n') {
            out.push(b'm');
            i += 2;
        } else {
            out.push(skeleton[i]);
            i += 1;
        }
    }
    out
}

/// Longest phrase skeleton searched approximately (one machine word of pattern bits).
pub(crate) const MAX_PHRASE: usize = 64;

/// A phrase ready to be searched for in skeletons.
#[derive(Debug, Clone)]
pub(crate) struct Phrase {
    len: usize,
    /// The skeleton's last byte and the one before it (the same when it has one byte).
    ending: [u8; 2],
    /// For each byte, the positions in the phrase where it occurs (bit i = position i).
    positions: Box<[u64; 256]>,
    tolerance: u32,
    /// The phrase as a coarse scan prints it, `in` or `rn` run together into `m`
    /// (`Commercal mvoce`), when that spelling differs: see [`Phrase::label`].
    merged: Option<Box<Phrase>>,
}

impl Phrase {
    /// `None` when the phrase has no letter or digit, or its skeleton is longer than
    /// [`MAX_PHRASE`].
    pub fn new(folded: &str, tolerance: u32) -> Option<Phrase> {
        Phrase::from_skeleton(skeleton(folded), tolerance)
    }

    /// A label: [`Phrase::label_tolerance`] edits, and also found where OCR ran `in` or `rn`
    /// together into one `m` inside a word (`mvoice`, `Commercial lnvoice` on a 1-bit fax), which
    /// costs two edits and so was out of reach of every label shorter than 16 characters. In
    /// that spelling the `m` is one letter, so an `in` lost whole (`voice date`) is one edit.
    pub fn label(folded: &str) -> Option<Phrase> {
        let tolerance = Phrase::label_tolerance(folded);
        let mut phrase = Phrase::new(folded, tolerance)?;
        // Word by word, as the page's words are skeletonized: `b/l no` keeps its `ln`.
        let merged: Vec<u8> = folded
            .split_whitespace()
            .flat_map(|word| merge_m(&skeleton(word)))
            .collect();
        if merged != skeleton(folded) {
            phrase.merged = Phrase::from_skeleton(merged, tolerance).map(Box::new);
        }
        Some(phrase)
    }

    /// The phrase and, for a label, its merged spelling: every way it may be printed.
    pub fn spellings(&self) -> impl Iterator<Item = &Phrase> {
        std::iter::once(self).chain(self.merged.as_deref())
    }

    fn from_skeleton(pattern: Vec<u8>, tolerance: u32) -> Option<Phrase> {
        if pattern.is_empty() || pattern.len() > MAX_PHRASE {
            return None;
        }
        let mut positions = Box::new([0u64; 256]);
        for (i, &b) in pattern.iter().enumerate() {
            positions[usize::from(b)] |= 1 << i;
        }
        Some(Phrase {
            len: pattern.len(),
            // A lost last letter is forgiven, not a lost `#`: it is what tells the phrase apart.
            ending: [
                pattern[pattern.len() - 1],
                if pattern[pattern.len() - 1] == b'#' {
                    b'#'
                } else {
                    pattern[pattern.len().saturating_sub(2)]
                },
            ],
            positions,
            tolerance,
            merged: None,
        })
    }

    /// Edits allowed: none up to 5 characters, then one per 6 (`bill of lading`, 12: two),
    /// at most three — few enough that a title never turns into another word of the trade.
    pub fn title_tolerance(folded: &str) -> u32 {
        let n = skeleton(folded).len();
        u32::try_from((n / 6).min(3)).unwrap_or(3)
    }

    /// Edits allowed in a label: one per 8 characters, at most two. Fewer than a title's: labels
    /// sit among other labels of the trade (`declaration no` must not be found in
    /// `déclaration en douane`).
    pub fn label_tolerance(folded: &str) -> u32 {
        let n = skeleton(folded).len();
        u32::try_from((n / 8).min(2)).unwrap_or(2)
    }

    /// For each position of `text`, the fewest edits that turn the phrase into a part of
    /// `text` ending there.
    fn distances<'t>(&'t self, text: &'t [u8]) -> impl Iterator<Item = u32> + 't {
        // Myers (1999) as formulated by Hyyrö: column j of the edit-distance matrix kept as
        // bit vectors of vertical +1/-1 deltas. The top row is all zero (a match may start
        // anywhere in the text), so no carry enters the horizontal deltas.
        let high = 1u64 << (self.len - 1);
        let (mut pv, mut mv) = (u64::MAX, 0u64);
        let mut score = self.len as u32;
        text.iter().map(move |&b| {
            let eq = self.positions[usize::from(b)];
            let xv = eq | mv;
            let xh = ((eq & pv).wrapping_add(pv) ^ pv) | eq;
            let ph = mv | !(xh | pv);
            let mh = pv & xh;
            if ph & high != 0 {
                score += 1;
            } else if mh & high != 0 {
                score -= 1;
            }
            let (ph, mh) = (ph << 1, mh << 1);
            pv = mh | !(xv | ph);
            mv = ph & xv;
            score
        })
    }

    /// The fewest edits that turn the phrase into some part of `text`.
    pub fn distance_in(&self, text: &[u8]) -> u32 {
        self.distances(text).min().unwrap_or(self.len as u32)
    }

    /// Whether some part of `text` is within the phrase's tolerance.
    pub fn found_in(&self, text: &[u8]) -> bool {
        self.distance_in(text) <= self.tolerance
    }

    /// Letters and digits in the phrase's skeleton.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Where the phrase occurs in `text` within tolerance: for each run of adjacent end
    /// positions within tolerance, the first with the fewest edits, as (end index, edits).
    pub fn occurrences(&self, text: &[u8]) -> Vec<(usize, u32)> {
        let mut found: Vec<(usize, u32)> = Vec::new();
        let mut previous: Option<usize> = None;
        for (end, d) in self.distances(text).enumerate() {
            if d > self.tolerance {
                continue;
            }
            match found.last_mut() {
                Some(last) if previous == Some(end - 1) => {
                    if d < last.1 {
                        *last = (end, d);
                    }
                }
                _ => found.push((end, d)),
            }
            previous = Some(end);
        }
        found
    }

    /// Whether `line` ends with the phrase, within tolerance, followed by at most
    /// [`TRAILING_STRAYS`] characters of the `l` class (what a table rule becomes: `|`, `I`,
    /// `l`). What comes before it is free (`ACME LINES   BILL OF LADING`, a carrier's name); a
    /// line that goes on (`Bill of lading: 1234`, a reference; `Commercial invoice No.`, a
    /// label) does not show the title.
    ///
    /// The line's last letter (before strays) must be the phrase's last or, when OCR lost it,
    /// the one before: otherwise the tolerance would absorb a short word after the title
    /// (`Bill of lading no`).
    pub fn ends_line(&self, line: &[u8]) -> bool {
        let strays = line.iter().rev().take_while(|&&b| b == STRAY).count();
        let from = line.len().saturating_sub(strays.min(TRAILING_STRAYS) + 1);
        self.distances(line)
            .enumerate()
            .skip(from)
            .any(|(end, d)| d <= self.tolerance && self.ends_like(line[end]))
    }

    /// Whether `b` may end a match: the phrase's last letter or, when OCR lost it, the one
    /// before. Without it the tolerance would absorb a short last word (`commercial invoice
    /// no` found in `COMMERCIAL INVOICE`).
    pub fn ends_like(&self, b: u8) -> bool {
        self.ending.contains(&b)
    }
}

/// The skeleton class of `l`, `I`, `1` and `i`: what OCR makes of a table rule beside a word.
pub(crate) const STRAY: u8 = b'l';

/// Characters of the [`STRAY`] class allowed after a title on its line.
const TRAILING_STRAYS: usize = 2;

#[cfg(test)]
mod tests {
    use super::*;
    use ironclad_core::fold::fold_str;
    use proptest::prelude::*;

    fn sk(text: &str) -> Vec<u8> {
        skeleton(&fold_str(text))
    }

    /// The textbook edit distance of `p` to the best substring of `t`, for checking Myers.
    fn naive(p: &[u8], t: &[u8]) -> u32 {
        let mut prev: Vec<u32> = (0..=p.len() as u32).collect();
        let mut best = prev[p.len()];
        for &c in t {
            let mut cur = vec![0u32; p.len() + 1];
            for i in 1..=p.len() {
                let sub = prev[i - 1] + u32::from(p[i - 1] != c);
                cur[i] = sub.min(prev[i] + 1).min(cur[i - 1] + 1);
            }
            best = best.min(cur[p.len()]);
            prev = cur;
        }
        best
    }

    #[test]
    fn stray_marks_spaces_and_confusable_glyphs_vanish() {
        assert_eq!(sk("| Bill of Lading —"), sk("BILLOF LADING"));
        assert_eq!(sk("Bi11 of Lad ing"), sk("bill of lading"));
        assert_eq!(sk("N0. 5"), sk("no. s"));
        assert_eq!(sk("N° de facture"), sk("no de facture"));
        assert_ne!(sk("Invoice #"), sk("Invoice"));
    }

    #[test]
    fn a_phrase_is_found_within_its_tolerance_only() {
        let title = Phrase::new("bill of lading", Phrase::title_tolerance("bill of lading"))
            .expect("phrase");
        assert_eq!(title.len, 12);
        for line in [
            "Bill of Lading —",
            "| BILL OF LADING |",
            "BILLOF LADING",
            "Bill of Lad ing",
            "Bi11 of Lading",
            "Blll ot Ladlng",
            "ill of Ladin",
            "Ocean Network Express Pte. Ltd. BILL OF LADING",
        ] {
            assert!(title.ends_line(&sk(line)), "{line}");
        }
        for line in [
            "Bill of lading: MSCU1234567",
            "Bill of exchange",
            "Packing list",
            "Lading",
            "COMMERCIAL INVOICE No.",
            "Bill of lading no",
        ] {
            assert!(!title.ends_line(&sk(line)), "{line}");
        }
        let exact = Phrase::new("notify party", 0).expect("phrase");
        assert!(exact.found_in(&sk("NOTIFY\nPARTY: ACME")));
        assert!(exact.found_in(&sk("notifyparty")));
        assert!(!exact.found_in(&sk("notify partx")));
    }

    #[test]
    fn occurrences_give_each_match_once_with_its_end() {
        let label = Phrase::new("gross weight", 2).expect("phrase");
        let text = sk("GROSS WEIGHT (KG) | Gr0ss weigth");
        let found = label.occurrences(&text);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0], (10, 0));
        assert_eq!(found[1].1, 1, "`gr0ss weig(h)t` is one edit away");
        assert!(label.occurrences(&sk("net weight")).is_empty());
    }

    #[test]
    fn a_label_is_found_where_in_or_rn_ran_together_into_m() {
        let found = |label: &str, text: &str| {
            let phrase = Phrase::label(&fold_str(label)).expect("label");
            let found = phrase.spellings().any(|p| p.found_in(&sk(text)));
            found
        };
        // A 1-bit fax: `In` became `m` and the `i`s were lost.
        assert!(found("commercial invoice", "Commercal mvoce"));
        assert!(!Phrase::label("commercial invoice")
            .expect("label")
            .found_in(&sk("Commercal mvoce")));
        assert!(found("invoice no", "mvoice No."));
        assert!(found("port of loading", "Port of Loadmg"));
        // The merge stays inside a word, as the page's words are read: `B/L No.` is `bl`+`no`.
        assert!(found("b/l no", "B/L No."));
        assert!(!found("b/l no", "BM0"));
        // The `m` is one edit, so an `in` lost whole is one edit too (fax-02's `voice date`).
        assert!(found("invoice date", "voice date"));
        // It is one spelling more, not a looser tolerance.
        assert!(!found("invoice no", "mvolume No."));
        assert!(!found("invoice date", "due date"));
    }

    #[test]
    fn phrases_without_letters_or_too_long_are_refused() {
        assert!(Phrase::new("— | —", 1).is_none());
        assert!(Phrase::new(&"a".repeat(MAX_PHRASE + 1), 1).is_none());
        assert!(Phrase::new(&"a".repeat(MAX_PHRASE), 1).is_some());
    }

    proptest! {
        #[test]
        fn myers_agrees_with_the_textbook_distance(
            p in "[a-d]{1,64}", t in "[a-d ]{0,80}"
        ) {
            let phrase = Phrase::new(&p, 0).expect("phrase");
            prop_assert_eq!(phrase.distance_in(&sk(&t)), naive(&sk(&p), &sk(&t)));
        }
    }
}
