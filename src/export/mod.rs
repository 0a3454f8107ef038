//! `--parquet DIR`: the capture as Parquet tables that DuckDB and Spark query, one dataset for
//! many captures: `DIR/<table>/capture=<name>/part-0.parquet` (Hive partitioning), tables
//! `packets`, `flows`, `timeline`, `pfc`, `findings` (docs/parquet.md describes them).
//!
//! Packets and timeline rows name their flow by the JSON report's flow `id`, which is known
//! only when the analysis ends (flows are numbered troubled first). They are spilled to a
//! file in DIR as they come (fixed-size records, so memory stays bounded on any capture) and
//! written out with their ids at the end.

mod rows;
mod table;

use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use roce_parsers::MacAddr;

use crate::analysis::{Outcome, PsnEvent};
use crate::error::Error;
use crate::model::Report;
use crate::summary::{PacketSummary, Payload};
use rows::{PacketRow, TimelineRow};
use table::Table;

/// The version of the tables' layout (docs/parquet.md), in every file's key-value metadata
/// (`roce_sniff_schema`).
pub const PARQUET_SCHEMA: &str = "roce-sniff.parquet/1";

/// The tables, each a directory of the dataset.
pub const TABLES: [&str; 5] = ["packets", "flows", "timeline", "pfc", "findings"];

/// Default width of the timeline and PFC bins: 1 ms.
pub const DEFAULT_BIN_NS: u64 = 1_000_000;

/// Where a capture's tables go, and its name in the dataset.
#[derive(Debug, Clone)]
pub struct ExportConfig {
    pub dir: PathBuf,
    pub capture: String,
    pub bin_ns: u64,
}

impl ExportConfig {
    fn table_path(&self, table: &str) -> PathBuf {
        self.part_path(table, 0)
    }

    fn part_path(&self, table: &str, part: usize) -> PathBuf {
        self.dir
            .join(table)
            .join(format!("capture={}", self.capture))
            .join(format!("part-{part}.parquet"))
    }
}

/// A flow's current timeline bin.
#[derive(Default, Clone, Copy)]
struct OpenBin {
    start: Option<u64>,
    row: TimelineRow,
}

/// PFC frames per (source, priority, bin): XOFF and XON.
type PfcBins = BTreeMap<(MacAddr, u8, u64), (u64, u64)>;

/// The export as frames are analysed.
pub struct Exporter {
    cfg: ExportConfig,
    packets: BufWriter<File>,
    packets_path: PathBuf,
    timeline: BufWriter<File>,
    timeline_path: PathBuf,
    open_bins: HashMap<usize, OpenBin>,
    pfc: PfcBins,
    record: Vec<u8>,
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::Output {
        path: path.to_path_buf(),
        source,
    }
}

impl Exporter {
    pub fn new(cfg: ExportConfig) -> Result<Exporter, Error> {
        std::fs::create_dir_all(&cfg.dir).map_err(io_err(&cfg.dir))?;
        // The capture exported again replaces its partition (it may have had more parts).
        for table in TABLES {
            let partition = cfg.dir.join(table).join(format!("capture={}", cfg.capture));
            if partition.exists() {
                std::fs::remove_dir_all(&partition).map_err(io_err(&partition))?;
            }
        }
        let spill = |what: &str| cfg.dir.join(format!(".{}-{what}.spill", cfg.capture));
        let (packets_path, timeline_path) = (spill("packets"), spill("timeline"));
        let open = |p: &Path| {
            File::create(p)
                .map(|f| BufWriter::with_capacity(1 << 20, f))
                .map_err(io_err(p))
        };
        Ok(Exporter {
            packets: open(&packets_path)?,
            timeline: open(&timeline_path)?,
            packets_path,
            timeline_path,
            open_bins: HashMap::default(),
            pfc: BTreeMap::new(),
            record: Vec::with_capacity(256),
            cfg,
        })
    }

    /// Flow `id` ended: its open timeline bin is closed (a QP used again is another flow).
    pub fn flow_ended(&mut self, id: usize) -> Result<(), Error> {
        match self.open_bins.remove(&id) {
            Some(bin) => self.spill_bin(id, bin),
            None => Ok(()),
        }
    }

    /// One frame, and what the analysis made of it.
    pub fn frame(&mut self, p: &PacketSummary, o: Outcome) -> Result<(), Error> {
        let row = PacketRow::new(p, o);
        self.record.clear();
        row.encode(&mut self.record);
        self.packets
            .write_all(&self.record)
            .map_err(io_err(&self.packets_path))?;
        if let Some(flow) = o.flow {
            let ce = p.tclass.is_some_and(|t| t.ecn() == roce_parsers::Ecn::Ce);
            self.count(flow, p.ts_ns, |r| {
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
            self.count(flow, p.ts_ns, |r| r.cnps += 1)?;
        }
        if let Some(flow) = o.nak_for {
            self.count(flow, p.ts_ns, |r| r.naks += 1)?;
        }
        if let Payload::Pfc { cev, quanta } = p.payload {
            let mac = p.src_mac.unwrap_or_default();
            let bin = p.ts_ns - p.ts_ns % self.cfg.bin_ns;
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
    fn count(
        &mut self,
        flow: usize,
        ts: u64,
        add: impl FnOnce(&mut TimelineRow),
    ) -> Result<(), Error> {
        let start = ts - ts % self.cfg.bin_ns;
        let open = self.open_bins.entry(flow).or_default();
        if open.start != Some(start) {
            let done = std::mem::replace(
                open,
                OpenBin {
                    start: Some(start),
                    row: TimelineRow::default(),
                },
            );
            add(&mut open.row);
            return self.spill_bin(flow, done);
        }
        add(&mut open.row);
        Ok(())
    }

    /// Writes a closed bin of `flow` to the timeline spill.
    fn spill_bin(&mut self, flow: usize, bin: OpenBin) -> Result<(), Error> {
        let Some(start) = bin.start else {
            return Ok(());
        };
        let done = TimelineRow {
            flow: flow as i64,
            bin_start_ns: start as i64,
            ..bin.row
        };
        self.record.clear();
        done.encode(&mut self.record);
        self.timeline
            .write_all(&self.record)
            .map_err(io_err(&self.timeline_path))
    }

    /// Writes every table. `order[i]` is the `Flow::id` of the report's flow `i+1`;
    /// `pauses` the pause intervals per (source, priority).
    pub fn finish(
        mut self,
        report: &Report,
        order: &[usize],
        pauses: &BTreeMap<(MacAddr, u8), Vec<(u64, u64)>>,
    ) -> Result<(), Error> {
        let open: Vec<(usize, OpenBin)> = self.open_bins.drain().collect();
        for (flow, b) in open {
            self.spill_bin(flow, b)?;
        }
        self.packets.flush().map_err(io_err(&self.packets_path))?;
        self.timeline.flush().map_err(io_err(&self.timeline_path))?;
        let mut id_of = vec![0i64; order.iter().max().map_or(0, |m| m + 1)];
        for (pos, &fi) in order.iter().enumerate() {
            id_of[fi] = pos as i64 + 1;
        }
        self.write_packets(&id_of)?;
        self.write_timeline(&id_of)?;
        rows::write_flows(&self.cfg.table_path("flows"), report)?;
        rows::write_findings(&self.cfg.table_path("findings"), report)?;
        rows::write_pfc(
            &self.cfg.table_path("pfc"),
            &self.pfc,
            pauses,
            self.cfg.bin_ns,
        )?;
        let _ = std::fs::remove_file(&self.packets_path);
        let _ = std::fs::remove_file(&self.timeline_path);
        Ok(())
    }

    /// The packets table, in as many parts as there are cores, written side by side: each
    /// part is a range of the spilled rows, in capture order.
    fn write_packets(&self, id_of: &[i64]) -> Result<(), Error> {
        let bytes = std::fs::metadata(&self.packets_path)
            .map_err(io_err(&self.packets_path))?
            .len();
        let rows = bytes / PacketRow::SIZE as u64;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
        // Parts of at least a million rows: small captures stay one file.
        let parts = cores.min(rows.div_ceil(1 << 20)).max(1);
        let per_part = rows.div_ceil(parts);
        std::thread::scope(|scope| {
            let jobs: Vec<_> = (0..parts)
                .map(|k| {
                    let range = k * per_part..((k + 1) * per_part).min(rows);
                    scope.spawn(move || self.write_packet_part(k as usize, range, id_of))
                })
                .collect();
            jobs.into_iter()
                .map(|j| j.join().expect("a part writer panicked"))
                .collect::<Result<Vec<()>, Error>>()
        })?;
        Ok(())
    }

    fn write_packet_part(
        &self,
        part: usize,
        range: std::ops::Range<u64>,
        id_of: &[i64],
    ) -> Result<(), Error> {
        use std::io::{Seek, SeekFrom};
        let path = self.cfg.part_path("packets", part);
        let mut t = Table::create(&path, "packets", rows::PACKET_COLUMNS)?;
        let mut file = File::open(&self.packets_path).map_err(io_err(&self.packets_path))?;
        file.seek(SeekFrom::Start(range.start * PacketRow::SIZE as u64))
            .map_err(io_err(&self.packets_path))?;
        let mut input = BufReader::with_capacity(1 << 20, file)
            .take((range.end - range.start) * PacketRow::SIZE as u64);
        let mut rec = [0u8; PacketRow::SIZE];
        let mut cache = rows::TextCache::default();
        while read_record(&mut input, &mut rec).map_err(io_err(&self.packets_path))? {
            PacketRow::decode(&rec).write(&mut t, id_of, &mut cache)?;
        }
        t.close()
    }

    fn write_timeline(&self, id_of: &[i64]) -> Result<(), Error> {
        let path = self.cfg.table_path("timeline");
        let mut t = Table::create(&path, "timeline", rows::TIMELINE_COLUMNS)?;
        let mut input = BufReader::with_capacity(
            1 << 20,
            File::open(&self.timeline_path).map_err(io_err(&self.timeline_path))?,
        );
        let mut rec = [0u8; TimelineRow::SIZE];
        while read_record(&mut input, &mut rec).map_err(io_err(&self.timeline_path))? {
            TimelineRow::decode(&rec).write(&mut t, id_of, self.cfg.bin_ns)?;
        }
        t.close()
    }
}

/// Reads one fixed-size record; false at the end.
fn read_record(input: &mut impl Read, rec: &mut [u8]) -> std::io::Result<bool> {
    match input.read_exact(rec) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}
