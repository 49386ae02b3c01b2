//! Where a streaming read's items go: collected into a [`Recording`] (a replay), or applied
//! to a store as they come ([`State`]: a report, a status, a recorder resuming).

use spark_triage_core::model::Time;

use super::{Gap, Header, Item, Keyframe, Recording, segments};
use crate::source::SourceEvent;
use crate::store::Store;

/// Collects a streaming read into a [`Recording`].
#[derive(Debug, Default)]
pub struct Collect {
    pub events: Vec<SourceEvent>,
    pub keyframes: Vec<Keyframe>,
    pub damaged: Vec<String>,
    pub gaps: Vec<Gap>,
}

impl Collect {
    pub fn take(&mut self, item: Item) {
        match item {
            Item::Event(e) => self.events.push(e),
            Item::Keyframe(k) => self.keyframes.push(k),
            Item::Damaged(d) => self.damaged.push(d),
        }
    }

    pub fn into_recording(self, header: Header) -> Recording {
        Recording {
            header,
            events: self.events,
            keyframes: self.keyframes,
            damaged: self.damaged,
            gaps: self.gaps,
        }
    }
}

/// The store a streaming read arrives at: the opening keyframe's state (a segment's), then
/// every event applied as it comes, up to `until`; nothing else is held. `forget` says how
/// a recorder's `forget` events apply (see [`ForgetRule`]).
#[derive(Debug, Default)]
pub struct State {
    pub store: Store,
    pub until: Option<Time>,
    pub forget: ForgetRule,
    pub damaged: Vec<String>,
    pub gaps: Vec<Gap>,
    /// Events applied.
    pub applied: usize,
    /// An opening keyframe gave the state to start from.
    pub based: bool,
}

/// How a stream's `forget` events apply to a [`State`].
#[derive(Debug, Default, Clone, Copy)]
pub enum ForgetRule {
    /// As the recorder applied them: the state it had (status, resume).
    #[default]
    AsRecorded,
    /// Never past this moment (a report keeps every executor that ended in its window);
    /// none: never.
    KeepFrom(Option<Time>),
}

impl Sink for State {
    fn take(&mut self, item: Item) {
        match item {
            Item::Keyframe(k) if k.event_index == 0 && self.applied == 0 => {
                if let Some(s) = k.store() {
                    self.store = s;
                    self.based = true;
                }
            }
            Item::Keyframe(_) => {}
            Item::Damaged(d) => self.damaged.push(d),
            Item::Event(ev) => {
                if self.until.is_some_and(|t| ev.at() > t) {
                    return;
                }
                self.applied += 1;
                let ev = match (ev, self.forget) {
                    (SourceEvent::Forget { .. }, ForgetRule::KeepFrom(None)) => return,
                    (SourceEvent::Forget { before, at }, ForgetRule::KeepFrom(Some(from))) => {
                        SourceEvent::Forget {
                            before: before.min(from),
                            at,
                        }
                    }
                    (ev, _) => ev,
                };
                self.store.apply(ev);
            }
        }
    }
}

impl segments::DirSink for State {
    fn gap(&mut self, gap: Gap) {
        self.gaps.push(gap);
    }
}

/// Something that takes a streaming read's items.
pub trait Sink {
    fn take(&mut self, item: Item);
}

impl Sink for Collect {
    fn take(&mut self, item: Item) {
        Collect::take(self, item);
    }
}
