//! Settling `1`/`I` and `0`/`O` inside identifiers by the glyphs' own shapes.
//!
//! Tesseract's recognizer leans on context, and inside codes such as `DPI/2025/2396` or
//! `HLCUYDN0258359` context does not help: it reads `DP1` and `DNO`. The glyphs themselves
//! differ. In most fonts a `1` carries a flag and is wider than the bare bar of `I` or `l`,
//! and an `O` is rounder than a `0`. How much they differ depends on the font, so the page
//! itself is the reference: every `1` and `0` in a word of digits only, and every `I`, `l`
//! and `O` in a word of letters only, is taken as read (there the recognizer's context is
//! right), and their width-to-height ratios give each class's typical shape on this page.
//! A confusable glyph inside a word that mixes letters and digits is then moved to the other
//! class only when the page's two classes clearly differ and the glyph clearly sits with the
//! other one. Where the shapes cannot tell (too few references on the page, a font drawing the
//! two alike, a coarse fax), the glyph's neighbours decide, but only where they leave no
//! doubt: a `1` starting a run of three letters (`1NV2558971`), an `O` inside or ending a run
//! of digits (`890O`).

/// One recognized glyph: its text and its box size in pixels.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Glyph {
    pub ch: char,
    pub width: u32,
    pub height: u32,
}

impl Glyph {
    /// Width over height; `None` for a degenerate box.
    fn ratio(&self) -> Option<f32> {
        (self.width > 0 && self.height > 0).then(|| self.width as f32 / self.height as f32)
    }
}

/// Fewest references of each class a page needs before its glyphs are compared to them.
const MIN_REFERENCES: usize = 3;
/// Least ratio between the two classes' typical shapes for the comparison to mean anything
/// (Helvetica: a `1` is about 1.7× as wide as an `I` for its height, an `O` about 1.25×
/// as wide as a `0`).
const MIN_CLASS_SEPARATION: f32 = 1.15;
/// How much nearer (as a share of the distance between the classes) a glyph must sit to the
/// other class than to its own before it is moved.
const MIN_MARGIN: f32 = 0.5;

/// How far (as a share of the distance between the classes) a glyph may sit from the
/// other class's typical shape and still be taken for it.
const MAX_REACH: f32 = 0.5;

/// A pair of classes that recognition confuses, and the character each is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pair {
    /// `1` against the bare bar of `I`/`l`.
    OneOrBar,
    /// `0` against `O`.
    ZeroOrO,
}

/// Which side of its pair `ch` stands on (`true` for the digit), if it is confusable.
fn pair_of(ch: char) -> Option<(Pair, bool)> {
    match ch {
        '1' => Some((Pair::OneOrBar, true)),
        'I' | 'l' | '|' => Some((Pair::OneOrBar, false)),
        '0' => Some((Pair::ZeroOrO, true)),
        'O' => Some((Pair::ZeroOrO, false)),
        _ => None,
    }
}

/// Whether a word holds a glyph worth measuring (callers skip the rest).
pub(crate) fn has_confusable(text: &str) -> bool {
    text.chars().any(|c| pair_of(c).is_some())
}

/// What a word's letters and digits are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Digits,
    Letters,
    Mixed,
    Neither,
}

fn kind_of(glyphs: &[Glyph]) -> Kind {
    let digits = glyphs.iter().any(|g| g.ch.is_ascii_digit());
    let letters = glyphs.iter().any(|g| g.ch.is_alphabetic());
    match (digits, letters) {
        (true, true) => Kind::Mixed,
        (true, false) => Kind::Digits,
        (false, true) => Kind::Letters,
        (false, false) => Kind::Neither,
    }
}

/// A class's typical shape: the lower quartile of its references. A box that swallowed a
/// neighbour only ever makes a glyph wider, never narrower, and such boxes can be a third of
/// a class (the `l` of `Bill` touching its neighbour); the median would follow them.
fn typical(values: &mut [f32]) -> Option<f32> {
    if values.len() < MIN_REFERENCES {
        return None;
    }
    values.sort_by(f32::total_cmp);
    Some(values[values.len() / 4])
}

/// The typical log-ratio of each side of `pair` on the page, when both are known and differ.
fn references(words: &[Option<Vec<Glyph>>], pair: Pair) -> Option<(f32, f32)> {
    let (mut digit, mut letter) = (Vec::new(), Vec::new());
    for glyphs in words.iter().flatten() {
        let kind = kind_of(glyphs);
        for g in glyphs {
            let (Some((p, is_digit)), Some(r)) = (pair_of(g.ch), g.ratio()) else {
                continue;
            };
            // `|` is a rule or a cell border as often as a letter: never a reference.
            if p != pair || g.ch == '|' {
                continue;
            }
            match (is_digit, kind) {
                (true, Kind::Digits) => digit.push(r.ln()),
                (false, Kind::Letters) => letter.push(r.ln()),
                _ => {}
            }
        }
    }
    let (d, l) = (typical(&mut digit)?, typical(&mut letter)?);
    // In every font where they differ, `1` is wider than a bar and `O` rounder than `0`: a
    // page measuring otherwise is measuring something else (bold beside regular, noise).
    let ordered = match pair {
        Pair::OneOrBar => d > l,
        Pair::ZeroOrO => l > d,
    };
    (ordered && (d - l).abs() >= MIN_CLASS_SEPARATION.ln()).then_some((d, l))
}

/// The letter a bar reads as beside `prev` and `next`: `l` among lower-case letters, else `I`.
fn bar_letter(prev: Option<char>, next: Option<char>) -> char {
    let lower = |c: Option<char>| c.is_some_and(char::is_lowercase);
    if lower(prev) || lower(next) {
        'l'
    } else {
        'I'
    }
}

/// Rewrites the confusable glyphs of mixed words whose shape says they are the other class.
/// `glyphs[i]` belongs to the `i`-th of `texts` (`None` when the word's glyphs were not
/// measured or do not spell the word). Returns how many characters changed.
pub(crate) fn settle<'t>(
    texts: impl IntoIterator<Item = &'t mut String>,
    glyphs: &[Option<Vec<Glyph>>],
) -> usize {
    let refs = [
        (Pair::OneOrBar, references(glyphs, Pair::OneOrBar)),
        (Pair::ZeroOrO, references(glyphs, Pair::ZeroOrO)),
    ];
    let mut changed = 0;
    for (text, word) in texts.into_iter().zip(glyphs) {
        let Some(word) = word.as_deref() else {
            continue;
        };
        if kind_of(word) != Kind::Mixed {
            continue;
        }
        let mut chars: Vec<char> = word.iter().map(|g| g.ch).collect();
        let mut any = false;
        for (i, g) in word.iter().enumerate() {
            let (Some((pair, is_digit)), Some(r)) = (pair_of(g.ch), g.ratio()) else {
                continue;
            };
            let measured = refs.iter().find(|(p, _)| *p == pair).and_then(|(_, r)| *r);
            let by_shape = measured.map(|(digit, letter)| {
                let (own, other) = if is_digit {
                    (digit, letter)
                } else {
                    (letter, digit)
                };
                let gap = (digit - letter).abs();
                let (to_own, to_other) = ((r.ln() - own).abs(), (r.ln() - other).abs());
                // Moved only when clearly nearer the other class, and within that class's
                // reach (a box swallowing two glyphs is far from both); kept when clearly
                // nearer its own; else the shape cannot tell.
                if to_own - to_other >= MIN_MARGIN * gap && to_other <= MAX_REACH * gap {
                    Some(true)
                } else if to_other - to_own >= MIN_MARGIN * gap
                    || (to_own > MAX_REACH * gap && to_other > MAX_REACH * gap)
                {
                    // Clearly its own class, or far from both (a box swallowing two glyphs).
                    Some(false)
                } else {
                    None
                }
            });
            let moved = match by_shape.flatten() {
                // A shape that would break a code's letters-then-digits (`INV2558971` to
                // `1NV2558971`: a fax's speckle widens a bar) is outvoted by the recognizer,
                // which read the glyph in that context.
                Some(true) => !breaks_code_shape(&chars, i),
                Some(false) => false,
                // A page with too few references, or a glyph between the classes (a coarse
                // fax): its neighbours decide, where they leave no doubt.
                None => among_the_other_class(&chars, i, is_digit),
            };
            if !moved {
                continue;
            }
            tracing::debug!(
                word = %text, glyph = %g.ch, ratio = r, shape = ?by_shape,
                "glyph moved to the other class"
            );
            let prev = i.checked_sub(1).map(|j| chars[j]);
            let next = chars.get(i + 1).copied();
            chars[i] = match (pair, is_digit) {
                (Pair::OneOrBar, true) => bar_letter(prev, next),
                (Pair::OneOrBar, false) => '1',
                (Pair::ZeroOrO, true) => 'O',
                (Pair::ZeroOrO, false) => '0',
            };
            any = true;
            changed += 1;
        }
        if any {
            *text = chars.into_iter().collect();
        }
    }
    changed
}

/// Whether the confusable glyph at `i` of a word sits among the other class: inside its run
/// of letters and digits (a code's part between hyphens or slashes), every neighbour is of
/// the other class, and with it that class makes a run of at least [`MIN_CONTEXT_RUN`]
/// (`1NV2558971`: the `1` starts a run of letters; `890O`: the `O` ends a run of digits).
/// Short runs (`1A`, `I0`) are left as read: there a code may well mix them.
fn among_the_other_class(chars: &[char], i: usize, is_digit: bool) -> bool {
    let other = |c: char| {
        if is_digit {
            c.is_alphabetic()
        } else {
            c.is_ascii_digit()
        }
    };
    let prev = i.checked_sub(1).and_then(|j| chars.get(j)).copied();
    let next = chars.get(i + 1).copied();
    let neighbours: Vec<char> = [prev, next]
        .into_iter()
        .flatten()
        .filter(|c| c.is_alphanumeric())
        .collect();
    if neighbours.is_empty() || !neighbours.iter().all(|&c| other(c)) {
        return false;
    }
    let before = chars[..i].iter().rev().take_while(|&&c| other(c)).count();
    let after = chars[i + 1..].iter().take_while(|&&c| other(c)).count();
    before + 1 + after >= MIN_CONTEXT_RUN && one_run_each_once_moved(chars, i)
}

/// Whether the word's part holding `i` (between marks such as `-` or `/`) is, once the glyph
/// at `i` is taken for the other class, letters then digits or the reverse, at most one
/// change of class: the shape of invoice numbers and codes (`INV2558971`, `HLCUDYF4864041`).
/// A part that mixes its classes all along (an EU MRN, `24FR8GRBHFU0F71CB0`) gives its
/// neighbours no say: there a `0` between letters is as likely as an `O`.
fn one_run_each_once_moved(chars: &[char], i: usize) -> bool {
    class_changes(chars, i, true) <= 1
}

/// Whether moving the glyph at `i` to the other class turns a part of the code shape (at most
/// one change of class, see [`one_run_each_once_moved`]) into one that is not.
fn breaks_code_shape(chars: &[char], i: usize) -> bool {
    class_changes(chars, i, false) <= 1 && class_changes(chars, i, true) > 1
}

/// How often letters and digits alternate in the word's part holding `i`, with the glyph at
/// `i` taken for the other class when `moved`.
fn class_changes(chars: &[char], i: usize, moved: bool) -> usize {
    let start = chars[..i]
        .iter()
        .rposition(|c| !c.is_alphanumeric())
        .map_or(0, |p| p + 1);
    let end = chars[i..]
        .iter()
        .position(|c| !c.is_alphanumeric())
        .map_or(chars.len(), |p| i + p);
    let digit_at = |j: usize| chars[j].is_ascii_digit() != (moved && j == i);
    (start + 1..end)
        .filter(|&j| digit_at(j) != digit_at(j - 1))
        .count()
}

/// Shortest run of the other class a glyph must complete before its neighbours decide it.
const MIN_CONTEXT_RUN: usize = 3;

#[cfg(test)]
mod tests {
    use super::*;

    /// Glyphs of `text` at height 30, each confusable at the width given in `widths` (in
    /// order of appearance), other glyphs 18 wide.
    fn word(text: &str, widths: &[u32]) -> Option<Vec<Glyph>> {
        let mut w = widths.iter();
        Some(
            text.chars()
                .map(|ch| Glyph {
                    ch,
                    width: if pair_of(ch).is_some() {
                        *w.next().expect("a width for each confusable")
                    } else {
                        18
                    },
                    height: 30,
                })
                .collect(),
        )
    }

    /// A page whose `1` is 11 wide, bars 6, `0` 19 and `O` 25.
    fn page_references() -> Vec<Option<Vec<Glyph>>> {
        vec![
            word("2021", &[19, 11]),
            word("1110", &[11, 11, 11, 19]),
            word("2000", &[19, 19, 19]),
            word("INVOICE", &[6, 25, 6]),
            word("Bill", &[6, 6, 6]),
            word("COSCO", &[25, 25]),
            word("ORIGIN", &[25, 6, 6]),
        ]
    }

    fn settled(text: &str, widths: &[u32]) -> (String, usize) {
        let mut glyphs = page_references();
        glyphs.push(word(text, widths));
        let mut texts: Vec<String> = glyphs
            .iter()
            .map(|g| {
                g.as_ref()
                    .map_or(String::new(), |g| g.iter().map(|g| g.ch).collect())
            })
            .collect();
        let n = settle(&mut texts, &glyphs);
        (texts.pop().unwrap_or_default(), n)
    }

    #[test]
    fn a_bar_read_as_one_inside_a_code_becomes_a_letter() {
        // DPI/2025/2396 read DP1: the `1` is as narrow as the page's bars.
        assert_eq!(
            settled("DP1/2025/2396", &[6, 19]),
            ("DPI/2025/2396".into(), 1)
        );
        // A lower-case neighbour makes it an `l`.
        assert_eq!(settled("Ab1e9", &[6]).0, "Able9");
        // A real `1` stays.
        assert_eq!(settled("DP1/2025/2396", &[11, 19]).0, "DP1/2025/2396");
        // A bar read as `I` among digits but shaped like a `1` becomes one.
        assert_eq!(settled("AB2I5", &[11]).0, "AB215");
    }

    #[test]
    fn a_shape_never_breaks_a_codes_letters_then_digits() {
        // A fax's speckle widens the `I` of INV2558971 to a `1`'s width: the recognizer read it
        // among letters, and the code's shape agrees with it.
        assert_eq!(settled("INV2558971", &[11, 11]), ("INV2558971".into(), 0));
        // The same wide glyph among digits still moves: that mends the shape.
        assert_eq!(settled("INV25I8971", &[6, 11, 11]).0, "INV2518971");
        // Where the part mixes its classes all along (an MRN), the shape alone decides.
        assert_eq!(
            settled("24FR8GRBHFUIF71CB0", &[11, 11, 19]).0,
            "24FR8GRBHFU1F71CB0"
        );
    }

    #[test]
    fn round_o_and_narrow_zero_are_told_apart() {
        assert_eq!(settled("HLCUYDNO258359", &[19]).0, "HLCUYDN0258359");
        assert_eq!(
            settled("24FR8GRBHFUOF71CB0", &[19, 11, 19]).0,
            "24FR8GRBHFU0F71CB0"
        );
        assert_eq!(settled("PO-631138", &[25, 11, 11]).0, "PO-631138");
        assert_eq!(settled("P0-631138", &[25, 11, 11]).0, "PO-631138");
    }

    #[test]
    fn unclear_or_unsupported_glyphs_are_left_as_read() {
        // Halfway between the classes.
        assert_eq!(
            settled("HLCUYDNO258359", &[22]),
            ("HLCUYDNO258359".into(), 0)
        );
        // A box swallowing two glyphs is far from both classes.
        assert_eq!(settled("CB0X", &[45]).0, "CB0X");
        // Words of one kind are references, never rewritten.
        assert_eq!(settled("DPI", &[11]).0, "DPI");
        assert_eq!(settled("BOX", &[19]).0, "BOX");
        assert_eq!(settled("2020", &[25, 25]).0, "2020");
    }

    #[test]
    fn without_references_of_both_classes_the_neighbours_decide() {
        let glyphs = vec![
            word("2021", &[19, 11]),
            word("1110", &[11, 11, 11, 19]),
            word("DP1/2025/2396", &[6, 19]),
            word("1A-5", &[6]),
            word("1NV2558971", &[6, 11]),
            word("SBE/2024/890O", &[19, 19, 25]),
            word("HLCUDYF4864O41", &[25, 11]),
            word("40HC", &[19]),
        ];
        let mut texts: Vec<String> = [
            "2021",
            "1110",
            "DP1/2025/2396",
            "1A-5",
            "1NV2558971",
            "SBE/2024/890O",
            "HLCUDYF4864O41",
            "40HC",
        ]
        .map(String::from)
        .into();
        assert_eq!(settle(&mut texts, &glyphs), 4);
        // A `1` starting a run of letters is an `I`; an `O` ending or inside a run of digits
        // is a `0`.
        assert_eq!(texts[2], "DPI/2025/2396");
        assert_eq!(texts[4], "INV2558971");
        assert_eq!(texts[5], "SBE/2024/8900");
        assert_eq!(texts[6], "HLCUDYF4864041");
        // Too short a run to tell (`1A`), or neighbours of both classes (`40HC`): as read.
        assert_eq!(texts[3], "1A-5");
        assert_eq!(texts[7], "40HC");
    }

    #[test]
    fn a_code_mixing_its_classes_all_along_gives_the_neighbours_no_say() {
        // An EU MRN: letters and digits anywhere. Without a measured shape, its `0` between
        // `U` and `F` stays a `0`, as its `O` stays an `O`.
        let glyphs = vec![
            word("2021", &[19, 11]),
            word("24FR8GRBHFU0F71CB0", &[19, 11, 19]),
            word("25ESYTYW2MJUPDSCHO", &[25]),
        ];
        let mut texts: Vec<String> = ["2021", "24FR8GRBHFU0F71CB0", "25ESYTYW2MJUPDSCHO"]
            .map(String::from)
            .into();
        assert_eq!(settle(&mut texts, &glyphs), 0);
        assert_eq!(texts[1], "24FR8GRBHFU0F71CB0");
    }

    #[test]
    fn where_the_font_draws_the_classes_alike_the_neighbours_decide() {
        // A font whose `1` is a bare bar: the references do not differ enough.
        let glyphs = vec![
            word("1111", &[6, 6, 6, 6]),
            word("Illl", &[6, 6, 6, 6]),
            word("DP1/2", &[6]),
            word("A1/2", &[6]),
        ];
        let mut texts: Vec<String> = ["1111", "Illl", "DP1/2", "A1/2"].map(String::from).into();
        assert_eq!(settle(&mut texts, &glyphs), 1);
        assert_eq!(texts[2], "DPI/2");
        assert_eq!(texts[3], "A1/2");
    }
}
