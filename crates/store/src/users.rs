//! Desk users and their browser sessions.
//!
//! The store keeps password hashes (PHC strings made by the API's password module; it never
//! sees a password) and sessions by the sha256 of their cookie token. Resolving a session
//! reads it; only a person's activity ([`SessionUse::Active`]) slides its idle expiry, by one
//! guarded statement capped by its absolute lifetime, so an expired or disabled user's session
//! can never be renewed by a race, and an unknown cookie or a background poll writes nothing.

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
    /// How they are named to others (set by an admin); `None`: their address.
    pub display_name: Option<String>,
    /// Their password was set by someone else and must be changed at the next sign-in.
    pub must_change_password: bool,
}

impl UserInfo {
    /// How the desk names them: their display name, else their address.
    pub fn name(&self) -> &str {
        self.display_name.as_deref().unwrap_or(&self.email)
    }
}

/// A user to create: the store receives the hash, never the password.
#[derive(Debug, Clone)]
pub struct NewUser<'a> {
    /// The address they sign in with.
    pub email: &'a str,
    /// Their role.
    pub role: Role,
    /// The argon2 PHC string of their first password.
    pub password_hash: &'a str,
    /// How they are named to others.
    pub display_name: Option<&'a str>,
    /// Whether someone else chose the password (an admin, a generated one): the user must
    /// change it at their first sign-in.
    pub must_change_password: bool,
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
    /// The user's address.
    pub email: String,
    /// How the page header names them (display name, else address).
    pub name: String,
    /// Their password was set by someone else: every page sends them to change it.
    pub must_change_password: bool,
    /// The token forms and unsafe calls must echo.
    pub csrf_token: String,
    /// When it ends if unused.
    pub expires_at: DateTime<Utc>,
}

/// What a request does with its session, which decides whether it counts as activity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionUse {
    /// A person did something (opened a page, sent a form): the idle expiry moves on.
    Active,
    /// A page's background refresh: the session is checked but nothing is written, so a page
    /// left open does not keep an idle session alive for ever.
    Poll,
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

/// Why a password was not changed; nothing was.
#[derive(Debug, thiserror::Error)]
pub enum PasswordChangeError {
    /// The password changed since it was checked (another session changed it meanwhile), or
    /// the user was disabled.
    #[error("the password was changed meanwhile, or the account is disabled")]
    Stale,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] crate::StoreError),
}

#[derive(sqlx::FromRow)]
struct UserRow {
    id: Uuid,
    tenant_id: Uuid,
    email: String,
    role: String,
    created_at: DateTime<Utc>,
    disabled_at: Option<DateTime<Utc>>,
    display_name: Option<String>,
    must_change_password: bool,
}

fn user_from(r: UserRow) -> StoreResult<UserInfo> {
    Ok(UserInfo {
        id: r.id,
        tenant_id: r.tenant_id,
        email: r.email,
        role: r.role.parse()?,
        created_at: r.created_at,
        disabled_at: r.disabled_at,
        display_name: r.display_name,
        must_change_password: r.must_change_password,
    })
}

/// The columns of [`UserRow`], in every statement that returns users.
macro_rules! user_columns {
    () => {
        "id, tenant_id, email, role, created_at, disabled_at, display_name, must_change_password"
    };
}

/// The user and their USER_CREATED event in one statement; no row when the address is taken.
const USER_CREATE: &str = concat!(
    r#"
WITH created AS (
    INSERT INTO users (id, tenant_id, email, role, password_hash, display_name,
                       must_change_password)
    VALUES ($1, $2, $3, $4, $5, $8, $9)
    ON CONFLICT DO NOTHING
    RETURNING *
), audit AS (
    INSERT INTO audit_events (tenant_id, actor, event_type, data)
    SELECT tenant_id, $6, $7, jsonb_build_object('user_id', id, 'email', email, 'role', role)
    FROM created
)
SELECT "#,
    user_columns!(),
    " FROM created"
);
const USER_CREDENTIALS: &str = concat!(
    "SELECT ",
    user_columns!(),
    ", password_hash FROM users WHERE lower(email) = lower($1) AND disabled_at IS NULL"
);
/// The live user $1 of tenant $2 with their hash (to check a password before changing it).
const USER_CREDENTIALS_BY_ID: &str = concat!(
    "SELECT ",
    user_columns!(),
    ", password_hash FROM users WHERE id = $1 AND tenant_id = $2 AND disabled_at IS NULL"
);
const USERS_OF_TENANT: &str = concat!(
    "SELECT ",
    user_columns!(),
    " FROM users WHERE tenant_id = $1 ORDER BY created_at, id"
);
/// Disables a live user, ends their sessions and records USER_DISABLED, in one statement.
const USER_DISABLE: &str = concat!(
    r#"
WITH disabled AS (
    UPDATE users SET disabled_at = now()
    WHERE id = $1 AND tenant_id = $2 AND disabled_at IS NULL
    RETURNING *
), ended AS (
    DELETE FROM sessions WHERE user_id IN (SELECT id FROM disabled)
), audit AS (
    INSERT INTO audit_events (tenant_id, actor, event_type, data)
    SELECT tenant_id, $3, $4, jsonb_build_object('user_id', id, 'email', email) FROM disabled
)
SELECT "#,
    user_columns!(),
    " FROM disabled"
);
/// A new password for the live user $1 of tenant $2, only if their hash is still $3 (the one
/// the current password was checked against): their other sessions end ($5 is the session
/// kept), the must-change flag clears, USER_PASSWORD_CHANGED is recorded ($6 actor, $7 type).
const USER_PASSWORD_CHANGE: &str = r#"
WITH changed AS (
    UPDATE users SET password_hash = $4, must_change_password = false,
        password_changed_at = now()
    WHERE id = $1 AND tenant_id = $2 AND password_hash = $3 AND disabled_at IS NULL
    RETURNING id, tenant_id, email
), ended AS (
    DELETE FROM sessions WHERE user_id IN (SELECT id FROM changed) AND token_hash <> $5
), audit AS (
    INSERT INTO audit_events (tenant_id, actor, event_type, data)
    SELECT tenant_id, $6, $7, jsonb_build_object('user_id', id, 'email', email) FROM changed
)
SELECT id FROM changed
"#;
const SESSION_CREATE: &str = "INSERT INTO sessions (token_hash, user_id, csrf_token, expires_at) \
     VALUES ($1, $2, $3, now() + make_interval(secs => $4))";
/// The live session $1 of an enabled user, read only: an unknown, expired or signed-out
/// cookie costs one indexed read and writes nothing. `stale` says whether its idle expiry was
/// last moved more than $2 seconds ago.
const SESSION_LOOKUP: &str = r#"
SELECT u.id, u.tenant_id, u.role, u.email, coalesce(u.display_name, u.email),
       u.must_change_password, s.csrf_token, s.expires_at,
       s.last_seen_at < now() - make_interval(secs => $2) AS stale
FROM sessions s JOIN users u ON u.id = s.user_id
WHERE s.token_hash = $1 AND s.expires_at > now() AND u.disabled_at IS NULL
"#;
/// Slides a live session's idle expiry ($2 idle seconds), never past its absolute end ($3
/// lifetime seconds); no row when it ended or its user was disabled meanwhile.
const SESSION_TOUCH: &str = r#"
UPDATE sessions s SET last_seen_at = now(),
    expires_at = least(now() + make_interval(secs => $2),
                       s.created_at + make_interval(secs => $3))
FROM users u
WHERE s.token_hash = $1 AND s.expires_at > now() AND u.id = s.user_id AND u.disabled_at IS NULL
RETURNING s.expires_at
"#;
const SESSION_END: &str = "DELETE FROM sessions WHERE token_hash = $1";
/// Expired sessions, and the once-shown secrets of desk forms nobody came back for ($1 s).
const SESSIONS_SWEEP: &str = r#"
WITH forgotten AS (
    UPDATE desk_forms SET sealed_secret = NULL
    WHERE sealed_secret IS NOT NULL AND created_at < now() - make_interval(secs => $1)
)
DELETE FROM sessions WHERE expires_at <= now()
"#;

/// How long a secret a desk form made waits, sealed, for its page to show it.
pub const SECRET_SHOWN_WITHIN: Duration = Duration::from_secs(600);

/// How often a person's activity moves their session's idle expiry on: at most once a
/// minute (a fifth of the idle time when that is shorter), so a busy page does not write on
/// every request.
fn touch_every(policy: SessionPolicy) -> Duration {
    (policy.idle / 5).min(Duration::from_secs(60))
}

fn random_token(prefix: &str) -> String {
    let secret: [u8; 32] = rand::rng().random();
    format!("{prefix}{}", hex::encode(secret))
}

impl Store {
    /// Creates a desk user with an already hashed password they chose themselves (no name,
    /// no change required), recording USER_CREATED by `actor`.
    pub async fn create_user(
        &self,
        tenant: TenantId,
        email: &str,
        role: Role,
        password_hash: &str,
        actor: &str,
    ) -> Result<UserInfo, UserError> {
        let new = NewUser {
            email,
            role,
            password_hash,
            display_name: None,
            must_change_password: false,
        };
        self.add_user(tenant, &new, actor).await
    }

    /// Creates the desk user `new`, recording USER_CREATED by `actor`.
    pub async fn add_user(
        &self,
        tenant: TenantId,
        new: &NewUser<'_>,
        actor: &str,
    ) -> Result<UserInfo, UserError> {
        let mut conn = self
            .pool()
            .acquire()
            .await
            .map_err(crate::StoreError::from)?;
        add_user_on(&mut conn, tenant, new, actor).await
    }

    /// The enabled user signing in as `email` with their hash; `None` when there is none.
    pub async fn user_credentials(&self, email: &str) -> StoreResult<Option<Credentials>> {
        self.credentials(sqlx::query_as(USER_CREDENTIALS).bind(email.trim()))
            .await
    }

    /// The enabled user `user` of `tenant` with their hash; `None` when there is none.
    pub async fn user_credentials_by_id(
        &self,
        tenant: TenantId,
        user: Uuid,
    ) -> StoreResult<Option<Credentials>> {
        self.credentials(
            sqlx::query_as(USER_CREDENTIALS_BY_ID)
                .bind(user)
                .bind(tenant.0),
        )
        .await
    }

    async fn credentials(
        &self,
        query: sqlx::query::QueryAs<
            '_,
            sqlx::Postgres,
            CredentialsRow,
            sqlx::postgres::PgArguments,
        >,
    ) -> StoreResult<Option<Credentials>> {
        query
            .fetch_optional(self.pool())
            .await?
            .map(|row| {
                Ok(Credentials {
                    user: user_from(row.user)?,
                    password_hash: row.password_hash,
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

    /// Gives `user` of `tenant` the password hashed as `new_hash`, provided their stored hash
    /// is still `checked_hash` (the one their current password was verified against). Their
    /// other sessions end; the session whose cookie is `keep_session` stays. Recorded as
    /// USER_PASSWORD_CHANGED by the user.
    pub async fn change_password(
        &self,
        tenant: TenantId,
        user: Uuid,
        checked_hash: &str,
        new_hash: &str,
        keep_session: &str,
    ) -> Result<(), PasswordChangeError> {
        let changed: Option<Uuid> = sqlx::query_scalar(USER_PASSWORD_CHANGE)
            .bind(user)
            .bind(tenant.0)
            .bind(checked_hash)
            .bind(new_hash)
            .bind(hash_key(keep_session))
            .bind(format!("user:{user}"))
            .bind(AuditEventType::UserPasswordChanged.as_str())
            .fetch_optional(self.pool())
            .await
            .map_err(crate::StoreError::from)?;
        changed.map(|_| ()).ok_or(PasswordChangeError::Stale)
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

    /// The live session whose cookie is `token`; `None` when it is unknown, expired, signed
    /// out or its user disabled. Only [`SessionUse::Active`] moves its idle expiry on, and at
    /// most once per [`touch_every`]; an unknown cookie and a poll write nothing.
    pub async fn resolve_session(
        &self,
        token: &str,
        policy: SessionPolicy,
        how: SessionUse,
    ) -> StoreResult<Option<Session>> {
        type Row = (
            Uuid,
            Uuid,
            String,
            String,
            String,
            bool,
            String,
            DateTime<Utc>,
            bool,
        );
        let token_hash = hash_key(token);
        let row: Option<Row> = sqlx::query_as(SESSION_LOOKUP)
            .bind(&token_hash)
            .bind(crate::secs(touch_every(policy)))
            .fetch_optional(self.pool())
            .await?;
        let Some((user, tenant, role, email, name, must_change, csrf_token, mut expires_at, stale)) =
            row
        else {
            return Ok(None);
        };
        if how == SessionUse::Active && stale {
            let touched: Option<DateTime<Utc>> = sqlx::query_scalar(SESSION_TOUCH)
                .bind(&token_hash)
                .bind(crate::secs(policy.idle))
                .bind(crate::secs(policy.lifetime))
                .fetch_optional(self.pool())
                .await?;
            // Ended between the two statements (sign-out, disabled, expired): not signed in.
            let Some(touched) = touched else {
                return Ok(None);
            };
            expires_at = touched;
        }
        Ok(Some(Session {
            principal: Principal {
                tenant_id: TenantId(tenant),
                role: role.parse()?,
                key_id: user,
                credential: Credential::User,
            },
            email,
            name,
            must_change_password: must_change,
            csrf_token,
            expires_at,
        }))
    }

    /// Ends the session whose cookie is `token` (sign-out); ending it twice changes nothing.
    pub async fn end_session(&self, token: &str) -> StoreResult<()> {
        sqlx::query(SESSION_END)
            .bind(hash_key(token))
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Deletes expired sessions, and clears the sealed secrets of desk forms older than
    /// [`SECRET_SHOWN_WITHIN`] that were never shown; returns how many sessions.
    pub async fn sweep_sessions(&self) -> StoreResult<u64> {
        Ok(sqlx::query(SESSIONS_SWEEP)
            .bind(crate::secs(SECRET_SHOWN_WITHIN))
            .execute(self.pool())
            .await?
            .rows_affected())
    }
}

/// A user row and their hash.
#[derive(sqlx::FromRow)]
struct CredentialsRow {
    #[sqlx(flatten)]
    user: UserRow,
    password_hash: String,
}

/// [`Store::add_user`] on `conn` (a desk form creates the user in its own transaction).
pub(crate) async fn add_user_on(
    conn: &mut sqlx::PgConnection,
    tenant: TenantId,
    new: &NewUser<'_>,
    actor: &str,
) -> Result<UserInfo, UserError> {
    let row: Option<UserRow> = sqlx::query_as(USER_CREATE)
        .bind(Uuid::now_v7())
        .bind(tenant.0)
        .bind(crate::storable(new.email.trim()).as_ref())
        .bind(new.role.as_str())
        .bind(new.password_hash)
        .bind(crate::storable(actor).as_ref())
        .bind(AuditEventType::UserCreated.as_str())
        .bind(
            new.display_name
                .map(|n| crate::storable(n.trim()).into_owned()),
        )
        .bind(new.must_change_password)
        .fetch_optional(&mut *conn)
        .await
        .map_err(crate::StoreError::from)?;
    match row {
        Some(row) => Ok(user_from(row)?),
        None => Err(UserError::EmailTaken),
    }
}
