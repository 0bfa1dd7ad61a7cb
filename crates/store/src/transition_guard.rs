//! For tests only: a database that records every status transition its cases and jobs make,
//! and refuses one that `ironclad-core`'s tables (`CaseStatus::can_become`,
//! `JobStatus::can_become`) do not allow.
//!
//! The tables are the truth the design documents; the SQL statements must keep to them. Rather
//! than keep a third list, a test database carries triggers that check each UPDATE against the
//! tables as Rust computes them: a statement that makes a transition the tables do not know fails
//! with the pair named, in whichever test first makes it. `ironclad-testkit` installs the guard
//! on every database it creates, so the whole suite's scenarios are checked; production databases
//! never have it (it is not a migration).
//!
//! What counts as a transition: a case whose status or generation changes (a reprocess of a
//! PROCESSING case is PROCESSING → PROCESSING in a new generation), a job whose status or attempt
//! changes (a claim after a lapsed lease is RUNNING → RUNNING with the next attempt). A renewal, a
//! reason written, a retry's new due time are not.

use ironclad_core::{CaseStatus, JobStatus};

use crate::{Store, StoreResult};

/// Tables, functions and triggers of the guard, created in the `public` schema of a test
/// database. $1/$2 the allowed case transitions (old, new), $3/$4 the allowed job transitions.
const INSTALL: [&str; 7] = [
    "CREATE TABLE IF NOT EXISTS test_allowed_transitions (
        entity text NOT NULL, old_status text NOT NULL, new_status text NOT NULL,
        PRIMARY KEY (entity, old_status, new_status))",
    "CREATE TABLE IF NOT EXISTS test_transitions (
        entity text NOT NULL, id uuid NOT NULL, old_status text NOT NULL,
        new_status text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())",
    r#"CREATE OR REPLACE FUNCTION test_guard_transition() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF NOT EXISTS (SELECT 1 FROM test_allowed_transitions a
                       WHERE a.entity = TG_ARGV[0] AND a.old_status = OLD.status
                         AND a.new_status = NEW.status) THEN
            RAISE EXCEPTION 'transition guard: % % -> % is not in ironclad-core''s table',
                TG_ARGV[0], OLD.status, NEW.status;
        END IF;
        INSERT INTO test_transitions (entity, id, old_status, new_status)
        VALUES (TG_ARGV[0], NEW.id, OLD.status, NEW.status);
        RETURN NEW;
    END $$"#,
    "DROP TRIGGER IF EXISTS test_guard_case ON cases",
    "CREATE TRIGGER test_guard_case BEFORE UPDATE ON cases FOR EACH ROW
        WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.generation <> NEW.generation)
        EXECUTE FUNCTION test_guard_transition('case')",
    "DROP TRIGGER IF EXISTS test_guard_job ON jobs",
    "CREATE TRIGGER test_guard_job BEFORE UPDATE ON jobs FOR EACH ROW
        WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.attempt <> NEW.attempt)
        EXECUTE FUNCTION test_guard_transition('job')",
];

const REMOVE: [&str; 2] = [
    "DROP TRIGGER IF EXISTS test_guard_case ON cases",
    "DROP TRIGGER IF EXISTS test_guard_job ON jobs",
];

const ALLOW: &str = r#"
INSERT INTO test_allowed_transitions (entity, old_status, new_status)
SELECT 'case', o, n FROM unnest($1::text[], $2::text[]) AS t(o, n)
UNION ALL
SELECT 'job', o, n FROM unnest($3::text[], $4::text[]) AS t(o, n)
ON CONFLICT DO NOTHING
"#;

/// Every transition recorded so far: (entity, old status, new status), each pair once.
const RECORDED: &str = r#"
SELECT DISTINCT entity, old_status, new_status FROM test_transitions ORDER BY 1, 2, 3
"#;

/// A table's transitions as two parallel columns of spellings.
fn columns<S>(pairs: Vec<(S, S)>, name: impl Fn(S) -> &'static str) -> (Vec<String>, Vec<String>) {
    pairs
        .into_iter()
        .map(|(old, new)| (name(old).to_owned(), name(new).to_owned()))
        .unzip()
}

impl Store {
    /// Installs the transition guard (see the module documentation). For test databases only.
    pub async fn install_transition_guard(&self) -> StoreResult<()> {
        let mut tx = self.pool().begin().await?;
        for statement in INSTALL {
            sqlx::query(statement).execute(&mut *tx).await?;
        }
        let (case_old, case_new) = columns(CaseStatus::transitions(), CaseStatus::as_str);
        let (job_old, job_new) = columns(JobStatus::transitions(), JobStatus::as_str);
        sqlx::query(ALLOW)
            .bind(case_old)
            .bind(case_new)
            .bind(job_old)
            .bind(job_new)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Takes the guard off again: for a test of the schema's own CHECKs, which sets statuses
    /// directly in orders no scenario follows.
    pub async fn remove_transition_guard(&self) -> StoreResult<()> {
        for statement in REMOVE {
            sqlx::query(statement).execute(self.pool()).await?;
        }
        Ok(())
    }

    /// The transitions the guard recorded, each (entity, old, new) once.
    pub async fn recorded_transitions(&self) -> StoreResult<Vec<(String, String, String)>> {
        Ok(sqlx::query_as(RECORDED).fetch_all(self.pool()).await?)
    }
}
