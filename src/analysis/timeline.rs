//! Time-binned counters per flow, for timelines and plots (`--report`). Collected in one pass
//! whatever the source (files and live capture alike): bins start at 1 us and widen through the
//! 1-2-10 sequence (1 us, 2 us, 10 us, 20 us, 100 us...) whenever the capture outgrows
//! `MAX_BINS`, merging whole bins, so the final width is always a round number. Memory is
//! bounded: at most `MAX_TIMELINE_FLOWS` flows get their own series, the rest are summed.

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
    start_ns: Option<u64>,
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
            width_ns: 1_000,
            step: 0,
            flows: Vec::new(),
            other: Vec::new(),
        }
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

    pub fn start_ns(&self) -> Option<u64> {
        self.start_ns
    }

    /// Widens the bins until `ts` falls within MAX_BINS.
    fn fit(&mut self, ts: u64) -> usize {
        let start = *self.start_ns.get_or_insert(ts);
        loop {
            let idx = (ts.saturating_sub(start) / self.width_ns) as usize;
            if idx < MAX_BINS {
                return idx;
            }
            self.widen();
        }
    }

    /// The next width of the 1-2-10 sequence (1 -> 2 -> 10 -> 20 -> 100...), merging bins.
    fn widen(&mut self) {
        let factor = if self.step.is_multiple_of(2) { 2 } else { 5 };
        self.step += 1;
        self.width_ns *= factor as u64;
        for s in self
            .flows
            .iter_mut()
            .chain(std::iter::once(&mut self.other))
        {
            merge_series(s, factor);
        }
    }

    /// Widens until the whole capture fits in at most `max_bins`, for a readable plot.
    pub fn coarsen_to(&mut self, end_ts: u64, max_bins: usize) {
        let Some(start) = self.start_ns else { return };
        while (end_ts.saturating_sub(start) / self.width_ns) as usize >= max_bins {
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
        let series = if flow < MAX_TIMELINE_FLOWS {
            if self.flows.len() <= flow {
                self.flows.resize_with(flow + 1, Vec::new);
            }
            &mut self.flows[flow]
        } else {
            &mut self.other
        };
        if series.len() <= idx {
            series.resize(idx + 1, Bin::default());
        }
        series[idx].merge(&e);
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
        t.coarsen_to(10_000_000, 100);
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
}
