//! A scroll position over lines that only the drawing knows the number of: the timeline
//! (counted from its end, so it follows new output) and the plan view (counted from its
//! top). The keys move it; each draw says how many lines there are and how many fit, and
//! the position is kept inside them, so a page key never scrolls past the first line into
//! an empty pane. Pure.

use std::cell::Cell;

#[derive(Debug, Default)]
pub struct Scroll {
    offset: Cell<usize>,
    /// The lines there were at the last draw, for [`Scroll::fit_following`].
    total: Cell<usize>,
    /// The largest offset the last draw allowed (lines beyond the pane).
    max: Cell<usize>,
    /// The lines the last draw showed, less one kept for context.
    page: Cell<usize>,
}

impl Scroll {
    pub fn offset(&self) -> usize {
        self.offset.get().min(self.max.get())
    }

    /// Further from the start (up for the timeline, down for the plan view).
    pub fn more(&mut self, lines: usize) {
        self.offset
            .set(self.offset().saturating_add(lines).min(self.max.get()));
    }

    /// Back towards the start.
    pub fn less(&mut self, lines: usize) {
        self.offset.set(self.offset().saturating_sub(lines));
    }

    pub fn page_more(&mut self) {
        self.more(self.page.get().max(1));
    }

    pub fn page_less(&mut self) {
        self.less(self.page.get().max(1));
    }

    /// As far as it goes.
    pub fn to_max(&mut self) {
        self.offset.set(self.max.get());
    }

    pub fn reset(&mut self) {
        self.offset.set(0);
    }

    /// Called by the drawing: `total` lines, `height` of them fit. Returns the offset to
    /// draw at, never past the last full pane.
    pub fn fit(&self, total: usize, height: usize) -> usize {
        self.max.set(total.saturating_sub(height));
        self.page.set(height.saturating_sub(1).max(1));
        self.offset()
    }

    /// [`Scroll::fit`] for an offset counted from the end: while scrolled back, lines added
    /// since the last draw move the offset with them, so what is being read stays put (at
    /// the end, new lines show as they come).
    pub fn fit_following(&self, total: usize, height: usize) -> usize {
        let before = self.total.replace(total);
        if self.offset.get() > 0 && total > before {
            self.offset.set(self.offset.get() + (total - before));
        }
        self.fit(total, height)
    }
}

#[cfg(test)]
mod tests {
    use super::Scroll;

    #[test]
    fn a_page_key_stops_at_the_first_full_pane() {
        let mut scroll = Scroll::default();
        assert_eq!(scroll.fit(200, 20), 0);
        for _ in 0..30 {
            scroll.page_more();
        }
        assert_eq!(
            scroll.offset(),
            180,
            "the first line shows with a full pane below it"
        );
        scroll.page_less();
        assert_eq!(scroll.offset(), 161);
        scroll.to_max();
        scroll.less(500);
        assert_eq!(scroll.offset(), 0);
        // Fewer lines than the pane: nothing to scroll.
        scroll.fit(5, 20);
        scroll.page_more();
        assert_eq!(scroll.offset(), 0);
        // A smaller window later keeps the offset inside the new range.
        let mut scroll = Scroll::default();
        scroll.fit(100, 10);
        scroll.to_max();
        assert_eq!(scroll.fit(100, 50), 50);
    }

    #[test]
    fn scrolled_back_the_view_stays_put_as_lines_arrive() {
        let mut scroll = Scroll::default();
        assert_eq!(scroll.fit_following(100, 10), 0);
        // At the end it follows: new lines show.
        assert_eq!(scroll.fit_following(105, 10), 0);
        scroll.more(20);
        assert_eq!(scroll.fit_following(105, 10), 20);
        assert_eq!(scroll.fit_following(112, 10), 27, "the same lines in view");
        scroll.reset();
        assert_eq!(scroll.fit_following(120, 10), 0);
    }
}
