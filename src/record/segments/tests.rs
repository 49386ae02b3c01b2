use super::*;
use crate::commands::replay;
use crate::output::status;
use crate::source::SourceEvent;
use crate::store::Store;

struct Tmp(PathBuf);
impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tmp(name: &str) -> Tmp {
    let d = std::env::temp_dir().join(format!("st-seg-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    Tmp(d)
}

fn fixture() -> Recording {
    let bytes = include_bytes!("../../../tests/fixtures/mixed-session.ndjson");
    super::super::read("fixture", &bytes[..]).expect("fixture")
}

fn t0() -> Time {
    "2026-11-30T03:00:00Z".parse().expect("time")
}

/// Empty segments opened at these minutes after `t0`, in one run.
fn segments_at(dir: &Path, minutes: &[i64]) -> Vec<PathBuf> {
    let store = Store::new();
    let at = |m: i64| t0() + chrono::Duration::minutes(m);
    let (mut w, _out) =
        SegmentWriter::start(dir, fixture().header, &store, at(minutes[0])).unwrap();
    let mut paths = vec![w.current.clone()];
    for m in &minutes[1..] {
        let _out = w.open(&store, at(*m)).unwrap();
        paths.push(w.current.clone());
    }
    paths
}

#[test]
fn names_sort_by_time_and_other_files_are_left_alone() {
    let d = tmp("names");
    let paths = segments_at(&d.0, &[0, 60, 120]);
    std::fs::write(d.0.join("notes.txt"), "x").unwrap();
    let listed: Vec<PathBuf> = list(&d.0).unwrap().into_iter().map(|s| s.path).collect();
    assert_eq!(listed, paths);
    assert_eq!(
        paths[0].file_name().unwrap().to_str(),
        Some("20261130T030000.000Z.ndjson.zst")
    );
    // Two segments in the same millisecond: the second gets the next free name.
    let store = Store::new();
    let (mut w, _o) = SegmentWriter::start(&d.0, fixture().header, &store, t0()).unwrap();
    assert_ne!(w.current, paths[0], "never onto an existing segment");
    let _o = w.open(&store, t0()).unwrap();
    assert_eq!(list(&d.0).unwrap().len(), 5);
}

#[test]
fn retention_deletes_old_segments_never_the_newest_or_the_current() {
    let d = tmp("retain");
    let paths = segments_at(&d.0, &[0, 60, 120, 180]);
    let now = t0() + chrono::Duration::minutes(200);
    let budget = Retention {
        retain: Some(chrono::Duration::minutes(100)),
        max_bytes: None,
    };
    // Segment 0 ended at 60 (< 100), segment 1 at 120 (kept: ended 80 min ago).
    let deleted = prune(&d.0, budget, now, &paths[3]).unwrap();
    assert_eq!(deleted, vec![paths[0].clone()]);
    // Everything is past a 1-minute retention, but the one being written stays, and so
    // does the newest.
    let budget = Retention {
        retain: Some(chrono::Duration::minutes(1)),
        max_bytes: None,
    };
    let deleted = prune(&d.0, budget, now + chrono::Duration::hours(9), &paths[1]).unwrap();
    assert_eq!(deleted, vec![paths[2].clone()]);
    let left: Vec<PathBuf> = list(&d.0).unwrap().into_iter().map(|s| s.path).collect();
    assert_eq!(left, vec![paths[1].clone(), paths[3].clone()]);
}

#[test]
fn the_size_budget_deletes_oldest_first_down_to_the_budget() {
    let d = tmp("size");
    let paths = segments_at(&d.0, &[0, 1, 2, 3, 4]);
    let sizes: Vec<u64> = list(&d.0).unwrap().iter().map(|s| s.bytes).collect();
    let total: u64 = sizes.iter().sum();
    // Room for all but about two segments.
    let budget = Retention {
        retain: None,
        max_bytes: Some(total - sizes[0] - sizes[1] / 2),
    };
    let deleted = prune(&d.0, budget, t0(), &paths[4]).unwrap();
    assert_eq!(deleted, paths[..2].to_vec());
    // A budget nothing fits: all but the current and the newest go.
    let budget = Retention {
        retain: None,
        max_bytes: Some(1),
    };
    let deleted = prune(&d.0, budget, t0(), &paths[3]).unwrap();
    assert_eq!(deleted, vec![paths[2].clone()]);
    assert_eq!(list(&d.0).unwrap().len(), 2);
}

/// Writes the fixture's events into segments opened before the events at these indexes,
/// as a recorder run would (each segment opens with the state so far).
fn write_split(dir: &Path, cuts: &[usize], restart_at: Option<usize>) -> Recording {
    let full = fixture();
    let mut store = Store::new();
    let start = full.header.started_at;
    let (mut w, mut out) = SegmentWriter::start(dir, full.header.clone(), &store, start).unwrap();
    for (i, ev) in full.events.iter().enumerate() {
        if cuts.contains(&i) {
            let at = full.events[i - 1].at();
            out.flush().unwrap();
            drop(out);
            out = if restart_at == Some(i) {
                // A new run, resumed from the directory (as after a crash).
                let (header, resumed) = resume(dir).expect("resumes");
                assert_eq!(resumed.view().applied, store.view().applied);
                let (nw, o) =
                    SegmentWriter::start(dir, header, &resumed, at + chrono::Duration::seconds(30))
                        .unwrap();
                w = nw;
                o
            } else {
                w.open(&store, at).unwrap()
            };
        }
        out.write(ev).unwrap();
        store.apply(ev.clone());
    }
    out.flush().unwrap();
    full
}

fn status_at(rec: Recording, t: Time) -> String {
    let app = replay::replay_app(rec, Some(t));
    serde_json::to_string(&status::report(app.store.view(), None)).unwrap()
}

#[test]
fn a_directory_reads_as_one_timeline_and_seeks_across_segment_boundaries() {
    let d = tmp("timeline");
    let full = fixture();
    let n = full.events.len();
    let cuts = [n / 3, 2 * n / 3];
    write_split(&d.0, &cuts, None);
    let whole = open_dir(&d.0, None, None, super::super::DEFAULT_MAX_LINE).unwrap();
    assert_eq!(whole.events, full.events);
    assert!(whole.gaps.is_empty() && whole.damaged.is_empty());
    assert_eq!(whole.keyframes.len(), 3, "one opening each");
    for i in [cuts[0] - 1, cuts[0], cuts[0] + 1, cuts[1], n - 1] {
        let t = full.events[i].at();
        let want = status_at(fixture(), t);
        assert_eq!(
            status_at(open_dir(&d.0, None, None, 1 << 26).unwrap(), t),
            want
        );
        // Read from the segment holding t on: its opening keyframe is the state before.
        let from_t = open_dir(&d.0, Some(t), None, 1 << 26).unwrap();
        assert!(from_t.events.len() <= n);
        assert_eq!(status_at(from_t, t), want, "from the segment of event {i}");
    }
}

#[test]
fn a_restarted_run_resumes_the_state_and_leaves_a_gap() {
    let d = tmp("restart");
    let full = fixture();
    let n = full.events.len();
    let cut = n / 2;
    write_split(&d.0, &[cut], Some(cut));
    let rec = open_dir(&d.0, None, None, 1 << 26).unwrap();
    assert_eq!(rec.events, full.events);
    assert_eq!(rec.gaps.len(), 1, "{:?}", rec.gaps);
    assert_eq!(rec.gaps[0].from, full.events[cut - 1].at());
    assert_eq!(
        rec.gaps[0].to,
        full.events[cut - 1].at() + chrono::Duration::seconds(30)
    );
    let t = full.events[n - 1].at();
    assert_eq!(status_at(rec, t), status_at(fixture(), t));
}

#[test]
fn a_torn_or_empty_segment_is_damage_not_a_failure() {
    let d = tmp("torn");
    let full = fixture();
    write_split(&d.0, &[full.events.len() / 2], None);
    let segs = list(&d.0).unwrap();
    // The second segment cut in half (a SIGKILL before its last flush), and an empty file a
    // run killed at once left behind.
    let bytes = std::fs::read(&segs[1].path).unwrap();
    std::fs::write(&segs[1].path, &bytes[..bytes.len() / 2]).unwrap();
    let late = segs[1].start + chrono::Duration::hours(1);
    std::fs::write(d.0.join(name_for(late)), b"").unwrap();
    let rec = open_dir(&d.0, None, None, 1 << 26).unwrap();
    assert!(rec.events.len() < full.events.len());
    assert!(
        rec.damaged.iter().any(|d| d.contains("is empty")),
        "{:?}",
        rec.damaged
    );
    assert!(matches!(
        open_dir(
            &std::env::temp_dir().join("st-seg-none-here"),
            None,
            None,
            1
        ),
        Err(ReadError::Io { .. })
    ));
    let empty = tmp("empty");
    std::fs::create_dir_all(&empty.0).unwrap();
    assert!(matches!(
        open_dir(&empty.0, None, None, 1),
        Err(ReadError::NoSegments { .. })
    ));
    let _ = SourceEvent::Tick { at: t0() };
}

#[test]
fn a_streamed_read_arrives_at_the_state_a_whole_read_does() {
    let d = tmp("stream");
    let full = fixture();
    let n = full.events.len();
    write_split(&d.0, &[n / 4, n / 2, 3 * n / 4], None);
    for i in [n / 4 - 1, n / 2 + 3, n - 1] {
        let t = full.events[i].at();
        // From the segment holding t: its opening state and events up to t, never held.
        let mut state = super::super::State {
            until: Some(t),
            ..Default::default()
        };
        read_dir_each(&d.0, Some(t), Some(t), 1 << 26, &mut state).unwrap();
        let report = |s: &Store| serde_json::to_string(&status::report(s.view(), None)).unwrap();
        assert_eq!(
            report(&state.store),
            status_at(fixture(), t),
            "at event {i}"
        );
        assert!(
            state.applied < n,
            "only the last segment's events were applied"
        );
    }
}

#[test]
fn a_segment_torn_in_its_opening_keyframe_is_passed_over_when_resuming() {
    let d = tmp("torn-open");
    let full = fixture();
    write_split(&d.0, &[full.events.len() / 2], None);
    let (_, before) = resume(&d.0).expect("resumes");
    // A later segment killed while its opening keyframe was written: header, half a line.
    let late = list(&d.0).unwrap()[1].start + chrono::Duration::minutes(5);
    let mut text = serde_json::to_string(&full.header).unwrap();
    text.push_str("\n{\"keyframe\":{\"at\":\"2026-");
    std::fs::write(d.0.join(name_for(late)), text).unwrap();
    let (_, after) = resume(&d.0).expect("resumes from the segment before");
    assert_eq!(after.view().applied, before.view().applied);
    assert!(!after.view().apps.is_empty());
}
