//! Desk users and their browser sessions.
//!
//! The store keeps password hashes (PHC strings made by the API's password module; it never
//! sees a password) and sessions by the sha256 of their cookie token. Resolving a session is
//! one guarded statement that also slides its idle expiry, capped by its absolute lifetime,
//! so an expired or disabled user's session can never be renewed by a race.

use crate::tenants::{hash_key, Credential, Principal};
use crate::{Store, StoreResult};
use chrono::{DateTime, Utc};
use ironclad_core::audit::AuditEventType;
use ironclad_core::role::Role;
use ironclad_core::TenantId;
use rand::Rng;
use serde::Serialize;
use std::time::Duration;
use uuid::Uuid;

/// A desk user as an admin sees them (never the hash).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UserInfo {
    /// The user's id.
    pub id: Uuid,
    /// Their tenant.
    pub tenant_id: Uuid,
    /// Their sign-in address.
    pub email: String,
    /// Their role.
    pub role: Role,
    /// When they were created.
    pub created_at: DateTime<Utc>,
    /// When they were disabled.
    pub disabled_at: Option<DateTime<Utc>>,
}

/// What sign-in needs to check a password: the user and their stored hash.
#[derive(Debug, Clone)]
pub struct Credentials {
    /// The user.
    pub user: UserInfo,
    /// Their argon2 PHC string.
    pub password_hash: String,
}

/// A session just started: the raw cookie token exists only here.
#[derive(Debug, Clone)]
pub struct NewSession {
    /// The cookie's value.
    pub token: String,
    /// The CSRF token of this session.
    pub csrf_token: String,
}

/// A live session, resolved from its cookie.
#[derive(Debug, Clone)]
pub struct Session {
    /// Who, as every route sees callers.
    pub principal: Principal,
    /// The user's address, for the page header.
    pub email: String,
    /// The token forms and unsafe calls must echo.
    pub csrf_token: String,
    /// When it ends if unused.
    pub expires_at: DateTime<Utc>,
}

/// How long sessions live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionPolicy {
    /// Unused this long, a session ends.
    pub idle: Duration,
    /// However used, a session ends this long after sign-in.
    pub lifetime: Duration,
}

/// Why a user could not be created.
#[derive(Debug, thiserror::Error)]
pub enum UserError {
    /// Another account has this address (compared case-insensitively).
    #[error("a user with this email already exists")]
    EmailTaken,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] crate::StoreError),
}

type UserRow = (
    Uuid,
    Uuid,
    String,
    String,
    DateTime<Utc>,
    Option<DateTime<Utc>>,
);

fn user_from(
    (id, tenant_id, email, role, created_at, disabled_at): UserRow,
) -> StoreResult<UserInfo> {
    Ok(UserInfo {
        id,
        tenant_id,
        email,
        role: role.parse()?,
        created_at,
        disabled_at,
    })
}

/// The user and their USER_CREATED event in one statement; no row when the address is taken.
const USER_CREATE: &str = r#"
WITH created AS (
    INSERT INTO users (id, tenant_id, email, role, password_hash) VALUES ($1, $2, $3, $4, $5)
    ON CONFLICT DO NOTHING
    RETURNING id, tenant_id, email, role, created_at, disabled_at
), audit AS (
    INSERT INTO audit_events (tenant_id, actor, event_type, data)
    SELECT tenant_id, $6, $7, jsonb_build_object('user_id', id, 'email', email, 'role', role)
    FROM created
)
SELECT id, tenant_id, email, role, created_at, disabled_at FROM created
"#;
const USER_CREDENTIALS: &str = "SELECT id, tenant_id, email, role, created_at, disabled_at, \
     password_hash FROM users WHERE lower(email) = lower($1) AND disabled_at IS NULL";
const USERS_OF_TENANT: &str = "SELECT id, tenant_id, email, role, created_at, disabled_at \
     FROM users WHERE tenant_id = $1 ORDER BY created_at, id";
/// Disables a live user, ends their sessions and records USER_DISABLED, in one statement.
const USER_DISABLE: &str = r#"
WITH disabled AS (
    UPDATE users SET disabled_at = now()
    WHERE id = $1 AND tenant_id = $2 AND disabled_at IS NULL
    RETURNING id, tenant_id, email, role, created_at, disabled_at
), ended AS (
    DELETE FROM sessions WHERE user_id IN (SELECT id FROM disabled)
), audit AS (
    INSERT INTO audit_events (tenant_id, actor, event_type, data)
    SELECT tenant_id, $3, $4, jsonb_build_object('user_id', id, 'email', email) FROM disabled
)
SELECT id, tenant_id, email, role, created_at, disabled_at FROM disabled
"#;
const SESSION_CREATE: &str = "INSERT INTO sessions (token_hash, user_id, csrf_token, expires_at) \
     VALUES ($1, $2, $3, now() + make_interval(secs => $4))";
/// Resolves a live session of an enabled user and slides its idle expiry, never past its
/// absolute end ($3 lifetime seconds). $2 idle seconds.
const SESSION_RESOLVE: &str = r#"
UPDATE sessions s SET last_seen_at = now(),
    expires_at = least(now() + make_interval(secs => $2),
                       s.created_at + make_interval(secs => $3))
FROM users u
WHERE s.token_hash = $1 AND s.expires_at > now() AND u.id = s.user_id AND u.disabled_at IS NULL
RETURNING u.id, u.tenant_id, u.role, u.email, s.csrf_token, s.expires_at
"#;
const SESSION_END: &str = "DELETE FROM sessions WHERE token_hash = $1";
const SESSIONS_SWEEP: &str = "DELETE FROM sessions WHERE expires_at <= now()";
const USER_EMAILS: &str = "SELECT id, email FROM users WHERE tenant_id = $1 AND id = ANY($2)";

fn random_token(prefix: &str) -> String {
    let secret: [u8; 32] = rand::rng().random();
    format!("{prefix}{}", hex::encode(secret))
}

impl Store {
    /// Creates a desk user with an already hashed password, recording USER_CREATED by `actor`.
    pub async fn create_user(
        &self,
        tenant: TenantId,
        email: &str,
        role: Role,
        password_hash: &str,
        actor: &str,
    ) -> Result<UserInfo, UserError> {
        let row: Option<UserRow> = sqlx::query_as(USER_CREATE)
            .bind(Uuid::now_v7())
            .bind(tenant.0)
            .bind(crate::storable(email.trim()).as_ref())
            .bind(role.as_str())
            .bind(password_hash)
            .bind(crate::storable(actor).as_ref())
            .bind(AuditEventType::UserCreated.as_str())
            .fetch_optional(self.pool())
            .await
            .map_err(crate::StoreError::from)?;
        match row {
            Some(row) => Ok(user_from(row)?),
            None => Err(UserError::EmailTaken),
        }
    }

    /// The enabled user signing in as `email` with their hash; `None` when there is none.
    pub async fn user_credentials(&self, email: &str) -> StoreResult<Option<Credentials>> {
        type Row = (
            Uuid,
            Uuid,
            String,
            String,
            DateTime<Utc>,
            Option<DateTime<Utc>>,
            String,
        );
        let row: Option<Row> = sqlx::query_as(USER_CREDENTIALS)
            .bind(email.trim())
            .fetch_optional(self.pool())
            .await?;
        row.map(|(id, tenant, email, role, created, disabled, hash)| {
            Ok(Credentials {
                user: user_from((id, tenant, email, role, created, disabled))?,
                password_hash: hash,
            })
        })
        .transpose()
    }

    /// The tenant's users, oldest first.
    pub async fn users_of(&self, tenant: TenantId) -> StoreResult<Vec<UserInfo>> {
        let rows: Vec<UserRow> = sqlx::query_as(USERS_OF_TENANT)
            .bind(tenant.0)
            .fetch_all(self.pool())
            .await?;
        rows.into_iter().map(user_from).collect()
    }

    /// Disables a user of `tenant` and ends their sessions; `None` when no live user of that
    /// tenant has this id.
    pub async fn disable_user(
        &self,
        tenant: TenantId,
        user: Uuid,
        actor: &str,
    ) -> StoreResult<Option<UserInfo>> {
        let row: Option<UserRow> = sqlx::query_as(USER_DISABLE)
            .bind(user)
            .bind(tenant.0)
            .bind(crate::storable(actor).as_ref())
            .bind(AuditEventType::UserDisabled.as_str())
            .fetch_optional(self.pool())
            .await?;
        row.map(user_from).transpose()
    }

    /// Starts a session for `user`; the returned token is the cookie, never stored.
    pub async fn start_session(
        &self,
        user: Uuid,
        policy: SessionPolicy,
    ) -> StoreResult<NewSession> {
        let token = random_token("ics_");
        let csrf_token = random_token("");
        sqlx::query(SESSION_CREATE)
            .bind(hash_key(&token))
            .bind(user)
            .bind(&csrf_token)
            .bind(crate::secs(policy.idle.min(policy.lifetime)))
            .execute(self.pool())
            .await?;
        Ok(NewSession { token, csrf_token })
    }

    /// The live session whose cookie is `token`, its idle expiry moved on; `None` when it
    /// is unknown, expired, signed out or its user disabled.
    pub async fn resolve_session(
        &self,
        token: &str,
        policy: SessionPolicy,
    ) -> StoreResult<Option<Session>> {
        type Row = (Uuid, Uuid, String, String, String, DateTime<Utc>);
        let row: Option<Row> = sqlx::query_as(SESSION_RESOLVE)
            .bind(hash_key(token))
            .bind(crate::secs(policy.idle))
            .bind(crate::secs(policy.lifetime))
            .fetch_optional(self.pool())
            .await?;
        row.map(|(user, tenant, role, email, csrf_token, expires_at)| {
            Ok(Session {
                principal: Principal {
                    tenant_id: TenantId(tenant),
                    role: role.parse()?,
                    key_id: user,
                    credential: Credential::User,
                },
                email,
                csrf_token,
                expires_at,
            })
        })
        .transpose()
    }

    /// Ends the session whose cookie is `token` (sign-out); ending it twice changes nothing.
    pub async fn end_session(&self, token: &str) -> StoreResult<()> {
        sqlx::query(SESSION_END)
            .bind(hash_key(token))
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Deletes expired sessions; returns how many.
    pub async fn sweep_sessions(&self) -> StoreResult<u64> {
        Ok(sqlx::query(SESSIONS_SWEEP)
            .execute(self.pool())
            .await?
            .rows_affected())
    }

    /// The addresses of the tenant's users among `ids` (to name actors on a timeline).
    pub async fn user_emails(
        &self,
        tenant: TenantId,
        ids: &[Uuid],
    ) -> StoreResult<Vec<(Uuid, String)>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        Ok(sqlx::query_as(USER_EMAILS)
            .bind(tenant.0)
            .bind(ids)
            .fetch_all(self.pool())
            .await?)
    }
}
