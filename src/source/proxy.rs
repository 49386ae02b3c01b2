//! Which proxy reaches the API server, as kubectl (client-go, Go's `httpproxy`) decides:
//! the kubeconfig cluster's `proxy-url` when it has one; else `HTTPS_PROXY` for an https
//! server, `HTTP_PROXY` for an http one (either case), unless the server is loopback or
//! `NO_PROXY` names it. kube reads these too, but matches `NO_PROXY` against the proxy's
//! own address, and a bare host never matches a server with a port; so the decision is
//! made here and handed to kube as the config's `proxy_url`.

use std::net::IpAddr;

/// One `NO_PROXY` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    /// `*`: nothing is proxied.
    All,
    /// An address or a CIDR block (`10.0.0.1`, `10.0.0.0/8`, `::1`).
    Net(ipnet::IpNet),
    /// A domain and its subdomains (`example.com`), or only its subdomains (`.example.com`,
    /// `*.example.com`); with a port, only on that port.
    Domain {
        name: String,
        subdomains_only: bool,
        port: Option<u16>,
    },
}

fn parse_entry(raw: &str) -> Option<Entry> {
    let s = raw.trim().to_ascii_lowercase();
    if s.is_empty() {
        return None;
    }
    if s == "*" {
        return Some(Entry::All);
    }
    if let Ok(net) = s.parse::<ipnet::IpNet>() {
        return Some(Entry::Net(net));
    }
    let unbracketed = s.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = unbracketed.parse::<IpAddr>() {
        return Some(Entry::Net(ipnet::IpNet::from(ip)));
    }
    // host:port ([v6]:port too).
    let (host, port) = match s.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() && !h.ends_with(':') => (h, p.parse().ok()),
        _ => (s.as_str(), None),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = host.parse::<IpAddr>() {
        // An address with a port: only that port (kept as a domain of its text).
        return Some(Entry::Domain {
            name: ip.to_string(),
            subdomains_only: false,
            port,
        });
    }
    let (name, subdomains_only) = match host.strip_prefix("*.").or(host.strip_prefix('.')) {
        Some(rest) => (rest, true),
        None => (host, false),
    };
    (!name.is_empty()).then(|| Entry::Domain {
        name: name.to_owned(),
        subdomains_only,
        port,
    })
}

/// Whether `NO_PROXY` (comma-separated; empty entries are skipped) names `host:port`.
fn excluded(no_proxy: &str, host: &str, port: u16) -> bool {
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase();
    let ip = host.parse::<IpAddr>().ok();
    no_proxy
        .split(',')
        .filter_map(parse_entry)
        .any(|e| match e {
            Entry::All => true,
            Entry::Net(net) => ip.is_some_and(|ip| net.contains(&ip)),
            Entry::Domain {
                name,
                subdomains_only,
                port: p,
            } => {
                // A name never matches an address (`2.3` is not a domain of 10.1.2.3),
                // except an address written with a port, kept here as its text.
                if ip.is_some_and(|ip| ip.to_string() != name) {
                    return false;
                }
                let port_ok = p.is_none_or(|p| p == port);
                let sub = host.ends_with(&format!(".{name}"));
                port_ok && (sub || (!subdomains_only && host == name))
            }
        })
}

/// A proxy the API server is reached through, and where it was set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proxy {
    pub url: http::Uri,
    /// `the kubeconfig's proxy-url`, or the variable's name as it was set (`HTTPS_PROXY`,
    /// `https_proxy`).
    pub from: String,
}

impl Proxy {
    /// As an error names it: its host and port (never a password), and where it was set.
    pub fn shown(&self) -> String {
        let host = self.url.host().unwrap_or_default();
        match self.url.port_u16() {
            Some(port) => format!("the proxy {host}:{port} (from {})", self.from),
            None => format!("the proxy {host} (from {})", self.from),
        }
    }
}

/// The proxy for `server` (an API server URL), or none: `cluster_proxy` is the kubeconfig
/// cluster's `proxy-url`, `env` reads an environment variable.
pub fn proxy_for(
    server: &http::Uri,
    cluster_proxy: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<Proxy>, String> {
    let parse = |what: &str, url: &str| {
        url.parse::<http::Uri>().map_err(|e| {
            // A proxy URL may carry a password: never repeat it.
            format!("{what} is not a URL ({e})")
        })
    };
    if let Some(url) = cluster_proxy.map(str::trim).filter(|u| !u.is_empty()) {
        let from = "the kubeconfig's proxy-url";
        return parse(from, url).map(|url| {
            Some(Proxy {
                url,
                from: from.to_owned(),
            })
        });
    }
    let https = server.scheme_str() != Some("http");
    // The first of the two names that is set and not empty, as Go's getEnvAny: its value
    // and the name it was set under.
    let var = |name: &str| {
        let set = |n: &str| {
            env(n)
                .filter(|v| !v.trim().is_empty())
                .map(|v| (v, n.to_owned()))
        };
        set(name).or_else(|| set(&name.to_ascii_lowercase()))
    };
    let name = if https { "HTTPS_PROXY" } else { "HTTP_PROXY" };
    let Some((url, from)) = var(name) else {
        return Ok(None);
    };
    let host = server.host().unwrap_or_default();
    let port = server.port_u16().unwrap_or(if https { 443 } else { 80 });
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = bare.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if loopback || var("NO_PROXY").is_some_and(|(np, _)| excluded(&np, host, port)) {
        return Ok(None);
    }
    // A bare host:port is taken as an http:// proxy, as Go does.
    let url = if url.contains("://") {
        url
    } else {
        format!("http://{url}")
    };
    parse(&from, &url).map(|url| Some(Proxy { url, from }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decide(server: &str, vars: &[(&str, &str)]) -> Option<String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        proxy_for(&server.parse().unwrap(), None, |k| {
            vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        })
        .unwrap()
        .map(|p| p.url.to_string())
    }

    #[test]
    fn no_proxy_is_matched_against_the_api_servers_host_as_kubectl_does() {
        let p = "http://proxy.corp:3128";
        let server = "https://api.prod.example.com:6443";
        assert_eq!(
            decide(server, &[("HTTPS_PROXY", p)]).as_deref(),
            Some("http://proxy.corp:3128/")
        );
        for (no_proxy, direct) in [
            ("example.com", true),
            (".example.com", true),
            ("*.example.com", true),
            ("prod.example.com", true),
            ("api.prod.example.com", true),
            ("API.PROD.EXAMPLE.COM", true),
            ("xample.com", false),
            ("other.com", false),
            ("api.prod.example.com:6443", true),
            ("api.prod.example.com:443", false),
            ("*", true),
            ("localhost,127.0.0.1,,example.com,", true),
            ("", false),
        ] {
            let vars = [("HTTPS_PROXY", p), ("NO_PROXY", no_proxy)];
            assert_eq!(
                decide(server, &vars).is_none(),
                direct,
                "NO_PROXY={no_proxy:?}"
            );
        }
        // Addresses and CIDR blocks; the lower-case names too.
        let ip = "https://10.1.2.3:6443";
        for (no_proxy, direct) in [
            ("10.0.0.0/8", true),
            ("10.1.2.3", true),
            ("10.1.2.3:6443", true),
            ("10.1.2.3:443", false),
            ("192.168.0.0/16", false),
        ] {
            let vars = [("https_proxy", p), ("no_proxy", no_proxy)];
            assert_eq!(decide(ip, &vars).is_none(), direct, "no_proxy={no_proxy:?}");
        }
        assert!(
            decide(
                "https://[fd00::1]:6443",
                &[("HTTPS_PROXY", p), ("NO_PROXY", "fd00::/8")]
            )
            .is_none()
        );
        assert!(
            decide(ip, &[("HTTPS_PROXY", p), ("NO_PROXY", "2.3")]).is_some(),
            "a name is not an address"
        );
        // An empty upper-case variable gives way to the lower-case one.
        assert!(decide(server, &[("HTTPS_PROXY", ""), ("https_proxy", p)]).is_some());
        assert!(
            decide(
                server,
                &[
                    ("HTTPS_PROXY", p),
                    ("NO_PROXY", ""),
                    ("no_proxy", "example.com")
                ]
            )
            .is_none()
        );
        // Loopback is never proxied; an http server uses HTTP_PROXY, not HTTPS_PROXY.
        assert!(decide("https://127.0.0.1:6443", &[("HTTPS_PROXY", p)]).is_none());
        assert!(decide("https://localhost:6443", &[("HTTPS_PROXY", p)]).is_none());
        assert!(decide("http://api.example.com:8080", &[("HTTPS_PROXY", p)]).is_none());
        assert_eq!(
            decide(
                "http://api.example.com:8080",
                &[("HTTP_PROXY", "proxy.corp:3128")]
            )
            .as_deref(),
            Some("http://proxy.corp:3128/")
        );
    }

    #[test]
    fn the_kubeconfigs_proxy_url_wins_and_a_bad_one_is_a_clear_error_without_its_password() {
        let server: http::Uri = "https://api.example.com".parse().unwrap();
        let got = proxy_for(&server, Some("http://p:3128"), |_| Some("x".into()))
            .unwrap()
            .unwrap();
        assert_eq!(got.url.to_string(), "http://p:3128/");
        assert_eq!(
            got.shown(),
            "the proxy p:3128 (from the kubeconfig's proxy-url)"
        );
        // A variable set in lower case is named so, and a password is never shown.
        let got = proxy_for(&server, None, |k| {
            (k == "https_proxy").then(|| "http://u:s3cret@proxy.corp:3128".into())
        })
        .unwrap()
        .unwrap();
        assert_eq!(got.shown(), "the proxy proxy.corp:3128 (from https_proxy)");
        let err = proxy_for(&server, Some("http://u:s3cret@ bad"), |_| None).unwrap_err();
        assert!(
            err.contains("proxy-url") && !err.contains("s3cret"),
            "{err}"
        );
    }
}
