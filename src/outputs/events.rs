//! `--events`: what happens while a capture runs, one JSON object per line (NDJSON), flushed
//! per line so that `tail -f` and log shippers see it at once, as Suricata's EVE and Zeek's
//! logs do:
//!
//! Lines are written whole and handed to the file after every batch of frames (a live
//! capture's come at least every 50 ms).
//!
//! - `{"event":"finding","ts_ns":...,"finding":{...}}` when a finding first holds (as
//!   `watch::FindingWatch` evaluates them: every second of capture time and at the end); the
//!   object is the report's `findings[]` entry as it stood then.
//! - `{"event":"flow_end","ts_ns":...,"flow":{...}}` when a flow ends: idle longer than
//!   `--flow-timeout` (both directions), or open when the capture ends; with the keys of the
//!   report's `flows[]`, its `id` its own (the order flows appeared in over the run), not a
//!   position in the sorted report.
//! - `{"event":"drops","ts_ns":...,"dropped":N,"if_dropped":N}` when a live capture's kernel
//!   drop counters rise (running totals).

use std::io::{self, Write};

use serde::Serialize;

use super::{CaptureEnd, Output, Tick, Wants};
use crate::common::error::Error;
use crate::model::{Finding, FlowEnded, FlowReport, NewFindings, Report};

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

/// The events file: emptied, then written in append mode, so that logrotate's
/// `copytruncate` works (once it empties the file, the next line goes to its start; written at
/// the old offset, the file would begin with a hole of zero bytes as long as all it held).
pub fn create_file(path: &std::path::Path) -> io::Result<std::fs::File> {
    std::fs::File::create(path)?;
    std::fs::OpenOptions::new().append(true).open(path)
}

/// Bytes gathered before they are handed to the file.
const BUFFERED: usize = 1 << 16;

pub struct EventWriter {
    out: Box<dyn Write + Send>,
    drops: (u64, u64),
    /// Whole lines not yet handed to `out`: each line is written here once, not built apart
    /// and copied into a buffer (a live churn writes 800 MB of `flow_end` lines).
    buf: Vec<u8>,
}

impl EventWriter {
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        EventWriter {
            out,
            drops: (0, 0),
            buf: Vec::with_capacity(BUFFERED + 4096),
        }
    }

    /// One line, whole (serializing into the file made a system call per JSON token, and a
    /// flush per line one per event: a live churn's flow ends fell behind the capture).
    fn write(&mut self, e: &Event) -> io::Result<()> {
        let start = self.buf.len();
        if let Err(e) = serde_json::to_writer(&mut self.buf, e) {
            self.buf.truncate(start);
            return Err(io::Error::from(e));
        }
        self.end_line()
    }

    /// Ends the line just written; hands the buffer to the file once it is full.
    fn end_line(&mut self) -> io::Result<()> {
        self.buf.push(b'\n');
        if self.buf.len() >= BUFFERED {
            self.hand_over()?;
        }
        Ok(())
    }

    fn hand_over(&mut self) -> io::Result<()> {
        let written = self.out.write_all(&self.buf);
        // Lines that did not go are dropped with the error, not written twice later.
        self.buf.clear();
        written
    }

    /// Hands the lines written so far to the file: after every batch of frames (a live
    /// capture's come at least every 50 ms), so `tail -f` sees an event at once.
    pub fn flush(&mut self) -> io::Result<()> {
        self.hand_over()?;
        self.out.flush()
    }

    /// Findings that first hold (the watch decides which).
    pub fn findings(&mut self, ts_ns: u64, findings: &[Finding]) -> io::Result<()> {
        for finding in findings {
            self.write(&Event::Finding { ts_ns, finding })?;
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

    /// The end of the capture: every flow still open ending. `order[i]`: the `Flow::id` of
    /// report flow `i`; `open`: the ids still open.
    pub fn end_capture(
        &mut self,
        report: &Report,
        order: &[usize],
        open: &[usize],
        ts_ns: u64,
    ) -> io::Result<()> {
        for (id, f) in report.still_open(order, open) {
            let mut flow = f.clone();
            flow.id = id + 1;
            self.flow_end(ts_ns, &flow)?;
        }
        self.flush()
    }
}

/// An error of the events, named as the flag (standard output or a file).
fn failed(source: io::Error) -> Error {
    Error::Output {
        path: "--events".into(),
        source,
    }
}

impl Output for EventWriter {
    fn wants(&self) -> Wants {
        Wants {
            ended_flows: true,
            ended_reports: true,
            findings: true,
            ..Wants::default()
        }
    }

    fn flow_ended(&mut self, ended: &FlowEnded) -> Result<(), Error> {
        match &ended.report {
            Some(flow) => self.flow_end(ended.ended_ns, flow).map_err(failed),
            None => Ok(()),
        }
    }

    fn findings(&mut self, new: &NewFindings) -> Result<(), Error> {
        EventWriter::findings(self, new.ts_ns, &new.findings).map_err(failed)
    }

    fn flush(&mut self) -> Result<(), Error> {
        EventWriter::flush(self).map_err(failed)
    }

    fn tick(&mut self, tick: &Tick<'_>) -> Result<(), Error> {
        match tick.source.kernel {
            Some(k) => self
                .drops(tick.wall_ns, k.dropped, k.if_dropped)
                .map_err(failed),
            None => Ok(()),
        }
    }

    fn finish(mut self: Box<Self>, end: &CaptureEnd<'_>) -> Result<(), Error> {
        self.end_capture(end.report, end.order, end.open_ids, end.last_ts)
            .map_err(failed)
    }
}

/// Lines written before an error ended the run still reach the file.
impl Drop for EventWriter {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::EventWriter;

    /// logrotate's `copytruncate` empties the file under the monitor: the lines written
    /// after it start the file, with no hole of zero bytes before them.
    #[test]
    fn an_events_file_emptied_under_the_writer_starts_with_the_next_line() {
        let path =
            std::env::temp_dir().join(format!("roce-sniff-copytruncate-{}", std::process::id()));
        std::fs::write(&path, "stale\n").unwrap();
        let mut w = EventWriter::new(Box::new(super::create_file(&path).unwrap()));
        w.drops(1, 5, 0).unwrap();
        assert!(std::fs::read_to_string(&path)
            .unwrap()
            .starts_with("{\"event\":\"drops\""));
        // What copytruncate does once it has copied the file.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(0)
            .unwrap();
        w.drops(2, 7, 0).unwrap();
        drop(w);
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(
            text,
            "{\"event\":\"drops\",\"ts_ns\":2,\"dropped\":7,\"if_dropped\":0}\n"
        );
    }

    /// A `Write` whose bytes the test can read after the writer is gone.
    #[derive(Clone, Default)]
    struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn lines_reach_the_file_whole_when_the_buffer_fills_and_when_dropped() {
        let flow = crate::analysis::testing::report_of("sample.pcap")
            .flows
            .swap_remove(0);
        let out = Shared::default();
        let mut w = EventWriter::new(Box::new(out.clone()));
        let mut lines = 0;
        while out.0.lock().unwrap().is_empty() {
            w.flow_end(7, &flow).unwrap();
            lines += 1;
        }
        let handed = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            handed.lines().count(),
            lines,
            "whole lines, every one so far"
        );
        assert!(handed.len() >= super::BUFFERED && handed.ends_with('\n'));
        w.flow_end(8, &flow).unwrap();
        drop(w);
        let all = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert_eq!(all.lines().count(), lines + 1);
        assert!(all.lines().last().unwrap().contains("\"ts_ns\":8,"));
    }
}
