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
//! - `{"event":"finding_escalated","ts_ns":...,"from":"info","to":"warning","finding":{...}}`
//!   when a finding told before holds at a higher severity (evidence grew): the finding as
//!   it stands now.
//! - `{"event":"flow_end","ts_ns":...,"flow":{...}}` when a flow ends: idle longer than
//!   `--flow-timeout` (both directions), or open when the capture ends; with the keys of the
//!   report's `flows[]`, its `id` its own (the order flows appeared in over the run), not a
//!   position in the sorted report.
//! - `{"event":"drops","ts_ns":...,"dropped":N,"if_dropped":N}` when a live capture's kernel
//!   drop counters rise (running totals).
//! - `{"event":"records_dropped","ts_ns":...,"output":"events","kind":"flow_end","dropped":N}`
//!   when an output could not keep up with a live capture and dropped records of a kind
//!   (running total; `ts_ns` the wall clock).
//!
//! The lines are serialized and written on a thread of their own (`EventsOutput`), behind a
//! queue bounded in bytes: on a live capture a `flow_end` that does not fit is dropped and
//! counted, never waited for; findings always go. Reading a file, nothing is dropped.

use std::io::{self, Write};
use std::sync::Arc;
use std::thread::JoinHandle;

use serde::Serialize;

use super::{CaptureEnd, Output, Tick, Wants};
use crate::common::error::Error;
use crate::common::queue::{queue, spawn_behind, NotSent, QueueReceiver, QueueSender, WhenFull};
use crate::model::{
    DroppedRecords, Escalation, Finding, FlowEnded, FlowReport, NewFindings, Report, Severity,
    DROPPABLE,
};

#[derive(Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum Event<'a> {
    Finding {
        ts_ns: u64,
        finding: &'a Finding,
    },
    FindingEscalated {
        ts_ns: u64,
        from: Severity,
        to: Severity,
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
    RecordsDropped {
        ts_ns: u64,
        output: &'a str,
        kind: &'a str,
        dropped: u64,
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

    /// Findings that first hold, then those whose severity rose (the watch decides which).
    pub fn findings(
        &mut self,
        ts_ns: u64,
        findings: &[Finding],
        escalated: &[Escalation],
    ) -> io::Result<()> {
        for finding in findings {
            self.write(&Event::Finding { ts_ns, finding })?;
        }
        for e in escalated {
            self.write(&Event::FindingEscalated {
                ts_ns,
                from: e.from,
                to: e.finding.severity,
                finding: &e.finding,
            })?;
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

/// What the analysis hands the writer's thread, in order.
enum Record {
    FlowEnd {
        ts_ns: u64,
        flow: Arc<FlowReport>,
    },
    Findings {
        ts_ns: u64,
        findings: Vec<Finding>,
        escalated: Vec<Escalation>,
    },
    /// The kernel's drop counters rose.
    Drops {
        ts_ns: u64,
        dropped: u64,
        if_dropped: u64,
    },
    /// The end of a batch of frames: the lines go to the file.
    Flush,
}

/// The bytes a `flow_end` record holds while it waits: the entry and the parts it boxes.
const FLOW_END_BYTES: usize = std::mem::size_of::<FlowReport>() + 512;
/// The most the records waiting for the writer may hold.
const QUEUE_BYTES: usize = 16 << 20;

/// The writer's thread at its end: the writer, and the error that stopped it, if any.
type WriterEnd = (EventWriter, io::Result<()>);

/// `--events` as the capture runs: records gathered per batch of frames and handed to the
/// writer's thread, which serializes and writes them.
pub struct EventsOutput {
    to_writer: Option<QueueSender<Vec<Record>>>,
    writer: Option<JoinHandle<WriterEnd>>,
    batch: Vec<Record>,
    batch_bytes: usize,
    when_full: WhenFull,
    dropped: Arc<DroppedRecords>,
    /// The kernel's drop counters last handed over.
    kernel_drops: (u64, u64),
    /// Flows that ended without an entry since the last hand-over (no output had room).
    not_made: u64,
    /// The queue was found full (a live capture), and the writer has not taken half of it
    /// since: there is no room for the entries of the flows that end.
    full: bool,
}

impl EventsOutput {
    /// Starts the writer's thread; `when_full`: what a full queue does to a `flow_end`;
    /// `dropped`: where drops are counted (and read back to tell them).
    pub fn start(
        writer: EventWriter,
        when_full: WhenFull,
        dropped: Arc<DroppedRecords>,
    ) -> io::Result<EventsOutput> {
        let (to_writer, records) = queue(QUEUE_BYTES);
        let told = Arc::clone(&dropped);
        let writer = spawn_behind("events", move || write_records(writer, records, &told))?;
        Ok(EventsOutput {
            to_writer: Some(to_writer),
            writer: Some(writer),
            batch: Vec::new(),
            batch_bytes: 0,
            when_full,
            dropped,
            kernel_drops: (0, 0),
            not_made: 0,
            full: false,
        })
    }

    /// Hands the batch to the writer: the `flow_end` records it has no room for are dropped
    /// and counted (live); the rest always goes.
    fn hand_over(&mut self) -> Result<(), Error> {
        let Some(to_writer) = self.to_writer.as_ref() else {
            return Ok(());
        };
        if self.not_made > 0 {
            let n = std::mem::take(&mut self.not_made);
            self.dropped.add("events", "flow_end", n);
        }
        let batch = std::mem::take(&mut self.batch);
        let bytes = std::mem::take(&mut self.batch_bytes);
        // A queue found full is full until the writer took half of it.
        self.full = self.full && !to_writer.drained_to_half();
        let sent = match to_writer.hand(batch, bytes, self.when_full) {
            Err(NotSent::Full(batch)) => {
                self.full = true;
                let (kept, lost) = keep_all_but_flow_ends(batch);
                self.dropped.add("events", "flow_end", lost);
                to_writer.send_anyway(kept, 0)
            }
            sent => sent,
        };
        match sent {
            Ok(()) => Ok(()),
            Err(_) => self.stop_writer().map(|_| ()),
        }
    }

    /// Waits for the writer to end: the writer, or the error that stopped it.
    fn stop_writer(&mut self) -> Result<EventWriter, Error> {
        self.to_writer = None;
        let ended = self.writer.take().map(JoinHandle::join);
        match ended {
            Some(Ok((w, Ok(())))) => Ok(w),
            Some(Ok((_, Err(e)))) => Err(failed(e)),
            Some(Err(_)) => Err(failed(io::Error::other("the events writer panicked"))),
            None => Err(failed(io::Error::other("the events writer has stopped"))),
        }
    }

    fn push(&mut self, record: Record, bytes: usize) {
        self.batch.push(record);
        self.batch_bytes += bytes;
    }
}

/// The records of `batch` but its `flow_end`s, and how many those were.
fn keep_all_but_flow_ends(batch: Vec<Record>) -> (Vec<Record>, u64) {
    let all = batch.len();
    let kept: Vec<Record> = batch
        .into_iter()
        .filter(|r| !matches!(r, Record::FlowEnd { .. }))
        .collect();
    let lost = (all - kept.len()) as u64;
    (kept, lost)
}

/// The writer's thread: every record as it comes, then what was dropped since last told.
fn write_records(
    mut w: EventWriter,
    records: QueueReceiver<Vec<Record>>,
    dropped: &DroppedRecords,
) -> WriterEnd {
    let mut told = [0; DROPPABLE.len()];
    while let Some((batch, bytes)) = records.recv() {
        let written = batch
            .into_iter()
            .try_for_each(|r| w.record(r))
            .and_then(|()| w.tell_dropped(dropped, &mut told));
        records.release(bytes);
        if let Err(e) = written {
            return (w, Err(e));
        }
    }
    let last = w.tell_dropped(dropped, &mut told);
    (w, last)
}

impl EventWriter {
    fn record(&mut self, r: Record) -> io::Result<()> {
        match r {
            Record::FlowEnd { ts_ns, flow } => self.flow_end(ts_ns, &flow),
            Record::Findings {
                ts_ns,
                findings,
                escalated,
            } => self.findings(ts_ns, &findings, &escalated),
            Record::Drops {
                ts_ns,
                dropped,
                if_dropped,
            } => self.drops(ts_ns, dropped, if_dropped),
            Record::Flush => self.flush(),
        }
    }

    /// A `records_dropped` line for each output and kind that dropped more since `told`.
    fn tell_dropped(
        &mut self,
        dropped: &DroppedRecords,
        told: &mut [u64; DROPPABLE.len()],
    ) -> io::Result<()> {
        let counts = dropped.counts();
        if counts.iter().zip(told.iter()).all(|(c, t)| c.2 == *t) {
            return Ok(());
        }
        let ts_ns = crate::common::clock::now_ns();
        for ((output, kind, n), t) in counts.into_iter().zip(told.iter_mut()) {
            if n > *t {
                *t = n;
                self.write(&Event::RecordsDropped {
                    ts_ns,
                    output,
                    kind,
                    dropped: n,
                })?;
            }
        }
        self.flush()
    }
}

impl Output for EventsOutput {
    fn wants(&self) -> Wants {
        Wants {
            ended_flows: true,
            ended_reports: true,
            findings: true,
            ..Wants::default()
        }
    }

    /// A flow told without its entry ended while no output had room for one (`has_room`):
    /// its flow_end is dropped.
    fn flow_ended(&mut self, ended: &FlowEnded) -> Result<(), Error> {
        match &ended.report {
            Some(flow) => {
                let record = Record::FlowEnd {
                    ts_ns: ended.ended_ns,
                    flow: Arc::clone(flow),
                };
                self.push(record, FLOW_END_BYTES);
            }
            None => self.not_made += 1,
        }
        Ok(())
    }

    fn has_room(&self) -> bool {
        !self.full
    }

    fn findings(&mut self, new: &NewFindings) -> Result<(), Error> {
        let bytes = (new.findings.len() + new.escalated.len()) * std::mem::size_of::<Finding>();
        let record = Record::Findings {
            ts_ns: new.ts_ns,
            findings: new.findings.clone(),
            escalated: new.escalated.clone(),
        };
        self.push(record, bytes);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), Error> {
        self.push(Record::Flush, 0);
        self.hand_over()
    }

    /// The kernel's drop counters, when they rose, go at once.
    fn tick(&mut self, tick: &Tick<'_>) -> Result<(), Error> {
        let Some(k) = tick.source.kernel else {
            return Ok(());
        };
        if k.dropped + k.if_dropped <= self.kernel_drops.0 + self.kernel_drops.1 {
            return Ok(());
        }
        self.kernel_drops = (k.dropped, k.if_dropped);
        let record = Record::Drops {
            ts_ns: tick.wall_ns,
            dropped: k.dropped,
            if_dropped: k.if_dropped,
        };
        self.push(record, 0);
        self.flush()
    }

    /// Every record handed over and written, then the flows still open.
    fn finish(mut self: Box<Self>, end: &CaptureEnd<'_>) -> Result<(), Error> {
        self.when_full = WhenFull::Wait;
        self.flush()?;
        let mut w = self.stop_writer()?;
        w.end_capture(end.report, end.order, end.open_ids, end.last_ts)
            .map_err(failed)
    }
}

/// An early end (an error elsewhere): what was handed over still reaches the file.
impl Drop for EventsOutput {
    fn drop(&mut self) {
        let _ = self.hand_over();
        let _ = self.stop_writer();
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
        let flow = crate::model::testing::flow_report(1);
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

    /// A `Write` that holds every write until the test opens its gate.
    #[derive(Clone)]
    struct Gated {
        open: std::sync::Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>,
        out: Shared,
    }

    impl Gated {
        fn open(&self) {
            *self.open.0.lock().unwrap() = true;
            self.open.1.notify_all();
        }
    }

    struct Opens(Gated);

    impl Drop for Opens {
        fn drop(&mut self) {
            self.0.open();
        }
    }

    impl std::io::Write for Gated {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            let mut open = self.open.0.lock().unwrap();
            while !*open {
                open = self.open.1.wait(open).unwrap();
            }
            self.out.write(b)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// A live capture outpaces the writer: the `flow_end`s that find the queue full are
    /// dropped and counted, a `records_dropped` line tells them, and every finding and every
    /// `flow_end` that was not dropped is written.
    #[test]
    fn a_full_queue_drops_flow_ends_counts_and_tells_them_and_loses_nothing_else() {
        use super::{EventsOutput, Output, WhenFull};
        use crate::model::{testing, FindingCode, Severity};
        use crate::model::{DroppedRecords, FlowEnded, NewFindings};
        use std::sync::Arc;
        let flow = Arc::new(testing::flow_report(1));
        let finding = testing::finding(Severity::Critical, FindingCode::PsnLoss, None);
        let gated = Gated {
            open: Default::default(),
            out: Shared::default(),
        };
        let dropped = Arc::new(DroppedRecords::default());
        let writer = EventWriter::new(Box::new(gated.clone()));
        let mut events = EventsOutput::start(writer, WhenFull::Drop, Arc::clone(&dropped)).unwrap();
        // A failed assertion opens the gate too (dropped before `events`, whose writer would
        // wait at it forever).
        let _opens = Opens(gated.clone());
        let (batches, per_batch) = (60, 1_000);
        let mut without_entry = 0;
        for b in 0..batches {
            for k in 0..per_batch {
                // As the sink does: no entry is made while no output has room for it.
                let room = events.has_room();
                without_entry += u64::from(!room);
                let ended = FlowEnded {
                    id: (b * per_batch + k) as u64,
                    ended_ns: 1,
                    report: room.then(|| Arc::clone(&flow)),
                    counters: None,
                };
                events.flow_ended(&ended).unwrap();
            }
            let new = NewFindings {
                ts_ns: 2,
                findings: vec![finding.clone()],
                first_told: vec![1],
                escalated: Vec::new(),
            };
            events.findings(&new).unwrap();
            events.flush().unwrap();
        }
        let lost = dropped.total();
        assert!(lost > 0, "the queue never filled");
        assert!(
            without_entry > 0 && without_entry < lost,
            "{without_entry} {lost}"
        );
        gated.open();
        let report = testing::empty_report();
        let end = crate::outputs::CaptureEnd {
            report: &report,
            order: &[],
            open_ids: &[],
            pauses: &[],
            last_ts: 3,
            counts: &Default::default(),
            source: &Default::default(),
            figures: None,
            dropped: &dropped,
        };
        Box::new(events).finish(&end).unwrap();
        let text = String::from_utf8(gated.out.0.lock().unwrap().clone()).unwrap();
        let count = |event: &str| {
            text.lines()
                .filter(|l| l.starts_with(&format!("{{\"event\":\"{event}\"")))
                .count() as u64
        };
        assert_eq!(count("flow_end") + lost, (batches * per_batch) as u64);
        assert_eq!(
            count("finding"),
            batches as u64,
            "findings are never dropped"
        );
        let last = text
            .lines()
            .rfind(|l| l.contains("records_dropped"))
            .expect("a records_dropped line");
        assert!(
            last.contains(&format!(
                "\"output\":\"events\",\"kind\":\"flow_end\",\"dropped\":{lost}}}"
            )),
            "{last}"
        );
    }
}
