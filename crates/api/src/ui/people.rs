//! People's names for the actors the audit trail and records keep (`user:<id>`,
//! `api_key:<id>`, `cli:<unix user>`, `system`): a user by their display name (else address),
//! a key by its label (else its prefix), the command line and the system in words.

use crate::state::AppState;
use ironclad_core::TenantId;
use ironclad_store::StoreResult;
use std::collections::HashMap;
use uuid::Uuid;

/// Names for a page's actors, loaded once per page.
#[derive(Debug, Default)]
pub(crate) struct People {
    users: HashMap<Uuid, String>,
    keys: HashMap<Uuid, String>,
}

/// What an actor string names.
#[derive(Debug, PartialEq, Eq)]
enum Actor<'a> {
    User(Uuid),
    Key(Uuid),
    CommandLine(Option<&'a str>),
    System,
    Other(&'a str),
}

fn parse(actor: &str) -> Actor<'_> {
    let id = |rest: &str| rest.parse::<Uuid>().ok();
    if let Some(user) = actor.strip_prefix("user:").and_then(id) {
        return Actor::User(user);
    }
    if let Some(key) = actor.strip_prefix("api_key:").and_then(id) {
        return Actor::Key(key);
    }
    if actor == "system" || actor.starts_with("system:") {
        return Actor::System;
    }
    match actor {
        "cli:unknown" | "operator:cli" => Actor::CommandLine(None),
        _ => match actor.strip_prefix("cli:") {
            Some(unix_user) if !unix_user.trim().is_empty() => Actor::CommandLine(Some(unix_user)),
            _ => Actor::Other(actor),
        },
    }
}

impl People {
    /// The names of the tenant's users and keys among `actors`.
    pub(crate) async fn load<'a>(
        state: &AppState,
        tenant: TenantId,
        actors: impl IntoIterator<Item = &'a str>,
    ) -> StoreResult<Self> {
        let (mut users, mut keys) = (Vec::new(), Vec::new());
        for actor in actors {
            match parse(actor) {
                Actor::User(id) => users.push(id),
                Actor::Key(id) => keys.push(id),
                _ => {}
            }
        }
        users.sort_unstable();
        users.dedup();
        keys.sort_unstable();
        keys.dedup();
        let names = state.store.actor_names(tenant, &users, &keys).await?;
        Ok(Self {
            users: names.users.into_iter().collect(),
            keys: names
                .keys
                .into_iter()
                .map(|(id, label, prefix)| {
                    let name = match label {
                        Some(label) => format!("API key “{label}”"),
                        None => format!("API key {prefix}…"),
                    };
                    (id, name)
                })
                .collect(),
        })
    }

    /// How a person reads `actor`.
    pub(crate) fn name(&self, actor: &str) -> String {
        match parse(actor) {
            Actor::User(id) => self
                .users
                .get(&id)
                .cloned()
                .unwrap_or_else(|| "a former user".to_owned()),
            Actor::Key(id) => self
                .keys
                .get(&id)
                .cloned()
                .unwrap_or_else(|| "an API key".to_owned()),
            Actor::CommandLine(Some(unix_user)) => format!("{unix_user} (command line)"),
            Actor::CommandLine(None) => "the command line".to_owned(),
            Actor::System => "Ironclad (automatic)".to_owned(),
            Actor::Other(text) => text.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_actor_reads_as_a_name() {
        let (user, key, gone) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let people = People {
            users: [(user, "Rita Reviewer".to_owned())].into(),
            keys: [(key, "API key “ERP connector”".to_owned())].into(),
        };
        assert_eq!(people.name(&format!("user:{user}")), "Rita Reviewer");
        assert_eq!(
            people.name(&format!("api_key:{key}")),
            "API key “ERP connector”"
        );
        assert_eq!(people.name(&format!("user:{gone}")), "a former user");
        assert_eq!(people.name("cli:ana"), "ana (command line)");
        assert_eq!(people.name("cli:unknown"), "the command line");
        assert_eq!(people.name("system"), "Ironclad (automatic)");
        assert_eq!(people.name("system:finalize"), "Ironclad (automatic)");
        assert_eq!(people.name("worker-7"), "worker-7");
        assert_eq!(people.name("user:not-a-uuid"), "user:not-a-uuid");
    }
}
