//! Where a webhook may be sent: an absolute http(s) URL with a host, no credentials and no
//! fragment, and — unless a deployment allows private receivers — not an address outside the
//! public address space. The API checks an endpoint's URL with [`WebhookUrl::parse`] when it
//! is created; the deliverer checks every address it connects to with [`non_public_range`]
//! (a host name may resolve to a private address).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Longest URL an endpoint may have (the column's CHECK says the same).
pub const MAX_URL_LEN: usize = 2000;

/// Why a URL cannot be a webhook endpoint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookUrlError {
    /// Longer than [`MAX_URL_LEN`].
    #[error("the URL is longer than {MAX_URL_LEN} characters")]
    TooLong,
    /// Not an absolute URL.
    #[error("not an absolute URL: {0}")]
    Malformed(String),
    /// A scheme other than http or https.
    #[error("scheme {0:?} is not allowed (use http or https)")]
    Scheme(String),
    /// `user:password@` in the URL: it would be stored and shown in clear.
    #[error("the URL must not carry credentials; authenticate the request with the signature")]
    Credentials,
    /// No host name or address.
    #[error("the URL has no host")]
    NoHost,
    /// A `#fragment`, which is never sent to the server.
    #[error("the URL must not have a #fragment")]
    Fragment,
    /// The host is an address of our own network (or `localhost`): a webhook there would let a
    /// tenant reach internal services (server-side request forgery).
    #[error("the host {host} is {range}; webhooks may only reach public addresses")]
    NotPublic {
        /// The host as written in the normalised URL.
        host: String,
        /// Which kind of address it is (`loopback`, `private`, …).
        range: &'static str,
    },
}

/// Which non-public range `ip` is in, or `None` for a public address. Webhooks may reach only
/// public addresses (unless `IRONCLAD_WEBHOOK_ALLOW_PRIVATE` is set): these are refused both
/// when an endpoint is created (IP literals) and when the deliverer connects (every resolved
/// address). An IPv4-mapped, IPv4-compatible or NAT64 (`64:ff9b::/96`) IPv6 address is judged
/// by the IPv4 address it carries; tunnels that carry one elsewhere (6to4, Teredo, local-use
/// NAT64) are refused whole.
pub fn non_public_range(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => non_public_v6(v6),
    }
}

fn non_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if a == 0 {
        // 0.0.0.0/8, "this network": 0.0.0.0 reaches the local host on most systems.
        Some("unspecified")
    } else if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_private() {
        Some("private")
    } else if ip.is_link_local() {
        Some("link-local")
    } else if a == 100 && (64..128).contains(&b) {
        Some("shared address space (CGNAT)")
    } else if a == 198 && (18..20).contains(&b) {
        // 198.18.0.0/15, for benchmarking networks: never routed, sometimes inside a lab.
        Some("benchmarking")
    } else if a == 192 && b == 0 && ip.octets()[2] == 0 {
        // 192.0.0.0/24, IETF protocol assignments (NAT64/DS-Lite gateway addresses).
        Some("reserved")
    } else if ip.is_multicast() {
        Some("multicast")
    } else if ip.is_broadcast() {
        Some("broadcast")
    } else if a >= 240 {
        Some("reserved")
    } else {
        None
    }
}

fn non_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let segments = ip.segments();
    if ip.is_unspecified() {
        Some("unspecified")
    } else if ip.is_loopback() {
        Some("loopback")
    } else if let Some(v4) = ip.to_ipv4_mapped() {
        non_public_v4(v4)
    } else if segments[..6] == [0; 6] || segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        // IPv4-compatible (::a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) carry an IPv4 address.
        let [.., a, b, c, d] = ip.octets();
        non_public_v4(Ipv4Addr::new(a, b, c, d))
    } else if segments[..3] == [0x64, 0xff9b, 1] {
        // 64:ff9b:1::/48, local-use NAT64: translated by our own network's gateway, and the
        // IPv4 address may sit anywhere in it, so the whole range is refused.
        Some("local NAT64")
    } else if segments[0] == 0x2002 {
        // 6to4 (2002::/16) embeds an IPv4 address a relay would reach; refused whole rather
        // than judged by it (6to4 is deprecated, RFC 7526).
        Some("6to4 tunnel")
    } else if segments[..2] == [0x2001, 0] {
        // Teredo (2001::/32) tunnels to an IPv4 server and client; refused whole.
        Some("Teredo tunnel")
    } else if ip.is_multicast() {
        Some("multicast")
    } else if segments[0] & 0xfe00 == 0xfc00 {
        Some("private")
    } else if segments[0] & 0xffc0 == 0xfe80 {
        Some("link-local")
    } else if segments[0] & 0xffc0 == 0xfec0 {
        // Site-local, deprecated but still routed inside some networks.
        Some("private")
    } else {
        None
    }
}

/// A URL a webhook may be sent to: absolute http(s), a host, no credentials, no fragment.
/// Built only by [`WebhookUrl::parse`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookUrl(String);

impl WebhookUrl {
    /// Checks `raw` and returns it normalised (as the URL standard serialises it). Unless
    /// `allow_private`, a host that is `localhost`, `*.localhost` or an IP literal outside the
    /// public address space ([`non_public_range`]) is refused. A host name that resolves to
    /// such an address is caught by the deliverer, which checks every address it connects to.
    pub fn parse(raw: &str, allow_private: bool) -> Result<Self, WebhookUrlError> {
        let raw = raw.trim();
        if raw.len() > MAX_URL_LEN {
            return Err(WebhookUrlError::TooLong);
        }
        let url = url::Url::parse(raw).map_err(|e| WebhookUrlError::Malformed(e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(WebhookUrlError::Scheme(url.scheme().to_owned()));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(WebhookUrlError::Credentials);
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(WebhookUrlError::NoHost);
        }
        if url.fragment().is_some() {
            return Err(WebhookUrlError::Fragment);
        }
        if !allow_private {
            if let Some(range) = url.host().and_then(|h| host_range(&h)) {
                return Err(WebhookUrlError::NotPublic {
                    host: url.host_str().unwrap_or_default().to_owned(),
                    range,
                });
            }
        }
        let normalised = String::from(url);
        if normalised.len() > MAX_URL_LEN {
            return Err(WebhookUrlError::TooLong);
        }
        Ok(Self(normalised))
    }

    /// The URL as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Which non-public kind of host `host` is: an IP literal outside the public address space, or
/// a `localhost` name (which resolvers answer locally, whatever DNS says).
fn host_range(host: &url::Host<&str>) -> Option<&'static str> {
    match host {
        url::Host::Ipv4(ip) => non_public_v4(*ip),
        url::Host::Ipv6(ip) => non_public_v6(*ip),
        url::Host::Domain(name) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            (name == "localhost" || name.ends_with(".localhost")).then_some("loopback")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_http_urls_are_endpoints() {
        assert_eq!(
            WebhookUrl::parse("https://example.com/hook", false).map(|u| u.0),
            Ok("https://example.com/hook".to_owned())
        );
        assert!(WebhookUrl::parse("http://127.0.0.1:8080/x?y=1", true).is_ok());
        assert_eq!(
            WebhookUrl::parse("ftp://example.com/", false),
            Err(WebhookUrlError::Scheme("ftp".into()))
        );
        assert_eq!(
            WebhookUrl::parse("https://user:pw@example.com/", false),
            Err(WebhookUrlError::Credentials)
        );
        assert_eq!(
            WebhookUrl::parse("https://user@example.com/", false),
            Err(WebhookUrlError::Credentials)
        );
        assert_eq!(
            WebhookUrl::parse("https://example.com/#x", false),
            Err(WebhookUrlError::Fragment)
        );
        assert!(matches!(
            WebhookUrl::parse("example.com/hook", false),
            Err(WebhookUrlError::Malformed(_))
        ));
        assert!(matches!(
            WebhookUrl::parse("file:///etc/passwd", false),
            Err(WebhookUrlError::Scheme(_))
        ));
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_LEN));
        assert_eq!(
            WebhookUrl::parse(&long, false),
            Err(WebhookUrlError::TooLong)
        );
    }

    #[test]
    fn hosts_outside_the_public_address_space_are_refused_unless_allowed() {
        for (url, range) in [
            ("http://127.0.0.1/hook", "loopback"),
            ("http://127.1.2.3:8080/", "loopback"),
            ("http://2130706433/", "loopback"),
            ("http://0x7f.1/", "loopback"),
            ("http://10.1.2.3/", "private"),
            ("http://172.16.0.1/", "private"),
            ("http://192.168.1.1/", "private"),
            ("http://169.254.169.254/latest/meta-data/", "link-local"),
            ("http://100.64.0.1/", "shared address space (CGNAT)"),
            ("http://0.0.0.0:8080/", "unspecified"),
            ("http://224.0.0.1/", "multicast"),
            ("http://255.255.255.255/", "broadcast"),
            ("http://[::1]/", "loopback"),
            ("http://[::]/", "unspecified"),
            ("http://[fd00::1]/", "private"),
            ("http://[fe80::1]/", "link-local"),
            ("http://[ff02::1]/", "multicast"),
            ("http://[::ffff:10.0.0.5]/", "private"),
            ("http://[64:ff9b::a9fe:a9fe]/", "link-local"),
            ("http://198.18.0.1/", "benchmarking"),
            ("http://198.19.255.254/", "benchmarking"),
            ("http://[::ffff:198.18.3.4]/", "benchmarking"),
            ("http://192.0.0.1/", "reserved"),
            ("http://192.0.0.170/", "reserved"),
            ("http://[64:ff9b::c000:8]/", "reserved"),
            ("http://[2002:c0a8:101::1]/", "6to4 tunnel"),
            ("http://[2002:5db8:d70e::1]/", "6to4 tunnel"),
            (
                "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
                "Teredo tunnel",
            ),
            ("http://[2001::1]/", "Teredo tunnel"),
            ("http://[64:ff9b:1::a00:5]/", "local NAT64"),
            ("http://[64:ff9b:1:ffff::1]/", "local NAT64"),
            ("http://localhost:8080/", "loopback"),
            ("http://LocalHost./", "loopback"),
            ("http://api.localhost/", "loopback"),
        ] {
            match WebhookUrl::parse(url, false) {
                Err(WebhookUrlError::NotPublic { range: r, .. }) => assert_eq!(r, range, "{url}"),
                other => panic!("{url}: {other:?}"),
            }
            assert!(WebhookUrl::parse(url, true).is_ok(), "{url}");
        }
        let err = WebhookUrl::parse("http://10.0.0.5/x", false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the host 10.0.0.5 is private; webhooks may only reach public addresses"
        );
        for url in [
            "https://example.com/hook",
            "https://93.184.215.14/",
            "http://100.128.0.1/",
            "http://172.32.0.1/",
            "http://[2606:4700::1111]/",
            "http://198.17.255.255/",
            "http://198.20.0.1/",
            "http://192.0.1.1/",
            "http://[2001:4860:4860::8888]/",
            "http://[2003::1]/",
            "http://[64:ff9b:2::1]/",
            "http://localhost.example.com/",
            "http://notlocalhost/",
        ] {
            assert!(WebhookUrl::parse(url, false).is_ok(), "{url}");
        }
    }
}
