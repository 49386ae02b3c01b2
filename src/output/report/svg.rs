//! `report --svg FILE`: each app's executors over time as an SVG, for the post-mortem where
//! people would rather look than read. A lane per executor (from its event log's lanes):
//! registered (grey), busy with tasks (blue), its end marked with its cause (red for a
//! failure, grey for a normal end, dashed for an idle removal); the stage attempts its
//! losses added drawn across the lanes where they ran (orange), named. Plain SVG 1.1, no
//! script, every text escaped.

use std::fmt::Write as _;

use spark_triage_core::diagnose::advice::cause_label;
use spark_triage_core::model::Time;
use spark_triage_core::model::cost::{AppCost, RerunKind, ms};

use super::Report;
use crate::record::State;
use crate::store::AppRecord;

const WIDTH: f64 = 960.0;
const LEFT: f64 = 110.0;
const RIGHT: f64 = 20.0;
const LANE: f64 = 14.0;
const GAP: f64 = 4.0;
const HEAD: f64 = 56.0;

/// Text in an SVG element or attribute.
fn esc(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_control())
        .map(|c| match c {
            '&' => "&amp;".to_owned(),
            '<' => "&lt;".to_owned(),
            '>' => "&gt;".to_owned(),
            '"' => "&quot;".to_owned(),
            '\'' => "&apos;".to_owned(),
            c => c.to_string(),
        })
        .collect()
}

/// The drawing of every app in the report that has lanes; none when none has.
pub fn svg(state: &State, report: &Report<'_>) -> Option<String> {
    let apps = state.store.view();
    let drawn: Vec<(&AppRecord, &AppCost)> = report
        .apps
        .iter()
        .filter_map(|a| apps.apps.get(&(a.namespace.clone(), a.app_id.clone())))
        .filter_map(|a| Some((&**a, a.cost.as_deref().filter(|c| !c.lanes.is_empty())?)))
        .collect();
    if drawn.is_empty() {
        return None;
    }
    let mut body = String::new();
    let mut y = 0.0;
    for (a, cost) in drawn {
        y = app(&mut body, a, cost, y);
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{WIDTH}" height="{y}" viewBox="0 0 {WIDTH} {y}" font-family="sans-serif" font-size="11">"##
    );
    out.push_str(&body);
    out.push_str("</svg>\n");
    Some(out)
}

/// One app's block from `top`; returns where the next begins.
fn app(out: &mut String, a: &AppRecord, cost: &AppCost, top: f64) -> f64 {
    let start = cost
        .started
        .or_else(|| cost.lanes.iter().map(|l| l.added).min());
    let Some(start) = start else {
        return top;
    };
    let span = cost.run_ms.max(1) as f64;
    let x = |t: Time| {
        let ms = (t - start).num_milliseconds().max(0) as f64;
        LEFT + (WIDTH - LEFT - RIGHT) * (ms / span).min(1.0)
    };
    let end = start + chrono::TimeDelta::milliseconds(i64::try_from(cost.run_ms).unwrap_or(0));
    let title = format!(
        "{} ({}) in {}: {}",
        a.app_name.as_deref().unwrap_or(&a.app_id),
        a.app_id,
        a.namespace,
        cost.headline()
            .unwrap_or_else(|| "no loss, no idle time".into())
    );
    let _ = writeln!(
        out,
        r##"<g class="app" data-app="{}"><text x="4" y="{}" font-size="13" font-weight="bold">{}</text>"##,
        esc(&a.app_id),
        top + 18.0,
        esc(&title)
    );
    let _ = writeln!(
        out,
        r##"<text x="4" y="{}" fill="#555">{} executors over {}: grey registered, blue busy, orange the stage attempts losses added; a lane's end is marked with its cause</text>"##,
        top + 34.0,
        cost.lanes.len(),
        ms(cost.run_ms)
    );
    let lanes_top = top + HEAD;
    let lanes_bottom = lanes_top + cost.lanes.len() as f64 * (LANE + GAP);
    // The stage attempts losses added, behind the lanes.
    for l in &cost.losses {
        for r in &l.reruns {
            let (x0, x1) = (x(r.submitted), x(r.completed.unwrap_or(end)));
            let what = match r.kind {
                RerunKind::Recompute => "recomputed",
                RerunKind::Retry => "retried",
            };
            let _ = writeln!(
                out,
                r##"<rect class="rerun" x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#f0a030" fill-opacity="0.3"><title>{}</title></rect>"##,
                lanes_top - 6.0,
                (x1 - x0).max(1.0),
                lanes_bottom - lanes_top + 6.0,
                esc(&format!(
                    "stage {} attempt {} {what} ({} tasks) after executor {} was lost",
                    r.stage, r.attempt, r.tasks, l.executor
                ))
            );
        }
    }
    for (i, lane) in cost.lanes.iter().enumerate() {
        let y = lanes_top + i as f64 * (LANE + GAP);
        let to = lane.removed.unwrap_or(end);
        let (x0, x1) = (x(lane.added), x(to));
        let _ = writeln!(
            out,
            r##"<g class="lane" data-executor="{}"><text x="4" y="{:.1}">executor {}</text><rect class="allocated" x="{x0:.1}" y="{y:.1}" width="{:.1}" height="{LANE}" fill="#d0d0d0"/>"##,
            lane.executor,
            y + LANE - 3.0,
            lane.executor,
            (x1 - x0).max(1.0)
        );
        for (from, until) in &lane.busy {
            let at = |off: u64| {
                lane.added + chrono::TimeDelta::milliseconds(i64::try_from(off).unwrap_or(0))
            };
            let (b0, b1) = (x(at(*from)), x(at(*until)));
            let _ = writeln!(
                out,
                r##"<rect class="busy" x="{b0:.1}" y="{y:.1}" width="{:.1}" height="{LANE}" fill="#3070c0"/>"##,
                (b1 - b0).max(0.5)
            );
        }
        if lane.removed.is_some() {
            let (cause, failure) = ending(a, lane.executor, lane.idle_removed);
            let colour = if failure { "#d02020" } else { "#707070" };
            let dash = if lane.idle_removed {
                r#" stroke-dasharray="2,2""#
            } else {
                ""
            };
            let _ = writeln!(
                out,
                r##"<line class="ending" x1="{x1:.1}" y1="{:.1}" x2="{x1:.1}" y2="{:.1}" stroke="{colour}" stroke-width="3"{dash}><title>{}</title></line>"##,
                y - 2.0,
                y + LANE + 2.0,
                esc(&format!("executor {} ended: {cause}", lane.executor))
            );
        }
        out.push_str("</g>\n");
    }
    if cost.lanes_left_out > 0 {
        let _ = writeln!(
            out,
            r##"<text x="4" y="{:.1}" fill="#555">{} more executors not drawn</text>"##,
            lanes_bottom + 12.0,
            cost.lanes_left_out
        );
    }
    out.push_str("</g>\n");
    lanes_bottom + 28.0
}

/// An executor's end as the strip says it, and whether it is a failure.
fn ending(a: &AppRecord, id: i64, idle: bool) -> (String, bool) {
    let found = a
        .executors
        .values()
        .rev()
        .filter(|e| e.id == id)
        .find_map(|e| Some((e, e.verdict.cause()?)));
    match found {
        Some((e, f)) => (cause_label(f.code, e.exit_code()), e.verdict.is_failure()),
        None if idle => ("removed after idling (dynamic allocation)".into(), false),
        None => ("removed".into(), false),
    }
}

#[cfg(test)]
mod tests {
    use quick_xml::Reader;
    use quick_xml::events::Event;

    use super::*;
    use crate::eventlog;
    use crate::output::report::{Window, from_state};
    use crate::record::{Recording, State};

    /// A real Spark 4.3 log (an executor SIGKILLed under a shuffle): the drawing parses as
    /// XML and holds a lane per executor, the two attempts the loss added, the loss's end.
    #[test]
    fn the_drawing_of_a_real_loss_parses_and_shows_what_it_cost() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/eventlog/cost/shuffle-loss.json"
        );
        let rec = eventlog::open(std::path::Path::new(path), 1 << 20, None)
            .map(Recording::from)
            .expect("the log reads");
        let header = rec.header.clone();
        let mut state = State::default();
        for ev in rec.events {
            state.store.apply(ev);
        }
        let report = from_state("shuffle-loss.json", &header, &state, &Window::default());
        let drawing = svg(&state, &report).expect("a drawing");
        insta::assert_snapshot!("svg_of_a_shuffle_loss", drawing);
        let mut r = Reader::from_str(&drawing);
        let (mut lanes, mut reruns, mut endings, mut titles) = (0, 0, 0, Vec::new());
        let mut in_title = false;
        loop {
            match r.read_event().expect("well-formed XML") {
                Event::Start(e) | Event::Empty(e) => {
                    let class = e
                        .try_get_attribute("class")
                        .expect("attributes")
                        .map(|a| String::from_utf8_lossy(&a.value).into_owned());
                    match class.as_deref() {
                        Some("lane") => lanes += 1,
                        Some("rerun") => reruns += 1,
                        Some("ending") => endings += 1,
                        _ => {}
                    }
                    in_title = e.name().as_ref() == b"title";
                }
                Event::Text(t) if in_title => {
                    titles.push(t.decode().expect("text").into_owned());
                    in_title = false;
                }
                Event::Eof => break,
                _ => {}
            }
        }
        assert_eq!((lanes, reruns, endings), (3, 2, 1));
        assert!(
            titles
                .iter()
                .any(|t| t == "stage 0 attempt 1 recomputed (4 tasks) after executor 1 was lost"),
            "{titles:?}"
        );
        assert!(
            titles.iter().any(|t| t.starts_with("executor 1 ended: ")),
            "{titles:?}"
        );
    }
}
