//! Where everything goes on the screen, as a pure function of the terminal size and the
//! app: `update` uses it for moves that depend on it (a map row's width) and for mouse
//! hit-testing; `ui` draws into it. It lives with the app so the app never imports the UI.

use ratatui::layout::Rect;

use super::{App, View};

/// Lines per application in the apps pane when it is crowded (name; counts and verdict).
pub const ROWS_PER_APP: u16 = 2;

/// Lines per application when a narrow pane has room for a third (the driver and the
/// namespace, which two lines of 30 columns cut).
pub const ROWS_PER_APP_ROOMY: u16 = 3;

/// Width of one executor cell in the state map.
pub const CELL_WIDTH: u16 = 7;

/// How the state map draws executors: as dense as it must be for the whole app to fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Density {
    /// `  123R ` cells: the id, the state letter, a mark.
    Cells,
    /// One character per executor, its state letter; each line starts with the id of its
    /// first executor (the ruler).
    Letters,
    /// Two executors per character (upper and lower half block), colour only: 10,000 fit at
    /// 200×50. The selected executor shows its letter.
    HalfBlocks,
}

/// Where everything goes at a given size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// The header: one line, and a second for a source's error when there is one.
    pub top: Rect,
    /// The replay timeline bar (zero height when live).
    pub replay: Rect,
    pub apps: Rect,
    /// The selected app's incident summary, above the executors.
    pub incident: Rect,
    pub main: Rect,
    pub strip: Rect,
    pub footer: Rect,
    /// Lines per app in the apps pane (`ROWS_PER_APP` or `ROWS_PER_APP_ROOMY`).
    pub app_rows: u16,
    /// Executors per row in the state map.
    pub map_columns: u16,
    pub density: Density,
    /// Width of the ruler of ids at the left of a dense map (0 with cells).
    pub ruler: u16,
}

/// The apps pane's width in a terminal `w` wide (the rest is the right-hand column).
pub fn apps_width(w: u16) -> u16 {
    if w >= 120 { 44 } else { (w / 3).clamp(1, 34) }
}

/// The layout for a terminal of `size`.
pub fn layout(size: (u16, u16), app: &App) -> Layout {
    let (w, h) = size;
    // A source's error has a line of its own under the header (it once pushed the
    // context and namespace off the header), when the screen has rows to spare.
    let top_h = (1 + u16::from(app.source_trouble() && h >= 12)).min(h);
    let top = Rect::new(0, 0, w, top_h);
    let footer = Rect::new(0, h.saturating_sub(1), w, u16::from(h >= 2));
    let bar_h = u16::from(app.replay.is_some() && h >= 6);
    let replay = Rect::new(0, h.saturating_sub(1 + bar_h), w, bar_h);
    let body_h = h.saturating_sub(1 + top_h + bar_h);
    let apps_w = apps_width(w);
    let apps = Rect::new(0, top_h, apps_w.min(w), body_h);
    let inner_rows = body_h.saturating_sub(2);
    let n_apps = u16::try_from(app.store.view().apps.len()).unwrap_or(u16::MAX);
    let app_rows = if apps_w < 40 && n_apps.saturating_mul(ROWS_PER_APP_ROOMY) <= inner_rows {
        ROWS_PER_APP_ROOMY
    } else {
        ROWS_PER_APP
    };
    let right_x = apps.width;
    let right_w = w.saturating_sub(apps.width);
    // The Selected strip: 8 rows on a tall screen; 4 on a short one, so the endings under
    // the map keep their rows at 80x24 (its detail is one key away).
    let base_strip = if body_h >= 30 {
        8
    } else if body_h >= 10 {
        4
    } else {
        0
    };
    // The incident: what ended, the change to make, the budget, the app's settings, as
    // many rows as they wrap to, up to a third of the body (at least 4).
    let incident_h = if body_h >= 14 {
        app.incident_rows.get().clamp(1, (body_h / 3).max(4))
    } else if body_h >= 8 {
        1
    } else {
        0
    };
    let incident = Rect::new(right_x, top_h, right_w, incident_h);
    // The Selected strip grows into rows the executors pane has no content for (its hint,
    // the concrete change, the driver's word are not cut while 30 rows stand empty).
    let avail = body_h.saturating_sub(incident_h);
    let strip_h = if base_strip == 0 {
        0
    } else {
        let want = app.strip_rows.get().saturating_add(2);
        let main_need = app.main_rows.get().saturating_add(2).max(6);
        want.min(avail.saturating_sub(main_need)).max(base_strip)
    };
    let main = Rect::new(
        right_x,
        incident.y + incident_h,
        right_w,
        body_h.saturating_sub(strip_h + incident_h),
    );
    let strip = Rect::new(right_x, main.y + main.height, right_w, strip_h);
    let inner_w = main.width.saturating_sub(2);
    let (density, map_columns, ruler) = density(app, inner_w, main.height.saturating_sub(2));
    Layout {
        top,
        replay,
        apps,
        incident,
        main,
        strip,
        footer,
        app_rows,
        map_columns,
        density,
        ruler,
    }
}

/// The sparsest map that shows all of the current app's executors in `rows` lines of
/// `width`: cells, else letters, else half blocks (which may still scroll past 2 per cell).
fn density(app: &App, width: u16, rows: u16) -> (Density, u16, u16) {
    let cells = (width / CELL_WIDTH).max(1);
    let (n, max_id) = app.current_app().map_or((0, 0), |a| {
        (
            a.executors.len(),
            a.executors.keys().next_back().copied().unwrap_or(0),
        )
    });
    let rows = usize::from(rows.max(1));
    // The ruler: the widest id and a space.
    let ruler = u16::try_from(max_id.max(1).to_string().len() + 1).unwrap_or(8);
    if n.div_ceil(usize::from(cells)) <= rows || width < ruler + 8 {
        return (Density::Cells, cells, 0);
    }
    let columns = width - ruler;
    if n.div_ceil(usize::from(columns)) <= rows {
        (Density::Letters, columns, ruler)
    } else {
        (Density::HalfBlocks, columns, ruler)
    }
}

impl Layout {
    /// The app row under a click, if any (one app per two lines, inside the border).
    pub fn app_at(&self, x: u16, y: u16) -> Option<usize> {
        let inside = x > self.apps.x
            && x < self.apps.x + self.apps.width.saturating_sub(1)
            && y > self.apps.y
            && y < self.apps.y + self.apps.height.saturating_sub(1);
        inside.then(|| usize::from((y - self.apps.y - 1) / self.app_rows.max(1)))
    }

    /// The visible-executor index under a click in the map or table.
    pub fn executor_at(&self, x: u16, y: u16, app: &App) -> Option<usize> {
        let m = self.main;
        if !(x > m.x
            && x < m.x + m.width.saturating_sub(1)
            && y > m.y
            && y < m.y + m.height.saturating_sub(1))
        {
            return None;
        }
        let row = usize::from(y - m.y - 1);
        let offset = scroll_offset(app, self);
        let i = match app.view {
            View::Map => {
                let x = x - m.x - 1;
                let (col, row) = match self.density {
                    Density::Cells => (usize::from(x / CELL_WIDTH), row),
                    // A click cannot tell the halves of a character apart: the upper one.
                    Density::Letters | Density::HalfBlocks => (
                        usize::from(x.checked_sub(self.ruler)?),
                        row * self.lines_per_row(),
                    ),
                };
                if col >= usize::from(self.map_columns) {
                    return None;
                }
                (row + offset) * usize::from(self.map_columns) + col
            }
            View::Table => (row + offset).checked_sub(1)?, // header row
        };
        (i < app.visible().len()).then_some(i)
    }
}

impl Layout {
    /// Map rows of executors per line of text: 2 with half blocks.
    pub fn lines_per_row(&self) -> usize {
        if self.density == Density::HalfBlocks {
            2
        } else {
            1
        }
    }
}

/// The first row of executors (map; even with half blocks) or item (table) shown, so that
/// the selection stays visible.
pub fn scroll_offset(app: &App, l: &Layout) -> usize {
    let visible_rows = usize::from(l.main.height.saturating_sub(2)).max(1);
    let idx = app
        .selected_exec
        .and_then(|id| app.visible().iter().position(|e| e.id == id))
        .unwrap_or(0);
    match app.view {
        View::Map => {
            let per = l.lines_per_row();
            let line = idx / usize::from(l.map_columns.max(1)) / per;
            (line + 1).saturating_sub(visible_rows) * per
        }
        View::Table => {
            let rows = visible_rows.saturating_sub(1).max(1);
            (idx + 1).saturating_sub(rows)
        }
    }
}

/// The first app to show in a pane of `rows` apps so that `selected` is in view, moving
/// as little as possible from `offset` (the pane scrolls with its selection, never past
/// its last page).
pub fn apps_offset(offset: usize, selected: Option<usize>, len: usize, rows: usize) -> usize {
    let rows = rows.max(1);
    let mut offset = offset.min(len.saturating_sub(rows));
    if let Some(sel) = selected {
        if sel < offset {
            offset = sel;
        } else if sel >= offset + rows {
            offset = sel + 1 - rows;
        }
    }
    offset
}
