//! The characters a word may hold, enforced where words are made: the text layer
//! (`pdf.rs`), Tesseract (`engine.rs`) and the page cache (`lib.rs`).
//!
//! A PDF's `ToUnicode` CMap can map a glyph to any code point, U+0000 included, and poppler
//! prints control characters as they are. PostgreSQL's `text` and `jsonb` refuse U+0000, so a
//! single such word made storing a job's result fail on every attempt; the other control
//! characters, DEL, the C1 controls and the Unicode noncharacters (U+FFFE, U+FFFF…) carry no
//! visible text and only spoil evidence, search and the layout text. Cleaning words here, once,
//! means nothing downstream (classification, extraction, storage, the CLI) has to know.
//!
//! Such characters are **dropped**, not replaced by U+FFFD: a glyph mapped to a control
//! character was unmapped, not unreadable, so the reader has nothing to say about it, and a
//! replacement character would keep alive, as a box holding "�", a word that was nothing but
//! junk. Tab, newline and carriage return are kept (they are text, and neither PostgreSQL nor
//! JSON minds them); a word left empty, or holding only white space, is dropped with its box.

use ironclad_core::page::Word;
use std::borrow::Cow;

/// Whether `c` must never reach a word: a control character (C0, DEL, C1) other than tab,
/// newline and carriage return, or a Unicode noncharacter (U+FDD0–U+FDEF and the last two code
/// points of every plane). Surrogates cannot occur in a Rust `char`.
pub(crate) fn is_junk(c: char) -> bool {
    let u = u32::from(c);
    (c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
        || (0xFDD0..=0xFDEF).contains(&u)
        || u & 0xFFFE == 0xFFFE
}

/// `text` without its junk characters (see [`is_junk`]); borrowed, unchanged, when it has none.
pub(crate) fn clean_text(text: &str) -> Cow<'_, str> {
    if text.chars().any(is_junk) {
        Cow::Owned(text.chars().filter(|&c| !is_junk(c)).collect())
    } else {
        Cow::Borrowed(text)
    }
}

/// The text a word made from `raw` holds: [`clean_text`] then trimmed. Empty when nothing is
/// left, and then no word is made.
pub(crate) fn word_text(raw: &str) -> String {
    clean_text(raw).trim().to_owned()
}

/// Cleans every word's text as [`word_text`] does and drops the words left empty, boxes and
/// all. For words from elsewhere (the page cache), which this crate did not just make.
pub(crate) fn clean_words(words: &mut Vec<Word>) {
    words.retain_mut(|w| {
        let clean = word_text(&w.text);
        if clean.len() != w.text.len() {
            w.text = clean;
        }
        !w.text.is_empty()
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use ironclad_core::page::BBox;
    use proptest::prelude::*;

    /// Any character, with the junk and the kept white space often enough to matter.
    fn any_char() -> impl Strategy<Value = char> {
        prop_oneof![
            3 => any::<char>(),
            2 => (0u32..=0xA0).prop_filter_map("a char", char::from_u32),
            1 => prop::sample::select(vec![
                '\u{0}', '\t', '\n', '\r', '\u{7f}', '\u{85}', '\u{fffd}', '\u{fdd0}',
                '\u{fdef}', '\u{fffe}', '\u{ffff}', '\u{1fffe}', '\u{10ffff}', 'é', '€',
            ]),
        ]
    }

    /// Only junk: C0 but tab, newline and CR; DEL and C1; noncharacters.
    fn junk_char() -> impl Strategy<Value = char> {
        prop_oneof![
            (0u32..0x20).prop_filter_map("junk", |u| char::from_u32(u).filter(|&c| is_junk(c))),
            (0x7fu32..=0x9f).prop_filter_map("a char", char::from_u32),
            prop::sample::select(vec!['\u{fdd0}', '\u{fffe}', '\u{ffff}', '\u{10ffff}']),
        ]
    }

    fn any_text() -> impl Strategy<Value = String> {
        prop::collection::vec(any_char(), 0..40).prop_map(|v| v.into_iter().collect())
    }

    fn word(text: &str) -> Word {
        Word {
            text: text.into(),
            bbox: BBox {
                x0: 0.1,
                y0: 0.2,
                x1: 0.3,
                y1: 0.4,
            },
            confidence: 0.9,
            line: 3,
        }
    }

    #[test]
    fn junk_is_controls_and_noncharacters() {
        for c in [
            '\u{0}', '\u{1}', '\u{1b}', '\u{1f}', '\u{7f}', '\u{80}', '\u{85}', '\u{9f}',
        ] {
            assert!(is_junk(c), "{c:?}");
        }
        for c in [
            '\u{fdd0}',
            '\u{fdef}',
            '\u{fffe}',
            '\u{ffff}',
            '\u{10fffe}',
            '\u{10ffff}',
        ] {
            assert!(is_junk(c), "{c:?}");
        }
        for c in [
            '\t', '\n', '\r', ' ', 'a', 'é', '\u{a0}', '€', '\u{fffd}', '\u{fdcf}',
        ] {
            assert!(!is_junk(c), "{c:?}");
        }
    }

    #[test]
    fn clean_text_drops_junk_and_keeps_the_rest() {
        assert_eq!(clean_text("Ship\u{0}per"), "Shipper");
        assert_eq!(clean_text("\u{1b}[31mred\u{7f}"), "[31mred");
        assert_eq!(clean_text("a\tb\r\nc"), "a\tb\r\nc");
        assert_eq!(clean_text("\u{0}\u{ffff}"), "");
        assert!(matches!(clean_text("Total 1 234,56 €"), Cow::Borrowed(_)));
    }

    #[test]
    fn words_left_empty_are_dropped_with_their_boxes() {
        let mut words = vec![
            word("A\u{0}B"),
            word("\u{0}"),
            word(" \u{1}\t"),
            word("\u{85}ok "),
            word("fine"),
        ];
        clean_words(&mut words);
        let texts: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
        assert_eq!(texts, ["AB", "ok", "fine"]);
        assert!(words.iter().all(|w| w.bbox == word("").bbox && w.line == 3));
        assert_eq!(word_text(" \u{0} "), "");
    }

    proptest! {
        #[test]
        fn cleaned_text_holds_no_control_but_tab_newline_cr(s in any_text()) {
            let clean = clean_text(&s);
            prop_assert!(
                clean.chars().all(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r')),
                "{:?} -> {:?}", s, clean
            );
            prop_assert!(!clean.chars().any(is_junk));
            prop_assert!(!clean.contains('\0'), "NUL kept");
        }

        #[test]
        fn clean_text_is_unchanged_and_borrowed(s in any_text()) {
            let clean: String = s.chars().filter(|&c| !is_junk(c)).collect();
            let again = clean_text(&clean);
            prop_assert!(matches!(again, Cow::Borrowed(_)));
            prop_assert_eq!(again.as_ref(), clean.as_str());
        }

        #[test]
        fn cleaning_removes_only_junk(
            a in any_text(),
            b in any_text(),
            junk in prop::collection::vec(junk_char(), 0..4),
        ) {
            let junk: String = junk.into_iter().collect();
            let joined = format!("{a}{junk}{b}");
            prop_assert_eq!(
                clean_text(&joined).into_owned(),
                format!("{}{}", clean_text(&a), clean_text(&b))
            );
        }

        #[test]
        fn cleaned_words_are_never_empty_nor_junk(texts in prop::collection::vec(any_text(), 0..8)) {
            let mut words: Vec<Word> = texts.iter().map(|t| word(t)).collect();
            clean_words(&mut words);
            let kept = texts.iter().filter(|t| !word_text(t).is_empty()).count();
            prop_assert_eq!(words.len(), kept);
            for w in &words {
                prop_assert!(!w.text.is_empty() && w.text.trim() == w.text);
                prop_assert!(!w.text.chars().any(is_junk));
            }
        }
    }
}
