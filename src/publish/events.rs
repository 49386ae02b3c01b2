//! `record --emit-events`: each executor or app verdict of warning or error severity as a
//! Kubernetes Event on the app's driver pod, so `kubectl describe pod <driver>`, k9s and
//! every event exporter show the diagnosis (docs/metrics.md, "Events").
//!
//! One Event per driver pod and reason: a storm of 30 OOM kills is one Event with count 30.
//! Its name is derived from the driver's uid and the reason, and it lists the executors it
//! counts (an annotation, as ranges), so a restarted recorder updates the same Event and
//! never counts an executor twice. The planner ([`Planner`]) is pure: store in, Events out;
//! the writer ([`spawn_writer`]) reconciles them with the API server.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use spark_triage_core::diagnose::{Code, Severity};
use spark_triage_core::text;

use crate::store;
use crate::store::{ExecutorRecord, Snapshot};

/// The annotation that lists the executors an Event counts (`1-30,45`).
pub(crate) const EXECUTORS_ANNOTATION: &str = "spark-triage.dev/executors";
/// The Events' `source.component` and `reportingComponent`.
pub(crate) const COMPONENT: &str = "spark-triage";
/// The Event's message is cut to this many bytes (the API server keeps 1 KiB in practice).
const MESSAGE_MAX: usize = 1024;

/// One Event as it should be.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Planned {
    pub namespace: String,
    pub name: String,
    pub driver_pod: String,
    pub driver_uid: String,
    pub reason: String,
    /// `Warning` for warn and error verdicts (Events have no third type).
    pub kind: &'static str,
    /// An app Event's whole message; an executor Event's tail (the latest one's words),
    /// after its headline ([`Planned::text`]).
    pub message: String,
    /// An executor Event's app and cause label: its headline says how many and which.
    pub headline: Option<(String, &'static str)>,
    /// The executors it counts (empty for an app verdict, whose count is 1).
    pub executors: BTreeSet<i64>,
    /// What the store says against an id an existing Event lists: the app's executors
    /// that are running or ended otherwise, and its highest executor id (Spark counts up:
    /// an id above it is not one yet). An Event under the tool's name is trusted for the
    /// other ids only: one planted listing every id silenced the real one.
    pub contradicted: BTreeSet<i64>,
    pub max_id: i64,
}

impl Planned {
    pub fn count(&self) -> usize {
        self.executors.len().max(1)
    }

    /// The message for these executors (the Event's own list, which after a restart is the
    /// union of the old Event's and ours): how many, which, and the latest one's words.
    pub fn text(&self, ids: &BTreeSet<i64>) -> String {
        match &self.headline {
            None => self.message.clone(),
            Some((app, label)) => {
                let n = ids.len();
                bounded(format!(
                    "{n} executor{} of {app}: {label} (executors {}).{}",
                    if n == 1 { "" } else { "s" },
                    ranges(ids),
                    self.message
                ))
            }
        }
    }
}

/// What the planner remembers between rounds.
#[derive(Debug, Default)]
pub(crate) struct Planner {
    /// An executor's cause, and since when it has been that cause (a verdict settles).
    settling: HashMap<(String, String, i64), (Code, Instant)>,
    /// Each Event's executors so far (they stay counted after the store forgets them).
    counted: HashMap<String, BTreeSet<i64>>,
    /// The count last handed to the writer, by Event name: an executor Event is written
    /// again only when it counts more (its message, with ages in it, changes every round).
    sent: HashMap<String, usize>,
    /// An app Event's message last handed to the writer, and when: a new message is written
    /// at most once a minute.
    sent_app: HashMap<String, (String, Instant)>,
}

impl Planner {
    /// The Events that are new or changed since the last round.
    pub fn plan(&mut self, snap: &Snapshot, now: Instant) -> Vec<Planned> {
        let mut out = Vec::new();
        let mut live = std::collections::HashSet::new();
        for a in snap.apps.values() {
            let Some(driver) = &a.driver else { continue };
            let Some(uid) = driver.uid.clone() else {
                continue;
            };
            let mut by_reason: HashMap<String, (Code, Vec<&ExecutorRecord>)> = HashMap::new();
            for e in a.executors.values() {
                let Some(f) = e.verdict.cause() else { continue };
                let k = (a.namespace.clone(), a.app_id.clone(), e.id);
                live.insert(k.clone());
                if f.severity == Severity::Info {
                    self.settling.remove(&k);
                    continue;
                }
                let since = match self.settling.get(&k) {
                    Some((code, t)) if *code == f.code => *t,
                    _ => {
                        self.settling.insert(k, (f.code, now));
                        now
                    }
                };
                if now.saturating_duration_since(since) < super::verdicts::SETTLE {
                    continue;
                }
                by_reason
                    .entry(reason(f.code, false))
                    .or_insert_with(|| (f.code, Vec::new()))
                    .1
                    .push(e);
            }
            let max_id = a.executors.keys().copied().max().unwrap_or(0);
            for (reason, (code, execs)) in by_reason {
                let contradicted: BTreeSet<i64> = a
                    .executors
                    .values()
                    .filter(|e| {
                        e.verdict.cause().is_none_or(|f| {
                            f.severity == Severity::Info || self::reason(f.code, false) != reason
                        }) || store::ended_at(e).is_none()
                    })
                    .map(|e| e.id)
                    .collect();
                let name = event_name(&driver.pod, &uid, &reason);
                let ids = self.counted.entry(name.clone()).or_default();
                ids.extend(execs.iter().map(|e| e.id));
                // The newest ending (else the highest id) speaks for the storm.
                let latest = execs
                    .iter()
                    .max_by_key(|e| (store::ended_at(e), e.id))
                    .copied();
                out.push(Planned {
                    namespace: a.namespace.clone(),
                    name,
                    driver_pod: driver.pod.clone(),
                    driver_uid: uid.clone(),
                    reason,
                    kind: "Warning",
                    message: latest_words(latest),
                    headline: Some((
                        a.app_name.clone().unwrap_or_else(|| a.app_id.clone()),
                        code.label().0,
                    )),
                    executors: ids.clone(),
                    contradicted,
                    max_id,
                });
            }
            let v = a.verdict();
            // The app's verdict settles like an executor's (id -1: no executor has it).
            let k = (a.namespace.clone(), a.app_id.clone(), -1);
            live.insert(k.clone());
            let c = v.cause();
            let since = match self.settling.get(&k) {
                Some((code, t)) if *code == c.code => *t,
                _ => {
                    self.settling.insert(k, (c.code, now));
                    now
                }
            };
            if v.severity() != Severity::Info
                && now.saturating_duration_since(since) >= super::verdicts::SETTLE
            {
                let reason = reason(c.code, true);
                out.push(Planned {
                    namespace: a.namespace.clone(),
                    name: event_name(&driver.pod, &uid, &reason),
                    driver_pod: driver.pod.clone(),
                    driver_uid: uid.clone(),
                    reason,
                    kind: "Warning",
                    message: bounded(format!("{} {}", sentence(&c.summary), c.hint)),
                    headline: None,
                    executors: BTreeSet::new(),
                    contradicted: BTreeSet::new(),
                    max_id: 0,
                });
            }
        }
        self.settling.retain(|k, _| live.contains(k));
        out.retain(|p| {
            if p.executors.is_empty() {
                self.sent_app.get(&p.name).is_none_or(|(m, at)| {
                    *m != p.message && now.saturating_duration_since(*at) >= APP_REWRITE
                })
            } else {
                self.sent.get(&p.name) != Some(&p.count())
            }
        });
        for p in &out {
            if p.executors.is_empty() {
                self.sent_app
                    .insert(p.name.clone(), (p.message.clone(), now));
            } else {
                self.sent.insert(p.name.clone(), p.count());
            }
        }
        // Apps gone from the store leave the memo (their Events stay in the cluster).
        let names: std::collections::HashSet<&str> = snap
            .apps
            .values()
            .filter_map(|a| a.driver.as_ref())
            .map(|d| d.pod.as_str())
            .collect();
        let kept = |n: &String| {
            n.rsplit_once(".st-")
                .is_some_and(|(pod, _)| names.contains(pod))
        };
        self.counted.retain(|n, _| kept(n));
        self.sent.retain(|n, _| kept(n));
        self.sent_app.retain(|n, _| kept(n));
        out
    }
}

impl Planner {
    /// The writer did not take the last round: everything is planned again next round.
    pub fn forget_sent(&mut self) {
        self.sent.clear();
        self.sent_app.clear();
    }
}

/// The Event's reason: `SparkExecutor` or `SparkApp`, then the code in CamelCase with its
/// acronyms kept (`container-oom-killed` → `SparkExecutorContainerOOMKilled`).
pub(crate) fn reason(code: Code, app: bool) -> String {
    let mut out = String::from(if app { "SparkApp" } else { "SparkExecutor" });
    for w in code.as_str().split('-') {
        match w {
            "oom" | "jvm" | "rpc" | "sigterm" | "sigkill" | "sigsegv" | "sigabrt" => {
                out.push_str(&w.to_ascii_uppercase());
            }
            _ => {
                let mut c = w.chars();
                if let Some(first) = c.next() {
                    out.extend(first.to_uppercase());
                    out.push_str(c.as_str());
                }
            }
        }
    }
    out
}

/// `<driver pod>.st-<16 hex>`: the same for the same driver (uid) and reason, so a restarted
/// recorder finds the Event it made.
fn event_name(driver: &str, uid: &str, reason: &str) -> String {
    // FNV-1a, 64 bits: specified, so every build and release names an Event alike (std's
    // hasher may change between Rust releases).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in uid.bytes().chain([0]).chain(reason.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let suffix = format!(".st-{h:016x}");
    // A name is at most 253 characters: a long pod name is cut (its uid's hash still tells).
    let room = 253 - suffix.len();
    let base: String = driver.chars().take(room).collect();
    format!("{base}{suffix}")
}

/// " Latest, executor 7: <summary>. <hint>": the newest ending's words.
fn latest_words(latest: Option<&ExecutorRecord>) -> String {
    latest
        .and_then(|e| Some((e.id, e.verdict.cause()?)))
        .map(|(id, f)| {
            format!(
                " Latest, executor {id}: {} {}",
                sentence(&f.summary),
                f.hint
            )
        })
        .unwrap_or_default()
}

fn sentence(s: &str) -> String {
    let s = s.trim_end();
    if s.ends_with(['.', '!', '?']) {
        s.to_owned()
    } else {
        format!("{s}.")
    }
}

/// At most [`MESSAGE_MAX`] bytes, cut at a character boundary with an ellipsis.
fn bounded(s: String) -> String {
    text::clipped(s.trim(), MESSAGE_MAX).into_owned()
}

/// `1-3,7,9-10`.
pub(crate) fn ranges(ids: &BTreeSet<i64>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut it = ids.iter().copied().peekable();
    while let Some(start) = it.next() {
        let mut end = start;
        while let Some(next) = end.checked_add(1)
            && it.peek() == Some(&next)
        {
            end = next;
            it.next();
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
    }
    out.join(",")
}

/// At most this many executor ids are read from an Event's annotation (a planted one cannot
/// make the recorder hold more).
const IDS_MAX: usize = 100_000;

/// The ids of `1-3,7`, at most [`IDS_MAX`]; what does not parse is left out.
pub(crate) fn parse_ranges(s: &str) -> BTreeSet<i64> {
    let mut out = BTreeSet::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if out.len() >= IDS_MAX {
            break;
        }
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<i64>(), b.parse::<i64>())
                    && b >= a
                {
                    let room = i64::try_from(IDS_MAX - out.len()).unwrap_or(0);
                    out.extend(a..=b.min(a.saturating_add(room - 1)));
                }
            }
            None => {
                if let Ok(id) = part.parse() {
                    out.insert(id);
                }
            }
        }
    }
    out
}

/// An app Event's new message is written at most this often.
const APP_REWRITE: Duration = Duration::from_secs(60);

/// How often the writer goes over what is due.
const WRITE_EVERY: Duration = Duration::from_secs(5);
/// At most this many writes a round (the rest wait for the next one).
const WRITES_PER_ROUND: usize = 50;

/// A namespace that refused Events (403) is tried again after this long (its grant may come,
/// a terminating namespace may be made again).
const FORBIDDEN_FOR: Duration = Duration::from_secs(600);

/// The writer: takes what the planner says, and creates or updates the Events (each write
/// under the client's request timeout). A failed write is tried again in a later round
/// (after those not tried yet); one the API server calls invalid is dropped with a warning.
pub(crate) fn spawn_writer(
    client: kube::Client,
    mut rx: tokio::sync::mpsc::Receiver<Vec<Planned>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let instance = std::env::var("HOSTNAME").unwrap_or_else(|_| COMPONENT.to_owned());
        let mut due: HashMap<String, Planned> = HashMap::new();
        // The order they are tried in: a failing one goes to the back.
        let mut queue: std::collections::VecDeque<String> = Default::default();
        let mut forbidden: HashMap<String, Instant> = HashMap::new();
        let mut tick = tokio::time::interval(WRITE_EVERY);
        let mut open = true;
        loop {
            tokio::select! {
                got = rx.recv(), if open => match got {
                    Some(list) => {
                        for p in list {
                            if due.insert(p.name.clone(), p.clone()).is_none() {
                                queue.push_back(p.name);
                            }
                        }
                        continue;
                    }
                    None => open = false,
                },
                _ = tick.tick() => {}
            }
            if !open && due.is_empty() {
                return;
            }
            forbidden.retain(|_, since| since.elapsed() < FORBIDDEN_FOR);
            for _ in 0..WRITES_PER_ROUND.min(queue.len()) {
                let Some(name) = queue.pop_front() else { break };
                let Some(p) = due.get(&name) else { continue };
                if forbidden.contains_key(&p.namespace) {
                    queue.push_back(name);
                    continue;
                }
                match write(&client, p, &instance).await {
                    Ok(()) => {
                        due.remove(&name);
                    }
                    Err(kube::Error::Api(e)) if e.code == 403 => {
                        eprintln!(
                            "--emit-events: cannot write Events in {}: forbidden (needs create, get and update on events: deploy/components/events); tried again in {} min",
                            p.namespace,
                            FORBIDDEN_FOR.as_secs() / 60
                        );
                        forbidden.insert(p.namespace.clone(), Instant::now());
                        queue.push_back(name);
                    }
                    Err(kube::Error::Api(e)) if matches!(e.code, 400 | 404 | 422) => {
                        eprintln!(
                            "--emit-events: {}: refused ({}): {}",
                            p.name, e.code, e.message
                        );
                        due.remove(&name);
                    }
                    Err(e) => {
                        tracing::warn!("--emit-events: {}: {e}", p.name);
                        queue.push_back(name);
                    }
                }
            }
        }
    })
}

/// Creates the Event, or updates the one a previous run made: its executors are the union
/// of both, so nothing is counted twice and nothing counted is lost.
async fn write(client: &kube::Client, p: &Planned, instance: &str) -> Result<(), kube::Error> {
    use k8s_openapi::api::core::v1::Event;
    use kube::api::{Api, PostParams};
    let api: Api<Event> = Api::namespaced(client.clone(), &p.namespace);
    let now =
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now());
    let mut ev = event(p, instance, &now, &p.executors);
    match api.create(&PostParams::default(), &ev).await {
        Ok(_) => return Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => return Err(e),
    }
    let old = api.get(&p.name).await?;
    // Only an Event this tool made about this driver is merged into: one planted under the
    // name (it can be guessed) is left alone.
    let ours = old
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("app.kubernetes.io/managed-by"))
        .is_some_and(|v| v == COMPONENT)
        && old.involved_object.uid.as_deref() == Some(p.driver_uid.as_str());
    if !ours {
        eprintln!(
            "--emit-events: {}/{} exists and is not this tool's Event about {}: left alone",
            p.namespace, p.name, p.driver_pod
        );
        return Ok(());
    }
    let listed = old
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(EXECUTORS_ANNOTATION))
        .map(|s| parse_ranges(s))
        .unwrap_or_default();
    // Its ids the store does not contradict (a previous run's, including those forgotten
    // since), and ours.
    let mut ids: BTreeSet<i64> = listed
        .iter()
        .copied()
        .filter(|id| *id <= p.max_id && !p.contradicted.contains(id))
        .collect();
    if ids.len() < listed.len() {
        eprintln!(
            "--emit-events: {}/{} listed {} executor(s) that are not this cause's: rewritten",
            p.namespace,
            p.name,
            listed.len() - ids.len()
        );
    }
    ids.extend(p.executors.iter().copied());
    let unchanged = if p.executors.is_empty() {
        old.message.as_deref() == Some(p.text(&ids).as_str())
    } else {
        ids == listed
    };
    if unchanged {
        return Ok(());
    }
    ev = event(p, instance, &now, &ids);
    ev.metadata.resource_version = old.metadata.resource_version.clone();
    ev.first_timestamp = old.first_timestamp.clone().or(ev.first_timestamp);
    api.replace(&p.name, &PostParams::default(), &ev)
        .await
        .map(|_| ())
}

fn event(
    p: &Planned,
    instance: &str,
    now: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
    ids: &BTreeSet<i64>,
) -> k8s_openapi::api::core::v1::Event {
    use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
    let mut annotations = std::collections::BTreeMap::new();
    if !ids.is_empty() {
        annotations.insert(EXECUTORS_ANNOTATION.to_owned(), ranges(ids));
    }
    Event {
        metadata: kube::api::ObjectMeta {
            name: Some(p.name.clone()),
            namespace: Some(p.namespace.clone()),
            annotations: Some(annotations),
            labels: Some(
                [(
                    "app.kubernetes.io/managed-by".to_owned(),
                    COMPONENT.to_owned(),
                )]
                .into(),
            ),
            ..Default::default()
        },
        involved_object: ObjectReference {
            api_version: Some("v1".to_owned()),
            kind: Some("Pod".to_owned()),
            namespace: Some(p.namespace.clone()),
            name: Some(p.driver_pod.clone()),
            uid: Some(p.driver_uid.clone()),
            ..Default::default()
        },
        reason: Some(p.reason.clone()),
        message: Some(p.text(ids)),
        type_: Some(p.kind.to_owned()),
        count: Some(i32::try_from(ids.len().max(1)).unwrap_or(i32::MAX)),
        first_timestamp: Some(now.clone()),
        last_timestamp: Some(now.clone()),
        source: Some(EventSource {
            component: Some(COMPONENT.to_owned()),
            host: None,
        }),
        reporting_component: Some(COMPONENT.to_owned()),
        reporting_instance: Some(instance.to_owned()),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use spark_triage_core::model::testing;

    use super::*;
    use crate::publish::verdicts::SETTLE;
    use crate::publish::verdicts::tests::{exec, t};
    use crate::source::SourceEvent;
    use crate::store::Store;

    fn driver(n: usize) -> SourceEvent {
        let p = testing::pod(json!({
            "metadata": {"name": format!("app-{n}-driver"), "namespace": "spark-jobs", "uid": format!("driver-uid-{n}"),
                "resourceVersion": "1",
                "labels": {"spark-app-selector": format!("spark-{n}"), "spark-role": "driver", "spark-app-name": format!("app-{n}")}},
            "spec": {"restartPolicy": "Never", "nodeName": "n1", "containers": [{"name": "spark-kubernetes-driver"}]},
            "status": {"phase": "Running", "containerStatuses": [{"name": "spark-kubernetes-driver", "image": "spark",
                "imageID": "", "ready": true, "restartCount": 0, "state": {"running": {"startedAt": "2027-01-15T08:00:00Z"}}}]}
        }));
        SourceEvent::PodUpserted {
            pod: std::sync::Arc::new(p),
            at: t(0),
        }
    }

    #[test]
    fn reasons_are_camel_case_with_their_acronyms() {
        assert_eq!(
            reason(Code::ContainerOomKilled, false),
            "SparkExecutorContainerOOMKilled"
        );
        assert_eq!(reason(Code::JvmOom, false), "SparkExecutorJVMOOM");
        assert_eq!(
            reason(Code::DriverOomKilled, true),
            "SparkAppDriverOOMKilled"
        );
        assert_eq!(reason(Code::NodeSigkill, false), "SparkExecutorNodeSIGKILL");
    }

    #[test]
    fn ranges_round_trip_and_a_hostile_annotation_is_bounded() {
        let ids: BTreeSet<i64> = [1, 2, 3, 7, 9, 10].into();
        assert_eq!(ranges(&ids), "1-3,7,9-10");
        assert_eq!(parse_ranges("1-3,7,9-10"), ids);
        assert_eq!(parse_ranges("x, 4 ,5-3"), [4].into());
        // However many ranges, however wide: at most IDS_MAX ids.
        let planted = (0..20_000_i64)
            .map(|i| format!("{}-{}", i * 10_000_000, i * 10_000_000 + 999_999))
            .collect::<Vec<_>>()
            .join(",");
        assert_eq!(parse_ranges(&planted).len(), IDS_MAX);
        let top: BTreeSet<i64> = [i64::MAX - 1, i64::MAX].into();
        assert_eq!(ranges(&top), format!("{}-{}", i64::MAX - 1, i64::MAX));
    }

    #[test]
    fn an_events_name_is_the_same_in_every_build() {
        // Pinned: a restarted recorder of another build must find the Event it made.
        assert_eq!(
            event_name(
                "etl-driver",
                "0b4c3d1e-uid",
                "SparkExecutorContainerOOMKilled"
            ),
            "etl-driver.st-00316112ed8cca59"
        );
        let long = "d".repeat(300);
        assert_eq!(event_name(&long, "u", "r").len(), 253);
    }

    #[test]
    fn a_storm_is_one_event_planned_again_only_when_it_counts_more() {
        let mut s = Store::new();
        s.apply(driver(1));
        for id in 1..=3 {
            s.apply(exec(1, id, true));
        }
        let mut p = Planner::default();
        let t0 = Instant::now();
        assert!(p.plan(s.view(), t0).is_empty(), "not settled yet");
        let due = p.plan(s.view(), t0 + SETTLE);
        assert_eq!(due.len(), 2, "the executors' Event and the app's: {due:#?}");
        let ev = due
            .iter()
            .find(|e| !e.executors.is_empty())
            .expect("the executors'");
        let app = due
            .iter()
            .find(|e| e.executors.is_empty())
            .expect("the app's");
        assert_eq!(app.reason, "SparkAppCrashLoop");
        assert!(
            app.message.starts_with("3 × container-oom-killed"),
            "{}",
            app.message
        );
        assert_eq!(ev.reason, "SparkExecutorContainerOOMKilled");
        assert_eq!(ev.driver_pod, "app-1-driver");
        assert_eq!(ev.driver_uid, "driver-uid-1");
        assert_eq!(ev.count(), 3);
        assert!(ev.name.starts_with("app-1-driver.st-"), "{}", ev.name);
        let text = ev.text(&ev.executors);
        assert!(
            text.starts_with(
                "3 executors of app-1: OOMKilled (executors 1-3). Latest, executor 3:"
            ),
            "{text}"
        );
        // After a restart the Event's own list (the union) makes the headline.
        let union: BTreeSet<i64> = (1..=35).collect();
        assert!(
            ev.text(&union)
                .starts_with("35 executors of app-1: OOMKilled (executors 1-35).")
        );
        assert!(p.plan(s.view(), t0 + SETTLE * 2).is_empty(), "nothing new");
        s.apply(exec(1, 4, true));
        assert!(p.plan(s.view(), t0 + SETTLE * 2).is_empty());
        let due = p.plan(s.view(), t0 + SETTLE * 3);
        assert_eq!(
            due.len(),
            1,
            "the app's new message waits a minute: {due:#?}"
        );
        assert_eq!(due[0].count(), 4);
        assert_eq!(due[0].name, ev.name, "the same Event");
        let due = p.plan(s.view(), t0 + SETTLE + APP_REWRITE);
        assert_eq!(due.len(), 1, "{due:#?}");
        assert!(
            due[0].message.starts_with("4 × container-oom-killed"),
            "{}",
            due[0].message
        );
    }

    #[test]
    fn a_long_message_is_cut_at_a_character() {
        let m = bounded("é".repeat(2000));
        assert!(m.len() <= MESSAGE_MAX && m.ends_with('…'), "{}", m.len());
    }
}
