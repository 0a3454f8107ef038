//! `--parquet DIR --rotate DURATION`: a capture that runs for long (live) written as a rolling
//! dataset. Every interval of capture time (aligned on multiples of it) becomes a complete set
//! of parts `DIR/<table>/capture=<name>/part-<N>.parquet`: the packets of the interval, the
//! flows that ended in it, the timeline and PFC bins that lie in it, the findings that first
//! held in it. A part is written under a hidden temporary name (`.part-<N>.parquet.tmp`, which
//! neither DuckDB's `*.parquet` nor Spark, which skips hidden files, reads) and renamed when
//! whole, so a reader never meets a half-written file.
//!
//! Flows are named by their own id (the order they appeared in, as in `--events`), offset by
//! the ids earlier runs into the same partition used (kept in `DIR/.capture=<name>.next-flow-id`
//! after each set of parts), so that a restarted monitor never reuses one.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use roce_parsers::MacAddr;
use rustc_hash::FxHashMap as HashMap;

use super::bins::{Bins, PfcBins};
use super::rows::{self, PacketRow, TextCache, TimelineRow};
use super::table::Table;
use super::{io_err, remove_partitions, ExportConfig, TABLES};
use crate::common::error::Error;
use crate::common::queue::{queue, spawn_behind, NotSent, QueueReceiver, QueueSender, WhenFull};
use crate::decode::summary::PacketSummary;
use crate::model::{DroppedRecords, Finding, FlowReport, Outcome, Report, SourcePause};

/// The tables written a row at a time while an interval runs (the PFC part is written at its
/// end).
struct Part {
    packets: PartTable,
    flows: PartTable,
    timeline: PartTable,
    findings: PartTable,
}

/// The most rows a part's file holds; an interval with more goes on in `part-N-1.parquet`,
/// `part-N-2.parquet`... The writer keeps every row group's metadata (about 0.5 KB a column)
/// until its file is closed: a monitor taking 300,000 frames a second into parts of a minute or
/// an hour grew by 1.9 MB a second until the interval ended. A million rows a file bounds it
/// to a few MB a table.
const MAX_FILE_ROWS: u64 = 1 << 20;

/// One table of a set: its files so far, the last one open.
struct PartTable {
    name: &'static str,
    columns: &'static [super::table::Column],
    seq: u64,
    /// Files of the set before the open one (closed, under their temporary names).
    closed: usize,
    open: Table,
    max_rows: u64,
}

/// What the writer thread puts in the parts; flows are named by their `Flow::id`.
enum Row {
    Packet(PacketRow),
    Timeline(TimelineRow),
    Flow(Arc<FlowReport>, u64),
    Finding(Box<Finding>, u64),
    /// The interval's end: its PFC bins, the next free flow id to keep, and the rows of the
    /// interval the writer had no room for (filled in as the row is handed over).
    Publish {
        pfc: PfcBins,
        next_flow_id: i64,
        dropped: PartDrops,
    },
}

impl Row {
    /// The kind of row a full queue drops (`DROPPABLE`'s parquet kinds); findings and the
    /// ends of intervals are never dropped.
    fn droppable(&self) -> Option<usize> {
        match self {
            Row::Packet(_) => Some(0),
            Row::Timeline(_) => Some(1),
            Row::Flow(..) => Some(2),
            Row::Finding(..) | Row::Publish { .. } => None,
        }
    }

    /// What the row holds while it waits for the writer.
    fn bytes(&self) -> usize {
        std::mem::size_of::<Row>()
            + match self {
                Row::Flow(..) => std::mem::size_of::<FlowReport>() + 512,
                Row::Finding(..) => std::mem::size_of::<Finding>(),
                _ => 0,
            }
    }
}

/// Rows of each droppable kind (packets, timeline, flows) a set of parts lacks.
pub type PartDrops = [u64; 3];
const DROPPED_KINDS: [&str; 3] = ["packets", "timeline", "flows"];

/// Rows handed to the writer at once.
const BATCH: usize = 4096;
/// The most the rows waiting for the writer may hold.
const QUEUE_BYTES: usize = 16 << 20;

/// The rolling export as the analysis feeds it. Rows are encoded and compressed on a thread of
/// their own (`PartWriter`): on the analysis thread they made a live monitor drop frames.
pub struct RollingExport {
    cfg: ExportConfig,
    every_ns: u64,
    /// The end of the interval being written, once the first frame told the time.
    boundary: Option<u64>,
    /// Added to a flow's own id (`Flow::id + 1`): the ids earlier runs used.
    flow_base: i64,
    bins: Bins,
    /// Per PFC (source, priority): the time up to which its pauses are in parts.
    paused_counted: HashMap<(MacAddr, u8), u64>,
    batch: Vec<Row>,
    batch_bytes: usize,
    to_writer: Option<QueueSender<Vec<Row>>>,
    writer: Option<JoinHandle<Result<(), Error>>>,
    drops: Drops,
    /// The queue was full at the last look (a live capture): the rows of packets are not
    /// even made, only counted as dropped, until it has room again.
    full: bool,
    /// Frames since the last look at a full queue.
    since_look: usize,
}

/// What a full queue does to the rows: dropped and counted (live), or waited for (a file).
struct Drops {
    when_full: WhenFull,
    ledger: Arc<DroppedRecords>,
    /// Rows dropped since the last end of an interval handed over.
    in_part: PartDrops,
    /// Rows not made (the queue was full) since the ledger was last told.
    not_made: PartDrops,
}

impl Drops {
    /// Hands `rows` (holding `bytes`) over: with no room (live), the rows of packets,
    /// timeline and flows are dropped and counted, the rest goes. Ok(whether every row went);
    /// Err: the writer is gone.
    fn hand(
        &mut self,
        to: &QueueSender<Vec<Row>>,
        mut rows: Vec<Row>,
        bytes: usize,
    ) -> Result<bool, ()> {
        self.settle();
        if self.in_part != [0; 3] {
            rows.iter_mut().for_each(|r| self.tell(r));
        }
        match to.hand(rows, bytes, self.when_full) {
            Ok(()) => Ok(true),
            Err(NotSent::Full(rows)) => {
                let kept = self.drop_droppable(rows);
                to.send_anyway(kept, 0).map(|()| false).map_err(|_| ())
            }
            Err(NotSent::Closed(_)) => Err(()),
        }
    }

    /// `rows` without those a full queue drops, counted; each end of an interval among them
    /// carries the drops of its interval.
    fn drop_droppable(&mut self, rows: Vec<Row>) -> Vec<Row> {
        let mut kept = Vec::new();
        let mut lost: PartDrops = [0; 3];
        for mut row in rows {
            match row.droppable() {
                Some(kind) => {
                    self.in_part[kind] += 1;
                    lost[kind] += 1;
                }
                None => {
                    self.tell(&mut row);
                    kept.push(row);
                }
            }
        }
        // Counted once a batch: the ledger is shared with the threads that tell it.
        for (kind, n) in lost.into_iter().enumerate().filter(|&(_, n)| n > 0) {
            self.ledger.add("parquet", DROPPED_KINDS[kind], n);
        }
        kept
    }

    /// A row of `kind` not made: the queue was full.
    fn not_made(&mut self, kind: usize) {
        self.in_part[kind] += 1;
        self.not_made[kind] += 1;
    }

    /// The rows not made, told to the ledger.
    fn settle(&mut self) {
        let not_made = std::mem::take(&mut self.not_made);
        for (kind, n) in not_made.into_iter().enumerate().filter(|&(_, n)| n > 0) {
            self.ledger.add("parquet", DROPPED_KINDS[kind], n);
        }
    }

    /// An end of an interval carries the rows dropped since the last one.
    fn tell(&mut self, row: &mut Row) {
        if let Row::Publish { dropped, .. } = row {
            for (d, n) in dropped.iter_mut().zip(std::mem::take(&mut self.in_part)) {
                *d += n;
            }
        }
    }
}

impl RollingExport {
    pub fn new(
        cfg: ExportConfig,
        every_ns: u64,
        when_full: WhenFull,
        dropped: Arc<DroppedRecords>,
    ) -> Result<RollingExport, Error> {
        std::fs::create_dir_all(&cfg.dir).map_err(io_err(&cfg.dir))?;
        if !cfg.append {
            // A file exported again replaces its partition, and its flows are numbered anew.
            remove_partitions(&cfg)?;
            let _ = std::fs::remove_file(next_id_path(&cfg));
        }
        let seq = next_part(&cfg)?;
        let flow_base = read_flow_base(&next_id_path(&cfg))?;
        let writer = PartWriter {
            part: Part::open(&cfg, seq)?,
            cfg: cfg.clone(),
            seq,
            flow_base,
            cache: TextCache::default(),
        };
        let (to_writer, rows) = queue(QUEUE_BYTES);
        let writer =
            spawn_behind("parquet parts", move || writer.run(rows)).map_err(io_err(&cfg.dir))?;
        Ok(RollingExport {
            bins: Bins::new(cfg.bin_ns),
            cfg,
            every_ns,
            boundary: None,
            flow_base,
            paused_counted: HashMap::default(),
            batch: Vec::with_capacity(BATCH),
            batch_bytes: 0,
            to_writer: Some(to_writer),
            writer: Some(writer),
            drops: Drops {
                when_full,
                ledger: dropped,
                in_part: [0; 3],
                not_made: [0; 3],
            },
            full: false,
            since_look: 0,
        })
    }

    /// Whether the capture's clock at `now` has left the interval being written.
    pub fn rotation_due(&mut self, now: u64) -> bool {
        match self.boundary {
            Some(b) => now >= b,
            None => {
                self.boundary = Some(self.interval_end(now));
                false
            }
        }
    }

    fn interval_end(&self, ts: u64) -> u64 {
        (ts / self.every_ns + 1) * self.every_ns
    }

    fn send(&mut self, row: Row) -> Result<(), Error> {
        self.batch_bytes += row.bytes();
        self.batch.push(row);
        if self.batch.len() >= BATCH {
            return self.hand_over();
        }
        Ok(())
    }

    /// Hands the rows so far to the writer; its error if it stopped on one.
    fn hand_over(&mut self) -> Result<(), Error> {
        let Some(to_writer) = self.to_writer.as_ref() else {
            return self.stop_writer();
        };
        let rows = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        let bytes = std::mem::take(&mut self.batch_bytes);
        match self.drops.hand(to_writer, rows, bytes) {
            Ok(fitted) => {
                self.full = !fitted || self.queue_full();
                Ok(())
            }
            Err(()) => self.stop_writer(),
        }
    }

    /// Whether a queue found full is still: until the writer took half of it, rows would
    /// soon be dropped again.
    fn queue_full(&self) -> bool {
        self.full
            && self
                .to_writer
                .as_ref()
                .is_some_and(|t| !t.drained_to_half())
    }

    /// Whether the queue was full at the last look; looks again every `BATCH` frames.
    fn still_full(&mut self) -> bool {
        if self.full {
            self.since_look += 1;
            if self.since_look >= BATCH {
                self.since_look = 0;
                self.drops.settle();
                self.full = self.queue_full();
            }
        }
        self.full
    }

    /// Whether the queue has room for the entries of the flows that end.
    pub fn has_room(&self) -> bool {
        !self.full
    }

    /// Waits for the writer to end: its error, if any.
    fn stop_writer(&mut self) -> Result<(), Error> {
        self.to_writer = None;
        match self.writer.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(Error::Output {
                path: self.cfg.dir.clone(),
                source: std::io::Error::other("the Parquet part writer panicked"),
            }),
            None => Ok(()),
        }
    }

    /// Ends the interval: its parts written and published, a new set begun for the interval
    /// of `now` (intervals without a frame in between get no parts). `in_force`: the PFC
    /// pauses in force; `flows_seen`: the flows the run has seen so far.
    pub fn rotate(
        &mut self,
        now: u64,
        in_force: &[SourcePause],
        flows_seen: u64,
    ) -> Result<(), Error> {
        let Some(cut) = self.boundary else {
            return Ok(());
        };
        for row in self.bins.close_bins(Some(cut)) {
            self.send(Row::Timeline(row))?;
        }
        // A pause in force is in the parts up to the cut; the rest of it when it ends.
        for &(key, (start, end)) in in_force {
            let from = self.counted_from(key, start);
            self.bins.paused(key, from, end.min(cut));
            self.paused_counted.insert(key, from.max(cut));
        }
        let pfc = self.bins.take_pfc(Some(cut));
        self.send(Row::Publish {
            pfc,
            next_flow_id: self.flow_base + flows_seen as i64,
            dropped: [0; 3],
        })?;
        self.hand_over()?;
        self.boundary = Some(self.interval_end(now.max(cut)));
        Ok(())
    }

    /// Where the parts' count of a pause of `key` that began at `start` goes on from.
    fn counted_from(&self, key: (MacAddr, u8), start: u64) -> u64 {
        let counted = self.paused_counted.get(&key).copied().unwrap_or(0);
        start.max(counted)
    }

    /// A PFC pause of (source, priority) `key` ended: its time not in parts yet, in the bins.
    pub fn pause_closed(&mut self, key: (MacAddr, u8), (start, end): (u64, u64)) {
        let from = self.counted_from(key, start);
        self.bins.paused(key, from, end);
    }

    /// One frame, and what the analysis made of it.
    pub fn frame(&mut self, p: &PacketSummary, o: Outcome) -> Result<(), Error> {
        if self.still_full() {
            self.drops.not_made(0);
        } else {
            self.send(Row::Packet(PacketRow::new(p, o)))?;
        }
        let mut closed = Vec::new();
        self.bins.frame(p, o, &mut |row| {
            closed.push(row);
            Ok::<(), Error>(())
        })?;
        for row in closed {
            self.send(Row::Timeline(row))?;
        }
        Ok(())
    }

    /// Flow `id` ended (`flow`: its report entry, numbered by its own id).
    pub fn flow_ended(&mut self, id: usize, flow: Option<Arc<FlowReport>>) -> Result<(), Error> {
        if let Some(row) = self.bins.flow_ended(id) {
            self.send(Row::Timeline(row))?;
        }
        match flow {
            Some(f) => self.send(Row::Flow(f, id as u64)),
            // No output had room for the entry: the analysis made none.
            None => {
                self.drops.not_made(2);
                Ok(())
            }
        }
    }

    /// Findings that first held at `ts_ns`.
    pub fn findings(&mut self, ts_ns: u64, findings: &[Finding]) -> Result<(), Error> {
        for f in findings {
            self.send(Row::Finding(Box::new(f.clone()), ts_ns))?;
        }
        Ok(())
    }

    /// The end of the capture: the last set of parts, with the flows still open (`order[i]`:
    /// the `Flow::id` of report flow `i`; `open`: the ids still open), every bin, and the
    /// pauses not told yet (`pauses`: those the end of the analysis closed).
    pub fn finish(
        mut self,
        report: &Report,
        order: &[usize],
        open: &[usize],
        pauses: &[SourcePause],
    ) -> Result<(), Error> {
        // The capture is over: the rest is waited for, never dropped.
        self.drops.when_full = WhenFull::Wait;
        for &(key, iv) in pauses {
            self.pause_closed(key, iv);
        }
        for (id, f) in report.still_open(order, open) {
            self.send(Row::Flow(Arc::new(f.clone()), id as u64))?;
        }
        for row in self.bins.close_bins(None) {
            self.send(Row::Timeline(row))?;
        }
        let pfc = self.bins.take_pfc(None);
        self.send(Row::Publish {
            pfc,
            next_flow_id: self.flow_base + report.capture.flows as i64,
            dropped: [0; 3],
        })?;
        self.hand_over()?;
        self.stop_writer()
    }
}

/// An export dropped without `finish` (an error cut the run short) hangs up on its writer and
/// waits for it: a writer left running detached would clean up after a later run had begun.
impl Drop for RollingExport {
    fn drop(&mut self) {
        let _ = self.stop_writer();
    }
}

/// The thread that writes the rows into the parts and publishes each set.
struct PartWriter {
    cfg: ExportConfig,
    part: Part,
    /// The number of the part being written.
    seq: u64,
    flow_base: i64,
    cache: TextCache,
}

impl PartWriter {
    /// Writes what comes until the export hangs up; stops at the first error.
    fn run(mut self, rows: QueueReceiver<Vec<Row>>) -> Result<(), Error> {
        let mut written = Ok(());
        while let Some((batch, bytes)) = rows.recv() {
            written = batch.into_iter().try_for_each(|row| self.write(row));
            rows.release(bytes);
            if written.is_err() {
                break;
            }
        }
        // The set begun after the last one published, and any an error cut short (the one
        // being published, the next one being opened), is never published: its temporary
        // files go.
        drop(self.part);
        remove_own_temporary_parts(&self.cfg, self.seq);
        written
    }

    fn flow_id(&self, own: u64) -> i64 {
        self.flow_base + own as i64 + 1
    }

    fn write(&mut self, row: Row) -> Result<(), Error> {
        let base = self.flow_base;
        match row {
            Row::Packet(p) => p.write(
                self.part.packets.table(&self.cfg)?,
                |f| Some(base + f as i64 + 1),
                &mut self.cache,
            ),
            Row::Timeline(t) => {
                let id = self.flow_id(t.flow as u64);
                t.write(self.part.timeline.table(&self.cfg)?, id, self.cfg.bin_ns)
            }
            Row::Flow(f, own) => {
                let id = self.flow_id(own);
                let table = self.part.flows.table(&self.cfg)?;
                rows::flow_row(table, &f, id, &mut self.cache)
            }
            Row::Finding(f, ts_ns) => {
                rows::finding_row(self.part.findings.table(&self.cfg)?, &f, Some(ts_ns))
            }
            Row::Publish {
                pfc,
                next_flow_id,
                dropped,
            } => {
                let next = Part::open(&self.cfg, self.seq + 1)?;
                let done = std::mem::replace(&mut self.part, next);
                done.publish(&self.cfg, self.seq, &pfc, &dropped)?;
                write_flow_base(&next_id_path(&self.cfg), next_flow_id)?;
                self.seq += 1;
                Ok(())
            }
        }
    }
}

/// The key-value metadata that tells the rows a set of parts lacks, by kind (JSON).
fn dropped_note(dropped: &PartDrops) -> (String, String) {
    let counts: Vec<String> = DROPPED_KINDS
        .iter()
        .zip(dropped)
        .map(|(kind, n)| format!("\"{kind}\":{n}"))
        .collect();
    (
        "roce_sniff_records_dropped".into(),
        format!("{{{}}}", counts.join(",")),
    )
}

impl Part {
    fn open(cfg: &ExportConfig, seq: u64) -> Result<Part, Error> {
        Part::open_with(cfg, seq, MAX_FILE_ROWS)
    }

    fn open_with(cfg: &ExportConfig, seq: u64, max_rows: u64) -> Result<Part, Error> {
        let table = |name, columns| PartTable::open(cfg, name, columns, seq, max_rows);
        Ok(Part {
            packets: table("packets", rows::PACKET_COLUMNS)?,
            flows: table("flows", rows::FLOW_COLUMNS)?,
            timeline: table("timeline", rows::TIMELINE_COLUMNS)?,
            findings: table("findings", rows::FINDING_COLUMNS)?,
        })
    }

    /// Writes the set's last rows and the PFC part, then gives each file its name. The last
    /// file of each table tells the rows the set lacks (`roce_sniff_records_dropped`).
    fn publish(
        self,
        cfg: &ExportConfig,
        seq: u64,
        pfc: &PfcBins,
        dropped: &PartDrops,
    ) -> Result<(), Error> {
        let note = dropped_note(dropped);
        let mut files = vec![("pfc", 1)];
        for t in [self.packets, self.flows, self.timeline, self.findings] {
            files.push((t.name, t.close(&note)?));
        }
        rows::write_pfc(&temp_path(cfg, "pfc", seq, 0), pfc, cfg.bin_ns, Some(&note))?;
        for table in TABLES {
            let count = files.iter().find(|f| f.0 == table).map_or(0, |f| f.1);
            for k in 0..count {
                let (from, to) = (
                    temp_path(cfg, table, seq, k),
                    final_path(cfg, table, seq, k),
                );
                std::fs::rename(&from, &to).map_err(io_err(&to))?;
            }
        }
        Ok(())
    }
}

impl PartTable {
    fn open(
        cfg: &ExportConfig,
        name: &'static str,
        columns: &'static [super::table::Column],
        seq: u64,
        max_rows: u64,
    ) -> Result<PartTable, Error> {
        Ok(PartTable {
            name,
            columns,
            seq,
            closed: 0,
            open: PartTable::create(cfg, name, columns, seq, 0)?,
            max_rows,
        })
    }

    fn create(
        cfg: &ExportConfig,
        name: &str,
        columns: &'static [super::table::Column],
        seq: u64,
        k: usize,
    ) -> Result<Table, Error> {
        let path = temp_path(cfg, name, seq, k);
        Table::create_with(&path, name, columns, super::table::Layout::ROLLING)
    }

    /// The file the next row goes to: a new one when the open one is full.
    fn table(&mut self, cfg: &ExportConfig) -> Result<&mut Table, Error> {
        if self.open.rows_in_file() >= self.max_rows {
            let next = PartTable::create(cfg, self.name, self.columns, self.seq, self.closed + 1)?;
            std::mem::replace(&mut self.open, next).close()?;
            self.closed += 1;
        }
        Ok(&mut self.open)
    }

    /// Closes the open file with `note`: the number of files of the table in the set.
    fn close(mut self, note: &(String, String)) -> Result<usize, Error> {
        self.open.note(&note.0, &note.1);
        self.open.close()?;
        Ok(self.closed + 1)
    }
}

/// File `k` of a table's part `seq`: `part-N.parquet`, then `part-N-1.parquet`...
fn file_name(seq: u64, k: usize) -> String {
    match k {
        0 => format!("part-{seq}.parquet"),
        k => format!("part-{seq}-{k}.parquet"),
    }
}

fn final_path(cfg: &ExportConfig, table: &str, seq: u64, k: usize) -> PathBuf {
    cfg.partition(table).join(file_name(seq, k))
}

/// Where file `k` of a part is written: a hidden name that no reader's glob takes.
fn temp_path(cfg: &ExportConfig, table: &str, seq: u64, k: usize) -> PathBuf {
    cfg.partition(table)
        .join(format!(".{}.tmp", file_name(seq, k)))
}

fn next_id_path(cfg: &ExportConfig) -> PathBuf {
    cfg.dir
        .join(format!(".capture={}.next-flow-id", cfg.capture))
}

/// Removes the temporary parts in the capture's partitions: a run that did not end left
/// them, or this one's writer stopped on an error.
fn remove_temporary_parts(cfg: &ExportConfig) {
    for table in TABLES {
        let Ok(entries) = std::fs::read_dir(cfg.partition(table)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with(".part-") && name.ends_with(".parquet.tmp") {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Removes the temporary files of the sets a writer that began at or before `seq` may have
/// left: the one being written (`seq`) and the next, opened before the one being published
/// (an error may stop the writer between the two). Never another run's.
fn remove_own_temporary_parts(cfg: &ExportConfig, seq: u64) {
    let own = |name: &str| {
        let number = name
            .strip_prefix(".part-")
            .and_then(|n| n.strip_suffix(".parquet.tmp"))
            .and_then(|n| n.split('-').next())
            .and_then(|n| n.parse::<u64>().ok());
        number.is_some_and(|n| n == seq || n == seq + 1)
    };
    for table in TABLES {
        let Ok(entries) = std::fs::read_dir(cfg.partition(table)) else {
            continue;
        };
        for entry in entries.flatten() {
            if own(&entry.file_name().to_string_lossy()) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// The number after the highest part already in the capture's partitions; temporary parts a
/// run that did not end left behind are removed.
fn next_part(cfg: &ExportConfig) -> Result<u64, Error> {
    remove_temporary_parts(cfg);
    let mut next = 0;
    for table in TABLES {
        let dir = cfg.partition(table);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            // part-N.parquet, or part-N-K.parquet for a part's later files.
            if let Some(n) = name
                .strip_prefix("part-")
                .and_then(|n| n.strip_suffix(".parquet"))
                .and_then(|n| n.split('-').next())
                .and_then(|n| n.parse::<u64>().ok())
            {
                next = next.max(n + 1);
            }
        }
    }
    Ok(next)
}

fn read_flow_base(path: &Path) -> Result<i64, Error> {
    match std::fs::read_to_string(path) {
        Ok(text) => text.trim().parse::<i64>().map_err(|_| {
            Error::Usage(format!(
                "{}: not a flow id (it holds the next flow id of the dataset's partition); remove it or fix it",
                path.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(source) => Err(Error::Output {
            path: path.to_path_buf(),
            source,
        }),
    }
}

fn write_flow_base(path: &Path, next: i64) -> Result<(), Error> {
    let temp = path.with_extension("tmp");
    std::fs::write(&temp, format!("{next}\n")).map_err(io_err(&temp))?;
    std::fs::rename(&temp, path).map_err(io_err(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &Path, append: bool) -> ExportConfig {
        ExportConfig {
            dir: dir.to_path_buf(),
            capture: "eth0".into(),
            bin_ns: 1_000_000,
            rotate_ns: Some(1_000_000_000),
            append,
        }
    }

    /// A rolling export of 1 s intervals that waits for its writer (a file's).
    fn export(cfg: ExportConfig) -> Result<RollingExport, Error> {
        RollingExport::new(cfg, 1_000_000_000, WhenFull::Wait, Default::default())
    }

    #[test]
    fn a_restarted_monitor_adds_parts_and_flow_ids_after_the_last_run() {
        let dir = std::env::temp_dir().join(format!("roce-sniff-restart-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cfg = config(&dir, true);
        std::fs::create_dir_all(cfg.partition("flows")).unwrap();
        std::fs::write(cfg.part_path("flows", 7), b"a part of the last run").unwrap();
        // A run killed while writing part 8 left it half-written.
        let stale = temp_path(&cfg, "packets", 8, 0);
        std::fs::create_dir_all(stale.parent().unwrap()).unwrap();
        std::fs::write(&stale, b"half").unwrap();
        std::fs::write(next_id_path(&cfg), "42\n").unwrap();
        let x = export(cfg.clone()).unwrap();
        assert_eq!(x.flow_base, 42, "the first flow of the run is 43");
        assert!(
            cfg.part_path("flows", 7).is_file(),
            "a live run adds, never replaces"
        );
        assert_ne!(
            std::fs::read(&stale).unwrap(),
            b"half",
            "the stale part is gone"
        );
        drop(x);
        // A file exported again starts over.
        let x = export(config(&dir, false)).unwrap();
        assert_eq!(x.flow_base, 0);
        assert!(
            temp_path(&cfg, "packets", 0, 0).exists(),
            "numbered from 0 again"
        );
        assert!(!cfg.part_path("flows", 7).exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// An export dropped without `finish` waits for its writer, whose cleanup removes its own
    /// unpublished set and nothing else: a detached writer once removed the part a restarted
    /// run had just begun (the test above failed one run in two).
    #[test]
    fn a_dropped_export_waits_for_its_writer_which_removes_only_its_own_parts() {
        let dir = std::env::temp_dir().join(format!("roce-sniff-drop-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cfg = config(&dir, true);
        let x = export(cfg.clone()).unwrap();
        let own = temp_path(&cfg, "packets", 0, 0);
        assert!(own.is_file(), "the writer's set is begun");
        // Another run's set in the same partition (a monitor started after this one).
        let other = temp_path(&cfg, "packets", 5, 0);
        std::fs::write(&other, b"another run's part").unwrap();
        drop(x);
        assert!(!own.exists(), "the writer cleaned up before drop returned");
        assert!(
            other.is_file(),
            "another run's part is not the writer's to remove"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_garbled_next_flow_id_is_a_clear_error() {
        let dir = std::env::temp_dir().join(format!("roce-sniff-garbled-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cfg = config(&dir, true);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(next_id_path(&cfg), "forty-two").unwrap();
        let err = export(cfg).err().unwrap();
        assert!(err.to_string().contains("not a flow id"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn timeline_row(bin: i64) -> Row {
        Row::Timeline(TimelineRow {
            bin_start_ns: bin * 1_000_000,
            packets: 1,
            ..TimelineRow::default()
        })
    }

    fn publish() -> Row {
        Row::Publish {
            pfc: PfcBins::new(),
            next_flow_id: 0,
            dropped: [0; 3],
        }
    }

    /// A live capture outpaces the writer: the rows of a batch with no room are dropped and
    /// counted, by kind, in the run's count and in the end of their interval; findings and
    /// ends of intervals always go.
    #[test]
    fn a_full_queue_drops_rows_counts_them_and_keeps_findings_and_interval_ends() {
        let ledger = Arc::new(DroppedRecords::default());
        let mut drops = Drops {
            when_full: WhenFull::Drop,
            ledger: Arc::clone(&ledger),
            in_part: [0; 3],
            not_made: [0; 3],
        };
        let (to, from) = queue::<Vec<Row>>(1_000);
        let batch = |n: i64| (0..n).map(timeline_row).collect::<Vec<_>>();
        // The writer is behind: the first batch fills the queue.
        assert_eq!(drops.hand(&to, batch(3), 1_000), Ok(true));
        use crate::model::{testing, FindingCode, Severity};
        let finding = testing::finding(Severity::Critical, FindingCode::PsnLoss, None);
        let mut second = batch(2);
        second.push(Row::Finding(Box::new(finding), 7));
        second.push(publish());
        second.push(timeline_row(9));
        assert_eq!(drops.hand(&to, second, 500), Ok(false));
        assert_eq!(ledger.counts()[2], ("parquet", "timeline", 3));
        let (first, _) = from.recv().unwrap();
        assert_eq!(first.len(), 3, "what fitted went whole");
        let (kept, _) = from.recv().unwrap();
        assert!(matches!(kept[0], Row::Finding(..)));
        // The interval's end tells the two rows dropped before it; the one after it is the
        // next interval's.
        assert!(matches!(
            kept[1],
            Row::Publish {
                dropped: [0, 2, 0],
                ..
            }
        ));
        assert_eq!(drops.in_part, [0, 1, 0]);
        // Rows not even made while the queue stayed full count as dropped too.
        drops.not_made(0);
        drops.not_made(0);
        // The next end of an interval handed over carries them.
        drops.hand(&to, vec![publish()], 0).unwrap();
        let (next, _) = from.recv().unwrap();
        assert!(matches!(
            next[0],
            Row::Publish {
                dropped: [2, 1, 0],
                ..
            }
        ));
        assert_eq!(ledger.counts()[1], ("parquet", "packets", 2));
    }

    /// The last file of each table of a set tells the rows the set lacks.
    #[test]
    fn a_set_of_parts_tells_the_rows_it_lacks_in_its_metadata() {
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let dir = std::env::temp_dir().join(format!("roce-sniff-lacks-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cfg = config(&dir, false);
        let mut w = PartWriter {
            part: Part::open(&cfg, 0).unwrap(),
            cfg: cfg.clone(),
            seq: 0,
            flow_base: 0,
            cache: TextCache::default(),
        };
        w.write(timeline_row(0)).unwrap();
        w.write(Row::Publish {
            pfc: PfcBins::new(),
            next_flow_id: 0,
            dropped: [5, 0, 2],
        })
        .unwrap();
        for table in TABLES {
            let file = std::fs::File::open(final_path(&cfg, table, 0, 0)).unwrap();
            let reader = SerializedFileReader::new(file).unwrap();
            let kv = reader
                .metadata()
                .file_metadata()
                .key_value_metadata()
                .cloned();
            let note = kv
                .unwrap_or_default()
                .into_iter()
                .find(|k| k.key == "roce_sniff_records_dropped")
                .and_then(|k| k.value);
            assert_eq!(
                note.as_deref(),
                Some(r#"{"packets":5,"timeline":0,"flows":2}"#),
                "{table}"
            );
        }
        drop(w);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// An interval with more rows than a file holds goes on in more files of the same part,
    /// all published together; each file's row group metadata leaves memory as it closes.
    #[test]
    fn a_part_with_more_rows_than_a_file_holds_goes_on_in_more_files() {
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let dir = std::env::temp_dir().join(format!("roce-sniff-split-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cfg = config(&dir, false);
        let mut w = PartWriter {
            part: Part::open_with(&cfg, 0, 10).unwrap(),
            cfg: cfg.clone(),
            seq: 0,
            flow_base: 0,
            cache: TextCache::default(),
        };
        for bin in 0..25 {
            let row = TimelineRow {
                bin_start_ns: bin * 1_000_000,
                packets: 1,
                ..TimelineRow::default()
            };
            w.write(Row::Timeline(row)).unwrap();
        }
        let timeline = cfg.partition("timeline");
        assert!(timeline.join(".part-0-2.parquet.tmp").is_file());
        assert!(
            !timeline.join("part-0.parquet").exists(),
            "published with its set"
        );
        w.write(Row::Publish {
            pfc: PfcBins::new(),
            next_flow_id: 0,
            dropped: [0; 3],
        })
        .unwrap();
        let rows = |path: PathBuf| {
            let file = std::fs::File::open(&path).unwrap();
            SerializedFileReader::new(file)
                .unwrap()
                .metadata()
                .file_metadata()
                .num_rows()
        };
        let files = ["part-0.parquet", "part-0-1.parquet", "part-0-2.parquet"];
        let counts: Vec<i64> = files.iter().map(|f| rows(timeline.join(f))).collect();
        assert_eq!(counts, [10, 10, 5]);
        assert!(!timeline.join("part-0-3.parquet").exists());
        // The other tables of the set: one file each, and the next set is number 1.
        for table in TABLES {
            assert!(final_path(&cfg, table, 0, 0).is_file(), "{table}");
        }
        assert!(!final_path(&cfg, "packets", 0, 1).exists());
        assert_eq!(next_part(&cfg).unwrap(), 1);
        drop(w);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
