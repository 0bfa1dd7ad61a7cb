//! Small line charts drawn as SVG paths on the server (no script, nothing inline that the CSP
//! would refuse): a measure's minute samples over a window, scaled to its own peak.

use chrono::{DateTime, Utc};
use std::time::Duration;

/// The chart's drawing box, in SVG user units (the CSS stretches it to the card).
pub(crate) const WIDTH: f64 = 240.0;
pub(crate) const HEIGHT: f64 = 48.0;

/// Samples further apart than this are not joined: the line breaks where nobody sampled.
const GAP: chrono::Duration = chrono::Duration::seconds(150);

/// A drawn chart: its path and the highest value it shows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Spark {
    /// The SVG path's `d` attribute.
    pub path: String,
    /// The peak value over the window (the top of the chart).
    pub peak: f64,
    /// The latest sample's value.
    pub last: f64,
    /// How many samples it draws.
    pub samples: usize,
}

/// Draws `points` (time, value; oldest first; `None` where the value was unknown) over the
/// `window` ending at `now`. `None` when no sample has a value.
pub(crate) fn spark(
    points: &[(DateTime<Utc>, Option<f64>)],
    now: DateTime<Utc>,
    window: Duration,
) -> Option<Spark> {
    let window_secs = window.as_secs_f64().max(1.0);
    let start = now - chrono::Duration::milliseconds((window_secs * 1000.0) as i64);
    let known: Vec<(DateTime<Utc>, f64)> = points
        .iter()
        .filter(|(t, _)| *t >= start && *t <= now)
        .filter_map(|(t, v)| v.filter(|v| v.is_finite()).map(|v| (*t, v.max(0.0))))
        .collect();
    let last = known.last()?.1;
    let peak = known.iter().map(|(_, v)| *v).fold(0.0, f64::max);
    // A flat zero line sits on the bottom edge rather than dividing by zero.
    let scale = if peak > 0.0 { peak } else { 1.0 };
    let mut path = String::new();
    let mut previous: Option<DateTime<Utc>> = None;
    for (t, v) in &known {
        let x = (*t - start).num_milliseconds() as f64 / 1000.0 / window_secs * WIDTH;
        // One unit of margin keeps the stroke inside the box at the peak and at zero.
        let y = HEIGHT - 1.0 - v / scale * (HEIGHT - 2.0);
        let joined = previous.is_some_and(|p| *t - p <= GAP);
        if !path.is_empty() {
            path.push(' ');
        }
        path.push_str(&format!("{}{x:.1} {y:.1}", if joined { 'L' } else { 'M' }));
        // A lone point still shows: a short tick.
        if !joined {
            path.push_str(" h0.1");
        }
        previous = Some(*t);
    }
    Some(Spark {
        path,
        peak,
        last,
        samples: known.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(minutes_ago: i64, now: DateTime<Utc>) -> DateTime<Utc> {
        now - chrono::Duration::minutes(minutes_ago)
    }

    #[test]
    fn scales_to_the_peak_and_places_by_time() {
        let now = Utc::now();
        let hour = Duration::from_secs(3600);
        let s = spark(
            &[
                (at(60, now), Some(0.0)),
                (at(59, now), Some(10.0)),
                (at(0, now), Some(5.0)),
            ],
            now,
            hour,
        )
        .expect("drawn");
        assert_eq!((s.peak, s.last, s.samples), (10.0, 5.0, 3));
        // The first point is the window's left edge at the bottom, the second the top; the
        // last sample is 59 minutes after the second, so the line breaks before it.
        assert!(
            s.path.starts_with("M0.0 47.0 h0.1 L4.0 1.0 M240.0 24.0"),
            "{}",
            s.path
        );
    }

    #[test]
    fn nothing_known_draws_nothing_and_old_samples_fall_outside() {
        let now = Utc::now();
        let hour = Duration::from_secs(3600);
        assert_eq!(spark(&[], now, hour), None);
        assert_eq!(spark(&[(at(1, now), None)], now, hour), None);
        assert_eq!(spark(&[(at(90, now), Some(3.0))], now, hour), None);
    }

    #[test]
    fn an_all_zero_window_is_a_line_on_the_bottom() {
        let now = Utc::now();
        let s = spark(
            &[(at(2, now), Some(0.0)), (at(1, now), Some(0.0))],
            now,
            Duration::from_secs(600),
        )
        .expect("drawn");
        assert_eq!(s.peak, 0.0);
        assert!(s.path.contains("L216.0 47.0"), "{}", s.path);
    }
}
