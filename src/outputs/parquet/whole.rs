//! The export of a whole capture, written when it ends. Packets and timeline rows name their
//! flow by the JSON report's flow `id`, which is known only when the analysis ends (flows are
//! numbered troubled first): they are spilled to a file in DIR as they come (fixed-size
//! records, so memory stays bounded on any capture) and written out with their ids at the end.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use roce_parsers::MacAddr;

use super::bins::Bins;
use super::rows::{self, PacketRow, TimelineRow};
use super::table::Table;
use super::{io_err, remove_partitions, ExportConfig};
use crate::common::error::Error;
use crate::decode::summary::PacketSummary;
use crate::model::Outcome;
use crate::model::Report;

pub struct WholeExport {
    cfg: ExportConfig,
    packets: BufWriter<File>,
    packets_path: PathBuf,
    timeline: BufWriter<File>,
    timeline_path: PathBuf,
    bins: Bins,
    record: Vec<u8>,
}

impl WholeExport {
    pub fn new(cfg: ExportConfig) -> Result<WholeExport, Error> {
        std::fs::create_dir_all(&cfg.dir).map_err(io_err(&cfg.dir))?;
        // The capture exported again replaces its partition (it may have had more parts).
        remove_partitions(&cfg)?;
        let spill = |what: &str| cfg.dir.join(format!(".{}-{what}.spill", cfg.capture));
        let (packets_path, timeline_path) = (spill("packets"), spill("timeline"));
        let open = |p: &Path| {
            File::create(p)
                .map(|f| BufWriter::with_capacity(1 << 20, f))
                .map_err(io_err(p))
        };
        Ok(WholeExport {
            packets: open(&packets_path)?,
            timeline: open(&timeline_path)?,
            packets_path,
            timeline_path,
            bins: Bins::new(cfg.bin_ns),
            record: Vec::with_capacity(256),
            cfg,
        })
    }

    /// Flow `id` ended: its open timeline bin is closed (a QP used again is another flow).
    pub fn flow_ended(&mut self, id: usize) -> Result<(), Error> {
        match self.bins.flow_ended(id) {
            Some(row) => self.spill_bin(row),
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
        let (timeline, record, path) = (&mut self.timeline, &mut self.record, &self.timeline_path);
        self.bins
            .frame(p, o, &mut |row| spill(timeline, record, path, row))
    }

    /// A PFC pause of (source, priority) `key` ended: its time, in the PFC bins.
    pub fn pause_closed(&mut self, key: (MacAddr, u8), (start, end): (u64, u64)) {
        self.bins.paused(key, start, end);
    }

    fn spill_bin(&mut self, row: TimelineRow) -> Result<(), Error> {
        spill(
            &mut self.timeline,
            &mut self.record,
            &self.timeline_path,
            row,
        )
    }

    /// Writes every table. `order[i]` is the `Flow::id` of the report's flow `i+1`;
    /// `pauses` the PFC pauses not told yet (those the end of the analysis closed).
    pub fn finish(
        mut self,
        report: &Report,
        order: &[usize],
        pauses: &[crate::model::SourcePause],
    ) -> Result<(), Error> {
        for &(key, iv) in pauses {
            self.pause_closed(key, iv);
        }
        for row in self.bins.close_bins(None) {
            self.spill_bin(row)?;
        }
        self.packets.flush().map_err(io_err(&self.packets_path))?;
        self.timeline.flush().map_err(io_err(&self.timeline_path))?;
        let mut id_of = vec![0i64; order.iter().max().map_or(0, |m| m + 1)];
        for (pos, &fi) in order.iter().enumerate() {
            id_of[fi] = pos as i64 + 1;
        }
        self.write_packets(&id_of)?;
        self.write_timeline(&id_of)?;
        let mut flows = Table::create(&self.cfg.table_path("flows"), "flows", rows::FLOW_COLUMNS)?;
        let mut cache = rows::TextCache::default();
        for f in &report.flows {
            rows::flow_row(&mut flows, f, f.id as i64, &mut cache)?;
        }
        flows.close()?;
        let mut findings = Table::create(
            &self.cfg.table_path("findings"),
            "findings",
            rows::FINDING_COLUMNS,
        )?;
        for f in &report.findings {
            rows::finding_row(&mut findings, f, None)?;
        }
        findings.close()?;
        let bins = self.bins.take_pfc(None);
        rows::write_pfc(&self.cfg.table_path("pfc"), &bins, self.cfg.bin_ns, None)?;
        let _ = std::fs::remove_file(&self.packets_path);
        let _ = std::fs::remove_file(&self.timeline_path);
        stderr_line!(
            "roce-sniff: tables packets, flows, findings, timeline, pfc written to {} (partition capture={})",
            crate::common::error::shown(&self.cfg.dir.to_string_lossy()),
            self.cfg.capture
        );
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
        let flow_id = |f: u64| id_of.get(f as usize).copied();
        while read_record(&mut input, &mut rec).map_err(io_err(&self.packets_path))? {
            PacketRow::decode(&rec).write(&mut t, flow_id, &mut cache)?;
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
            let row = TimelineRow::decode(&rec);
            if let Some(&id) = id_of.get(row.flow as usize) {
                row.write(&mut t, id, self.cfg.bin_ns)?;
            }
        }
        t.close()
    }
}

/// Writes a closed bin to the timeline spill.
fn spill(
    out: &mut BufWriter<File>,
    record: &mut Vec<u8>,
    path: &Path,
    row: TimelineRow,
) -> Result<(), Error> {
    record.clear();
    row.encode(record);
    out.write_all(record).map_err(io_err(path))
}

/// Reads one fixed-size record; false at the end.
fn read_record(input: &mut impl Read, rec: &mut [u8]) -> std::io::Result<bool> {
    match input.read_exact(rec) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}
