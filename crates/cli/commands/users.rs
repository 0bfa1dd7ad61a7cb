//! `ironclad user …`: the people who sign in to the operator's desk.

use super::admin::cli_actor;
use super::connect_store;
use crate::config::Connections;
use anyhow::Context;
use clap::Subcommand;
use ironclad_api::password::{generate_password, hash_password};
use ironclad_core::email::parse_email;
use ironclad_core::role::Role;
use ironclad_store::users::{NewUser, UserError};
use std::io::BufRead;
use std::process::ExitCode;

/// `ironclad user …`
#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Create a desk user. The password is read from stdin with `--password-stdin`;
    /// otherwise a random one is made and printed once on the last line of stdout. Either way
    /// the user must change it when they first sign in, unless `--keep-password`.
    Create {
        /// Tenant name.
        #[arg(long)]
        tenant: String,
        /// reviewer, operator or admin.
        #[arg(long, default_value = "reviewer")]
        role: String,
        /// The address they sign in with (unique, whatever its case).
        #[arg(long)]
        email: String,
        /// Read the password from the first line of stdin (10 to 256 characters).
        #[arg(long)]
        password_stdin: bool,
        /// How others see them on the desk (default: their address).
        #[arg(long)]
        name: Option<String>,
        /// The password is the user's own (they typed it): do not ask them to change it at
        /// their first sign-in. Only with `--password-stdin`.
        #[arg(long, requires = "password_stdin")]
        keep_password: bool,
    },
    /// List a tenant's users.
    List {
        /// Tenant name.
        #[arg(long)]
        tenant: String,
    },
    /// Disable a user; their sessions end at once.
    Disable {
        /// Tenant name.
        #[arg(long)]
        tenant: String,
        /// The user's email address.
        #[arg(long)]
        email: String,
    },
}

pub async fn user(c: &Connections, cmd: UserCommand) -> anyhow::Result<ExitCode> {
    let store = connect_store(c).await?;
    let tenant_named = |name: String| {
        let store = store.clone();
        async move {
            store.tenant_by_name(&name).await?.with_context(|| {
                format!("no tenant named {name:?}; create it with `ironclad tenant create {name}`")
            })
        }
    };
    match cmd {
        UserCommand::Create {
            tenant,
            role,
            email,
            password_stdin,
            name,
            keep_password,
        } => {
            let role: Role = role
                .parse()
                .map_err(|e| anyhow::anyhow!("{e} (use reviewer, operator or admin)"))?;
            let email = parse_email(&email).context("--email")?;
            let tenant_id = tenant_named(tenant.clone()).await?;
            let (password, generated) = if password_stdin {
                let mut line = String::new();
                std::io::stdin()
                    .lock()
                    .read_line(&mut line)
                    .context("reading the password from stdin")?;
                (line.trim_end_matches(['\r', '\n']).to_owned(), false)
            } else {
                (generate_password(), true)
            };
            let hash = tokio::task::spawn_blocking(move || {
                hash_password(&password).map(|h| (h, password))
            })
            .await
            .context("hashing the password")??;
            let name = name.map(|n| n.trim().to_owned()).filter(|n| !n.is_empty());
            if name.as_ref().is_some_and(|n| n.chars().count() > 200) {
                anyhow::bail!("--name must be at most 200 characters");
            }
            let new = NewUser {
                email: &email,
                role,
                password_hash: &hash.0,
                display_name: name.as_deref(),
                must_change_password: !keep_password,
            };
            match store.add_user(tenant_id, &new, &cli_actor()).await {
                Ok(user) => {
                    eprintln!(
                        "user {} ({}) created for tenant {tenant} with role {role}",
                        user.email, user.id
                    );
                    if !keep_password {
                        eprintln!("they must change their password when they first sign in");
                    }
                    if generated {
                        eprintln!("their password, shown only now:");
                        println!("{}", hash.1);
                    }
                    Ok(ExitCode::SUCCESS)
                }
                Err(UserError::EmailTaken) => {
                    eprintln!("a user with the address {email} already exists; nothing changed");
                    Ok(ExitCode::from(2))
                }
                Err(UserError::Store(e)) => Err(e.into()),
            }
        }
        UserCommand::List { tenant } => {
            let tenant_id = tenant_named(tenant).await?;
            for u in store.users_of(tenant_id).await? {
                println!(
                    "{}\t{}\t{}\t{}\t{}",
                    u.email,
                    u.name(),
                    u.role,
                    u.created_at.to_rfc3339(),
                    u.disabled_at
                        .map(|d| format!("disabled {}", d.to_rfc3339()))
                        .unwrap_or_else(|| "active".to_owned())
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        UserCommand::Disable { tenant, email } => {
            let tenant_id = tenant_named(tenant).await?;
            let found =
                store.users_of(tenant_id).await?.into_iter().find(|u| {
                    u.email.eq_ignore_ascii_case(email.trim()) && u.disabled_at.is_none()
                });
            let Some(found) = found else {
                eprintln!("no active user {email} in that tenant; nothing changed");
                return Ok(ExitCode::from(2));
            };
            match store
                .disable_user(tenant_id, found.id, &cli_actor())
                .await?
            {
                Some(u) => println!("user {} disabled; their sessions ended", u.email),
                None => println!("user {email} was already disabled; nothing changed"),
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
