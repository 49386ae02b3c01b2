//! Time spans, summed: a span's length, the union of spans, the most at once.

use crate::model::Time;

pub(super) fn span(from: Time, to: Time) -> u64 {
    u64::try_from((to - from).num_milliseconds()).unwrap_or(0)
}

/// The most executors that ran a task registered at once.
pub(super) fn peak_of(spans: &[(Time, Time, bool)]) -> u32 {
    let mut edges: Vec<(Time, i32)> = spans
        .iter()
        .filter(|(_, _, ran)| *ran)
        .flat_map(|(a, b, _)| [(*a, 1), (*b, -1)])
        .collect();
    // A removal before an addition at the same moment.
    edges.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        most = most.max(now);
    }
    u32::try_from(most).unwrap_or(0)
}

/// The union of spans, ms.
pub(super) fn union_ms(mut spans: Vec<(Time, Time)>) -> u64 {
    spans.retain(|(a, b)| b > a);
    spans.sort();
    let mut total = 0;
    let mut cur: Option<(Time, Time)> = None;
    for (a, b) in spans {
        match &mut cur {
            Some((_, e)) if a <= *e => *e = (*e).max(b),
            _ => {
                if let Some((s, e)) = cur {
                    total += span(s, e);
                }
                cur = Some((a, b));
            }
        }
    }
    if let Some((s, e)) = cur {
        total += span(s, e);
    }
    total
}
