//! A flow object written straight into its output: the keys, order and number spelling serde
//! gives `FlowReport` (its derive, serde_json's own number formatter), compact for a
//! `flow_end` event's line, or laid out as serde_json's pretty printer lays it out for the
//! report's `flows[]`. The tests below hold both byte for byte to serde on every flow of
//! testdata/ and on a flow with every optional part set.
//!
//! Why by hand: serde_json scanned each of a flow's ~90 static keys for characters to escape
//! and made a call per entry through the flattened parts: 3.8 us a flow, the live monitor's
//! costliest step after the Parquet rows when QPs churn, and half of `-r --json` on a capture
//! of 600,000 flows.

use std::io;
use std::sync::{Arc, LazyLock, OnceLock};

use roce_parsers::Opcode;
use serde_json::ser::{CompactFormatter, Formatter};

use crate::model::{
    Feedback, FlowLabel, FlowReport, LatencySummary, NakReport, PsnCounts, Rates, RecoveryReport,
    Tally,
};
use crate::rare::{Empty, Rare};

/// A key after the first of its object: `,"name":` compact, `"name": ` pretty (after a line
/// break and the indent), each one literal.
macro_rules! key {
    ($j:expr, $name:literal) => {
        $j.key(concat!(",\"", $name, "\":"), concat!("\"", $name, "\": "))
    };
}

/// An object opened with its first key.
macro_rules! open {
    ($j:expr, $name:literal) => {
        $j.open(concat!("{\"", $name, "\":"), concat!("\"", $name, "\": "))
    };
}

/// Writes `f` as serde_json writes it (compact).
pub fn write_flow(out: &mut Vec<u8>, f: &FlowReport) -> io::Result<()> {
    out.reserve(2048);
    let mut j = Json::<false> {
        out,
        depth: 0,
        copy_empty_parts: true,
    };
    flow(&mut j, f)
}

/// Writes `f` as serde_json's pretty printer does, the object `levels` deep (its keys one
/// level further in); the indent before its opening brace is the caller's.
pub fn write_flow_pretty(out: &mut Vec<u8>, f: &FlowReport, levels: usize) -> io::Result<()> {
    out.reserve(4096);
    let mut j = Json::<true> {
        out,
        depth: levels,
        copy_empty_parts: true,
    };
    flow(&mut j, f)
}

fn flow<const PRETTY: bool>(j: &mut Json<PRETTY>, f: &FlowReport) -> io::Result<()> {
    open!(j, "id");
    j.u64(f.id as u64);
    key!(j, "src");
    j.str(&f.src)?;
    key!(j, "dst");
    j.str(&f.dst)?;
    key!(j, "dqpn");
    j.u64(u64::from(f.dqpn));
    key!(j, "vlan");
    j.opt_u64(f.vlan.map(u64::from));
    key!(j, "transport");
    match f.transport {
        Some(t) => j.str(t)?,
        None => j.raw("null"),
    }
    key!(j, "role");
    j.str(f.role.name())?;
    key!(j, "packets");
    j.u64(f.packets);
    key!(j, "bytes");
    j.u64(f.bytes);
    key!(j, "payload_bytes");
    j.u64(f.payload_bytes);
    key!(j, "requests");
    j.u64(f.requests);
    key!(j, "messages");
    j.u64(f.messages);
    key!(j, "first_frame");
    j.u64(f.first_frame);
    key!(j, "first_ts");
    j.f64(Some(f.first_ts))?;
    key!(j, "last_ts");
    j.f64(Some(f.last_ts))?;
    key!(j, "duration_us");
    j.f64(Some(f.duration_us))?;
    j.part(&f.rate, |e| &e.rates, rates)?;
    key!(j, "path_mtu");
    j.opt_u64(f.path_mtu.map(u64::from));
    if let Some(at_least) = f.path_mtu_at_least {
        key!(j, "path_mtu_at_least");
        j.u64(u64::from(at_least));
    }
    key!(j, "pcp");
    j.tally(&f.pcp)?;
    key!(j, "dscp");
    j.tally(&f.dscp)?;
    key!(j, "ecn");
    j.tally(&f.ecn)?;
    key!(j, "opcodes");
    j.tally(&f.opcodes)?;
    j.part(&f.psn, |e| &e.psn, psn)?;
    key!(j, "loss_frames");
    j.list(&f.loss_frames);
    key!(j, "retransmit_frames");
    j.list(&f.retransmit_frames);
    key!(j, "read_response_gaps");
    j.u64(f.read_response_gaps);
    key!(j, "acks");
    j.u64(f.acks);
    j.part(&f.feedback, |e| &e.feedback, feedback)?;
    key!(j, "ack_rtt_us");
    j.part(&f.ack_rtt_us, |e| &e.latency, |j, l| j.latency(l))?;
    key!(j, "read_latency_us");
    j.part(&f.read_latency_us, |e| &e.latency, |j, l| j.latency(l))?;
    key!(j, "recovery");
    j.part(&f.recovery, |e| &e.recovery, recovery)?;
    key!(j, "icrc_bad");
    j.u64(f.icrc_bad);
    key!(j, "oversize");
    j.u64(f.oversize);
    key!(j, "peer");
    match &f.peer {
        Some(label) => j.label(label)?,
        None => j.raw("null"),
    }
    key!(j, "paired_by");
    match f.paired_by {
        Some(p) => serde_json::to_writer(&mut *j.out, &p)?,
        None => j.raw("null"),
    }
    if f.native_ib {
        key!(j, "native_ib");
        j.raw("true");
    }
    j.close(b'}');
    Ok(())
}

/// `gbps`, `pps` and `messages_per_s`, keys of the flow itself.
fn rates<const PRETTY: bool>(j: &mut Json<PRETTY>, r: &Rates) -> io::Result<()> {
    key!(j, "gbps");
    j.f64(r.gbps)?;
    key!(j, "pps");
    j.f64(r.pps)?;
    key!(j, "messages_per_s");
    j.f64(r.messages_per_s)
}

fn recovery<const PRETTY: bool>(j: &mut Json<PRETTY>, r: &RecoveryReport) -> io::Result<()> {
    open!(j, "nak_to_retransmit_us");
    j.latency(&r.nak_to_retransmit_us)?;
    key!(j, "timeout_resends");
    j.u64(r.timeout_resends);
    key!(j, "timeout_interval_us");
    j.latency(&r.timeout_interval_us)?;
    j.close(b'}');
    Ok(())
}

fn psn<const PRETTY: bool>(j: &mut Json<PRETTY>, p: &PsnCounts) -> io::Result<()> {
    key!(j, "psn");
    open!(j, "gaps");
    j.u64(p.gaps);
    key!(j, "missing");
    j.u64(p.missing);
    key!(j, "missing_ranges");
    if p.missing_ranges.is_empty() {
        j.raw("[]");
    } else {
        j.open_list();
        for (i, [from, to]) in p.missing_ranges.iter().enumerate() {
            j.item(i);
            j.open_list();
            j.item(0);
            j.u64(u64::from(*from));
            j.item(1);
            j.u64(u64::from(*to));
            j.close(b']');
        }
        j.close(b']');
    }
    key!(j, "duplicates");
    j.u64(p.duplicates);
    key!(j, "out_of_order");
    j.u64(p.out_of_order);
    key!(j, "retransmitted");
    j.u64(p.retransmitted);
    key!(j, "recovered");
    j.u64(p.recovered);
    key!(j, "capture_missed");
    j.u64(p.capture_missed);
    key!(j, "damaged");
    j.u64(p.damaged);
    j.close(b'}');
    Ok(())
}

/// `naks` to `ce_to_cnp_us`, keys of the flow itself.
fn feedback<const PRETTY: bool>(j: &mut Json<PRETTY>, b: &Feedback) -> io::Result<()> {
    key!(j, "naks");
    j.part(&b.naks, |e| &e.naks, naks)?;
    key!(j, "read_responses");
    j.u64(b.read_responses);
    key!(j, "cnps");
    j.u64(b.cnps);
    key!(j, "cnps_sent");
    j.u64(b.cnps_sent);
    key!(j, "ce");
    j.u64(b.ce);
    key!(j, "ce_without_cnp");
    j.u64(b.ce_without_cnp);
    key!(j, "ce_to_cnp_us");
    j.f64(b.ce_to_cnp_us)
}

fn naks<const PRETTY: bool>(j: &mut Json<PRETTY>, n: &NakReport) -> io::Result<()> {
    open!(j, "psn_sequence_error");
    j.u64(n.psn_sequence_error);
    key!(j, "invalid_request");
    j.u64(n.invalid_request);
    key!(j, "remote_access_error");
    j.u64(n.remote_access_error);
    key!(j, "remote_operational_error");
    j.u64(n.remote_operational_error);
    key!(j, "invalid_rd_request");
    j.u64(n.invalid_rd_request);
    key!(j, "other");
    j.u64(n.other);
    key!(j, "rnr");
    j.u64(n.rnr);
    j.close(b'}');
    Ok(())
}

/// The text of each part most flows leave at its default (a short flow has no rates, no loss,
/// no NAK, no READ, no recovery), written once by the functions that write a set one, then
/// copied whole: most of a churn's `flow_end` line and of its report entry.
struct EmptyParts {
    rates: Vec<u8>,
    psn: Vec<u8>,
    feedback: Vec<u8>,
    naks: Vec<u8>,
    latency: Vec<u8>,
    recovery: Vec<u8>,
}

impl EmptyParts {
    /// The parts as written `depth` levels in (the keys of a flow are all one level: a part is
    /// always written at its flow's).
    fn write<const PRETTY: bool>(depth: usize) -> EmptyParts {
        fn text<const PRETTY: bool, T: Empty>(
            depth: usize,
            write: fn(&mut Json<PRETTY>, &T) -> io::Result<()>,
        ) -> Vec<u8> {
            let mut out = Vec::new();
            // Written in full: the parts are not there to copy yet.
            let mut j = Json {
                out: &mut out,
                depth,
                copy_empty_parts: false,
            };
            write(&mut j, T::empty()).expect("to memory");
            out
        }
        EmptyParts {
            rates: text(depth, rates::<PRETTY>),
            psn: text(depth, psn::<PRETTY>),
            feedback: text(depth, feedback::<PRETTY>),
            naks: text(depth, naks::<PRETTY>),
            latency: text(depth, |j: &mut Json<PRETTY>, l| j.latency(l)),
            recovery: text(depth, recovery::<PRETTY>),
        }
    }

    /// The parts compact, or laid out `depth` levels in (a report's flows are all as deep);
    /// none past the depths kept.
    fn at<const PRETTY: bool>(depth: usize) -> Option<&'static EmptyParts> {
        static COMPACT: LazyLock<EmptyParts> = LazyLock::new(|| EmptyParts::write::<false>(0));
        static PRETTY_AT: [OnceLock<EmptyParts>; 8] = [const { OnceLock::new() }; 8];
        if !PRETTY {
            return Some(&COMPACT);
        }
        let parts = PRETTY_AT.get(depth)?;
        Some(parts.get_or_init(|| EmptyParts::write::<true>(depth)))
    }
}

/// A key of a flow's counts (`Tally`), written as its `Display` spells it.
trait TallyKey {
    fn write_key<const PRETTY: bool>(&self, j: &mut Json<PRETTY>) -> io::Result<()>;
}

impl TallyKey for &'static str {
    fn write_key<const PRETTY: bool>(&self, j: &mut Json<PRETTY>) -> io::Result<()> {
        j.str(self)
    }
}

impl TallyKey for u8 {
    fn write_key<const PRETTY: bool>(&self, j: &mut Json<PRETTY>) -> io::Result<()> {
        j.raw("\"");
        j.u64(u64::from(*self));
        j.raw("\"");
        Ok(())
    }
}

impl TallyKey for Opcode {
    fn write_key<const PRETTY: bool>(&self, j: &mut Json<PRETTY>) -> io::Result<()> {
        if self.is_known() {
            j.str(self.name())
        } else {
            j.str(&self.to_string())
        }
    }
}

/// A line break and the spaces of up to 32 levels.
const NEWLINE_AND_SPACES: [u8; 65] = {
    let mut b = [b' '; 65];
    b[0] = b'\n';
    b
};

/// A line break, and two spaces a level.
pub fn new_line(out: &mut Vec<u8>, levels: usize) {
    match NEWLINE_AND_SPACES.get(..1 + 2 * levels) {
        Some(line) => out.extend_from_slice(line),
        None => {
            out.push(b'\n');
            for _ in 0..levels {
                out.extend_from_slice(b"  ");
            }
        }
    }
}

/// The output being written; `PRETTY`: laid out as serde_json's `PrettyFormatter` lays it out
/// (each member and element on a line of its own, two spaces a level, `": "` after a key,
/// empty objects and lists as `{}`, `[]`), `depth` levels in.
struct Json<'a, const PRETTY: bool> {
    out: &'a mut Vec<u8>,
    depth: usize,
    /// Parts left at their default copied from their text written once (`EmptyParts`).
    copy_empty_parts: bool,
}

impl<const PRETTY: bool> Json<'_, PRETTY> {
    fn raw(&mut self, s: &str) {
        self.out.extend_from_slice(s.as_bytes());
    }

    /// A part kept apart (`Rare`): `write` writes it, or, left at its default, its text as
    /// written once is copied (`empty` picks it).
    fn part<T: Empty>(
        &mut self,
        value: &Rare<T>,
        empty: fn(&EmptyParts) -> &Vec<u8>,
        write: fn(&mut Self, &T) -> io::Result<()>,
    ) -> io::Result<()> {
        if self.copy_empty_parts && !value.is_set() {
            if let Some(parts) = EmptyParts::at::<PRETTY>(self.depth) {
                self.out.extend_from_slice(empty(parts));
                return Ok(());
            }
        }
        write(self, value)
    }

    /// Opens an object with its first key (`compact`: `{"name":`, `pretty`: `"name": `).
    fn open(&mut self, compact: &str, pretty: &str) {
        if PRETTY {
            self.out.push(b'{');
            self.depth += 1;
            new_line(self.out, self.depth);
            self.raw(pretty);
        } else {
            self.raw(compact);
        }
    }

    /// A key after the first (`compact`: `,"name":`, `pretty`: `"name": `).
    fn key(&mut self, compact: &str, pretty: &str) {
        if PRETTY {
            self.out.push(b',');
            new_line(self.out, self.depth);
            self.raw(pretty);
        } else {
            self.raw(compact);
        }
    }

    /// Opens a list that has elements.
    fn open_list(&mut self) {
        self.out.push(b'[');
        if PRETTY {
            self.depth += 1;
        }
    }

    /// Before element `i` of a list.
    fn item(&mut self, i: usize) {
        if i > 0 {
            self.out.push(b',');
        }
        if PRETTY {
            new_line(self.out, self.depth);
        }
    }

    /// Closes an object or a list that has members (`}` or `]`).
    fn close(&mut self, bracket: u8) {
        if PRETTY {
            self.depth -= 1;
            new_line(self.out, self.depth);
        }
        self.out.push(bracket);
    }

    fn u64(&mut self, v: u64) {
        self.raw(itoa::Buffer::new().format(v));
    }

    fn opt_u64(&mut self, v: Option<u64>) {
        match v {
            Some(v) => self.u64(v),
            None => self.raw("null"),
        }
    }

    /// With serde_json's own formatter; null for none and for what is not finite, as serde_json.
    fn f64(&mut self, v: Option<f64>) -> io::Result<()> {
        match v {
            Some(v) if v.is_finite() => CompactFormatter.write_f64(self.out, v),
            _ => {
                self.raw("null");
                Ok(())
            }
        }
    }

    /// A string: as it is when nothing in it needs escaping (addresses, names), else escaped
    /// by serde_json.
    fn str(&mut self, s: &str) -> io::Result<()> {
        if is_plain(s) {
            self.raw("\"");
            self.raw(s);
            self.raw("\"");
            Ok(())
        } else {
            serde_json::to_writer(&mut *self.out, s).map_err(io::Error::from)
        }
    }

    /// A flow's label, as its `Display` spells it (`a > b qp 0x000213 vlan 100`).
    fn label(&mut self, l: &FlowLabel<Arc<str>>) -> io::Result<()> {
        if !(is_plain(&l.src) && is_plain(&l.dst)) {
            return self.str(&l.to_string());
        }
        self.raw("\"");
        l.write_plain(self.out);
        self.raw("\"");
        Ok(())
    }

    fn tally<K: TallyKey>(&mut self, t: &Tally<K>) -> io::Result<()> {
        let mut counts = t.iter().peekable();
        if counts.peek().is_none() {
            self.raw("{}");
            return Ok(());
        }
        self.out.push(b'{');
        if PRETTY {
            self.depth += 1;
        }
        for (i, (k, n)) in counts.enumerate() {
            self.item(i);
            k.write_key(self)?;
            self.raw(if PRETTY { ": " } else { ":" });
            self.u64(n);
        }
        self.close(b'}');
        Ok(())
    }

    fn list(&mut self, v: &[u64]) {
        if v.is_empty() {
            self.raw("[]");
            return;
        }
        self.open_list();
        for (i, &x) in v.iter().enumerate() {
            self.item(i);
            self.u64(x);
        }
        self.close(b']');
    }

    /// `{"count":..,"p50":..,"p99":..,"p999":..,"max":..}`.
    fn latency(&mut self, l: &LatencySummary) -> io::Result<()> {
        open!(self, "count");
        self.u64(l.count);
        key!(self, "p50");
        self.f64(l.p50)?;
        key!(self, "p99");
        self.f64(l.p99)?;
        key!(self, "p999");
        self.f64(l.p999)?;
        key!(self, "max");
        self.f64(l.max)?;
        self.close(b'}');
        Ok(())
    }
}

/// Whether JSON needs no escape in `s` (UTF-8 beyond ASCII needs none either).
fn is_plain(s: &str) -> bool {
    s.bytes().all(|c| c >= 0x20 && c != b'"' && c != b'\\')
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    use roce_parsers::capture::{CaptureParser, Next};

    use super::{write_flow, write_flow_pretty};
    use crate::analysis::report_build::CaptureMeta;
    use crate::analysis::Analyzer;
    use crate::model::{FlowLabel, FlowReport, LatencySummary, PairingMethod};
    use crate::rare::Rare;

    fn by_hand(f: &FlowReport) -> String {
        let mut out = Vec::new();
        write_flow(&mut out, f).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn pretty_by_hand(f: &FlowReport) -> String {
        let mut out = Vec::new();
        write_flow_pretty(&mut out, f, 0).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// The report flows of a capture file, read up to its first damaged record.
    fn flows_of(path: &Path) -> Vec<FlowReport> {
        let data = std::fs::read(path).unwrap();
        let Ok((mut parser, mut at)) = CaptureParser::new(&data) else {
            return Vec::new();
        };
        let mut an = Analyzer::new(Default::default());
        let mut meta = CaptureMeta::default();
        while let Ok(next) = parser.next(&data[at..], at as u64) {
            match next {
                Next::Record(rec, used) => {
                    let s =
                        crate::decode::summarize(meta.counts.frames + 1, &rec, Default::default());
                    meta.counts.add(&s);
                    an.feed(&s);
                    at += used;
                }
                Next::Skip(used) => at += used,
                Next::Incomplete { .. } => break,
            }
        }
        an.finish(meta).flows
    }

    fn captures(dir: &Path, found: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                captures(&path, found);
            } else if path
                .extension()
                .is_some_and(|e| e == "pcap" || e == "pcapng")
            {
                found.push(path);
            }
        }
    }

    #[test]
    fn every_flow_of_testdata_is_written_as_serde_writes_it() {
        let mut files = Vec::new();
        captures(Path::new("testdata"), &mut files);
        let mut flows = 0;
        for file in files {
            for f in flows_of(&file) {
                let serde = serde_json::to_string(&f).unwrap();
                assert_eq!(by_hand(&f), serde, "{} flow {}", file.display(), f.id);
                let serde = serde_json::to_string_pretty(&f).unwrap();
                assert_eq!(
                    pretty_by_hand(&f),
                    serde,
                    "{} flow {}",
                    file.display(),
                    f.id
                );
                flows += 1;
            }
        }
        assert!(flows > 200, "only {flows} flows in testdata/");
    }

    /// Writes `f` in full, no part copied.
    fn in_full<const PRETTY: bool>(f: &FlowReport, levels: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let mut j = super::Json::<PRETTY> {
            out: &mut out,
            depth: levels,
            copy_empty_parts: false,
        };
        super::flow(&mut j, f).unwrap();
        out
    }

    #[test]
    fn parts_left_at_their_default_are_copied_as_they_would_be_written_at_every_depth() {
        let mut files = Vec::new();
        captures(Path::new("testdata"), &mut files);
        let flows: Vec<FlowReport> = files.iter().flat_map(|p| flows_of(p)).collect();
        // Short flows: no rates, no loss, no NAK, no READ, no recovery (every part copied).
        let short = flows
            .iter()
            .filter(|f| !f.rate.is_set() && !f.feedback.is_set());
        assert!(short.count() > 10, "testdata/ has short flows");
        for f in &flows {
            assert_eq!(
                by_hand(f).into_bytes(),
                in_full::<false>(f, 0),
                "flow {}",
                f.id
            );
            // Past the depths kept (8), parts are written in full.
            for levels in [0, 1, 2, 3, 7, 8, 12] {
                let mut copied = Vec::new();
                write_flow_pretty(&mut copied, f, levels).unwrap();
                assert_eq!(
                    copied,
                    in_full::<true>(f, levels),
                    "flow {} at {levels}",
                    f.id
                );
            }
        }
    }

    #[test]
    fn a_flow_with_every_optional_part_set_is_written_as_serde_writes_it() {
        let data = PathBuf::from("testdata/sample.pcap");
        let mut f = flows_of(&data).remove(0);
        let latency = LatencySummary {
            count: 3,
            p50: Some(1.5),
            p99: Some(f64::NAN),
            p999: Some(1e21),
            max: Some(0.1),
        };
        f.vlan = None;
        f.transport = None;
        f.src = Arc::from("fe80::1 \"quoted\\\" \u{7}");
        f.path_mtu_at_least = Some(4096);
        f.rate.gbps = Some(99.5);
        f.rate.pps = Some(f64::INFINITY);
        f.psn.missing_ranges = vec![[1, 2], [7, 16_777_215]];
        f.ecn = crate::model::Tally::default();
        f.psn.gaps = 2;
        f.loss_frames = Rare::of(vec![3, 9]);
        f.retransmit_frames = Rare::of(vec![12]);
        f.feedback.naks.rnr = 4;
        f.feedback.ce_to_cnp_us = Some(12.25);
        f.ack_rtt_us = Rare::of(latency.clone());
        f.read_latency_us = Rare::of(latency.clone());
        f.recovery.timeout_interval_us = latency.clone();
        f.recovery.nak_to_retransmit_us = latency;
        f.recovery.timeout_resends = 1;
        f.peer = Some(FlowLabel {
            src: Arc::from("b\nc"),
            dst: Arc::from("d"),
            dqpn: 0x13,
            vlan: Some(7),
        });
        f.paired_by = Some(PairingMethod::RdmaCm);
        f.native_ib = true;
        f.opcodes = crate::model::Tally::by_name([
            (roce_parsers::Opcode(0x1f), 2),
            (roce_parsers::Opcode(0x0a), 1),
        ]);
        assert_eq!(by_hand(&f), serde_json::to_string(&f).unwrap());
        assert_eq!(
            pretty_by_hand(&f),
            serde_json::to_string_pretty(&f).unwrap()
        );
    }
}
