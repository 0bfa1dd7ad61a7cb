//! Table borders and underlines taken off a page before OCR.
//!
//! Tesseract reads a rule beside a word as part of it (`|Shipper`, `ae, ee` for a cell border,
//! `“|` between a label and its value) and a long rule as a line of junk, which breaks both
//! patterns and label geometry. Rules are what text never is: long, thin, straight runs of
//! ink. A pixel is taken off when it lies on a horizontal run of ink at least
//! [`min_run`] long whose stack is at most [`max_thickness`] tall — the morphological opening
//! by a line element, done with run lengths in two passes over the rows — and likewise for
//! vertical runs. A filled block (a dark header cell) is thick, so it stays; so does every
//! letter, whose strokes are far shorter than a rule.

use crate::gray::Gray;

/// What was taken off a page.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Erased {
    /// Pixels turned to background.
    pub pixels: usize,
}

const HORIZONTAL: u8 = 1;
const VERTICAL: u8 = 2;
/// A mark kept after the thickness test: the pixel goes.
const ERASE: u8 = 4;

/// Shortest rule, in pixels along the page's side: a thirtieth of it (7 mm on A4), and never
/// under 40 px, so a dash or a letter's bar is never one.
fn min_run(side: usize) -> usize {
    (side / 30).max(40)
}

/// Thickest rule, in pixels: 0.7 mm on A4 at any resolution, at least 3 px.
fn max_thickness(width: usize, height: usize) -> usize {
    (width.min(height) / 300).max(3)
}

/// Takes the page's rule lines off, in place.
pub(crate) fn erase(img: &mut Gray) -> Erased {
    let (w, h) = (img.width as usize, img.height as usize);
    if w < 2 * 40 || h < 2 * 40 {
        return Erased::default();
    }
    // A page of one shade has no ink to tell apart: nothing is below mid-gray.
    let ink = crate::gray::otsu(&img.pixels).unwrap_or(127);
    let dark = |p: u8| p <= ink;
    let mut mask = vec![0u8; w * h];

    // Long horizontal runs, row by row.
    let min_h = min_run(w);
    for y in 0..h {
        let row = &img.pixels[y * w..(y + 1) * w];
        let mut x = 0;
        while x < w {
            if !dark(row[x]) {
                x += 1;
                continue;
            }
            let start = x;
            while x < w && dark(row[x]) {
                x += 1;
            }
            if x - start >= min_h {
                mask[y * w + start..y * w + x]
                    .iter_mut()
                    .for_each(|m| *m |= HORIZONTAL);
            }
        }
    }
    // Long vertical runs, still row by row: a run length per column.
    let min_v = min_run(h);
    let mut run = vec![0usize; w];
    for y in 0..=h {
        for x in 0..w {
            if y < h && dark(img.pixels[y * w + x]) {
                run[x] += 1;
                continue;
            }
            if run[x] >= min_v {
                for yy in y - run[x]..y {
                    mask[yy * w + x] |= VERTICAL;
                }
            }
            run[x] = 0;
        }
    }

    // Keep only thin structures: a horizontal mark whose column stack, or a vertical mark
    // whose row stack, is thicker than a rule belongs to a filled block.
    let thick = max_thickness(w, h);
    let mut stack = vec![0usize; w];
    for y in 0..=h {
        for x in 0..w {
            if y < h && mask[y * w + x] & HORIZONTAL != 0 {
                stack[x] += 1;
                continue;
            }
            if (1..=thick).contains(&stack[x]) {
                for yy in y - stack[x]..y {
                    mask[yy * w + x] |= ERASE;
                }
            }
            stack[x] = 0;
        }
    }
    for y in 0..h {
        let mut x = 0;
        while x < w {
            if mask[y * w + x] & VERTICAL == 0 {
                x += 1;
                continue;
            }
            let start = x;
            while x < w && mask[y * w + x] & VERTICAL != 0 {
                x += 1;
            }
            if x - start <= thick {
                mask[y * w + start..y * w + x]
                    .iter_mut()
                    .for_each(|m| *m |= ERASE);
            }
        }
    }
    // A rule's anti-aliased or blurred fringe is lighter than the ink threshold; left alone,
    // it is a faint line that Tesseract binarizes back into `|`. It goes with the rule.
    let fringe = (thick / 2).max(FRINGE);
    // Erased pixels take the paper's own gray: pure white on a gray scan would be a brighter
    // class of its own, and Tesseract's threshold would then call the paper ink.
    let paper = paper_level(&img.pixels, ink);
    let mut erased = Erased::default();
    for y in 0..h {
        for x in 0..w {
            if mask[y * w + x] & ERASE == 0 {
                continue;
            }
            for yy in y.saturating_sub(fringe)..(y + fringe + 1).min(h) {
                for xx in x.saturating_sub(fringe)..(x + fringe + 1).min(w) {
                    let p = &mut img.pixels[yy * w + xx];
                    if *p != paper {
                        *p = paper;
                        erased.pixels += 1;
                    }
                }
            }
        }
    }
    erased
}

/// Pixels around a rule taken off with it, at least.
const FRINGE: usize = 2;

/// The paper's gray: the median of the pixels lighter than the ink threshold.
fn paper_level(pixels: &[u8], ink: u8) -> u8 {
    let mut histogram = [0u64; 256];
    for &p in pixels.iter().filter(|&&p| p > ink) {
        histogram[usize::from(p)] += 1;
    }
    let half = histogram.iter().sum::<u64>() / 2;
    let mut seen = 0;
    for (v, &n) in histogram.iter().enumerate() {
        seen += n;
        if seen > half {
            return u8::try_from(v).unwrap_or(u8::MAX);
        }
    }
    u8::MAX
}

/// Rules looked for around one box at a time, after OCR: the same long, thin runs of ink that
/// [`erase`] takes off (here allowed to drift a pixel aside, as a rule on a skewed scan does),
/// but found only where a word is, so the page Tesseract reads keeps its
/// rules (its own layout analysis uses them to tell cells and columns apart; erasing them
/// first changed words far from any rule) and the cost is a few thousand pixels a word.
pub(crate) struct RuleProbe<'a> {
    img: &'a Gray,
    /// Ink is at or below it (the page's Otsu threshold).
    ink: u8,
    /// Faint ink is at or below it: halfway from the ink threshold to the paper. Small type
    /// on a coarse image can be all faint (a hyphen at 6 px a line), and only what is not
    /// even faint ink may be called nothing beside a rule.
    faint: u8,
    /// Shortest rule along each axis ([`Axis::Horizontal`] first).
    min: [usize; 2],
    thick: usize,
    fringe: usize,
}

/// A box's ink (faint ink included), split by whether it belongs to a rule, column by column.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct BoxInk {
    /// The box's left edge, in pixels.
    pub left: usize,
    /// Off-rule pixels that still count as nothing on this page ([`speck`]).
    pub speck: usize,
    /// Per column of the box: dark pixels on a rule or within its fringe, and the others.
    pub columns: Vec<(u32, u32)>,
}

impl BoxInk {
    /// Dark pixels in the box.
    pub fn total(&self) -> usize {
        self.columns.iter().map(|&(r, o)| (r + o) as usize).sum()
    }

    /// Dark pixels neither on a rule nor in its fringe.
    pub fn off_rules(&self) -> usize {
        self.columns.iter().map(|&(_, o)| o as usize).sum()
    }

    /// Whether the box touches a rule at all.
    pub fn has_rule(&self) -> bool {
        self.columns.iter().any(|&(r, _)| r > 0)
    }

    /// Whether the box holds a rule and next to nothing else: at most a speck beside it.
    pub fn is_only_rule(&self) -> bool {
        let off = self.off_rules();
        self.has_rule() && off <= self.speck.max(self.total() / 20)
    }

    /// Where the box's ink that is not a rule starts: the left edge of its first column
    /// with more than a speck's worth of such ink, when a rule lies left of it.
    pub fn rule_before(&self) -> Option<usize> {
        let first = self.columns.iter().position(|&(_, o)| o > 1)?;
        self.columns[..first]
            .iter()
            .any(|&(r, _)| r > 0)
            .then_some(self.left + first)
    }

    /// Where the box's ink that is not a rule ends (exclusive), when a rule lies right of it.
    pub fn rule_after(&self) -> Option<usize> {
        let last = self.columns.iter().rposition(|&(_, o)| o > 1)?;
        self.columns[last + 1..]
            .iter()
            .any(|&(r, _)| r > 0)
            .then_some(self.left + last + 1)
    }
}

/// Pixels off a rule that still count as nothing on a page of `pixels`: a speck or the
/// rule's ragged edge, 6 px on an A4 page at 300 DPI. It shrinks with the page, since a
/// hyphen on a coarse image is 4 px.
fn speck(pixels: usize) -> usize {
    (pixels / 1_500_000).max(1)
}

impl<'a> RuleProbe<'a> {
    /// A probe of `img`, whose ink is at or below `ink`.
    pub fn new(img: &'a Gray, ink: u8) -> RuleProbe<'a> {
        let (w, h) = (img.width as usize, img.height as usize);
        let thick = max_thickness(w, h);
        let paper = paper_level(&img.pixels, ink);
        RuleProbe {
            img,
            ink,
            faint: ink.saturating_add(paper.saturating_sub(ink) / 2),
            min: [min_run(w), min_run(h)],
            thick,
            fringe: (thick / 2).max(FRINGE),
        }
    }

    fn dark(&self, x: usize, y: usize) -> bool {
        self.img.pixels[y * self.img.width as usize + x] <= self.ink
    }

    /// Length of the run of ink along `axis` through `at`, counting no further than a
    /// rule's shortest. The run may step one pixel aside where it would end, so a rule on a
    /// slightly skewed scan (a pixel over every few dozen) is still one run.
    fn run(&self, axis: Axis, at: (usize, usize)) -> usize {
        let (x, y) = at;
        if !self.dark(x, y) {
            return 0;
        }
        let (along, across) = axis.split(at);
        let (len_along, len_across) = axis.split(self.size());
        let min = self.min[axis as usize];
        let mut n = 1;
        for step in [Step::Back, Step::Forward] {
            let (mut a, mut c) = (along, across);
            while n < min {
                let Some(next) = step.from(a, len_along) else {
                    break;
                };
                let beside = aside(c, len_across)
                    .find(|&nc| straight(nc, across, n) && self.dark_at(axis, next, nc));
                match beside {
                    Some(nc) => (a, c) = (next, nc),
                    None => break,
                }
                n += 1;
            }
        }
        n
    }

    /// Whether `at` lies on a run of ink along `axis` as long as a rule.
    fn on_rule_run(&self, axis: Axis, at: (usize, usize)) -> bool {
        self.run(axis, at) >= self.min[axis as usize]
    }

    fn dark_at(&self, axis: Axis, along: usize, across: usize) -> bool {
        let (x, y) = axis.join(along, across);
        self.dark(x, y)
    }

    fn size(&self) -> (usize, usize) {
        (self.img.width as usize, self.img.height as usize)
    }

    /// The ink of the box (left, top, right, bottom in pixels, exclusive ends), split by
    /// whether it lies on a rule or within its fringe.
    pub fn ink(&self, l: i32, t: i32, r: i32, b: i32) -> BoxInk {
        let (w, h) = (self.img.width as usize, self.img.height as usize);
        let clamp = |v: i32, max: usize| (v.max(0) as usize).min(max);
        let (l, r, t, b) = (clamp(l, w), clamp(r, w), clamp(t, h), clamp(b, h));
        if l >= r || t >= b || w < 2 * 40 || h < 2 * 40 {
            return BoxInk::default();
        }
        // The box grown by the fringe, so a rule just outside it still claims its fringe.
        let f = self.fringe;
        let region = Region {
            x0: l.saturating_sub(f),
            y0: t.saturating_sub(f),
            x1: (r + f).min(w),
            y1: (b + f).min(h),
        };
        let rule = self.rules_in(&region);
        let mut columns = vec![(0u32, 0u32); r - l];
        for y in t..b {
            for x in l..r {
                if self.img.pixels[y * w + x] > self.faint {
                    continue;
                }
                let (y0, y1) = (
                    y.saturating_sub(f).max(region.y0),
                    (y + f + 1).min(region.y1),
                );
                let (x0, x1) = (
                    x.saturating_sub(f).max(region.x0),
                    (x + f + 1).min(region.x1),
                );
                let column = &mut columns[x - l];
                if (y0..y1).any(|yy| (x0..x1).any(|xx| rule[region.at((xx, yy))])) {
                    column.0 += 1;
                } else {
                    column.1 += 1;
                }
            }
        }
        BoxInk {
            left: l,
            speck: speck(w * h),
            columns,
        }
    }

    /// Which pixels of `region` lie on a rule. Runs are found once per line of the region,
    /// and followed outside it by the walk.
    fn rules_in(&self, region: &Region) -> Vec<bool> {
        let mut rule = vec![false; region.len()];
        for axis in [Axis::Horizontal, Axis::Vertical] {
            // Long runs along the axis.
            let mut long = vec![false; region.len()];
            for across in region.range(axis.other()) {
                for (start, end) in region.runs(axis, across, |x, y| self.dark(x, y)) {
                    // Measured by the walk even inside the region: on a skewed page a rule's
                    // straight pieces are shorter than the rule.
                    if end - start >= self.min[axis as usize]
                        || self.on_rule_run(axis, axis.join(start, across))
                    {
                        (start..end).for_each(|a| long[region.at(axis.join(a, across))] = true);
                    }
                }
            }
            // Only thin ones are rules: more than a rule's thickness of long runs side by
            // side is a filled block. A stack reaching the region's edge is followed out.
            let other = axis.other();
            let (_, len_across) = axis.split(self.size());
            for along in region.range(axis) {
                let runs = region.runs(other, along, |x, y| long[region.at((x, y))]);
                for (start, end) in runs {
                    let (lo, hi) = region.bounds(other);
                    let mut thickness = end - start;
                    if start == lo {
                        thickness += (1..=self.thick)
                            .take_while(|&d| {
                                start >= d && self.on_rule_run(axis, axis.join(along, start - d))
                            })
                            .count();
                    }
                    if end == hi {
                        thickness += (0..self.thick)
                            .take_while(|&d| {
                                end + d < len_across
                                    && self.on_rule_run(axis, axis.join(along, end + d))
                            })
                            .count();
                    }
                    if thickness <= self.thick {
                        (start..end).for_each(|c| rule[region.at(axis.join(along, c))] = true);
                    }
                }
            }
        }
        rule
    }
}

/// The two directions a rule runs in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Axis {
    Horizontal = 0,
    Vertical = 1,
}

impl Axis {
    fn other(self) -> Axis {
        match self {
            Axis::Horizontal => Axis::Vertical,
            Axis::Vertical => Axis::Horizontal,
        }
    }

    /// A pixel `(x, y)` as (along this axis, across it).
    fn split(self, (x, y): (usize, usize)) -> (usize, usize) {
        match self {
            Axis::Horizontal => (x, y),
            Axis::Vertical => (y, x),
        }
    }

    /// The pixel at `along` this axis and `across` it, as `(x, y)`.
    fn join(self, along: usize, across: usize) -> (usize, usize) {
        match self {
            Axis::Horizontal => (along, across),
            Axis::Vertical => (across, along),
        }
    }
}

/// A direction along a run.
#[derive(Clone, Copy)]
enum Step {
    Back,
    Forward,
}

impl Step {
    /// The next coordinate from `v` in this direction, inside `0..len`.
    fn from(self, v: usize, len: usize) -> Option<usize> {
        match self {
            Step::Back => v.checked_sub(1),
            Step::Forward => (v + 1 < len).then_some(v + 1),
        }
    }
}

/// Whether a run that has come `n` pixels from `origin` across, now at `v`, is still
/// straight: a skewed rule drifts a pixel every few dozen; a path wandering through letters
/// drifts faster.
fn straight(v: usize, origin: usize, n: usize) -> bool {
    v.abs_diff(origin) <= 1 + n / 16
}

/// The coordinate `v` itself, then its neighbours inside `0..len`: where a run goes on.
fn aside(v: usize, len: usize) -> impl Iterator<Item = usize> {
    [Some(v), v.checked_sub(1), (v + 1 < len).then_some(v + 1)]
        .into_iter()
        .flatten()
}

/// A rectangle of the page, exclusive ends, with its pixels indexed row by row.
struct Region {
    x0: usize,
    y0: usize,
    x1: usize,
    y1: usize,
}

impl Region {
    fn len(&self) -> usize {
        (self.x1 - self.x0) * (self.y1 - self.y0)
    }

    fn at(&self, (x, y): (usize, usize)) -> usize {
        (y - self.y0) * (self.x1 - self.x0) + (x - self.x0)
    }

    /// The region's first and end coordinates along `axis`.
    fn bounds(&self, axis: Axis) -> (usize, usize) {
        match axis {
            Axis::Horizontal => (self.x0, self.x1),
            Axis::Vertical => (self.y0, self.y1),
        }
    }

    fn range(&self, axis: Axis) -> std::ops::Range<usize> {
        let (lo, hi) = self.bounds(axis);
        lo..hi
    }

    /// The maximal runs, along `axis` on the line `across`, of pixels where `holds` is true,
    /// as (start, end) coordinates along the axis.
    fn runs(
        &self,
        axis: Axis,
        across: usize,
        holds: impl Fn(usize, usize) -> bool,
    ) -> Vec<(usize, usize)> {
        let mut runs = Vec::new();
        let mut open = None;
        for a in self.range(axis) {
            let (x, y) = axis.join(a, across);
            match (holds(x, y), open) {
                (true, None) => open = Some(a),
                (false, Some(start)) => {
                    runs.push((start, a));
                    open = None;
                }
                _ => {}
            }
        }
        if let Some(start) = open {
            runs.push((start, self.bounds(axis).1));
        }
        runs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A white page `w` × `h` with `dark` rectangles (x0, y0, x1, y1), exclusive ends.
    fn page(w: u32, h: u32, dark: &[(usize, usize, usize, usize)], ink: u8) -> Gray {
        let mut pixels = vec![230u8; (w * h) as usize];
        for &(x0, y0, x1, y1) in dark {
            for y in y0..y1 {
                for x in x0..x1 {
                    pixels[y * w as usize + x] = ink;
                }
            }
        }
        Gray::new(w, h, pixels).expect("sizes agree")
    }

    fn ink_in(img: &Gray, (x0, y0, x1, y1): (usize, usize, usize, usize)) -> usize {
        let w = img.width as usize;
        (y0..y1)
            .flat_map(|y| (x0..x1).map(move |x| (x, y)))
            .filter(|&(x, y)| img.pixels[y * w + x] < 200)
            .count()
    }

    #[test]
    fn rules_go_and_letters_blocks_and_dashes_stay() {
        let (w, h) = (1200, 1600);
        let rule = (100, 400, 1100, 403); // a table's horizontal border, 3 px
        let border = (600, 300, 602, 900); // a vertical cell border, 2 px
        let letter = (200, 500, 204, 540); // a letter's stem
        let dash = (300, 520, 335, 523); // an em dash, 35 px
        let block = (100, 1000, 1100, 1060); // a filled header cell
        let mut img = page(w, h, &[rule, border, letter, dash, block], 60);
        let erased = erase(&mut img);
        assert_eq!(ink_in(&img, rule), 0, "the rule is gone");
        assert_eq!(ink_in(&img, border), 0, "the border is gone");
        assert_eq!(ink_in(&img, letter), 4 * 40, "the stem stays");
        assert_eq!(ink_in(&img, dash), 35 * 3, "the dash stays");
        assert_eq!(ink_in(&img, block), 1000 * 60, "the filled block stays");
        // The rules and their two-pixel fringes, in the paper's gray (230): only the ink
        // pixels change.
        assert_eq!(erased.pixels, 1000 * 3 + 2 * 600 - 2 * 3);
        assert!(img.pixels.iter().all(|&p| p == 230 || p == 60));
    }

    #[test]
    fn low_contrast_rules_go_too_and_take_the_paper_gray() {
        let rule = (50, 200, 750, 202);
        let mut img = page(800, 1000, &[rule], 150);
        erase(&mut img);
        assert_eq!(ink_in(&img, rule), 0);
        assert!(
            img.pixels.iter().all(|&p| p == 230),
            "no white streak on gray paper"
        );
    }

    #[test]
    fn a_probe_tells_a_border_from_the_word_beside_it() {
        let border = (600, 300, 603, 900); // a vertical cell border, 3 px
        let stem = (612, 500, 616, 540); // the first letter of the value beside it
        let bowl = (622, 510, 640, 540); // the rest of the word
        let underline = (100, 700, 400, 702); // under a heading
        let heading = (120, 660, 200, 696);
        let img = page(1200, 1600, &[border, stem, bowl, underline, heading], 40);
        let probe = RuleProbe::new(&img, 127);

        // The border alone, as Tesseract boxes a `|` it read from it.
        let bar = probe.ink(598, 480, 605, 545);
        assert!(bar.is_only_rule(), "{bar:?}");

        // The border glued to the word (`|Shipper`): the word's own ink starts at its stem.
        let glued = probe.ink(598, 490, 641, 545);
        assert!(!glued.is_only_rule());
        assert_eq!(glued.rule_before(), Some(612));
        assert_eq!(glued.rule_after(), None);

        // The word alone touches no rule.
        let word = probe.ink(610, 490, 641, 545);
        assert!(!word.has_rule());
        assert_eq!(word.off_rules(), word.total());

        // An underlined heading keeps its letters: the underline is rule, the letters are not.
        let heading_box = probe.ink(110, 655, 210, 705);
        assert!(heading_box.has_rule() && !heading_box.is_only_rule());
        assert_eq!(heading_box.off_rules(), 80 * 36);
    }

    #[test]
    fn a_probe_follows_a_rule_on_a_skewed_scan() {
        // A 2-px border drifting a column right every 40 rows: no straight piece of it is as
        // long as a rule (53 px on this page).
        let pieces: Vec<_> = (0..15)
            .map(|i| (700 + i, 300 + 40 * i, 702 + i, 340 + 40 * i))
            .collect();
        let img = page(1200, 1600, &pieces, 40);
        let probe = RuleProbe::new(&img, 127);
        assert!(probe.ink(700, 480, 712, 530).is_only_rule());
    }

    #[test]
    fn faint_small_type_beside_a_rule_is_not_taken_for_the_rule() {
        // A hyphen too light for the ink threshold (tiny type on a coarse image), boxed by
        // OCR together with the rule under it.
        let mut img = page(800, 600, &[(100, 110, 700, 112)], 40);
        for y in 98..100 {
            for x in 300..305 {
                img.pixels[y * 800 + x] = 170;
            }
        }
        let probe = RuleProbe::new(&img, 127);
        let hyphen = probe.ink(298, 84, 306, 112);
        assert!(hyphen.has_rule() && !hyphen.is_only_rule(), "{hyphen:?}");
        // The rule alone still is.
        assert!(probe.ink(400, 100, 410, 112).is_only_rule());
    }

    #[test]
    fn a_probe_leaves_letters_and_filled_blocks_alone() {
        let block = (100, 1000, 1100, 1060); // a filled header cell
        let wide = (300, 200, 306, 260); // a long but wide stroke, 60 px by 6
        let thin = (400, 200, 403, 245); // a thin stroke shorter than a rule, 45 px
        let img = page(1200, 1600, &[block, wide, thin], 40);
        let probe = RuleProbe::new(&img, 127);
        assert!(!probe.ink(90, 990, 300, 1070).has_rule());
        assert!(!probe.ink(295, 195, 310, 265).has_rule());
        assert!(!probe.ink(395, 195, 410, 250).has_rule());
    }

    #[test]
    fn tiny_and_blank_images_are_left_alone() {
        let mut tiny = page(20, 20, &[(0, 5, 20, 6)], 0);
        assert_eq!(erase(&mut tiny).pixels, 0);
        let mut blank = page(500, 500, &[], 0);
        assert_eq!(erase(&mut blank).pixels, 0);
    }
}
