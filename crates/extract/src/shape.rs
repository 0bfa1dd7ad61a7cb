//! Identifiers of a fixed shape, repaired where OCR confuses a digit with a letter.
//!
//! An EU customs declaration number (MRN) is two digits, two letters, thirteen letters or
//! digits and a final digit: `24FR8GRBHFU0F71CB0`. OCR reads that final `0` as `O` and splits
//! the number with a space, and nothing in free text says it is wrong. A field declaring
//! `shape: "##@@&&&&&&&&&&&&&#"` gets each position read as its class allows (`O` where a digit
//! must be is `0`) and spaces dropped. A value of another shape is left as read: declaration
//! numbers of other formats exist beside the shape a workflow names.

use std::fmt;

/// Longest shape accepted in a workflow.
pub const MAX_SHAPE_LEN: usize = 64;
/// Most shapes one field may list.
pub const MAX_SHAPES: usize = 32;
/// Most pieces of a value searched for a run of the shape ([`Shape::fit_within`]).
const MAX_PIECES: usize = 12;

/// One position of a shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// `#`
    Digit,
    /// `@`
    Letter,
    /// `&`
    Either,
    /// Any other character, printed as is (case-insensitively for letters).
    Literal(char),
}

/// A compiled `shape:`: one shape or several alternatives (a value takes whichever it fits
/// with the fewest repairs).
#[derive(Clone, PartialEq, Eq)]
pub struct Shape {
    source: String,
    alternatives: Vec<Vec<Slot>>,
}

impl fmt::Debug for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Shape({:?})", self.source)
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// What a value read into a shape became.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fitted {
    /// The value with each position read as its class allows, letters in upper case.
    pub text: String,
    /// How many characters were read as the other class (`O` as `0`).
    pub repairs: usize,
}

impl Shape {
    /// Compiles `#` (digit), `@` (letter), `&` (either) and literal characters; `None` when
    /// the shape is empty, too long, holds whitespace or has no `#`, `@` or `&`.
    pub fn parse(source: &str) -> Option<Shape> {
        Some(Shape {
            source: source.to_owned(),
            alternatives: vec![slots(source)?],
        })
    }

    /// Compiles several shapes, any of which a value may take; `Err` with the index of the
    /// first that is not a shape (see [`Shape::parse`]).
    pub fn any_of(sources: &[String]) -> Result<Shape, usize> {
        let alternatives = sources
            .iter()
            .enumerate()
            .map(|(i, s)| slots(s).ok_or(i))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Shape {
            source: sources.join(" | "),
            alternatives,
        })
    }

    /// `raw` read into the shape, or `None` when it does not fit: spaces are dropped (OCR
    /// splits long numbers), and a letter where a digit must be (or the reverse) is read as
    /// the character it is mistaken for, when there is one.
    pub fn fit(&self, raw: &str) -> Option<Fitted> {
        let chars: Vec<char> = raw.chars().filter(|c| !c.is_whitespace()).collect();
        self.alternatives
            .iter()
            .filter_map(|slots| fit_slots(slots, &chars))
            .min_by_key(|f| f.repairs)
    }

    /// The value of the shape inside `raw` when `raw` as a whole does not fit: a run of its
    /// whitespace-separated pieces that does, with the fewest repairs (the longest run on a
    /// tie). OCR glues a stray fragment of a neighbouring word onto a value (`ng
    /// MEDUWL094413`), and a shape is specific enough to find the value in it.
    pub fn fit_within(&self, raw: &str) -> Option<Fitted> {
        if self.fit(raw).is_some() {
            return None;
        }
        let pieces: Vec<&str> = raw.split_whitespace().take(MAX_PIECES).collect();
        let mut best: Option<(Fitted, usize)> = None;
        for start in 0..pieces.len() {
            for end in start + 1..=pieces.len() {
                if start == 0 && end == pieces.len() {
                    continue;
                }
                let Some(f) = self.fit(&pieces[start..end].concat()) else {
                    continue;
                };
                let run = end - start;
                let better = best.as_ref().is_none_or(|(b, r)| {
                    (f.repairs, std::cmp::Reverse(run)) < (b.repairs, std::cmp::Reverse(*r))
                });
                if better {
                    best = Some((f, run));
                }
            }
        }
        best.map(|(f, _)| f)
    }

    /// How much of `after` (the rest of the value's line) completes `raw` into the shape, in
    /// bytes, when `raw` does not fit alone: OCR splits a long identifier with a space or
    /// reads a letter as a mark (`5) S02`), and a pattern stops at the first of them. At
    /// most three more pieces, and only when they make exactly the shape's length.
    pub fn completion(&self, raw: &str, after: &str) -> Option<usize> {
        if self.fit(raw).is_some() {
            return None;
        }
        let longest = self.alternatives.iter().map(Vec::len).max().unwrap_or(0);
        let line = &after[..after.find('\n').unwrap_or(after.len())];
        let mut len = raw.chars().filter(|c| !c.is_whitespace()).count();
        let mut end = 0;
        for piece in line.split_inclusive(char::is_whitespace).take(3) {
            end += piece.len();
            len += piece.chars().filter(|c| !c.is_whitespace()).count();
            if len > longest {
                return None;
            }
            let taken = line[..end].trim_end();
            if self.fit(&format!("{raw}{taken}")).is_some() {
                return Some(taken.len());
            }
        }
        None
    }
}

/// The slots of one shape; `None` when it is empty, too long, holds whitespace or has no
/// `#`, `@` or `&`.
fn slots(source: &str) -> Option<Vec<Slot>> {
    let slots: Vec<Slot> = source
        .chars()
        .map(|c| match c {
            '#' => Slot::Digit,
            '@' => Slot::Letter,
            '&' => Slot::Either,
            c => Slot::Literal(c),
        })
        .collect();
    let classes = slots.iter().any(|s| !matches!(s, Slot::Literal(_)));
    let ok = classes && slots.len() <= MAX_SHAPE_LEN && !source.chars().any(char::is_whitespace);
    ok.then_some(slots)
}

/// `chars` (spaces already dropped) read into one shape's slots.
fn fit_slots(slots: &[Slot], chars: &[char]) -> Option<Fitted> {
    if chars.len() != slots.len() {
        return None;
    }
    let mut text = String::with_capacity(chars.len());
    let mut repairs = 0;
    for (&c, slot) in chars.iter().zip(slots) {
        let read = match slot {
            Slot::Digit if c.is_ascii_digit() => c,
            Slot::Digit => {
                repairs += 1;
                as_digit(c)?
            }
            Slot::Letter if c.is_alphabetic() => c,
            Slot::Letter => {
                repairs += 1;
                as_letter(c)?
            }
            Slot::Either if c.is_ascii_digit() || c.is_alphabetic() => c,
            Slot::Either => {
                repairs += 1;
                as_alphanumeric(c)?
            }
            // A literal letter printed as its look-alike digit (`C0SU` for `COSU`), or back.
            Slot::Literal(l) if l.to_lowercase().eq(c.to_lowercase()) => *l,
            Slot::Literal(l) if as_letter(c) == Some(*l) || as_digit(c) == Some(*l) => {
                repairs += 1;
                *l
            }
            Slot::Literal(_) => return None,
        };
        text.extend(read.to_uppercase());
    }
    Some(Fitted { text, repairs })
}

/// The letter or digit OCR takes the mark `c` for, when there is only one.
fn as_alphanumeric(c: char) -> Option<char> {
    match c {
        ')' | ']' => Some('J'),
        _ => None,
    }
}

/// The digit OCR takes `c` for, if any.
fn as_digit(c: char) -> Option<char> {
    Some(match c {
        'O' | 'o' | 'Q' | 'D' => '0',
        'I' | 'l' | 'i' | '|' | '!' => '1',
        'Z' | 'z' => '2',
        'S' | 's' => '5',
        'G' => '6',
        'B' => '8',
        _ => return None,
    })
}

/// The letter OCR takes `c` for, if any (a mark with one look-alike: see [`as_alphanumeric`]).
fn as_letter(c: char) -> Option<char> {
    Some(match c {
        '0' => 'O',
        '1' | '|' => 'I',
        '2' => 'Z',
        '5' => 'S',
        '6' => 'G',
        '8' => 'B',
        c => return as_alphanumeric(c),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mrn() -> Shape {
        Shape::parse("##@@&&&&&&&&&&&&&#").expect("valid shape")
    }

    #[test]
    fn a_final_letter_o_where_a_digit_must_be_is_read_as_zero() {
        let f = mrn().fit("24GBXT10DPAHP8D1RO").expect("fits");
        assert_eq!(f.text, "24GBXT10DPAHP8D1R0");
        assert_eq!(f.repairs, 1);
    }

    #[test]
    fn spaces_inside_are_dropped_and_letters_upper_cased() {
        let f = mrn().fit("24BET41V9KB9L5j S02").expect("fits");
        assert_eq!(f.text, "24BET41V9KB9L5JS02");
        assert_eq!(f.repairs, 0);
    }

    #[test]
    fn either_positions_are_never_guessed() {
        // The `O` in the middle may be a letter or a zero: it stays what was read.
        let f = mrn().fit("24FRGXOB86WGG2JHC0").expect("fits");
        assert_eq!(f.text, "24FRGXOB86WGG2JHC0");
    }

    #[test]
    fn a_value_of_another_shape_does_not_fit() {
        assert_eq!(mrn().fit("24FR8GRBHFUOF71"), None, "too short");
        assert_eq!(mrn().fit("24FR8GRBHFU0F71CB0X"), None, "too long");
        assert_eq!(mrn().fit("2XFR8GRBHFU0F71CB0"), None, "X is no digit");
        assert_eq!(mrn().fit("24F-8GRBHFU0F71CB0"), None, "- is neither");
        let eori = Shape::parse("GB############").expect("valid");
        assert_eq!(
            eori.fit("gb 123456789O00").map(|f| f.text),
            Some("GB123456789000".into())
        );
        assert_eq!(eori.fit("FR123456789000"), None, "literal prefix");
    }

    #[test]
    fn a_closing_mark_where_a_letter_may_be_is_a_j() {
        let f = mrn().fit("24BET41V9KB9L5) S02").expect("fits");
        assert_eq!(f.text, "24BET41V9KB9L5JS02");
        assert_eq!(f.repairs, 1);
        assert_eq!(
            mrn().fit("24BET41V9KB9L5( S02"),
            None,
            "no letter looks like ("
        );
    }

    #[test]
    fn a_value_cut_short_is_completed_from_the_rest_of_its_line() {
        let s = mrn();
        // A pattern stopped at the space OCR put inside the number.
        assert_eq!(
            s.completion("24FR8GRBHFUOF71", " CBO  Customs office"),
            Some(4)
        );
        // ... or at a mark read for a letter.
        assert_eq!(s.completion("24BET41V9KB9L5", ") S02\nNext line"), Some(5));
        // A value that fits needs nothing; one the line cannot complete exactly gets nothing.
        assert_eq!(s.completion("24FR8GRBHFU0F71CB0", " more"), None);
        assert_eq!(s.completion("24FR8GRBHFUOF71", " CBOX"), None, "too long");
        assert_eq!(
            s.completion("24FR8GRBHFUOF71", " CB\nO"),
            None,
            "other line"
        );
        assert_eq!(
            s.completion("24FR8", " GRBH FUOF 71CB O"),
            None,
            "more than three pieces"
        );
    }

    #[test]
    fn a_value_takes_whichever_of_several_shapes_it_fits() {
        let bl = Shape::any_of(&[
            "COSU##########".to_owned(),
            "HLCU@@@#######".to_owned(),
            "MAEU#########".to_owned(),
        ])
        .expect("valid shapes");
        // A space OCR put inside, dropped.
        assert_eq!(
            bl.fit("HLCUY DN0258359").map(|f| f.text),
            Some("HLCUYDN0258359".into())
        );
        // A literal letter read as its look-alike digit, and a digit read as a letter.
        let f = bl.fit("C0SU9O49992675").expect("fits COSU");
        assert_eq!((f.text.as_str(), f.repairs), ("COSU9049992675", 2));
        assert_eq!(bl.fit("MAEU419080884").map(|f| f.repairs), Some(0));
        // Another carrier's number, or one of the wrong length, is not forced into a shape.
        assert_eq!(bl.fit("ONEYTNNY84059247"), None);
        assert_eq!(bl.fit("COSU904999267"), None);
        // The line completes a value to any of the shapes' lengths.
        assert_eq!(bl.completion("HLCUY", " DN0258359 HLXU8849130"), Some(10));
        assert_eq!(
            Shape::any_of(&["COSU##".to_owned(), "## ##".to_owned()]),
            Err(1)
        );
    }

    #[test]
    fn a_value_of_the_shape_is_found_beside_a_stray_fragment() {
        let bl = Shape::parse("MEDU@@######").expect("shape");
        let f = bl.fit_within("ng MEDUWL094413").expect("found");
        assert_eq!(f.text, "MEDUWL094413");
        assert_eq!(
            bl.fit_within("MEDUWL O94413 |").expect("found").text,
            "MEDUWL094413"
        );
        // A value that fits whole is `fit`'s; one with no run of the shape is none.
        assert_eq!(bl.fit_within("MEDUWL094413"), None);
        assert_eq!(bl.fit_within("ng MAEU12345678"), None);
    }

    #[test]
    fn shapes_need_a_class_and_no_spaces() {
        assert!(Shape::parse("").is_none());
        assert!(Shape::parse("ABC").is_none());
        assert!(Shape::parse("## ##").is_none());
        assert!(Shape::parse(&"#".repeat(MAX_SHAPE_LEN + 1)).is_none());
        assert!(Shape::parse("@@@-####").is_some());
    }
}
