//! A person's email address as Ironclad accepts it, checked the same way wherever one is
//! entered (the desk's admin page, `ironclad user create`).
//!
//! Deliberately loose: an address is its user's sign-in name, not a mailbox we write to, so
//! it only has to be one plausible address — a local part, one `@`, a domain, no spaces —
//! within the 254 characters SMTP allows. Uniqueness ignores case (the database's index).

/// Longest address SMTP allows (RFC 5321's path limit less its angle brackets).
pub const MAX_EMAIL_CHARS: usize = 254;

/// Why a text is not an email address we accept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmailError {
    /// Nothing, or only spaces.
    #[error("enter an email address")]
    Empty,
    /// Over [`MAX_EMAIL_CHARS`].
    #[error("an email address has at most {MAX_EMAIL_CHARS} characters")]
    TooLong,
    /// No `@` with something on both sides, several `@`, or a space or control character.
    #[error("{0:?} is not an email address (name@example.com)")]
    Malformed(String),
}

/// The address trimmed, or why it is not one.
pub fn parse_email(text: &str) -> Result<String, EmailError> {
    let email = text.trim();
    if email.is_empty() {
        return Err(EmailError::Empty);
    }
    if email.chars().count() > MAX_EMAIL_CHARS {
        return Err(EmailError::TooLong);
    }
    let well_formed = match email.split_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && !domain.is_empty()
                && !domain.contains('@')
                && !email.chars().any(|c| c.is_whitespace() || c.is_control())
        }
        None => false,
    };
    if !well_formed {
        return Err(EmailError::Malformed(email.chars().take(80).collect()));
    }
    Ok(email.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plausible_addresses_are_accepted_trimmed() {
        assert_eq!(
            parse_email(" rita@example.com "),
            Ok("rita@example.com".into())
        );
        assert_eq!(parse_email("admin@desk"), Ok("admin@desk".into()));
    }

    #[test]
    fn everything_else_is_refused_with_its_reason() {
        assert_eq!(parse_email("  "), Err(EmailError::Empty));
        for bad in [
            "rita",
            "@example.com",
            "rita@",
            "a@b@c",
            "ri ta@example.com",
            "r\u{0}@x",
        ] {
            assert!(
                matches!(parse_email(bad), Err(EmailError::Malformed(_))),
                "{bad:?}"
            );
        }
        // Counted in characters, not bytes: 254 two-byte letters are not too long.
        let long = format!("{}@x", "é".repeat(MAX_EMAIL_CHARS - 2));
        assert!(parse_email(&long).is_ok());
        let too_long = format!("{}@x", "a".repeat(MAX_EMAIL_CHARS));
        assert_eq!(parse_email(&too_long), Err(EmailError::TooLong));
    }
}
