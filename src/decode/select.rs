//! Offline selection, tcpdump's way: a BPF filter on the frames of a file (`roce-sniff -r F
//! udp port 4791`), `--qp QPN` for one connection, `-c N` to stop after N frames, and `-w FILE`
//! to write the frames kept, so that a user can hand Wireshark one QP. Frames keep the numbers
//! the source gave them (`Record::frame`): the report cites the frames Wireshark shows as
//! those numbers in the file, whatever was left out (tcpdump numbers what it prints; engineers
//! quote Wireshark's numbers to each other).

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use roce_parsers::capture::Record;
use roce_parsers::{decode_frame_with, DecodeOptions, MacControl, Opcode};

use crate::common::error::Error;
use crate::model::{FindingCode, FlowReport, Report};

/// What to keep of a capture file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SelectConfig {
    /// A BPF filter, as tcpdump takes it.
    pub filter: Option<String>,
    /// One connection: frames to this destination QP, and the responses and CNPs sent back
    /// between the same two hosts.
    pub qp: Option<u32>,
    /// Stop after this many frames kept.
    pub count: Option<u64>,
    /// Write the frames kept to this pcap file.
    pub write: Option<PathBuf>,
    /// How frames are decoded for --qp.
    pub decode: DecodeOptions,
    /// `--time erspan`: a frame's time is its ERSPAN III timestamp, where it has one.
    pub erspan_time: bool,
    /// `--finding CODES`: the codes whose findings say what to keep...
    pub finding_codes: Option<Vec<FindingCode>>,
    /// ...and what they concern, learned by a first pass over the capture.
    pub finding: Option<FindingSelection>,
}

/// `--finding`: the flows (both directions of each connection) that findings of some codes
/// concern, the frames of those that concern no flow (a damaged capture), and the pause frames
/// of each PFC storm.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FindingSelection {
    pub flows: BTreeSet<FlowId>,
    pub frames: BTreeSet<u64>,
    pub storms: Vec<StormSpan>,
}

/// A PFC storm (`priority`; 802.3x PAUSE when none) of one source MAC over a span of time:
/// every pause frame of it is kept, not only the first the finding cites.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StormSpan {
    pub source: [u8; 6],
    pub priority: Option<u8>,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// A frame within this of a storm's end is still its own (its end is kept to the microsecond).
const STORM_END_SLACK_NS: u64 = 1_000;

/// `02:00:00:00:00:5e` as bytes.
fn mac_bytes(s: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut parts = s.split(':');
    for b in &mut out {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(out)
}

/// The storms of the report's PFC and PAUSE sources, as spans of pause frames.
fn storm_spans(report: &Report) -> Vec<StormSpan> {
    let pfc = report
        .pfc
        .priorities
        .iter()
        .map(|p| (&p.source, Some(p.priority), &p.storms));
    let pause = report
        .pfc
        .pause_8023x
        .iter()
        .map(|p| (&p.source, None, &p.storms));
    pfc.chain(pause)
        .filter_map(|(source, priority, storms)| Some((mac_bytes(source)?, priority, storms)))
        .flat_map(|(source, priority, storms)| {
            storms.iter().map(move |s| StormSpan {
                source,
                priority,
                start_ns: s.start_ns,
                end_ns: s.start_ns + (s.duration_ms * 1e6).round() as u64,
            })
        })
        .collect()
}

/// A flow as the analysis keys it: source, destination, destination QP, innermost VLAN.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct FlowId {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub dqpn: u32,
    pub vlan: Option<u16>,
}

impl FindingSelection {
    /// What the findings of `codes` in `report` concern: every flow of each (a group's
    /// every member, not only the worst shown), with the other direction of its connection
    /// (its peer, or a flow of CNPs only coming back between the same hosts), else its frames.
    pub fn of(report: &Report, codes: &[FindingCode]) -> FindingSelection {
        let by_label: HashMap<String, &FlowReport> =
            report.flows.iter().map(|f| (f.label(), f)).collect();
        let mut out = FindingSelection::default();
        if codes.contains(&FindingCode::PfcStorm) {
            out.storms = storm_spans(report);
        }
        let mut named: Vec<&FlowReport> = Vec::new();
        for f in report.findings.iter().filter(|f| codes.contains(&f.code)) {
            if f.code == FindingCode::PfcStorm && !out.storms.is_empty() {
                continue;
            }
            let before = named.len();
            named.extend(f.flow_labels().filter_map(|l| by_label.get(l).copied()));
            if named.len() == before {
                out.frames.extend(&f.frames);
                for m in f.group.iter().flat_map(|g| &g.worst) {
                    out.frames.extend(&m.frames);
                }
            }
        }
        for f in named {
            out.flows.insert(FlowId::of(f));
            if let Some(peer) = f.peer.as_ref().and_then(|p| by_label.get(&p.to_string())) {
                out.flows.insert(FlowId::of(peer));
            }
            let cnps_back = report.flows.iter().filter(|c| {
                c.peer.is_none() && c.feedback.cnps_sent > 0 && c.src == f.dst && c.dst == f.src
            });
            out.flows.extend(cnps_back.map(FlowId::of));
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.flows.is_empty() && self.frames.is_empty() && self.storms.is_empty()
    }
}

impl FlowId {
    fn of(f: &FlowReport) -> FlowId {
        FlowId {
            src: f.src.parse().unwrap_or(IpAddr::from([0, 0, 0, 0])),
            dst: f.dst.parse().unwrap_or(IpAddr::from([0, 0, 0, 0])),
            dqpn: f.dqpn,
            vlan: f.vlan,
        }
    }
}

impl SelectConfig {
    pub fn any(&self) -> bool {
        self.filter.is_some()
            || self.qp.is_some()
            || self.count.is_some()
            || self.write.is_some()
            || self.erspan_time
            || self.finding.is_some()
    }
}

pub struct Selection {
    config: SelectConfig,
    /// Compiled filters per link type (a merged set can mix them).
    programs: HashMap<u32, pcap::BpfProgram>,
    /// (requester, responder) host pairs of the selected QP's requests.
    qp_hosts: Vec<(IpAddr, IpAddr)>,
    kept: u64,
    /// Frames looked at, and of those VLAN-tagged Ethernet ones.
    read: u64,
    tagged: u64,
    writer: Option<PcapFileWriter>,
}

impl Selection {
    /// Checks the filter (it must compile) and opens the output, before any work.
    pub fn new(config: SelectConfig) -> Result<Self, Error> {
        let writer = match &config.write {
            Some(path) => Some(PcapFileWriter::create(path)?),
            None => None,
        };
        let mut s = Selection {
            config,
            programs: HashMap::new(),
            qp_hosts: Vec::new(),
            kept: 0,
            read: 0,
            tagged: 0,
            writer,
        };
        // Compile once for Ethernet now, so that a bad filter fails before the work.
        s.program(roce_parsers::link::LINKTYPE_ETHERNET)?;
        Ok(s)
    }

    fn program(&mut self, linktype: u32) -> Result<Option<&pcap::BpfProgram>, Error> {
        let Some(filter) = &self.config.filter else {
            return Ok(None);
        };
        if let std::collections::hash_map::Entry::Vacant(slot) = self.programs.entry(linktype) {
            slot.insert(compile(filter, linktype)?);
        }
        Ok(self.programs.get(&linktype))
    }

    /// Whether -c was reached: the read can stop.
    pub fn done(&self) -> bool {
        self.config.count.is_some_and(|n| self.kept >= n)
    }

    /// The records of `batch` to keep, in order; writes them with -w.
    pub fn keep<'a>(&mut self, batch: &[Record<'a>]) -> Result<Vec<Record<'a>>, Error> {
        let mut out = Vec::with_capacity(batch.len());
        for rec in batch {
            if self.done() {
                break;
            }
            self.read += 1;
            if rec.linktype == roce_parsers::link::LINKTYPE_ETHERNET
                && matches!(rec.data.get(12..14), Some([0x81, 0x00] | [0x88, 0xa8]))
            {
                self.tagged += 1;
            }
            if !self.matches(rec)? {
                continue;
            }
            self.kept += 1;
            if let Some(w) = self.writer.as_mut() {
                w.write(rec)?;
            }
            out.push(self.retimed(rec));
        }
        Ok(out)
    }

    /// With `--time erspan`, the record with its ERSPAN III timestamp (at its granularity)
    /// as its time; frames without one keep the capture's time.
    fn retimed<'a>(&self, rec: &Record<'a>) -> Record<'a> {
        if !self.config.erspan_time {
            return *rec;
        }
        let frame = decode_frame_with(rec.linktype, rec.data, rec.len, self.config.decode);
        let ts = frame
            .encaps()
            .iter()
            .find_map(|e| e.timestamp_ns_near(rec.ts_ns).ok().flatten());
        Record {
            ts_ns: ts.unwrap_or(rec.ts_ns),
            ..*rec
        }
    }

    fn matches(&mut self, rec: &Record<'_>) -> Result<bool, Error> {
        if let Some(program) = self.program(rec.linktype)? {
            if !program.filter(rec.data) {
                return Ok(false);
            }
        }
        if let Some(selection) = &self.config.finding {
            let kept = selection.frames.contains(&rec.frame)
                || self.in_flows(selection, rec)
                || self.in_storms(selection, rec);
            if !kept {
                return Ok(false);
            }
        }
        let Some(qp) = self.config.qp else {
            return Ok(true);
        };
        let frame = decode_frame_with(rec.linktype, rec.data, rec.len, self.config.decode);
        let (Some(r), Some((src, dst))) = (frame.roce, frame.addresses()) else {
            return Ok(false);
        };
        if r.bth.dqpn == qp {
            if !self.qp_hosts.contains(&(src, dst)) {
                self.qp_hosts.push((src, dst));
            }
            return Ok(true);
        }
        // The other direction: what answers the requests, and the CNPs that slow them down.
        let answer = r.bth.opcode.is_response() || r.bth.opcode == Opcode::CNP;
        Ok(answer && self.qp_hosts.contains(&(dst, src)))
    }

    /// Whether `rec` is a pause frame of one of the selection's storms.
    fn in_storms(&self, selection: &FindingSelection, rec: &Record<'_>) -> bool {
        if selection.storms.is_empty() {
            return false;
        }
        let frame = decode_frame_with(rec.linktype, rec.data, rec.len, self.config.decode);
        let (Some(src), Some(control)) = (frame.src_mac, frame.mac_control) else {
            return false;
        };
        selection.storms.iter().any(|s| {
            let during = (s.start_ns..=s.end_ns + STORM_END_SLACK_NS).contains(&rec.ts_ns);
            let pauses = match (s.priority, control) {
                (Some(p), MacControl::Pfc { cev, .. }) => cev & (1 << p) != 0,
                (None, MacControl::Pause { .. }) => true,
                _ => false,
            };
            s.source == src && during && pauses
        })
    }

    /// Whether `rec` is a RoCE frame of one of the selection's flows.
    fn in_flows(&self, selection: &FindingSelection, rec: &Record<'_>) -> bool {
        let frame = decode_frame_with(rec.linktype, rec.data, rec.len, self.config.decode);
        let (Some(r), Some((src, dst))) = (frame.roce, frame.addresses()) else {
            return false;
        };
        let id = FlowId {
            src,
            dst,
            dqpn: r.bth.dqpn,
            vlan: frame.inner_vlan().map(|v| v.vid),
        };
        selection.flows.contains(&id)
    }

    /// What was read, for the report.
    pub fn stats(&self) -> crate::model::SelectionStats {
        crate::model::SelectionStats {
            filter: self.config.filter.clone(),
            frames_read: self.read,
            tagged_read: self.tagged,
        }
    }

    /// Flushes the -w file, with the input's snap length (`snaplen`, 0 when unknown) in its
    /// header; what it wrote.
    pub fn finish(self, snaplen: u32) -> Result<Option<Written>, Error> {
        self.writer.map(|w| w.finish(snaplen)).transpose()
    }
}

/// The filter compiled for a link type.
fn compile(filter: &str, linktype: u32) -> Result<pcap::BpfProgram, Error> {
    let dead = pcap::Capture::dead(pcap::Linktype(linktype as i32))
        .map_err(|e| Error::Usage(format!("capture filter: {e}")))?;
    dead.compile(filter, true).map_err(|e| {
        // `--json out.json` reads `out.json` as the filter.
        let looks_like_a_file = filter
            .split(' ')
            .next()
            .is_some_and(|w| w.contains(['.', '/']));
        let hint = if looks_like_a_file {
            "; an option's value goes after `=` (--json=FILE, --report=DIR)"
        } else {
            ""
        };
        Error::Usage(format!("bad capture filter `{filter}`: {e}{hint}"))
    })
}

/// A nanosecond pcap of the records kept, in the link type of the first one (a pcap holds
/// one: a record of another is refused), with the input's snap length once it is known.
struct PcapFileWriter {
    path: PathBuf,
    out: BufWriter<File>,
    linktype: Option<u32>,
    written: u64,
}

/// What `-w` wrote.
pub struct Written {
    pub path: PathBuf,
    pub frames: u64,
}

/// Where a pcap header holds its snap length.
const SNAPLEN_OFFSET: u64 = 16;
/// The snap length a header says until the input's is known (libpcap's largest).
const SNAPLEN_UNKNOWN: u32 = 262_144;

impl PcapFileWriter {
    fn create(path: &Path) -> Result<Self, Error> {
        let file = File::create(path).map_err(|source| Error::Output {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(PcapFileWriter {
            path: path.to_path_buf(),
            out: BufWriter::with_capacity(1 << 20, file),
            linktype: None,
            written: 0,
        })
    }

    fn err(&self) -> impl Fn(std::io::Error) -> Error + '_ {
        |source| Error::Output {
            path: self.path.clone(),
            source,
        }
    }

    fn write(&mut self, rec: &Record<'_>) -> Result<(), Error> {
        if self.linktype.is_none() {
            self.linktype = Some(rec.linktype);
            let mut header = Vec::with_capacity(24);
            header.extend_from_slice(&0xa1b2_3c4du32.to_le_bytes());
            header.extend_from_slice(&2u16.to_le_bytes());
            header.extend_from_slice(&4u16.to_le_bytes());
            header.extend_from_slice(&[0; 8]);
            header.extend_from_slice(&SNAPLEN_UNKNOWN.to_le_bytes());
            header.extend_from_slice(&rec.linktype.to_le_bytes());
            let result = self.out.write_all(&header);
            result.map_err(self.err())?;
        }
        if let Some(first) = self.linktype.filter(|&l| l != rec.linktype) {
            return Err(Error::Usage(format!(
                "-w {}: frame {} has link type {} where the frames before it have {}: a pcap holds one (--annotate writes a pcapng of them all)",
                crate::common::error::shown(&self.path.to_string_lossy()),
                rec.frame,
                rec.linktype,
                first
            )));
        }
        self.written += 1;
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&((rec.ts_ns / 1_000_000_000) as u32).to_le_bytes());
        h[4..8].copy_from_slice(&((rec.ts_ns % 1_000_000_000) as u32).to_le_bytes());
        h[8..12].copy_from_slice(&rec.caplen.to_le_bytes());
        h[12..16].copy_from_slice(&rec.len.to_le_bytes());
        let result = self
            .out
            .write_all(&h)
            .and_then(|_| self.out.write_all(rec.data));
        result.map_err(self.err())
    }

    /// Flushes the file, and writes the input's snap length (`snaplen`, 0 when unknown) in
    /// its header where the file can be rewritten (not a pipe).
    fn finish(mut self, snaplen: u32) -> Result<Written, Error> {
        use std::io::{Seek, SeekFrom};
        let result = self.out.flush();
        result.map_err(self.err())?;
        if snaplen > 0 && self.linktype.is_some() {
            let file = self.out.get_mut();
            if file.seek(SeekFrom::Start(SNAPLEN_OFFSET)).is_ok() {
                let result = file.write_all(&snaplen.to_le_bytes());
                result.map_err(self.err())?;
            }
        }
        Ok(Written {
            path: self.path,
            frames: self.written,
        })
    }
}
