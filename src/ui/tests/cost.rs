//! What a loss cost, from a real Spark 4.3 event log (an executor SIGKILLed under a
//! shuffle, tests/fixtures/eventlog/cost/shuffle-loss.json): the strip says the app's
//! cost, and the lost executor's detail says its chain.

use super::{draw, select_app};
use crate::app::{App, Context, Focus, Mode, Msg, Popup, update};
use crate::eventlog;
use crate::record::Recording;
use crate::settings::ReadOnly;

fn replay_of_the_log() -> App {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/eventlog/cost/shuffle-loss.json"
    );
    let rec = eventlog::open(std::path::Path::new(path), 1 << 20, None)
        .map(Recording::from)
        .expect("the real log reads");
    let mut app = App::new(Context {
        context: "event log".into(),
        scope: "namespace default".into(),
        readonly: ReadOnly::Off,
        mode: Mode::Replay,
    });
    for ev in rec.events {
        update(&mut app, Msg::Source(ev));
    }
    select_app(&mut app, "cost-shuffle-loss");
    app
}

#[test]
fn the_strip_says_the_cost_and_the_lost_executors_detail_its_chain() {
    let mut app = replay_of_the_log();
    let frame = draw(&mut app, 80, 24);
    // Wrapped at 80 columns: the cost after the last failure.
    assert!(
        frame.contains("cost: +4s") && frame.contains("recompute, 16 % idle"),
        "{frame}"
    );
    insta::assert_snapshot!("cost_in_the_strip_80x24", frame);
    app.focus = Focus::Executors;
    app.selected_exec = Some(1);
    app.popup = Some(Popup::Detail);
    let frame = draw(&mut app, 200, 50);
    assert!(frame.contains("What its loss cost"), "{frame}");
    assert!(
        frame.contains(
            "lost the shuffle output of stage 0: 4 tasks of stage 0 rerun, stage 1 retried once"
        ),
        "{frame}"
    );
    insta::assert_snapshot!("cost_of_a_loss_in_its_detail_200x50", frame);
}

/// The timeline draws the executors over time above its entries: Unicode blocks, and their
/// ASCII look-alikes under LANG=C.
#[test]
fn the_timeline_draws_the_executors_over_time_in_unicode_and_ascii() {
    let mut app = replay_of_the_log();
    app.popup = Some(Popup::Timeline);
    let frame = draw(&mut app, 80, 24);
    assert!(frame.contains("exec 1     "), "{frame}");
    assert!(frame.contains('█') && frame.contains('▲'), "{frame}");
    insta::assert_snapshot!("cost_lanes_in_the_timeline_80x24", frame);
    let ascii = super::draw_ascii(&mut app, 80, 24);
    assert!(ascii.is_ascii(), "{ascii}");
    assert!(ascii.contains('#') && ascii.contains('^'), "{ascii}");
    insta::assert_snapshot!("cost_lanes_in_the_timeline_ascii_80x24", ascii);
}
