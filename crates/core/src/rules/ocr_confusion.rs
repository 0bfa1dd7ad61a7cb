//! Differences OCR can explain: two readings of one identifier that differ only where OCR
//! confuses characters (`1NV-2026740` for `INV-2026740`).
//!
//! Tesseract misreads a handful of glyphs that share their strokes: vertical bars (`I 1 l |
//! i ! L`), rounds (`O 0 D Q o`), `S 5`, `B 8`, `Z 2` and `G 6`. When two documents' values
//! differ only by such swaps and OCR read at least one of them, the difference says more about
//! the scan than about the shipment: the rules ask a person instead of blocking (DESIGN §2,
//! "a difference that OCR could explain asks a person").
//!
//! Deliberately narrow. The texts are compared as the rules compare identifiers (case, spaces
//! and punctuation dropped), position by position, so a character OCR dropped or added is *not*
//! explained: `INV-12` against `INV-112` is as likely a different invoice as a misreading, and
//! a reading cut short already has its own rule ([`super::compare`]). The one exception is a
//! bar-like mark (`|`, `!`): the rules drop it as punctuation, but OCR prints it for a stroke
//! (`|NV-2026740`), so a second comparison keeps it in place of the letter it stands for.
//! Every class holds exactly one digit, so two all-digit numbers are never explained.
//!
//! Two gaps beyond the classes, both only where OCR read one of the values
//! (`checks::cross::unless_misread`): an identifier that is the other's start or end with two
//! or more characters lost ([`cut_short_identifier`]: a stamp over the rest), and identifiers
//! one digit apart where OCR read one of them with less than [`UNSURE_DIGIT_CONFIDENCE`]
//! ([`one_digit_apart`]: a fax's `6` for `5`). A sure reading one digit off still blocks.

use crate::page::ReadMethod;

/// What the rules say when a contradiction is one OCR could have caused.
pub(crate) const OCR_CONFUSION: &str = "readings differ only where OCR confuses characters";

/// The confusion classes as the README lists them, each member a glyph OCR reads for another
/// (upper and lower case where both occur): what tests build misreadings from.
#[cfg(test)]
pub(crate) const CLASSES: [&str; 6] = ["I1l|i!L", "O0DQo", "S5s", "B8", "Z2z", "G6"];

/// Whether a value read this way may hold OCR's confusions: read by Tesseract, or by a
/// provider (which reads OCR text too). A text layer, or a value a person entered (`None`),
/// is taken as written.
pub(crate) fn read_by_ocr(method: Option<ReadMethod>) -> bool {
    matches!(method, Some(ReadMethod::Ocr | ReadMethod::Provider))
}

/// Whether identifiers `a` and `b` differ once case, spaces and punctuation are dropped, and
/// differ only where OCR confuses characters: the same length, and every differing position a
/// pair of one class (see the module doc).
pub(crate) fn only_confusions(a: &str, b: &str) -> bool {
    let differ = !key(a, false).eq(key(b, false));
    differ && (classes(a, false).eq(classes(b, false)) || classes(a, true).eq(classes(b, true)))
}

/// The identifier as the rules compare it: letters and digits, lower-cased; with `bars`,
/// also the bar-like marks OCR prints for a stroke.
fn key(s: &str, bars: bool) -> impl Iterator<Item = char> + '_ {
    s.chars()
        .filter(move |c| c.is_alphanumeric() || (bars && is_bar(*c)))
        .flat_map(char::to_lowercase)
}

/// [`key`], each character replaced by its confusion class's first member.
fn classes(s: &str, bars: bool) -> impl Iterator<Item = char> + '_ {
    key(s, bars).map(class)
}

fn is_bar(c: char) -> bool {
    matches!(c, '|' | '!')
}

/// The class of a lower-cased character (upper case is already folded: `L` is `l`).
fn class(c: char) -> char {
    match c {
        'i' | '1' | 'l' | '|' | '!' => 'i',
        'o' | '0' | 'd' | 'q' => 'o',
        's' | '5' => 's',
        'b' | '8' => 'b',
        'z' | '2' => 'z',
        'g' | '6' => 'g',
        other => other,
    }
}

/// Whether the digits of one number as printed are a cut-off start or end of the other's, at
/// most [`CUT_SHORT_SHARE`] of them: `USD 42` read where `USD 42,444.36` is printed (a stamp
/// over the rest), `94,80` for `94.805,17`. Separators and currency do not count. A number
/// with nearly all the other's digits (`1,000.00` against `100.00`) is a different amount.
pub(crate) fn cut_short_digits(a: &str, b: &str) -> bool {
    let digits = |s: &str| -> Vec<char> { s.chars().filter(char::is_ascii_digit).collect() };
    let (a, b) = (digits(a), digits(b));
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    !short.is_empty()
        && short.len() < long.len()
        && (short.len() as f64) <= CUT_SHORT_SHARE * long.len() as f64
        && (long.starts_with(&short) || long.ends_with(&short))
}

/// Largest share of the other number's digits a cut-off number keeps.
const CUT_SHORT_SHARE: f64 = 0.7;

/// Whether identifier `a` or `b`, once case, spaces and punctuation are dropped, is a strict
/// start or end of the other, [`CUT_SHORT_LOST`] characters or more shorter: `CLE/2024/7`
/// where `CLE/2024/7505` is printed and a stamp covers `505`. Used only where OCR read one of
/// them (a text layer does not lose the end of a value); the rules' own truncation test,
/// which holds for any reading, asks for a shorter cut (see `compare::truncated`).
pub(crate) fn cut_short_identifier(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (key(a, false).collect(), key(b, false).collect());
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    !short.is_empty()
        && short.len() + CUT_SHORT_LOST <= long.len()
        && (long.starts_with(&short) || long.ends_with(&short))
}

/// The fewest characters an OCR reading must have lost to be taken as cut short: one missing
/// character (`DPI-2404-11` for `DPI-2404-118`) is as likely another identifier.
const CUT_SHORT_LOST: usize = 2;

/// What the rules say when two identifiers differ in one digit that OCR read unsure.
pub(crate) const UNSURE_DIGIT: &str = "readings differ in one digit, read by OCR unsure of it";

/// Below this confidence, OCR's reading of an identifier may hold one wrong digit: coarse
/// fax print turns `5` into `6` and `3` into `8`, which are no confusions OCR makes on clean
/// pages (see [`only_confusions`]). Values this unsure are still above the policy's floor.
pub(crate) const UNSURE_DIGIT_CONFIDENCE: f64 = 0.8;

/// Whether identifiers `a` and `b`, once case, spaces and punctuation are dropped, have the
/// same length and differ in exactly one place, a digit on both sides (`INV2662755` against
/// `INV2562755`).
pub(crate) fn one_digit_apart(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (key(a, false).collect(), key(b, false).collect());
    if a.len() != b.len() {
        return false;
    }
    let mut differ = a.iter().zip(&b).filter(|(x, y)| x != y);
    matches!(
        (differ.next(), differ.next()),
        (Some((x, y)), None) if x.is_ascii_digit() && y.is_ascii_digit()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_identifier_cut_short_by_ocr_is_told_from_another() {
        assert!(cut_short_identifier("CLE/2024/7", "CLE/2024/7505"));
        assert!(cut_short_identifier("SBE/2024/3511", "SBE/2024/"));
        assert!(cut_short_identifier("2404-118", "DPI-2404-118"));
        // One character lost is as likely another identifier.
        assert!(!cut_short_identifier("DPI-2404-11", "DPI-2404-118"));
        // Neither a start nor an end of the other.
        assert!(!cut_short_identifier("INV-12", "INV-1125"));
        assert!(!cut_short_identifier("", "INV-1125"));
        assert!(!cut_short_identifier("INV-1125", "INV-1125"));
    }

    #[test]
    fn one_digit_apart_is_one_digit_for_another_digit() {
        assert!(one_digit_apart("INV2662755", "INV2562755"));
        assert!(one_digit_apart("inv-2662755", "INV 2562755"));
        // Two digits, a letter, or a length apart: not this.
        assert!(!one_digit_apart("SBE-25-4387", "SBE-25-2380"));
        assert!(!one_digit_apart("INVA562755", "INV2562755"));
        assert!(!one_digit_apart("INV256275", "INV2562755"));
        assert!(!one_digit_apart("INV2562755", "INV2562755"));
    }

    #[test]
    fn a_number_cut_short_is_told_from_another_amount() {
        assert!(cut_short_digits("USD 42", "USD 42,444.36"));
        assert!(cut_short_digits("94.805,17", "GBP 94,80"));
        assert!(cut_short_digits("44.36", "42,444.36"));
        // Nearly every digit: another amount, not a cut.
        assert!(!cut_short_digits("100.00", "1,000.00"));
        assert!(!cut_short_digits("39,904.00", "39,004.00"));
        assert!(!cut_short_digits("", "12"));
    }

    #[test]
    fn the_issue_s_misreading_is_explained() {
        assert!(only_confusions("1NV-2026740", "INV-2026740"));
        assert!(only_confusions("INV-2026740", "lNV 2O26740"));
        assert!(only_confusions("|NV-2026740", "INV-2026740"));
        assert!(only_confusions("!NV-2026740", "inv2026740"));
        assert!(only_confusions("MSCU1234566", "M5CU1234566"));
        assert!(only_confusions("DPI-2404-118", "OPl-24O4-ll8"));
        assert!(only_confusions("BZG-1", "8 2 6 - I"));
    }

    #[test]
    fn each_class_and_only_within_it() {
        for (n, class) in CLASSES.iter().enumerate() {
            for x in class.chars() {
                for y in class.chars() {
                    let (a, b) = (format!("AX{x}7"), format!("AX{y}7"));
                    // Case alone is no difference at all, nor is one bar for another: both
                    // are punctuation to the rules (`same` already holds).
                    let differ = !(x.eq_ignore_ascii_case(&y) || (is_bar(x) && is_bar(y)));
                    assert_eq!(only_confusions(&a, &b), differ, "{a} vs {b}");
                }
                for other in CLASSES.iter().skip(n + 1) {
                    for y in other.chars() {
                        let (a, b) = (format!("AX{x}7"), format!("AX{y}7"));
                        assert!(!only_confusions(&a, &b), "{a} vs {b}");
                    }
                }
            }
        }
    }

    #[test]
    fn equal_identifiers_are_not_a_difference() {
        assert!(!only_confusions("INV-2026740", "inv 2026740"));
        assert!(!only_confusions("INV-2026740", "INV/2026740"));
        assert!(!only_confusions("", ""));
        // A bar where the other has a hyphen is punctuation on both sides.
        assert!(!only_confusions("INV|2026740", "INV-2026740"));
    }

    #[test]
    fn other_differences_are_not_explained() {
        // A different digit, even beside a confusion.
        assert!(!only_confusions("INV-2026740", "INV-2026741"));
        assert!(!only_confusions("1NV-2026740", "INV-2026746"));
        // Digits never stand for digits: all-digit numbers that differ stay different.
        assert!(!only_confusions("1200", "1280"));
        assert!(!only_confusions("2404118", "2404811"));
        // A character dropped or added is not a confusion (a cut-off has its own rule).
        assert!(!only_confusions("INV-12", "INV-112"));
        assert!(!only_confusions("INV-2026740", "INV-202674"));
        assert!(!only_confusions("INV-2026740", "INV-20267400"));
        // A letter OCR dropped beside a bar it added is still one character short.
        assert!(!only_confusions("|NV-2026740", "1INV-2026740"));
        // Swapped characters are not confusions either.
        assert!(!only_confusions("DPI-2404-118", "DPI-2404-811"));
    }

    #[test]
    fn only_ocr_and_providers_misread() {
        assert!(read_by_ocr(Some(ReadMethod::Ocr)));
        assert!(read_by_ocr(Some(ReadMethod::Provider)));
        assert!(!read_by_ocr(Some(ReadMethod::TextLayer)));
        assert!(!read_by_ocr(None));
    }

    proptest! {
        /// Symmetric, and never true of two texts the rules already take as the same.
        #[test]
        fn symmetric_and_never_for_the_same_identifier(a in "[A-Za-z0-9 |!/-]{0,12}", b in "[A-Za-z0-9 |!/-]{0,12}") {
            prop_assert_eq!(only_confusions(&a, &b), only_confusions(&b, &a));
            let same = key(&a, false).eq(key(&b, false));
            prop_assert!(!(same && only_confusions(&a, &b)));
        }

        /// Any swap within a class is explained, whatever the case and separators.
        #[test]
        fn swaps_within_a_class_are_explained(
            base in "[A-Z0-9]{1,12}",
            picks in prop::collection::vec(any::<u8>(), 12),
        ) {
            let copy: String = base.chars().zip(&picks).map(|(c, p)| {
                CLASSES.iter().find(|k| k.contains(c)).map_or(c, |k| {
                    let members: Vec<char> = k.chars().collect();
                    members[usize::from(*p) % members.len()]
                })
            }).collect();
            let spaced = copy.chars().flat_map(|c| [c, ' ']).collect::<String>();
            let differ = !base.to_lowercase().eq(&copy.to_lowercase());
            prop_assert_eq!(only_confusions(&base, &spaced), differ, "{} vs {}", base, spaced);
        }
    }
}
