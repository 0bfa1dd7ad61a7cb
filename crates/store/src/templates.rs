//! invoice2data template sets, versioned: loading changed files mints the next version,
//! loading the same files again returns the existing one. Cases record the set they ran with.

use crate::{Store, StoreError, StoreResult};
use sha2::{Digest, Sha256};
use uuid::Uuid;

/// One template file of a set.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TemplateFile {
    /// Its path under the loaded directory.
    pub name: String,
    /// Its text.
    pub yaml: String,
}

/// A stored template set version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateSetVersion {
    /// Row id.
    pub id: Uuid,
    /// Version (1, 2, …).
    pub version: i32,
    /// sha256 over the files' names and contents.
    pub sha256: String,
    /// The files, in name order.
    pub files: Vec<TemplateFile>,
}

#[derive(sqlx::FromRow)]
struct Row {
    id: Uuid,
    version: i32,
    sha256: String,
    files: sqlx::types::Json<Vec<TemplateFile>>,
}

impl From<Row> for TemplateSetVersion {
    fn from(r: Row) -> Self {
        TemplateSetVersion {
            id: r.id,
            version: r.version,
            sha256: r.sha256,
            files: r.files.0,
        }
    }
}

/// Inserts the next version unless these exact files are stored already.
const SET_LOAD: &str = r#"
INSERT INTO template_sets (id, version, sha256, files, template_count)
SELECT $1, coalesce((SELECT max(version) FROM template_sets), 0) + 1, $2, $3, $4
ON CONFLICT (sha256) DO NOTHING
RETURNING id
"#;
const SET_BY_SHA: &str = "SELECT id, version, sha256, files FROM template_sets WHERE sha256 = $1";
const SET_BY_ID: &str = "SELECT id, version, sha256, files FROM template_sets WHERE id = $1";
const SET_LATEST_ID: &str = "SELECT id FROM template_sets ORDER BY version DESC LIMIT 1";
const CASE_PIN_SET: &str =
    "UPDATE cases SET template_set_id = $2 WHERE id = $1 AND template_set_id IS NULL";
const CASE_SET: &str = "SELECT template_set_id FROM cases WHERE id = $1";

/// sha256 over each file's name and text, each followed by a NUL, in the order given.
fn digest(files: &[TemplateFile]) -> String {
    let mut hash = Sha256::new();
    for f in files {
        hash.update(f.name.as_bytes());
        hash.update([0]);
        hash.update(f.yaml.as_bytes());
        hash.update([0]);
    }
    hex::encode(hash.finalize())
}

impl Store {
    /// Stores a (validated) template set; returns its version and whether it is new. Files
    /// are stored in name order, so the same directory is the same version however listed.
    pub async fn load_template_set(
        &self,
        mut files: Vec<TemplateFile>,
    ) -> StoreResult<(TemplateSetVersion, bool)> {
        files.sort_by(|a, b| a.name.cmp(&b.name));
        let sha = digest(&files);
        let count = i32::try_from(files.len()).unwrap_or(i32::MAX);
        let json = sqlx::types::Json(&files);
        // Two loads racing for the same next version: one wins, the other tries again.
        for _ in 0..3 {
            let inserted = sqlx::query_scalar::<_, Uuid>(SET_LOAD)
                .bind(Uuid::now_v7())
                .bind(&sha)
                .bind(json)
                .bind(count)
                .fetch_optional(self.pool())
                .await;
            match inserted {
                Ok(created) => {
                    let row: Row = sqlx::query_as(SET_BY_SHA)
                        .bind(&sha)
                        .fetch_one(self.pool())
                        .await?;
                    return Ok((row.into(), created.is_some()));
                }
                Err(err) => {
                    let err = StoreError::from(err);
                    if err.conflict_constraint() != Some("template_sets_version_key") {
                        return Err(err);
                    }
                }
            }
        }
        Err(StoreError::Corrupt(
            "could not allocate a version for the template set".into(),
        ))
    }

    /// One stored version.
    pub async fn template_set_by_id(&self, id: Uuid) -> StoreResult<Option<TemplateSetVersion>> {
        let row: Option<Row> = sqlx::query_as(SET_BY_ID)
            .bind(id)
            .fetch_optional(self.pool())
            .await?;
        Ok(row.map(Into::into))
    }

    /// The set a case reads with: the one it is pinned to, else the newest, which is pinned
    /// now (first writer wins, and the winner is returned). `None` while no set is loaded.
    pub async fn case_template_set(
        &self,
        case: ironclad_core::CaseId,
    ) -> StoreResult<Option<Uuid>> {
        let latest: Option<Uuid> = sqlx::query_scalar(SET_LATEST_ID)
            .fetch_optional(self.pool())
            .await?;
        if let Some(latest) = latest {
            sqlx::query(CASE_PIN_SET)
                .bind(case.0)
                .bind(latest)
                .execute(self.pool())
                .await?;
        }
        // A statement of its own: its snapshot sees whichever pin won.
        let pinned: Option<Option<Uuid>> = sqlx::query_scalar(CASE_SET)
            .bind(case.0)
            .fetch_optional(self.pool())
            .await?;
        Ok(pinned.flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_separates_names_from_contents() {
        let f = |name: &str, yaml: &str| TemplateFile {
            name: name.into(),
            yaml: yaml.into(),
        };
        assert_ne!(digest(&[f("a", "bc")]), digest(&[f("ab", "c")]));
        assert_eq!(digest(&[f("a", "x")]), digest(&[f("a", "x")]));
    }
}
