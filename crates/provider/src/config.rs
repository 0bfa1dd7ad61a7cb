//! Where the provider is and how long to wait for it.

use std::fmt;
use std::time::Duration;

/// How to reach an OpenAI-compatible chat-completions endpoint.
///
/// Every field is public so a caller can fill it from its own settings; [`ProviderConfig::new`]
/// gives the defaults documented per field, and [`ProviderConfig::validate`] (also run by
/// every constructor that takes a config) refuses what cannot work.
#[derive(Clone, PartialEq, Eq)]
pub struct ProviderConfig {
    /// The API root, such as `http://127.0.0.1:11434/v1` (requests go to
    /// `{base_url}/chat/completions`; a trailing `/` is ignored). Only `http` is accepted:
    /// this build of `reqwest` has no TLS (see the crate documentation).
    pub base_url: String,
    /// The model name sent with each request, as the server spells it.
    pub model: String,
    /// Sent as `Authorization: Bearer <key>` when set. Never logged or printed.
    pub api_key: Option<String>,
    /// Longest one request may take, from connecting to the last byte of the answer. Each
    /// typed segment of a document is one request, so a source takes at most
    /// `segments × timeout`. Default 60 s.
    pub timeout: Duration,
    /// Most characters of one page sent to the model; the rest of the page is cut (and the
    /// cut is recorded in the job summary). Bounds the cost of a request. Default 20 000.
    pub max_page_chars: usize,
}

impl ProviderConfig {
    /// Default timeout.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
    /// Default page budget.
    pub const DEFAULT_MAX_PAGE_CHARS: usize = 20_000;
    /// Longest accepted timeout: a worker's job lease must outlast a request.
    pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);

    /// A configuration for `model` at `base_url`, without a key, with default limits.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            timeout: Self::DEFAULT_TIMEOUT,
            max_page_chars: Self::DEFAULT_MAX_PAGE_CHARS,
        }
    }

    /// Checks every field, and the base URL's form. Returns the URL of the
    /// chat-completions endpoint.
    pub fn validate(&self) -> Result<reqwest::Url, ConfigError> {
        let trimmed = self.base_url.trim().trim_end_matches('/');
        let base = reqwest::Url::parse(trimmed).map_err(|e| ConfigError::BaseUrl {
            url: self.base_url.clone(),
            reason: e.to_string(),
        })?;
        match base.scheme() {
            "http" => {}
            "https" => {
                return Err(ConfigError::TlsUnavailable {
                    url: trimmed.into(),
                })
            }
            other => {
                return Err(ConfigError::BaseUrl {
                    url: self.base_url.clone(),
                    reason: format!("scheme {other:?} is not http"),
                })
            }
        }
        if base.query().is_some() || base.fragment().is_some() || base.cannot_be_a_base() {
            return Err(ConfigError::BaseUrl {
                url: self.base_url.clone(),
                reason: "give the API root only, without query or fragment".into(),
            });
        }
        if self.model.trim().is_empty() {
            return Err(ConfigError::Model);
        }
        if let Some(key) = &self.api_key {
            // A key is a header value: visible ASCII only, or reqwest would refuse it later.
            if key.is_empty() || !key.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(ConfigError::ApiKey);
            }
        }
        if self.timeout.is_zero() || self.timeout > Self::MAX_TIMEOUT {
            return Err(ConfigError::Timeout {
                timeout: self.timeout,
                max: Self::MAX_TIMEOUT,
            });
        }
        if self.max_page_chars == 0 {
            return Err(ConfigError::MaxPageChars);
        }
        reqwest::Url::parse(&format!("{trimmed}/chat/completions")).map_err(|e| {
            ConfigError::BaseUrl {
                url: self.base_url.clone(),
                reason: e.to_string(),
            }
        })
    }
}

impl fmt::Debug for ProviderConfig {
    /// Shows whether a key is set, never the key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("max_page_chars", &self.max_page_chars)
            .finish()
    }
}

/// Why a [`ProviderConfig`] was refused. Raised at start-up, never while processing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The base URL does not parse or has the wrong shape.
    #[error(
        "provider base URL {url:?} is unusable: {reason}; expected e.g. http://127.0.0.1:11434/v1"
    )]
    BaseUrl {
        /// The URL as given.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// An `https` URL, which this build cannot speak.
    #[error(
        "provider base URL {url} needs TLS, which this build of Ironclad does not include; \
         reach the provider over http (a local server, or a TLS-terminating proxy on \
         localhost), or build with reqwest's rustls-tls feature"
    )]
    TlsUnavailable {
        /// The URL as given.
        url: String,
    },
    /// No model name.
    #[error("provider model name is empty; set it to the name the server knows the model by")]
    Model,
    /// The key is empty or holds characters a header cannot carry.
    #[error("provider API key is empty or holds spaces or non-ASCII characters; check for a stray newline")]
    ApiKey,
    /// Zero or too long.
    #[error(
        "provider timeout {timeout:?} is out of range; use a value above zero and at most {max:?}"
    )]
    Timeout {
        /// The timeout as given.
        timeout: Duration,
        /// The longest accepted.
        max: Duration,
    },
    /// A page budget of zero would send the model nothing.
    #[error("provider max_page_chars is 0; the model would see no text")]
    MaxPageChars,
    /// The HTTP client could not be built (the system's resolver or TLS setup).
    #[error("cannot build the HTTP client for the provider: {0}")]
    Client(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_names_the_problem() {
        let ok = ProviderConfig::new("http://127.0.0.1:8080/v1/", "m");
        assert_eq!(
            ok.validate().map(|u| u.to_string()),
            Ok("http://127.0.0.1:8080/v1/chat/completions".to_owned())
        );
        let with = |f: &dyn Fn(&mut ProviderConfig)| {
            let mut c = ok.clone();
            f(&mut c);
            c.validate().err()
        };
        assert!(matches!(
            with(&|c| c.base_url = "https://api.openai.com/v1".into()),
            Some(ConfigError::TlsUnavailable { .. })
        ));
        assert!(matches!(
            with(&|c| c.base_url = "localhost:8080".into()),
            Some(ConfigError::BaseUrl { .. })
        ));
        assert!(matches!(
            with(&|c| c.base_url = "http://h/v1?x=1".into()),
            Some(ConfigError::BaseUrl { .. })
        ));
        assert_eq!(with(&|c| c.model = " ".into()), Some(ConfigError::Model));
        assert_eq!(
            with(&|c| c.api_key = Some("sk-1\n".into())),
            Some(ConfigError::ApiKey)
        );
        assert!(matches!(
            with(&|c| c.timeout = Duration::ZERO),
            Some(ConfigError::Timeout { .. })
        ));
        assert_eq!(
            with(&|c| c.max_page_chars = 0),
            Some(ConfigError::MaxPageChars)
        );
    }

    #[test]
    fn debug_never_shows_the_key() {
        let mut c = ProviderConfig::new("http://h/v1", "m");
        c.api_key = Some("sk-secret".into());
        let shown = format!("{c:?}");
        assert!(!shown.contains("sk-secret") && shown.contains("<redacted>"));
    }
}
