//! Time-binned counters per flow, for timelines and plots (`--report`). Collected in one pass
//! whatever the source (files and live capture alike): bins start at 1 us and widen through the
//! 1-2-10 sequence (1 us, 2 us, 10 us, 20 us, 100 us...) whenever the capture outgrows
//! `MAX_BINS`, merging whole bins, so the final width is always a round number. Memory is
//! bounded: at most `MAX_TIMELINE_FLOWS` flows get their own series, the rest are summed.
//!
//! Bins lie on a grid from the capture's first frame, but only the span where the traffic is
//! (RoCE events, PFC and PAUSE frames) is binned: a 21 s capture holding one 5 ms burst gets
//! bins of a few microseconds over the burst, not one 100 ms bin that holds all of it.

use crate::model::Bin;

/// Most bins kept; a longer capture widens the bins.
pub const MAX_BINS: usize = 1000;
/// Flows with their own series; later flows go to `other`.
pub const MAX_TIMELINE_FLOWS: usize = 512;

impl Bin {
    fn merge(&mut self, o: &Bin) {
        self.packets += o.packets;
        self.bytes += o.bytes;
        self.psn_gaps += o.psn_gaps;
        self.retransmissions += o.retransmissions;
        self.ce += o.ce;
        self.cnps += o.cnps;
        self.naks += o.naks;
        if o.psn_progress.is_some() {
            self.psn_progress = o.psn_progress;
        }
    }
}

/// What happened to a flow in one packet is a bin's worth of counts.
pub type Event = Bin;

#[derive(Debug, Clone)]
pub struct Timelines {
    /// The capture's first frame: the origin of the bin grid and of the plots' time axis.
    start_ns: Option<u64>,
    /// The grid index of the first bin held (the first traffic), and the latest traffic time.
    first_bin: Option<u64>,
    last_ns: u64,
    width_ns: u64,
    /// Index in the 1-2-10 sequence of the current width, to know the next factor.
    step: u32,
    /// Per analysis flow index; `None` beyond the cap.
    flows: Vec<Vec<Bin>>,
    other: Vec<Bin>,
}

impl Default for Timelines {
    fn default() -> Self {
        Timelines {
            start_ns: None,
            first_bin: None,
            last_ns: 0,
            width_ns: 1_000,
            step: 0,
            flows: Vec::new(),
            other: Vec::new(),
        }
    }
}

/// Adds `e` to bin `idx` of `series`.
fn add_at(series: &mut Vec<Bin>, idx: usize, e: &Bin) {
    if series.len() <= idx {
        series.resize(idx + 1, Bin::default());
    }
    series[idx].merge(e);
}

/// Adds `from` to `to`, bin by bin.
fn add_series(to: &mut Vec<Bin>, from: &[Bin]) {
    for (idx, b) in from.iter().enumerate() {
        add_at(to, idx, b);
    }
}

fn merge_series(bins: &mut Vec<Bin>, factor: usize) {
    let merged: Vec<Bin> = bins
        .chunks(factor)
        .map(|c| {
            let mut b = Bin::default();
            for x in c {
                b.merge(x);
            }
            b
        })
        .collect();
    *bins = merged;
}

impl Timelines {
    /// Sets the capture start (the first frame's time).
    pub fn start(&mut self, ts: u64) {
        self.start_ns.get_or_insert(ts);
    }

    pub fn width_ns(&self) -> u64 {
        self.width_ns
    }

    /// The capture's first frame, the origin of the time axis.
    pub fn origin_ns(&self) -> Option<u64> {
        self.start_ns
    }

    /// Where the first bin starts (the bin of the first traffic); None before any.
    pub fn start_ns(&self) -> Option<u64> {
        Some(self.start_ns? + self.first_bin? * self.width_ns)
    }

    /// The time of the latest traffic binned.
    pub fn end_ns(&self) -> u64 {
        self.last_ns
    }

    /// Counts traffic at `ts` into the span binned, without a series of its own (PFC frames).
    pub fn touch(&mut self, ts: u64) {
        self.fit(ts);
    }

    fn series_mut(&mut self) -> impl Iterator<Item = &mut Vec<Bin>> {
        self.flows
            .iter_mut()
            .chain(std::iter::once(&mut self.other))
    }

    /// The index among the bins held of the bin of `ts`, widening the bins until the span from
    /// the first traffic to `ts` fits in MAX_BINS.
    fn fit(&mut self, ts: u64) -> usize {
        let start = *self.start_ns.get_or_insert(ts);
        // A frame before the capture's first one is binned at the start: so is its time.
        self.last_ns = self.last_ns.max(ts.max(start));
        loop {
            let at = ts.saturating_sub(start) / self.width_ns;
            let first = *self.first_bin.get_or_insert(at);
            // The whole span held, from the earlier of the first traffic and `ts` to the
            // latest, must fit before any bin is added: a frame long before the first traffic
            // (a damaged or merged capture) would otherwise pad billions of bins in front.
            let last = self.last_ns.saturating_sub(start) / self.width_ns;
            if last - at.min(first) >= MAX_BINS as u64 {
                self.widen();
                continue;
            }
            if at < first {
                // Earlier than the first traffic (a merged input's frames out of order).
                let more = (first - at) as usize;
                for s in self.series_mut() {
                    if !s.is_empty() {
                        s.splice(0..0, std::iter::repeat_n(Bin::default(), more));
                    }
                }
                self.first_bin = Some(at);
            }
            let idx = (at - self.first_bin.unwrap_or(at)) as usize;
            if idx < MAX_BINS {
                return idx;
            }
            self.widen();
        }
    }

    /// The next width of the 1-2-10 sequence (1 -> 2 -> 10 -> 20 -> 100...), merging bins
    /// that fall into one wider bin of the grid.
    fn widen(&mut self) {
        let factor = if self.step.is_multiple_of(2) { 2 } else { 5 };
        self.step += 1;
        self.width_ns *= factor as u64;
        let first = self.first_bin.unwrap_or(0);
        // The first bin held need not start a wider bin: pad in front to the grid.
        let pad = (first % factor as u64) as usize;
        self.first_bin = Some(first / factor as u64);
        for s in self.series_mut() {
            if !s.is_empty() && pad > 0 {
                s.splice(0..0, std::iter::repeat_n(Bin::default(), pad));
            }
            merge_series(s, factor);
        }
    }

    /// Widens until the traffic's span fits in at most `max_bins`, for a readable plot.
    pub fn coarsen_to(&mut self, max_bins: usize) {
        let (Some(start), Some(_)) = (self.start_ns, self.first_bin) else {
            return;
        };
        let bins = |t: &Self| {
            let last = t.last_ns.saturating_sub(start) / t.width_ns;
            (last - t.first_bin.unwrap_or(0)) as usize + 1
        };
        while bins(self) > max_bins {
            self.widen();
        }
    }

    /// Sets a fixed bin width before any packet (from `--bin`).
    pub fn fixed_width(&mut self, width_ns: u64) {
        self.width_ns = width_ns.max(1);
        // Later widening (if the capture outgrows MAX_BINS) doubles.
        self.step = 0;
    }

    pub fn add(&mut self, flow: usize, ts: u64, e: Event) {
        let idx = self.fit(ts);
        if flow < MAX_TIMELINE_FLOWS {
            if self.flows.len() <= flow {
                self.flows.resize_with(flow + 1, Vec::new);
            }
            add_at(&mut self.flows[flow], idx, &e);
        } else {
            // Summed flows have no PSN progress of their own.
            let summed = Bin {
                psn_progress: None,
                ..e
            };
            add_at(&mut self.other, idx, &summed);
        }
    }

    /// The series renumbered: flow `i`'s becomes flow `ids[i]`'s, those numbered past the cap
    /// summed into `other` (a shard's own numbers are never above the capture's).
    pub fn renumber(&mut self, ids: &[u64]) {
        let flows = std::mem::take(&mut self.flows);
        for (i, series) in flows.into_iter().enumerate() {
            if series.is_empty() {
                continue;
            }
            let id = ids[i] as usize;
            let to = if id < MAX_TIMELINE_FLOWS {
                if self.flows.len() <= id {
                    self.flows.resize_with(id + 1, Vec::new);
                }
                &mut self.flows[id]
            } else {
                &mut self.other
            };
            add_series(to, &series);
        }
        for b in &mut self.other {
            b.psn_progress = None;
        }
    }

    /// Adds `other`, another shard's timelines on the same clock and numbering: the bins of
    /// both at the wider width, widened further until the span of both fits.
    pub fn absorb(&mut self, mut other: Timelines) {
        if other.first_bin.is_none() {
            return;
        }
        if self.first_bin.is_none() {
            *self = other;
            return;
        }
        while self.width_ns < other.width_ns {
            self.widen();
        }
        while other.width_ns < self.width_ns {
            other.widen();
        }
        let start = self.start_ns.unwrap_or(0);
        let last_ns = self.last_ns.max(other.last_ns);
        loop {
            let first = self
                .first_bin
                .unwrap_or(0)
                .min(other.first_bin.unwrap_or(0));
            let last = last_ns.saturating_sub(start) / self.width_ns;
            if last - first < MAX_BINS as u64 {
                break;
            }
            self.widen();
            other.widen();
        }
        let first = self
            .first_bin
            .unwrap_or(0)
            .min(other.first_bin.unwrap_or(0));
        self.pad_front(first);
        other.pad_front(first);
        self.last_ns = last_ns;
        if self.flows.len() < other.flows.len() {
            self.flows.resize_with(other.flows.len(), Vec::new);
        }
        for (to, from) in self.flows.iter_mut().zip(&other.flows) {
            add_series(to, from);
        }
        add_series(&mut self.other, &other.other);
    }

    /// Starts the bins held at grid bin `first` (at or before the first held).
    fn pad_front(&mut self, first: u64) {
        let more = (self.first_bin.unwrap_or(first) - first) as usize;
        if more > 0 {
            for s in self.series_mut() {
                if !s.is_empty() {
                    s.splice(0..0, std::iter::repeat_n(Bin::default(), more));
                }
            }
        }
        self.first_bin = Some(first);
    }

    /// The series of an analysis flow (empty if it had none or is beyond the cap).
    pub fn flow(&self, flow: usize) -> &[Bin] {
        self.flows.get(flow).map_or(&[], |v| v.as_slice())
    }

    pub fn other(&self) -> &[Bin] {
        &self.other
    }

    /// Whether flows beyond the cap were summed into `other`.
    pub fn has_other(&self) -> bool {
        self.other.iter().any(|b| b.packets > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by tests/damaged.rs's mutated files: traffic 1,000 s after the capture's first
    /// frame, then a frame at its start, padded 10^9 one-microsecond bins in front (64 GB).
    #[test]
    fn a_frame_long_before_the_first_traffic_widens_the_bins_first() {
        let e = Event {
            packets: 1,
            ..Event::default()
        };
        let mut t = Timelines::default();
        t.start(0);
        t.add(0, 1_000_000_000_000, e);
        t.add(0, 1, e);
        assert!(t.flow(0).len() <= MAX_BINS, "{} bins", t.flow(0).len());
        assert_eq!(t.flow(0).iter().map(|b| b.packets).sum::<u64>(), 2);
    }

    #[test]
    fn bins_widen_through_round_numbers_and_keep_totals() {
        let mut t = Timelines::default();
        let e = Event {
            packets: 1,
            bytes: 100,
            ..Event::default()
        };
        t.start(0);
        for i in 0..10_000u64 {
            t.add(0, i * 1_000, e); // one packet per us for 10 ms
        }
        assert_eq!(
            t.width_ns(),
            10_000,
            "1us -> 2 -> 10 us: 1000 bins of 10 us"
        );
        let s = t.flow(0);
        assert!(s.len() <= MAX_BINS);
        assert_eq!(s.iter().map(|b| b.packets).sum::<u64>(), 10_000);
        assert_eq!(s[0].packets, 10);
        // The last packet at 9.999 ms: 100 bins of 100 us hold it.
        t.coarsen_to(100);
        assert_eq!(t.width_ns(), 100_000);
        t.coarsen_to(99);
        assert_eq!(t.width_ns(), 200_000);
        assert_eq!(t.flow(0).iter().map(|b| b.bytes).sum::<u64>(), 1_000_000);
    }

    #[test]
    fn flows_beyond_the_cap_are_summed() {
        let mut t = Timelines::default();
        let e = Event {
            packets: 1,
            ..Event::default()
        };
        t.add(MAX_TIMELINE_FLOWS + 3, 0, e);
        t.add(MAX_TIMELINE_FLOWS + 4, 0, e);
        assert!(t.has_other());
        assert_eq!(t.other()[0].packets, 2);
        assert!(t.flow(MAX_TIMELINE_FLOWS + 3).is_empty());
    }

    #[test]
    fn only_the_span_of_the_traffic_is_binned() {
        // A 21 s capture whose only traffic is a 5 ms burst 10 s in.
        let mut t = Timelines::default();
        let e = Event {
            packets: 1,
            ..Event::default()
        };
        t.start(0);
        let burst = 10_000_000_000u64;
        for i in 0..5_000u64 {
            t.add(0, burst + i * 1_000, e);
        }
        t.start(21_000_000_000);
        t.coarsen_to(500);
        assert_eq!(t.width_ns(), 10_000, "5 ms in at most 500 bins");
        assert_eq!(t.start_ns(), Some(burst));
        assert_eq!(t.origin_ns(), Some(0));
        assert_eq!(t.end_ns(), burst + 4_999_000);
        assert_eq!(t.flow(0).len(), 500);
        assert_eq!(t.flow(0).iter().map(|b| b.packets).sum::<u64>(), 5_000);
    }

    #[test]
    fn widening_keeps_bins_on_the_grid_of_the_capture_start() {
        let mut t = Timelines::default();
        let e = Event {
            packets: 1,
            ..Event::default()
        };
        t.start(0);
        // First traffic in grid bin 3 (1 us bins), a second flow from bin 5, then far enough
        // to widen to 2 us bins: bin 3 joins bin 2 (2..4 us), so one empty bin pads the front.
        t.add(0, 3_500, e);
        t.add(1, 5_500, e);
        t.add(0, 1_003_000, e);
        assert_eq!(t.width_ns(), 2_000);
        assert_eq!(t.start_ns(), Some(2_000));
        assert_eq!(t.flow(0)[0].packets, 1, "3.5 us lies in 2..4 us");
        assert_eq!(t.flow(1)[1].packets, 1, "5.5 us lies in 4..6 us");
        assert_eq!(t.flow(0)[500].packets, 1, "1003 us lies in 1002..1004 us");
        // A PFC frame before the first RoCE event widens the span backwards.
        t.touch(0);
        assert_eq!(t.start_ns(), Some(0));
        assert_eq!(t.flow(0)[1].packets, 1);
        assert_eq!(t.flow(1)[2].packets, 1);
    }
}
