//! What the export counts per time bin as frames come: each flow's open timeline bin, and PFC
//! frames per (source, priority, bin). The whole-capture export spills the bins it closes;
//! the rolling one writes them into the part of the interval they belong to.

use std::collections::BTreeMap;

use roce_parsers::MacAddr;
use rustc_hash::FxHashMap as HashMap;

use super::rows::TimelineRow;
use crate::decode::summary::{PacketSummary, Payload};
use crate::model::{Outcome, PsnEvent};

/// A flow's current timeline bin.
#[derive(Default, Clone, Copy)]
struct OpenBin {
    start: Option<u64>,
    row: TimelineRow,
}

/// PFC per (source, priority, bin): XOFF and XON frames, and the nanoseconds paused.
pub type PfcBins = BTreeMap<(MacAddr, u8, u64), (u64, u64, u64)>;

pub struct Bins {
    bin_ns: u64,
    open: HashMap<usize, OpenBin>,
    pfc: PfcBins,
}

impl Bins {
    pub fn new(bin_ns: u64) -> Self {
        Bins {
            bin_ns,
            open: HashMap::default(),
            pfc: PfcBins::new(),
        }
    }

    /// One frame, and what the analysis made of it; a flow bin it closes goes to `closed`.
    pub fn frame<E>(
        &mut self,
        p: &PacketSummary,
        o: Outcome,
        closed: &mut impl FnMut(TimelineRow) -> Result<(), E>,
    ) -> Result<(), E> {
        if let Some(flow) = o.flow {
            let ce = p.tclass.is_some_and(|t| t.ecn() == roce_parsers::Ecn::Ce);
            self.count(flow, p.ts_ns, closed, |r| {
                r.packets += 1;
                r.bytes += i64::from(p.len);
                r.ce += i64::from(ce);
                match o.psn {
                    Some(PsnEvent::Gap) => r.gaps += 1,
                    Some(PsnEvent::Retransmitted) => r.retransmitted += 1,
                    _ => {}
                }
            })?;
        }
        if let Some(flow) = o.cnp_for {
            self.count(flow, p.ts_ns, closed, |r| r.cnps += 1)?;
        }
        if let Some(flow) = o.nak_for {
            self.count(flow, p.ts_ns, closed, |r| r.naks += 1)?;
        }
        if let Payload::Pfc { cev, quanta } = p.payload {
            let mac = p.src_mac.unwrap_or_default();
            let bin = p.ts_ns - p.ts_ns % self.bin_ns;
            for (prio, &q) in quanta.iter().enumerate() {
                if cev & (1 << prio) != 0 {
                    let e = self.pfc.entry((mac, prio as u8, bin)).or_default();
                    if q > 0 {
                        e.0 += 1;
                    } else {
                        e.1 += 1;
                    }
                }
            }
        }
        Ok(())
    }

    /// Adds to flow `flow`'s bin at `ts`, closing the bin before it.
    fn count<E>(
        &mut self,
        flow: usize,
        ts: u64,
        closed: &mut impl FnMut(TimelineRow) -> Result<(), E>,
        add: impl FnOnce(&mut TimelineRow),
    ) -> Result<(), E> {
        let start = ts - ts % self.bin_ns;
        let open = self.open.entry(flow).or_default();
        if open.start == Some(start) {
            add(&mut open.row);
            return Ok(());
        }
        let done = std::mem::replace(
            open,
            OpenBin {
                start: Some(start),
                row: TimelineRow::default(),
            },
        );
        add(&mut open.row);
        match row_of(flow, done) {
            Some(row) => closed(row),
            None => Ok(()),
        }
    }

    /// Flow `id` ended: its open bin, closed (a QP used again is another flow).
    pub fn flow_ended(&mut self, id: usize) -> Option<TimelineRow> {
        self.open.remove(&id).and_then(|b| row_of(id, b))
    }

    /// Closes the flows' bins that start before `before` (every bin with `None`), in flow order.
    pub fn close_bins(&mut self, before: Option<u64>) -> Vec<TimelineRow> {
        let ending = |b: &OpenBin| b.start.is_some_and(|s| before.is_none_or(|t| s < t));
        let mut ids: Vec<usize> = self
            .open
            .iter()
            .filter(|(_, b)| ending(b))
            .map(|(&id, _)| id)
            .collect();
        ids.sort_unstable();
        ids.into_iter()
            .filter_map(|id| self.flow_ended(id))
            .collect()
    }

    /// The time from `from` to `to` that `key` (source, priority) paused, in its bins.
    pub fn paused(&mut self, (mac, prio): (MacAddr, u8), from: u64, to: u64) {
        for (k, ns) in crate::model::slot_overlaps(from, to, 0, self.bin_ns) {
            self.pfc.entry((mac, prio, k * self.bin_ns)).or_default().2 += ns;
        }
    }

    /// Takes the PFC bins that start before `before` (every one with `None`).
    pub fn take_pfc(&mut self, before: Option<u64>) -> PfcBins {
        match before {
            None => std::mem::take(&mut self.pfc),
            Some(t) => {
                let (done, keep) = std::mem::take(&mut self.pfc)
                    .into_iter()
                    .partition(|(k, _)| k.2 < t);
                self.pfc = keep;
                done
            }
        }
    }
}

/// The row of a closed bin of `flow` (none for a bin never opened).
fn row_of(flow: usize, bin: OpenBin) -> Option<TimelineRow> {
    Some(TimelineRow {
        flow: flow as i64,
        bin_start_ns: bin.start? as i64,
        ..bin.row
    })
}
