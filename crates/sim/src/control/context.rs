//! What the parts of the control plane share during a pass, lent by `Control::step` to
//! each part in turn: the one seeded rng, the event recorder and the scenario.

use serde_json::Value;

use super::events::EventRecorder;
use crate::scenario::Scenario;

/// What a part borrows for a call besides its own state: the single seeded rng (one
/// stream for the whole control plane, drawn in the order the parts run, so a seed
/// replays exactly), the event recorder and the scenario.
#[derive(Debug)]
pub(super) struct Cx<'a> {
    pub(super) events: &'a mut EventRecorder,
    pub(super) rng: &'a mut fastrand::Rng,
    pub(super) scenario: &'a Scenario,
}

impl Cx<'_> {
    /// Records an event about a pod; a repeat within a while bumps `count` on the same one.
    pub(super) fn event(
        &mut self,
        pod: &Value,
        type_: &str,
        reason: &str,
        message: &str,
        component: &str,
        t: f64,
    ) {
        self.events.event_about(
            self.rng,
            pod,
            type_,
            reason,
            message,
            component,
            t,
            Value::Null,
        );
    }
}
