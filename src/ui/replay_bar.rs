//! The replay timeline bar: play state, speed, the replay clock, a progress bar with the
//! failures marked, and the keys.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Color;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use spark_triage_core::diagnose::Severity;
use spark_triage_core::model::Time;
use spark_triage_core::text::human_duration;

use crate::app;
use crate::app::App;

pub fn render(app: &App, f: &mut Frame<'_>, area: Rect) {
    let Some(r) = &app.replay else { return };
    if area.height == 0 || area.width < 10 {
        return;
    }
    let total = (r.end - r.start).num_milliseconds().max(1);
    let done = (r.position - r.start).num_milliseconds().clamp(0, total);
    let head = format!(
        " {} {:>2}x  {}  ",
        if r.playing { "▶" } else { "⏸" },
        r.speed,
        app.when(&r.position)
    );
    let in_gap = r
        .gaps
        .iter()
        .find(|g| g.from <= r.position && r.position < g.to);
    let tail = match (&r.seeking, in_gap) {
        (Some(buf), _) => format!(
            "  seek to: {} (1m30s, 10:43:00, RFC 3339; Enter)",
            app::with_cursor(buf, app.prompt_cursor)
        ),
        (None, Some(g)) => format!(
            "  ░ not recorded {} – {} (recorder down) · n/N · f",
            app.when(&g.from),
            app.when(&g.to)
        ),
        (None, None) => format!(
            "  +{} / {}  Space play · +/- speed · n/N change · f failure · : seek",
            position(r.position - r.start),
            human_duration(r.end - r.start)
        ),
    };
    let width = usize::from(area.width)
        .saturating_sub(head.chars().count() + tail.chars().count())
        .max(10);
    let filled = (width as i64 * done / total) as usize;
    let mut bar: Vec<char> = (0..width)
        .map(|i| if i < filled { '━' } else { '─' })
        .collect();
    // Gaps: nothing recorded there.
    let cell = |t: Time| {
        ((t - r.start).num_milliseconds().clamp(0, total) * (width as i64 - 1) / total) as usize
    };
    for g in &r.gaps {
        for c in bar.iter_mut().take(cell(g.to) + 1).skip(cell(g.from)) {
            *c = '░';
        }
    }
    for t in r.failures.iter().map(|f| &f.at) {
        let at = ((*t - r.start).num_milliseconds().clamp(0, total) * (width as i64 - 1) / total)
            as usize;
        if let Some(c) = bar.get_mut(at) {
            *c = '✗';
        }
    }
    let line = Line::from(vec![
        Span::styled(head, app.theme.badge(Color::Yellow)),
        Span::raw(" "),
        Span::styled(
            bar.into_iter().collect::<String>(),
            app.theme.severity(Severity::Warn),
        ),
        Span::styled(tail, app.theme.dim()),
    ]);
    f.render_widget(Paragraph::new(line), area);
}

/// Where the replay is: to the minute however long the recording (a seek by minutes shows).
fn position(d: chrono::Duration) -> String {
    let secs = d.num_seconds();
    if secs < 172_800 {
        return human_duration(d);
    }
    format!(
        "{}d{:02}h{:02}m",
        secs / 86_400,
        (secs % 86_400) / 3600,
        (secs % 3600) / 60
    )
}

#[cfg(test)]
mod tests {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use crate::commands::replay;
    use crate::record;
    use crate::record::Gap;

    /// A directory whose recorder was down for a while: the gap is drawn on the bar, and
    /// when the replay clock is in it the bar says nothing was recorded.
    #[test]
    fn a_gap_is_drawn_and_named_when_the_clock_is_in_it() {
        let bytes = include_bytes!("../../tests/fixtures/mixed-session.ndjson");
        let mut rec = record::read("mixed", &bytes[..]).expect("fixture");
        let start = rec.header.started_at;
        let gap = Gap {
            from: start + chrono::Duration::seconds(40),
            to: start + chrono::Duration::seconds(70),
        };
        rec.gaps = vec![gap];
        let mut app = replay::replay_app(rec, Some(gap.from + chrono::Duration::seconds(5)));
        app.show_utc = true;
        let mut t = Terminal::new(TestBackend::new(160, 1)).expect("terminal");
        t.draw(|f| super::render(&app, f, f.area())).expect("draw");
        insta::assert_snapshot!(format!("{}", t.backend()));
    }

    /// Past two days the position keeps its minutes (a seek by minutes shows).
    #[test]
    fn the_position_keeps_its_minutes_past_two_days() {
        let d = chrono::Duration::minutes(3 * 1440 + 4 * 60 + 5);
        assert_eq!(super::position(d), "3d04h05m");
        assert_eq!(super::position(chrono::Duration::minutes(125)), "2h05m");
    }
}
