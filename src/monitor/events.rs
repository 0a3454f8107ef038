//! `--events`: what happens while a capture runs, one JSON object per line (NDJSON), flushed
//! per line so that `tail -f` and log shippers see it at once, as Suricata's EVE and Zeek's
//! logs do:
//!
//! Lines are written whole and handed to the file after every batch of frames (a live
//! capture's come at least every 50 ms).
//!
//! - `{"event":"finding","ts_ns":...,"finding":{...}}` when a finding first holds. Findings are
//!   evaluated on the traffic seen so far at every second of capture time (packet timestamps,
//!   so a file gives the same events at any speed and any --threads), and once more at the
//!   end; the object is the report's `findings[]` entry as it stood then.
//! - `{"event":"flow_end","ts_ns":...,"flow":{...}}` when a flow ends: idle longer than
//!   `--flow-timeout` (both directions), or open when the capture ends; with the keys of the
//!   report's `flows[]`, its `id` its own (the order flows appeared in over the run), not a
//!   position in the sorted report.
//! - `{"event":"drops","ts_ns":...,"dropped":N,"if_dropped":N}` when a live capture's kernel
//!   drop counters rise (running totals).

use std::collections::HashSet;
use std::io::{self, Write};

use serde::Serialize;

use crate::analysis::report_build::CaptureMeta;
use crate::analysis::Analyzer;
use crate::decode::FrameCounts;
use crate::model::{Finding, FlowReport, Report};
use crate::summary::PacketSummary;

/// Findings are evaluated this often, in capture time.
pub const EVALUATE_EVERY_NS: u64 = 1_000_000_000;

#[derive(Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum Event<'a> {
    Finding {
        ts_ns: u64,
        finding: &'a Finding,
    },
    FlowEnd {
        ts_ns: u64,
        flow: &'a FlowReport,
    },
    Drops {
        ts_ns: u64,
        dropped: u64,
        if_dropped: u64,
    },
}

pub struct EventWriter {
    out: io::BufWriter<Box<dyn Write + Send>>,
    /// Findings already told: by code and flow (a capture-wide finding by its code).
    told: HashSet<(&'static str, Option<String>)>,
    next_evaluation_ns: Option<u64>,
    /// The frames so far, for the capture-wide findings of an evaluation.
    counts: FrameCounts,
    drops: (u64, u64),
    line: Vec<u8>,
}

impl EventWriter {
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        EventWriter {
            out: io::BufWriter::with_capacity(1 << 16, out),
            told: HashSet::new(),
            next_evaluation_ns: None,
            counts: FrameCounts::default(),
            drops: (0, 0),
            line: Vec::with_capacity(4096),
        }
    }

    /// One line, whole (serializing into the file made a system call per JSON token, and a
    /// flush per line one per event: a live churn's flow ends fell behind the capture).
    fn write(&mut self, e: &Event) -> io::Result<()> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, e).map_err(io::Error::from)?;
        self.line.push(b'\n');
        self.out.write_all(&self.line)
    }

    /// Hands the lines written so far to the file: after every batch of frames (a live
    /// capture's come at least every 50 ms), so `tail -f` sees an event at once.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Called before `s` is analysed: when `s` starts a new second of capture time, the
    /// findings of what came before it are evaluated.
    pub fn frame(&mut self, s: &PacketSummary, an: &Analyzer) -> io::Result<()> {
        match self.next_evaluation_ns {
            None => self.next_evaluation_ns = Some(s.ts_ns + EVALUATE_EVERY_NS),
            Some(next) if s.ts_ns >= next => {
                self.evaluate(an, an.last_ts())?;
                // The next second after this frame (a quiet stretch has nothing to tell).
                self.next_evaluation_ns = Some(s.ts_ns + EVALUATE_EVERY_NS);
            }
            Some(_) => {}
        }
        self.counts.add(s);
        Ok(())
    }

    fn evaluate(&mut self, an: &Analyzer, ts_ns: u64) -> io::Result<()> {
        let meta = CaptureMeta {
            file: String::new(),
            format: None,
            snaplen: 0,
            counts: self.counts.clone(),
            warnings: Vec::new(),
        };
        let (report, _) = an.report_now(&meta);
        self.findings(ts_ns, &report.findings)
    }

    /// Tells the findings of `findings` not told yet.
    pub fn findings(&mut self, ts_ns: u64, findings: &[Finding]) -> io::Result<()> {
        for f in findings {
            if self.told.insert((f.code.name(), f.flow.clone())) {
                self.write(&Event::Finding { ts_ns, finding: f })?;
            }
        }
        Ok(())
    }

    /// The kernel's drop counters now: told when they rose.
    pub fn drops(&mut self, ts_ns: u64, dropped: u64, if_dropped: u64) -> io::Result<()> {
        if dropped + if_dropped > self.drops.0 + self.drops.1 {
            self.drops = (dropped, if_dropped);
            self.write(&Event::Drops {
                ts_ns,
                dropped,
                if_dropped,
            })?;
            self.flush()?;
        }
        Ok(())
    }

    /// A flow ended before the capture did; `flow.id` is its own.
    pub fn flow_end(&mut self, ts_ns: u64, flow: &FlowReport) -> io::Result<()> {
        self.write(&Event::FlowEnd { ts_ns, flow })
    }

    /// The end of the capture: the findings that first hold now, and every flow still open
    /// ending. `order[i]`: the `Flow::id` of report flow `i`; `open`: the ids still open.
    pub fn finish(
        &mut self,
        report: &Report,
        order: &[usize],
        open: &[usize],
        ts_ns: u64,
    ) -> io::Result<()> {
        self.findings(ts_ns, &report.findings)?;
        let open: std::collections::HashSet<usize> = open.iter().copied().collect();
        let mut ending: Vec<(usize, &FlowReport)> = order
            .iter()
            .copied()
            .zip(&report.flows)
            .filter(|(id, _)| open.contains(id))
            .collect();
        ending.sort_by_key(|&(id, _)| id);
        for (id, f) in ending {
            let mut flow = f.clone();
            flow.id = id + 1;
            self.flow_end(ts_ns, &flow)?;
        }
        self.flush()
    }
}
