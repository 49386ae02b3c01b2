use super::*;
use crate::app::replay::Replay;
use crate::output::status;
use crate::store::Store;

fn header() -> Header {
    Header::new(
        chrono::DateTime::UNIX_EPOCH,
        "namespace x".into(),
        "spark-role".into(),
        "127.0.0.1:1".into(),
    )
}

#[test]
fn round_trip_and_a_torn_last_line() {
    let mut buf = Vec::new();
    let mut w = Writer::new(&mut buf, &header()).unwrap();
    w.write(&SourceEvent::Tick {
        at: chrono::DateTime::UNIX_EPOCH,
    })
    .unwrap();
    w.flush().unwrap();
    buf.extend_from_slice(b"{\"kind\":\"tick\",\"at\":\"19");
    let r = read("r", &buf[..]).unwrap();
    assert_eq!(r.header, header());
    assert_eq!(r.events.len(), 1);
    assert_eq!(r.damaged.len(), 1);
    assert!(r.damaged[0].starts_with("line 3: "), "{:?}", r.damaged);
}

#[test]
fn zstd_files_round_trip_and_are_detected_by_magic() {
    let dir = std::env::temp_dir().join(format!("st-rec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["r.ndjson", "r.ndjson.zst"] {
        let path = dir.join(name);
        {
            let mut w = create(&path, &header(), true).unwrap();
            for i in 0..100 {
                w.write(&SourceEvent::Tick {
                    at: chrono::DateTime::UNIX_EPOCH,
                })
                .unwrap();
                if i % 10 == 9 {
                    w.flush().unwrap(); // the writer's once-a-second flush: a zstd block
                }
            }
            w.flush().unwrap();
        }
        let r = open(&path).unwrap();
        assert_eq!((r.events.len(), r.damaged.len()), (100, 0), "{name}");
    }
    let zst = std::fs::read(dir.join("r.ndjson.zst")).unwrap();
    assert_eq!(&zst[..4], &[0x28, 0xb5, 0x2f, 0xfd]);
    std::fs::write(dir.join("cut.zst"), &zst[..zst.len() / 2]).unwrap();
    // A truncated zstd file: a clear error or the part before the cut, never a panic.
    match open(&dir.join("cut.zst")) {
        Ok(r) => assert!(r.events.len() < 100 && !r.damaged.is_empty()),
        Err(e) => assert!(e.to_string().contains("cut.zst"), "{e}"),
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Seeking through a keyframe gives exactly the state of re-applying every event.
#[test]
fn keyframes_seek_to_the_same_state_as_full_replay() {
    let fixture = include_bytes!("../../tests/fixtures/mixed-session.ndjson");
    let full = read("fixture", &fixture[..]).unwrap();
    let mid = full.events.len() / 2;
    let mut buf = Vec::new();
    {
        let mut w = Writer::new(&mut buf, &full.header).unwrap();
        let mut store = Store::new();
        for (i, ev) in full.events.iter().enumerate() {
            if i == mid {
                w.write_keyframe(&store, full.events[i - 1].at()).unwrap();
            }
            w.write(ev).unwrap();
            store.apply(ev.clone());
        }
    }
    let rec = read("with-keyframe", &buf[..]).unwrap();
    assert_eq!(
        (rec.events.len(), rec.keyframes.len(), rec.damaged.len()),
        (full.events.len(), 1, 0)
    );
    assert_eq!(rec.keyframes[0].event_index, mid);
    let report_at = |r: &Recording, keyframes: Vec<Keyframe>, t: Time| {
        let mut replay = Replay::new(r.events.clone(), keyframes, r.header.started_at);
        let mut store = Store::new();
        replay.seek(&mut store, replay.end);
        replay.seek(&mut store, t); // backwards: from the keyframe, or from the start
        serde_json::to_string(&status::report(store.view(), None)).unwrap()
    };
    for t in [
        full.events[mid].at(),
        full.events[full.events.len() - 1].at(),
    ] {
        assert_eq!(
            report_at(&rec, rec.keyframes.clone(), t),
            report_at(&full, Vec::new(), t)
        );
    }
    // The keyframe really is used: a damaged keyframe falls back to the start.
    assert!(rec.keyframes[0].store().is_some());
}

#[test]
fn a_line_over_the_limit_is_skipped_without_being_held() {
    let mut buf = Vec::new();
    let mut w = Writer::new(&mut buf, &header()).unwrap();
    let tick = SourceEvent::Tick {
        at: chrono::DateTime::UNIX_EPOCH,
    };
    w.write(&tick).unwrap();
    buf.extend(std::iter::repeat_n(b'x', 10_000));
    buf.extend_from_slice(b"\r\n");
    let mut w = Writer::new(Vec::new(), &header()).unwrap();
    w.write(&tick).unwrap();
    let last = serde_json::to_vec(&tick).unwrap();
    buf.extend_from_slice(&last);
    let r = read_with("r", &buf[..], 1000).unwrap();
    assert_eq!(r.events.len(), 2);
    assert_eq!(
        r.damaged,
        ["line 3: 10001 bytes, over the line limit of 1000 bytes (--max-line); skipped"]
    );
}

#[test]
fn a_zstd_bomb_is_refused_from_its_first_bytes() {
    use std::io::Read;
    let dir = std::env::temp_dir().join(format!("st-bomb-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bomb.zst");
    {
        let f = std::fs::File::create(&path).unwrap();
        let mut enc = zstd::stream::write::Encoder::new(f, 3).unwrap();
        std::io::copy(&mut std::io::repeat(0).take(64 << 20), &mut enc).unwrap();
        enc.finish().unwrap();
    }
    // 64 MiB of zeros: no newline, so the "header" is over its 64 KiB at once.
    assert!(matches!(open(&path), Err(ReadError::Foreign { .. })));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn foreign_empty_and_newer_files_are_named() {
    assert!(matches!(read("f", &b""[..]), Err(ReadError::Empty { .. })));
    assert!(matches!(
        read("f", &b"hello\n"[..]),
        Err(ReadError::Foreign { .. })
    ));
    assert!(matches!(
        read("f", &b"{\"kind\":\"Pod\"}\n"[..]),
        Err(ReadError::Foreign { .. })
    ));
    let newer = format!("{{\"format\":\"{FORMAT}\",\"version\":99}}\n");
    let e = read("f", newer.as_bytes()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "f is a version 99 recording; this spark-triage reads up to version 1 (upgrade it)"
    );
}
