//! Property tests feeding every parser of untrusted input random and damaged input (see the
//! crate docs and the README's "Fuzzing untrusted input"). One binary, one module per
//! parser family; failures shrink into `../proptest-regressions/<module>.txt`.

mod documents;
mod rules;
mod templates;
mod workflows;
