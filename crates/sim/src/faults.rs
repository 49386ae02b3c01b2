//! Fault injection: each `--fault` flag names one misbehaviour of a real API server, so the
//! tool's recovery paths (watch resume, relist, retries, permission checks) can be exercised.

use std::collections::BTreeSet;
use std::str::FromStr;
use std::time::Duration;

/// One `--fault` value.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// `drop-watches=10s`: close every open watch this often.
    DropWatches(Duration),
    /// `expire-watches`: answer every watch resume (a resourceVersion given) with 410 Expired.
    ExpireWatches,
    /// `latency=200ms`: delay every API answer.
    Latency(Duration),
    /// `no-websocket`: refuse WebSocket watches with 503 (as a proxy that cannot upgrade),
    /// so clients that try them first (fabric8, in Spark's driver) fall back to HTTP.
    NoWebsocket,
    /// `error-rate=0.05`: answer this fraction of API requests with a 500 Status.
    ErrorRate(f64),
    /// `deny=delete,patch`: 403 for these verbs on pods; access reviews say no. `proxy`
    /// denies `services/proxy` and `pods/proxy` (a driver's REST API through the proxy).
    Deny(BTreeSet<String>),
    /// `restart-after=30s`: drop every connection once, keeping state and versions.
    RestartAfter(Duration),
    /// `event-ttl=60s`: events expire after this long (real clusters: 1h).
    EventTtl(Duration),
    /// `forbid=podgroups,workloads`: 403 for every verb on these resources (an RBAC role
    /// without them).
    Forbid(BTreeSet<String>),
    /// `silent-driver=scale-app-1-`: a driver whose service or pod name starts so takes
    /// its REST API's requests through the proxy and never answers (a driver stuck in a
    /// full GC, a UI thread pool exhausted).
    SilentDriver(BTreeSet<String>),
}

impl FromStr for Fault {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (name, value) = match s.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v.trim())),
            None => (s.trim(), None),
        };
        let dur = |v: Option<&str>| -> Result<Duration, String> {
            let v = v.ok_or_else(|| format!("fault {name} needs a duration, e.g. {name}=10s"))?;
            humantime::parse_duration(v).map_err(|e| format!("fault {name}: {v:?}: {e}"))
        };
        match name {
            "drop-watches" => Ok(Self::DropWatches(dur(value)?)),
            "expire-watches" => Ok(Self::ExpireWatches),
            "no-websocket" => Ok(Self::NoWebsocket),
            "latency" => Ok(Self::Latency(dur(value)?)),
            "restart-after" => Ok(Self::RestartAfter(dur(value)?)),
            "event-ttl" => Ok(Self::EventTtl(dur(value)?)),
            "error-rate" => {
                let v = value.ok_or("fault error-rate needs a fraction, e.g. error-rate=0.05")?;
                let r: f64 = v
                    .parse()
                    .map_err(|_| format!("fault error-rate: {v:?} is not a number"))?;
                if !(0.0..=1.0).contains(&r) {
                    return Err(format!("fault error-rate: {r} is not between 0 and 1"));
                }
                Ok(Self::ErrorRate(r))
            }
            "silent-driver" => Ok(Self::SilentDriver(listed(
                value,
                "fault silent-driver needs name prefixes, e.g. silent-driver=scale-app-1-",
            )?)),
            "forbid" => Ok(Self::Forbid(listed(
                value,
                "fault forbid needs resources, e.g. forbid=podgroups,workloads",
            )?)),
            "deny" => {
                let verbs = listed(value, "fault deny needs verbs, e.g. deny=delete,patch")?;
                const KNOWN: [&str; 9] = [
                    "proxy",
                    "get",
                    "list",
                    "watch",
                    "create",
                    "update",
                    "patch",
                    "delete",
                    "deletecollection",
                ];
                if let Some(bad) = verbs.iter().find(|v| !KNOWN.contains(&v.as_str())) {
                    return Err(format!(
                        "fault deny: unknown verb {bad:?} (one of {})",
                        KNOWN.join(", ")
                    ));
                }
                Ok(Self::Deny(verbs))
            }
            other => Err(format!(
                "unknown fault {other:?}; one of drop-watches=D, expire-watches, no-websocket, latency=D, error-rate=F, deny=VERBS, forbid=RESOURCES, restart-after=D, event-ttl=D, silent-driver=NAME-PREFIXES"
            )),
        }
    }
}

/// A fault's comma-separated values, none empty; `needs` when there are none.
fn listed(value: Option<&str>, needs: &str) -> Result<BTreeSet<String>, String> {
    let names: BTreeSet<String> = value
        .unwrap_or_default()
        .split(',')
        .map(|x| x.trim().to_owned())
        .filter(|x| !x.is_empty())
        .collect();
    if names.is_empty() {
        return Err(needs.to_owned());
    }
    Ok(names)
}

/// All faults in force.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    pub drop_watches: Option<Duration>,
    pub expire_watches: bool,
    pub no_websocket: bool,
    pub latency: Option<Duration>,
    pub error_rate: f64,
    pub deny: BTreeSet<String>,
    pub restart_after: Option<Duration>,
    pub event_ttl: Option<Duration>,
    pub forbid: BTreeSet<String>,
    pub silent_drivers: BTreeSet<String>,
}

impl Faults {
    pub fn new(list: &[Fault]) -> Self {
        let mut f = Self::default();
        for fault in list {
            match fault {
                Fault::DropWatches(d) => f.drop_watches = Some(*d),
                Fault::ExpireWatches => f.expire_watches = true,
                Fault::NoWebsocket => f.no_websocket = true,
                Fault::Latency(d) => f.latency = Some(*d),
                Fault::ErrorRate(r) => f.error_rate = *r,
                Fault::Deny(v) => f.deny.extend(v.iter().cloned()),
                Fault::RestartAfter(d) => f.restart_after = Some(*d),
                Fault::EventTtl(d) => f.event_ttl = Some(*d),
                Fault::Forbid(r) => f.forbid.extend(r.iter().cloned()),
                Fault::SilentDriver(n) => f.silent_drivers.extend(n.iter().cloned()),
            }
        }
        f
    }

    /// Whether the driver behind this service or pod (`name`, a `:port` after it or not)
    /// never answers.
    pub fn silences(&self, name: &str) -> bool {
        self.silent_drivers
            .iter()
            .any(|p| name.starts_with(p.as_str()))
    }

    /// Whether `verb` on `resource` is denied.
    pub fn denies(&self, verb: &str, resource: &str) -> bool {
        (resource == "pods" && self.deny.contains(verb))
            || (resource.ends_with("/proxy") && self.deny.contains("proxy"))
            || self.forbid.contains(resource)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_fault() {
        assert_eq!(
            "drop-watches=10s".parse(),
            Ok(Fault::DropWatches(Duration::from_secs(10)))
        );
        assert_eq!("expire-watches".parse(), Ok(Fault::ExpireWatches));
        assert_eq!("no-websocket".parse(), Ok(Fault::NoWebsocket));
        assert_eq!(
            "latency=200ms".parse(),
            Ok(Fault::Latency(Duration::from_millis(200)))
        );
        assert_eq!("error-rate=0.05".parse(), Ok(Fault::ErrorRate(0.05)));
        assert_eq!(
            "forbid=podgroups, workloads".parse(),
            Ok(Fault::Forbid(
                ["podgroups", "workloads"]
                    .map(String::from)
                    .into_iter()
                    .collect()
            ))
        );
        assert!("forbid=".parse::<Fault>().is_err());
        let silent: Fault = "silent-driver=app-1-".parse().expect("a fault");
        let f = Faults::new(&[silent]);
        assert!(f.silences("app-1-abc-driver-svc:spark-ui") && !f.silences("app-10-x-driver"));
        assert!("silent-driver=".parse::<Fault>().is_err());
        assert_eq!(
            "deny=delete,patch".parse(),
            Ok(Fault::Deny(
                ["delete".to_owned(), "patch".to_owned()].into()
            ))
        );
        assert_eq!(
            "restart-after=30s".parse(),
            Ok(Fault::RestartAfter(Duration::from_secs(30)))
        );
        assert_eq!(
            "event-ttl=60s".parse(),
            Ok(Fault::EventTtl(Duration::from_secs(60)))
        );
        for bad in [
            "nope",
            "latency",
            "error-rate=2",
            "deny=fly",
            "drop-watches=soon",
        ] {
            assert!(bad.parse::<Fault>().is_err(), "{bad}");
        }
    }
}
