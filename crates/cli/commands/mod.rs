//! One module per group of commands.

pub mod admin;
pub mod audit;
pub mod cases;
pub mod decisions;
pub mod doctor;
pub mod documents;
pub mod roles;
pub mod submit;
pub mod users;
pub mod verify;

use crate::config::Connections;
use anyhow::Context;
use ironclad_store::Store;

/// Structured JSON logs for the long-running roles, compact text for operator commands.
/// `RUST_LOG` filters (default `info` for roles, `warn` for commands).
pub fn init_logging(role: bool) {
    use tracing_subscriber::EnvFilter;
    let default = if role { "info" } else { "warn" };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let json = std::env::var("IRONCLAD_LOG_FORMAT")
        .map(|f| f != "text")
        .unwrap_or(role);
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if json {
        builder.json().with_current_span(false).init();
    } else {
        builder.compact().init();
    }
}

/// Connects to PostgreSQL, failing with a clear message when it is not there.
pub async fn connect_store(c: &Connections) -> anyhow::Result<Store> {
    Store::connect_with(&c.database_url, &c.pool())
        .await
        .with_context(|| format!("cannot reach PostgreSQL at {}", redact(&c.database_url)))
}

/// A URL without its password, for messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.find('@')) {
        (Some(s), Some(at)) if at > s => {
            let userinfo = &url[s + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{}:***{}", &url[..s + 3], user, &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}
