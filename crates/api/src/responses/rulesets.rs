//! Managed rulesets: one, a list, a new DRAFT with its validation, and a diff.

use chrono::{DateTime, Utc};
use ironclad_core::rules::{CompiledRuleset, RuleIssue};
use ironclad_documents::rules;
use ironclad_store::rulesets;
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

/// One stored ruleset.
#[derive(Debug, Serialize, ToSchema)]
pub struct RulesetRow {
    /// Id.
    pub id: Uuid,
    /// The workflow name its rules are written for.
    pub workflow: String,
    /// 1, 2, … per (tenant, workflow).
    pub version: i32,
    /// DRAFT, ACTIVE or RETIRED.
    pub status: String,
    /// `{rules, policy}` as written.
    pub spec: serde_json::Value,
    /// sha256 of the spec's JSON text.
    pub sha256: String,
    /// Who created it.
    pub created_by: String,
    /// When.
    pub created_at: DateTime<Utc>,
    /// Who activated it.
    pub activated_by: Option<String>,
    /// When.
    pub activated_at: Option<DateTime<Utc>>,
    /// Why.
    pub activation_comment: Option<String>,
    /// When it was replaced.
    pub retired_at: Option<DateTime<Utc>>,
}

impl From<rulesets::RulesetRow> for RulesetRow {
    fn from(r: rulesets::RulesetRow) -> Self {
        Self {
            id: r.id,
            workflow: r.workflow,
            version: r.version,
            status: r.status,
            spec: r.spec,
            sha256: r.sha256,
            created_by: r.created_by,
            created_at: r.created_at,
            activated_by: r.activated_by,
            activated_at: r.activated_at,
            activation_comment: r.activation_comment,
            retired_at: r.retired_at,
        }
    }
}

/// One ruleset (`GET /v1/rulesets/{id}`, activation).
#[derive(Debug, Serialize, ToSchema)]
pub struct RulesetOne {
    /// The ruleset.
    pub ruleset: RulesetRow,
}

/// The tenant's rulesets.
#[derive(Debug, Serialize, ToSchema)]
pub struct RulesetList {
    /// Newest version first.
    pub rulesets: Vec<RulesetRow>,
}

/// A new DRAFT and whether it is valid against its workflow.
#[derive(Debug, Serialize, ToSchema)]
pub struct RulesetCreated {
    /// The DRAFT stored.
    pub ruleset: RulesetRow,
    /// Its validation.
    pub validation: Validation,
}

/// Whether a ruleset is valid against its workflow's latest version.
#[derive(Debug, Serialize, ToSchema)]
pub struct Validation {
    /// True when it can be activated.
    pub valid: bool,
    /// How many rules it has (valid rulesets only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rules: Option<u32>,
    /// Every problem found.
    pub issues: Vec<RuleIssueView>,
}

impl From<Result<CompiledRuleset, Vec<RuleIssue>>> for Validation {
    fn from(checked: Result<CompiledRuleset, Vec<RuleIssue>>) -> Self {
        match checked {
            Ok(ruleset) => Self {
                valid: true,
                rules: Some(u32::try_from(ruleset.rules.len()).unwrap_or(u32::MAX)),
                issues: Vec::new(),
            },
            Err(issues) => Self {
                valid: false,
                rules: None,
                issues: issues.iter().map(RuleIssueView::from).collect(),
            },
        }
    }
}

/// One problem of a ruleset.
#[derive(Debug, Serialize, ToSchema)]
pub struct RuleIssueView {
    /// Where in the spec.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl From<&RuleIssue> for RuleIssueView {
    fn from(issue: &RuleIssue) -> Self {
        Self {
            path: issue.path.clone(),
            message: issue.message.clone(),
        }
    }
}

/// What changed between two rulesets.
#[derive(Debug, Serialize, ToSchema)]
pub struct RulesetDiff {
    /// The ruleset asked about.
    pub ruleset: RulesetVersion,
    /// What it is compared with; `null` when there is nothing before it.
    pub against: Option<RulesetVersion>,
    /// The rules added, removed and changed.
    #[schema(value_type = Object)]
    pub diff: rules::RulesetDiff,
}

/// A ruleset named by id and version.
#[derive(Debug, Serialize, ToSchema)]
pub struct RulesetVersion {
    /// Id.
    pub id: Uuid,
    /// Version.
    pub version: i32,
    /// DRAFT, ACTIVE or RETIRED (only for the ruleset compared with).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

impl RulesetVersion {
    /// The ruleset asked about: id and version.
    pub fn of(row: &rulesets::RulesetRow) -> Self {
        Self {
            id: row.id,
            version: row.version,
            status: None,
        }
    }

    /// The ruleset compared with: id, version and status.
    pub fn with_status(row: &rulesets::RulesetRow) -> Self {
        Self {
            status: Some(row.status.clone()),
            ..Self::of(row)
        }
    }
}
