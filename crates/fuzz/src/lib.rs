//! What the property tests that fuzz Ironclad's parsers of untrusted input share: how many
//! cases to run, how long one parse may take, and how to damage a valid seed.
//!
//! Every parser that reads bytes or text a client controls (type sniffing, PDF/PNG/JPEG/TIFF
//! inspection, workflow YAML, invoice2data templates, rule parameters, multipart intake) is fed
//! arbitrary input and damaged copies of valid input. A panic, a parse that outlives
//! [`BUDGET`] or a broken limit fails the case; proptest then shrinks it and records the seed
//! under `proptest-regressions/`, which is committed so the case is replayed on every run.
//!
//! The number of cases comes from [`CASES_VAR`]: the CI default ([`CI_CASES`]) keeps every
//! property together to a few minutes of a debug build; a long run sets it higher (see the
//! README's "Fuzzing untrusted input").

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::Config;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Environment variable holding the number of cases per property.
pub const CASES_VAR: &str = "IRONCLAD_FUZZ_CASES";

/// Cases per property when [`CASES_VAR`] is unset: small enough for CI.
pub const CI_CASES: u32 = 512;

/// Longest one parse of a small input may take, in a debug build on a busy machine. Inputs
/// here are a few KiB: a parse near this is a hang or an algorithmic bomb, not slowness.
pub const BUDGET: Duration = Duration::from_secs(2);

/// Cases per property: [`CASES_VAR`] if it holds a positive number, else [`CI_CASES`].
pub fn cases() -> u32 {
    std::env::var(CASES_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(CI_CASES)
}

/// The configuration of a property whose cases are cheap (an in-process parse).
pub fn config() -> Config {
    config_scaled(1)
}

/// The configuration of a property whose cases cost about `divisor` cheap ones (an HTTP
/// request, a large document): `cases() / divisor` cases, at least one.
pub fn config_scaled(divisor: u32) -> Config {
    Config {
        cases: (cases() / divisor.max(1)).max(1),
        // Shrinking a hang costs a budget per step; a minute of it is enough to get a
        // readable input without stalling CI.
        max_shrink_time: 60_000,
        ..Config::default()
    }
}

/// Runs `parse` on its own thread (with the default 2 MiB stack of a worker thread) and
/// returns its result, failing the test if it takes longer than [`BUDGET`]. A panic inside
/// is passed on as it is.
///
/// A hung parse cannot be stopped: its thread is left running and the test fails at once.
pub fn within<T: Send + 'static>(what: &str, parse: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let started = Instant::now();
    let worker = std::thread::Builder::new()
        .name(format!("fuzz: {what}"))
        .spawn(move || {
            let out = parse();
            let _ = tx.send(out);
        })
        .unwrap_or_else(|e| panic!("cannot start a thread for {what}: {e}"));
    match rx.recv_timeout(BUDGET) {
        Ok(out) => {
            let _ = worker.join();
            out
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => match worker.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("the worker sends before it ends"),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => panic!(
            "{what} took more than {:?} (a hang?); still running after {:?}",
            BUDGET,
            started.elapsed()
        ),
    }
}

/// One change to a seed. Positions are [`Index`]es, so an edit stays meaningful (and
/// shrinks) whatever the seed's length.
#[derive(Debug, Clone)]
pub enum Edit {
    /// Overwrite one byte.
    Set(Index, u8),
    /// Flip one bit of one byte.
    Flip(Index, u8),
    /// Insert bytes (random ones, or a token of the format's dictionary).
    Insert(Index, Vec<u8>),
    /// Remove up to this many bytes.
    Remove(Index, u8),
    /// Cut the file here, as an interrupted upload does.
    Truncate(Index),
    /// Repeat a run of up to `len` bytes `times` times (loops, repeated structures).
    Repeat(Index, u8, u8),
    /// Overwrite four bytes with a boundary value (a length, an offset, a count), in either
    /// byte order.
    Word(Index, u32, bool),
}

/// Boundary values for the lengths, offsets and counts formats declare.
fn boundary_word() -> impl Strategy<Value = u32> {
    prop_oneof![
        Just(0),
        Just(1),
        Just(u32::MAX),
        Just(0x7fff_ffff),
        Just(0x8000_0000),
        Just(0xffff),
        Just(0x1_0000),
        0u32..64,
        any::<u32>(),
    ]
}

/// One edit; inserted bytes come from `dictionary` half of the time when it is not empty.
pub fn edit(dictionary: &'static [&'static [u8]]) -> impl Strategy<Value = Edit> {
    let insert = if dictionary.is_empty() {
        proptest::collection::vec(any::<u8>(), 1..16).boxed()
    } else {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 1..16),
            proptest::sample::select(dictionary).prop_map(<[u8]>::to_vec),
        ]
        .boxed()
    };
    prop_oneof![
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Edit::Set(i, b)),
        (any::<Index>(), 0u8..8).prop_map(|(i, b)| Edit::Flip(i, b)),
        (any::<Index>(), insert).prop_map(|(i, b)| Edit::Insert(i, b)),
        (any::<Index>(), 1u8..32).prop_map(|(i, n)| Edit::Remove(i, n)),
        any::<Index>().prop_map(Edit::Truncate),
        (any::<Index>(), 1u8..64, 1u8..32).prop_map(|(i, n, k)| Edit::Repeat(i, n, k)),
        (any::<Index>(), boundary_word(), any::<bool>())
            .prop_map(|(i, w, be)| Edit::Word(i, w, be)),
    ]
}

/// `seed` with `edits` applied in order.
pub fn apply(seed: &[u8], edits: &[Edit]) -> Vec<u8> {
    let mut out = seed.to_vec();
    for edit in edits {
        // Indexes into the current bytes (one past the end is a valid insertion point).
        let at = |i: &Index, out: &Vec<u8>| i.index(out.len() + 1);
        match edit {
            Edit::Set(i, b) if !out.is_empty() => {
                let k = i.index(out.len());
                out[k] = *b;
            }
            Edit::Flip(i, bit) if !out.is_empty() => {
                let k = i.index(out.len());
                out[k] ^= 1 << bit;
            }
            Edit::Insert(i, bytes) => {
                let k = at(i, &out);
                out.splice(k..k, bytes.iter().copied());
            }
            Edit::Remove(i, n) => {
                let k = at(i, &out);
                let end = (k + usize::from(*n)).min(out.len());
                out.drain(k..end);
            }
            Edit::Truncate(i) => {
                let k = at(i, &out);
                out.truncate(k);
            }
            Edit::Repeat(i, len, times) => {
                let k = at(i, &out);
                let end = (k + usize::from(*len)).min(out.len());
                let run = out[k..end].to_vec();
                for _ in 0..*times {
                    out.splice(end..end, run.iter().copied());
                }
            }
            Edit::Word(i, w, big_endian) if out.len() >= 4 => {
                let k = i.index(out.len() - 3);
                let bytes = if *big_endian {
                    w.to_be_bytes()
                } else {
                    w.to_le_bytes()
                };
                out[k..k + 4].copy_from_slice(&bytes);
            }
            _ => {}
        }
    }
    out
}

/// Damaged copies of one of `seeds`: one to eight edits, inserting from `dictionary`.
pub fn damaged(
    seeds: Vec<Vec<u8>>,
    dictionary: &'static [&'static [u8]],
) -> impl Strategy<Value = Vec<u8>> {
    assert!(!seeds.is_empty(), "damaged() needs at least one seed");
    (
        any::<Index>(),
        proptest::collection::vec(edit(dictionary), 1..8),
    )
        .prop_map(move |(which, edits)| apply(&seeds[which.index(seeds.len())], &edits))
}

/// Damaged copies of text seeds, as text (invalid UTF-8 replaced, as a text upload would be
/// refused or decoded before parsing).
pub fn damaged_text(
    seeds: Vec<String>,
    dictionary: &'static [&'static [u8]],
) -> impl Strategy<Value = String> {
    damaged(
        seeds.into_iter().map(String::into_bytes).collect(),
        dictionary,
    )
    .prop_map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

/// Documents made of `pieces` of a format's syntax, joined by whitespace: random structure
/// that gets past a parser's first checks far more often than random bytes.
pub fn soup(pieces: &'static [&'static str], max_pieces: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(
        (
            proptest::sample::select(pieces),
            prop_oneof![Just(" "), Just("\n"), Just("")],
        ),
        0..max_pieces,
    )
    .prop_map(|parts| {
        parts
            .into_iter()
            .flat_map(|(piece, sep)| [piece, sep])
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest! {
        #[test]
        fn edits_stay_in_bounds(
            seed in proptest::collection::vec(any::<u8>(), 0..64),
            edits in proptest::collection::vec(edit(&[b"token"]), 0..8),
        ) {
            // Growth is bounded by the edits: at most 16 inserted or 63 × 31 repeated each.
            let out = apply(&seed, &edits);
            prop_assert!(out.len() <= seed.len() + edits.len() * 64 * 32);
        }
    }

    #[test]
    fn within_returns_the_value_and_passes_panics_on() {
        assert_eq!(within("add", || 2 + 2), 4);
        let caught = std::panic::catch_unwind(|| within("boom", || panic!("boom")));
        assert!(caught.is_err());
    }

    #[test]
    fn cases_default() {
        if std::env::var_os(CASES_VAR).is_none() {
            assert_eq!(cases(), CI_CASES);
            assert_eq!(config_scaled(16).cases, CI_CASES / 16);
        }
    }
}
