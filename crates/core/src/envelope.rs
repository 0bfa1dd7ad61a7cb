//! The stream message: a small, typed, versioned pointer to a job.
//!
//! It carries identities only. The worker reads everything else (the blob, the attempt, the
//! status) from PostgreSQL, so a forged or stale message can at worst name a job, never a file
//! path or URL, and the conditional claim decides whether anything runs.

use crate::ids::{CaseId, JobId};
use crate::job::JobKind;
use serde::{Deserialize, Serialize};

/// Version written by this build.
pub const ENVELOPE_VERSION: u32 = 1;

/// Largest message body accepted; a real envelope is ~150 bytes.
pub const MAX_ENVELOPE_BYTES: usize = 4096;

/// A message announcing that a job is due.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    /// Format version.
    pub v: u32,
    /// The job to run.
    pub job_id: JobId,
    /// The case the job belongs to (checked against the stored job).
    pub case_id: CaseId,
    /// The kind of the job (checked against the stored job).
    pub kind: JobKind,
    /// The attempt this message announces (informational; the database decides).
    pub attempt: i32,
}

/// Why a message could not be read.
#[derive(Debug, thiserror::Error)]
pub enum EnvelopeError {
    /// Larger than [`MAX_ENVELOPE_BYTES`].
    #[error("message of {0} bytes exceeds the {MAX_ENVELOPE_BYTES}-byte limit")]
    TooLarge(usize),
    /// Not JSON of the expected shape.
    #[error("unparsable message: {0}")]
    Malformed(#[from] serde_json::Error),
    /// A version this build does not know.
    #[error("unsupported message version {0}")]
    UnsupportedVersion(u32),
}

impl Envelope {
    /// A version-1 envelope for a job attempt.
    pub fn new(job_id: JobId, case_id: CaseId, kind: JobKind, attempt: i32) -> Self {
        Self {
            v: ENVELOPE_VERSION,
            job_id,
            case_id,
            kind,
            attempt,
        }
    }

    /// Serialises the envelope (infallible for this shape).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Parses and checks a message body.
    pub fn parse(body: &[u8]) -> Result<Self, EnvelopeError> {
        if body.len() > MAX_ENVELOPE_BYTES {
            return Err(EnvelopeError::TooLarge(body.len()));
        }
        let envelope: Envelope = serde_json::from_slice(body)?;
        if envelope.v != ENVELOPE_VERSION {
            return Err(EnvelopeError::UnsupportedVersion(envelope.v));
        }
        Ok(envelope)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let e = Envelope::new(JobId::new(), CaseId::new(), JobKind::ProcessSource, 2);
        assert_eq!(Envelope::parse(e.to_json().as_bytes()).ok(), Some(e));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for body in [&b""[..], b"{", b"null", b"\xff\xfe", br#"{"v":1}"#] {
            assert!(Envelope::parse(body).is_err());
        }
        let future = r#"{"v":2,"job_id":"0190a4a0-0000-7000-8000-000000000000","case_id":"0190a4a0-0000-7000-8000-000000000000","kind":"process_source","attempt":1}"#;
        assert!(matches!(
            Envelope::parse(future.as_bytes()),
            Err(EnvelopeError::UnsupportedVersion(2))
        ));
        assert!(matches!(
            Envelope::parse(&vec![b' '; 5000]),
            Err(EnvelopeError::TooLarge(5000))
        ));
    }

    #[test]
    fn unknown_fields_are_refused() {
        let body = r#"{"v":1,"job_id":"0190a4a0-0000-7000-8000-000000000000","case_id":"0190a4a0-0000-7000-8000-000000000000","kind":"process_source","attempt":1,"path":"/etc/passwd"}"#;
        assert!(Envelope::parse(body.as_bytes()).is_err());
    }
}
