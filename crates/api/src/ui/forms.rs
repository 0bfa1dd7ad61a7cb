//! Desk forms that create something: the token each rendered form carries, the key a POST is
//! remembered under, and the seal on a secret the form made.
//!
//! A create POST is answered with a redirect (303) to the page it came from with `?form=` its
//! token; that page shows what the token made (`Store::desk_form_result`), and a replay of
//! the POST shows the same first result instead of creating again (see the store's
//! `desk_forms`). A secret the form made is kept only sealed with a key derived from the
//! session cookie's token, which the database never holds, and is shown once: a refresh of
//! the result page names what was made without the secret.

use crate::error::ApiError;
use crate::ui::page::DeskError;
use crate::ui::session::DeskUser;
use hmac::{Hmac, Mac};
use ironclad_store::desk_forms::{FormError, FormKey};
use rand::Rng;
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// A new form token (rendered into a form with the page).
pub(crate) fn new_token() -> String {
    let bytes: [u8; 16] = rand::rng().random();
    hex::encode(bytes)
}

/// Whether `token` has the shape [`new_token`] gives.
pub(crate) fn is_token(token: &str) -> bool {
    token.len() == 32
        && token
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The store's key for `user`'s POST of form `token` asking `fields`.
pub(crate) fn form_key(
    user: &DeskUser,
    token: &str,
    fields: &[&str],
) -> Result<FormKey, DeskError> {
    if !is_token(token) {
        return Err(ApiError::bad_request(
            "missing_form_token",
            "this form is missing its token; reload the page and fill it in again",
        )
        .into());
    }
    Ok(FormKey {
        tenant: user.0.principal.tenant_id,
        user: user.0.principal.key_id,
        token: token.to_owned(),
        // The one fingerprint of replayable requests (a JSON list, so ("ab", "c") and
        // ("a", "bc") differ).
        fingerprint: ironclad_store::replay::fingerprint(&serde_json::json!(fields)),
    })
}

/// A form the store refused: a reused token or a taken address is the user's to fix.
pub(crate) fn form_error(e: FormError) -> DeskError {
    match e {
        FormError::TokenReused => ApiError::client(
            axum::http::StatusCode::CONFLICT,
            "form_reused",
            e.to_string(),
        )
        .into(),
        FormError::EmailTaken => ApiError::client(
            axum::http::StatusCode::CONFLICT,
            "email_taken",
            "a user with this email address already exists",
        )
        .into(),
        FormError::Webhook(refused) => ApiError::from(refused).into(),
        FormError::Store(e) => e.into(),
    }
}

/// The keystream block `counter` for the secret of form `token` in the session `session`:
/// HMAC-SHA256 keyed by the session token, a PRF, so XOR with it is a stream cipher whose key
/// only the browser holding the cookie can bring back.
fn keystream(session: &str, token: &str, counter: u32) -> [u8; 32] {
    // HMAC takes keys of any length: new_from_slice cannot fail.
    let mut mac = match HmacSha256::new_from_slice(session.as_bytes()) {
        Ok(mac) => mac,
        Err(_) => return [0; 32],
    };
    mac.update(b"ironclad desk form secret\0");
    mac.update(token.as_bytes());
    mac.update(&counter.to_be_bytes());
    mac.finalize().into_bytes().into()
}

fn xor_with_keystream(session: &str, token: &str, bytes: &[u8]) -> Vec<u8> {
    bytes
        .chunks(32)
        .zip(0u32..)
        .flat_map(|(chunk, counter)| {
            let stream = keystream(session, token, counter);
            chunk
                .iter()
                .zip(stream)
                .map(|(b, k)| b ^ k)
                .collect::<Vec<u8>>()
        })
        .collect()
}

/// Seals `secret` for the session `session` and form `token`.
pub(crate) fn seal(session: &str, token: &str, secret: &str) -> Vec<u8> {
    xor_with_keystream(session, token, secret.as_bytes())
}

/// Opens what [`seal`] sealed; `None` when it was sealed for another session.
pub(crate) fn open(session: &str, token: &str, sealed: &[u8]) -> Option<String> {
    String::from_utf8(xor_with_keystream(session, token, sealed))
        .ok()
        .filter(|s| s.chars().all(|c| c.is_ascii_graphic()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_opens_only_with_its_session_and_form() {
        let session = format!("ics_{}", "ab".repeat(32));
        let token = new_token();
        let secret = format!("ick_{}", "0123456789abcdef".repeat(3));
        let sealed = seal(&session, &token, &secret);
        assert_eq!(sealed.len(), secret.len());
        assert_ne!(sealed, secret.as_bytes(), "sealed bytes are not the secret");
        assert_eq!(
            open(&session, &token, &sealed).as_deref(),
            Some(secret.as_str())
        );
        let other = format!("ics_{}", "cd".repeat(32));
        assert_eq!(open(&other, &token, &sealed), None);
        assert_eq!(open(&session, &new_token(), &sealed), None);
    }

    #[test]
    fn tokens_have_one_shape() {
        let t = new_token();
        assert!(is_token(&t));
        assert_ne!(t, new_token());
        assert!(!is_token(""));
        assert!(!is_token(&t.to_uppercase()));
        assert!(!is_token(&format!("{t}0")));
    }
}
