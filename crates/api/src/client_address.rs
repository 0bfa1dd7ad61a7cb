//! Who the client is: the TCP peer, or, when the peer is a trusted reverse proxy, the address
//! that proxy forwarded in `X-Forwarded-For`.
//!
//! One middleware ([`resolve_client_address`]) works it out once per request and puts a
//! [`ClientAddress`] in the request's extensions; the per-address rate limit and the desk's
//! sign-in throttle both read it, so they never disagree about who is asking.
//!
//! `X-Forwarded-For` is a list each proxy appends its peer to, so only its right end was
//! written by proxies we run; anything to the left may be the client's own invention. The
//! client is therefore the rightmost hop that is not itself a trusted proxy, and the header
//! is ignored entirely unless the TCP peer is a trusted proxy (otherwise any client could
//! pick a fresh address per request and never be limited).

use axum::extract::{ConnectInfo, Request, State};
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;
use ipnet::IpNet;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// The address a request is attributed to. Absent when the server does not know the peer (a
/// router driven in-process, e.g. with `oneshot`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddress(pub IpAddr);

/// The reverse proxies whose `X-Forwarded-For` is believed. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub(crate) struct TrustedProxies(Arc<[IpNet]>);

/// Why `IRONCLAD_TRUSTED_PROXIES` could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{entry:?} is neither an IP address nor a CIDR range (e.g. 10.0.0.0/8)")]
pub struct TrustedProxyError {
    /// The entry that is neither.
    pub entry: String,
}

/// Parses a comma-separated list of IP addresses and CIDR ranges (`10.0.0.5, 10.1.0.0/16,
/// fd00::/8`); blank entries are skipped, so an empty value means "no proxy".
pub fn parse_trusted_proxies(text: &str) -> Result<Vec<IpNet>, TrustedProxyError> {
    text.split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            entry
                .parse::<IpNet>()
                .or_else(|_| entry.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| TrustedProxyError {
                    entry: entry.to_owned(),
                })
        })
        .collect()
}

impl TrustedProxies {
    pub(crate) fn new(nets: &[IpNet]) -> Self {
        Self(nets.iter().map(IpNet::trunc).collect())
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|net| net.contains(&ip))
    }

    /// The client of a request that came from `peer` with `headers`.
    pub(crate) fn resolve(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let mut client = peer.to_canonical();
        if !self.trusts(client) {
            return client;
        }
        // A proxy may add a second header rather than extend the first: read them in order.
        let hops: Vec<&str> = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .collect();
        for hop in hops.iter().rev() {
            // An unreadable hop ends the walk: what lies left of it nobody trusted vouched for,
            // so the request is the last trusted hop's.
            let Some(ip) = parse_hop(hop.trim()) else {
                break;
            };
            client = ip;
            if !self.trusts(ip) {
                break;
            }
        }
        client
    }
}

/// One `X-Forwarded-For` entry: an address, or an address with a port (`1.2.3.4:80`,
/// `[2001:db8::1]:80`), as some proxies write.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    hop.parse::<IpAddr>()
        .ok()
        .or_else(|| hop.parse::<SocketAddr>().ok().map(|s| s.ip()))
        .map(|ip| ip.to_canonical())
}

/// Middleware: records the request's [`ClientAddress`] (when the peer is known).
pub(crate) async fn resolve_client_address(
    State(proxies): State<TrustedProxies>,
    mut request: Request,
    next: Next,
) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip());
    if let Some(peer) = peer {
        let client = proxies.resolve(peer, request.headers());
        request.extensions_mut().insert(ClientAddress(client));
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn ip(text: &str) -> IpAddr {
        text.parse()
            .unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED))
    }

    fn forwarded(values: &[&'static str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append("x-forwarded-for", HeaderValue::from_static(v));
        }
        headers
    }

    fn proxies(text: &str) -> TrustedProxies {
        TrustedProxies::new(&parse_trusted_proxies(text).unwrap_or_default())
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_forwards() {
        let none = proxies("");
        let spoof = forwarded(&["203.0.113.9"]);
        assert_eq!(none.resolve(ip("198.51.100.7"), &spoof), ip("198.51.100.7"));
        let other = proxies("10.0.0.0/8");
        assert_eq!(
            other.resolve(ip("198.51.100.7"), &spoof),
            ip("198.51.100.7")
        );
    }

    #[test]
    fn a_trusted_proxy_names_the_rightmost_untrusted_hop() {
        let p = proxies("10.0.0.1, 10.9.0.0/16");
        // The client wrote the leftmost entry itself: it is not believed.
        let chain = forwarded(&["1.1.1.1, 203.0.113.9, 10.9.3.4"]);
        assert_eq!(p.resolve(ip("10.0.0.1"), &chain), ip("203.0.113.9"));
        // Two headers read as one list; ports and IPv4-mapped peers are understood.
        let split = forwarded(&["1.1.1.1", "203.0.113.9:5555"]);
        assert_eq!(p.resolve(ip("::ffff:10.0.0.1"), &split), ip("203.0.113.9"));
        let v6 = forwarded(&["[2001:db8::7]:443"]);
        assert_eq!(p.resolve(ip("10.9.0.1"), &v6), ip("2001:db8::7"));
        // Nothing forwarded, or every hop a proxy: the last proxy is all we know.
        assert_eq!(p.resolve(ip("10.0.0.1"), &HeaderMap::new()), ip("10.0.0.1"));
        let all = forwarded(&["10.9.1.1"]);
        assert_eq!(p.resolve(ip("10.0.0.1"), &all), ip("10.9.1.1"));
        // Garbage stops the walk at the last address a trusted hop vouched for.
        let junk = forwarded(&["203.0.113.9, unknown, 10.9.2.2"]);
        assert_eq!(p.resolve(ip("10.0.0.1"), &junk), ip("10.9.2.2"));
    }

    #[test]
    fn the_list_parses_addresses_and_ranges_and_refuses_the_rest() {
        let nets =
            parse_trusted_proxies(" 10.0.0.5 ,fd00::/8,, 192.168.1.7/24").unwrap_or_default();
        assert_eq!(nets.len(), 3);
        assert!(proxies("192.168.1.7/24").trusts(ip("192.168.1.200")));
        assert!(parse_trusted_proxies("").is_ok_and(|n| n.is_empty()));
        let err = parse_trusted_proxies("10.0.0.1, proxy.local").err();
        assert_eq!(err.map(|e| e.entry), Some("proxy.local".to_owned()));
    }
}
