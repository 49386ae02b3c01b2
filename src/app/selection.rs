//! Which app and executor the view shows: the apps in display order, the selection, the
//! filter, and moving through them by one, a page, or to an end.

use spark_triage_core::diagnose::Severity;

use super::*;
use crate::store;
use crate::store::times;

impl App {
    pub fn apps(&self) -> Vec<&Arc<AppRecord>> {
        let mut v: Vec<&Arc<AppRecord>> = self.store.view().apps.values().collect();
        store::by_trouble(&mut v);
        v
    }

    pub fn current_app(&self) -> Option<&Arc<AppRecord>> {
        let apps = &self.store.view().apps;
        self.selected_app
            .as_ref()
            .or(self.auto_app.as_ref())
            .and_then(|key| apps.get(key))
            .or_else(|| self.apps().first().copied())
    }

    /// From the operator's first key or click on, the app they see stays selected.
    pub(super) fn pin_selection(&mut self) {
        if self.selected_app.is_none() {
            self.selected_app = self
                .current_app()
                .map(|a| (a.namespace.clone(), a.app_id.clone()));
        }
    }

    /// The position of the selected app in display order.
    pub fn selected_app_index(&self) -> Option<usize> {
        let cur = self.current_app()?;
        self.apps().iter().position(|a| Arc::ptr_eq(a, cur))
    }

    /// Selects the app at this display position.
    pub fn select_app_at(&mut self, i: usize) {
        let key = self
            .apps()
            .get(i)
            .map(|a| (a.namespace.clone(), a.app_id.clone()));
        if key.is_some() && key != self.selected_app {
            self.selected_app = key;
            self.selected_exec = None;
            self.notice = None;
            self.fix_selection();
        }
    }

    /// The executors shown, after filters and sort.
    pub fn visible(&self) -> Vec<&Arc<ExecutorRecord>> {
        let Some(app) = self.current_app() else {
            return Vec::new();
        };
        let needle = self.filter.to_lowercase();
        let mut v: Vec<&Arc<ExecutorRecord>> = app
            .executors
            .values()
            .filter(|e| match self.state_filter {
                StateFilter::All => true,
                StateFilter::Problems => {
                    e.is_missing() || e.findings().iter().any(|f| f.severity != Severity::Info)
                }
                StateFilter::Only(s) => e.state() == s && !e.is_missing(),
            })
            .filter(|e| needle.is_empty() || filter_matches(e, &needle))
            .collect();
        match self.sort {
            Sort::Id => {}
            Sort::State => v.sort_by_key(|e| (e.is_missing(), e.state(), e.id)),
            Sort::Age => v.sort_by_key(|e| (times::created(e).0, e.id)),
        }
        v
    }

    pub fn selected(&self) -> Option<&Arc<ExecutorRecord>> {
        let visible = self.visible();
        let id = self.selected_exec?;
        visible.into_iter().find(|e| e.id == id)
    }

    pub(super) fn select_index(&mut self, i: usize) {
        let visible = self.visible();
        let id = visible
            .get(i.min(visible.len().saturating_sub(1)))
            .map(|e| e.id);
        // A notice was about what was selected: moving on clears it.
        if id != self.selected_exec {
            self.notice = None;
        }
        self.selected_exec = id;
    }

    pub(super) fn selected_index(&self) -> Option<usize> {
        let id = self.selected_exec?;
        self.visible().iter().position(|e| e.id == id)
    }

    /// Keeps the selection on something that exists.
    pub(super) fn fix_selection(&mut self) {
        if self
            .selected_app
            .as_ref()
            .is_some_and(|k| !self.store.view().apps.contains_key(k))
        {
            self.selected_app = None;
        }
        if self.selected_app.is_none() {
            // The worst app: the first in display order.
            self.auto_app = self
                .apps()
                .first()
                .map(|a| (a.namespace.clone(), a.app_id.clone()));
        }
        // Nothing chosen yet (or the operator has not touched anything): the executor
        // with the worst verdict, dead ones before live ones, so the strip under the map
        // explains the incident.
        let visible = self.visible();
        let shown = |id| visible.iter().any(|e| e.id == id);
        if self.selected_app.is_none() || !self.selected_exec.is_some_and(shown) {
            // Ties go to the first in display order.
            let worst = visible
                .iter()
                .enumerate()
                .filter_map(|(i, e)| e.verdict.severity().map(|s| (s, !e.state().is_final(), i)))
                .min()
                .map_or(0, |(_, _, i)| i);
            let id = visible.get(worst).map(|e| e.id);
            self.selected_exec = id;
        }
    }

    pub(super) fn move_exec(&mut self, delta: isize) {
        let len = self.visible().len();
        if len == 0 {
            return;
        }
        let cur = self.selected_index().unwrap_or(0) as isize;
        let next = (cur + delta).clamp(0, len as isize - 1) as usize;
        self.select_index(next);
        self.scroll = 0;
    }

    /// One page of the apps pane (as many apps as it shows).
    pub fn apps_page(&self) -> isize {
        self.apps_window.get().1.clamp(1, 1 << 20) as isize
    }

    pub(crate) fn move_app(&mut self, delta: isize) {
        let len = self.apps().len();
        if len == 0 {
            return;
        }
        let cur = self.selected_app_index().unwrap_or(0) as isize;
        self.select_app_at((cur + delta).clamp(0, len as isize - 1) as usize);
        self.selected_exec = None;
        self.fix_selection();
    }

    /// Executors per map row at the current size.
    pub fn map_columns(&self) -> u16 {
        layout::layout(self.size, self).map_columns
    }

    pub(crate) fn page(&self) -> isize {
        match self.view {
            View::Map => (self.map_columns().max(1) as isize) * 5,
            View::Table => self.size.1.saturating_sub(10).max(1) as isize,
        }
    }
}

/// Whether an executor matches the `/` filter (`needle` lowercased): digits alone are an id,
/// whole (`/12` is executor 12, not every pod whose hash holds "12"); other text is looked
/// for in the words the screen shows of it: its pod's name, its findings' codes and
/// summaries (the pending reasons among them: `/insufficient`, `/memory`), its container's
/// reason and its state.
fn filter_matches(e: &ExecutorRecord, needle: &str) -> bool {
    if needle.chars().all(|c| c.is_ascii_digit()) {
        return e.id.to_string() == needle;
    }
    let has = |text: &str| text.to_lowercase().contains(needle);
    has(&e.pod.name)
        || e.findings()
            .iter()
            .any(|f| f.code.as_str().contains(needle) || has(&f.summary))
        || e.container_reason().is_some_and(has)
        || e.state().as_str() == needle
}
