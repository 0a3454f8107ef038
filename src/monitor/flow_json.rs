//! A `flow_end` event's flow object, written straight into its line: the keys, order and
//! number spelling serde gives `FlowReport` (its derive, serde_json's own number formatter),
//! which the tests below hold byte for byte on every flow of testdata/ and on a flow with every
//! optional part set.
//!
//! Why by hand: serde_json scanned each of a flow's ~90 static keys for characters to escape
//! and made a call per entry through the flattened parts: 3.8 us a flow, the live monitor's
//! costliest step after the Parquet rows when QPs churn.

use std::io;
use std::sync::Arc;

use roce_parsers::Opcode;
use serde_json::ser::{CompactFormatter, Formatter};

use crate::model::{FlowLabel, FlowReport, LatencySummary, Tally};

/// `,"name":` as one literal: a key is one copy, with no character to escape.
macro_rules! key {
    ($name:literal) => {
        concat!(",\"", $name, "\":")
    };
}

/// Writes `f` as serde_json writes it (compact).
pub fn write_flow(out: &mut Vec<u8>, f: &FlowReport) -> io::Result<()> {
    out.reserve(2048);
    let mut j = Json(out);
    j.raw("{\"id\":");
    j.u64(f.id as u64);
    j.raw(key!("src"));
    j.str(&f.src)?;
    j.raw(key!("dst"));
    j.str(&f.dst)?;
    j.raw(key!("dqpn"));
    j.u64(u64::from(f.dqpn));
    j.raw(key!("vlan"));
    j.opt_u64(f.vlan.map(u64::from));
    j.raw(key!("transport"));
    match f.transport {
        Some(t) => j.str(t)?,
        None => j.raw("null"),
    }
    j.raw(key!("role"));
    j.str(f.role.name())?;
    j.raw(key!("packets"));
    j.u64(f.packets);
    j.raw(key!("bytes"));
    j.u64(f.bytes);
    j.raw(key!("payload_bytes"));
    j.u64(f.payload_bytes);
    j.raw(key!("requests"));
    j.u64(f.requests);
    j.raw(key!("messages"));
    j.u64(f.messages);
    j.raw(key!("first_frame"));
    j.u64(f.first_frame);
    j.raw(key!("first_ts"));
    j.f64(Some(f.first_ts))?;
    j.raw(key!("last_ts"));
    j.f64(Some(f.last_ts))?;
    j.raw(key!("duration_us"));
    j.f64(Some(f.duration_us))?;
    j.raw(key!("gbps"));
    j.f64(f.rate.gbps)?;
    j.raw(key!("pps"));
    j.f64(f.rate.pps)?;
    j.raw(key!("messages_per_s"));
    j.f64(f.rate.messages_per_s)?;
    j.raw(key!("path_mtu"));
    j.opt_u64(f.path_mtu.map(u64::from));
    if let Some(at_least) = f.path_mtu_at_least {
        j.raw(key!("path_mtu_at_least"));
        j.u64(u64::from(at_least));
    }
    j.raw(key!("pcp"));
    j.tally(&f.pcp)?;
    j.raw(key!("dscp"));
    j.tally(&f.dscp)?;
    j.raw(key!("ecn"));
    j.tally(&f.ecn)?;
    j.raw(key!("opcodes"));
    j.tally(&f.opcodes)?;
    psn(&mut j, f);
    j.raw(key!("loss_frames"));
    j.list(&f.loss_frames);
    j.raw(key!("retransmit_frames"));
    j.list(&f.retransmit_frames);
    j.raw(key!("read_response_gaps"));
    j.u64(f.read_response_gaps);
    j.raw(key!("acks"));
    j.u64(f.acks);
    feedback(&mut j, f)?;
    j.raw(key!("ack_rtt_us"));
    j.latency(&f.ack_rtt_us)?;
    j.raw(key!("read_latency_us"));
    j.latency(&f.read_latency_us)?;
    let r = &f.recovery;
    j.raw(concat!(key!("recovery"), "{\"nak_to_retransmit_us\":"));
    j.latency(&r.nak_to_retransmit_us)?;
    j.raw(key!("timeout_resends"));
    j.u64(r.timeout_resends);
    j.raw(key!("timeout_interval_us"));
    j.latency(&r.timeout_interval_us)?;
    j.raw("}");
    j.raw(key!("icrc_bad"));
    j.u64(f.icrc_bad);
    j.raw(key!("oversize"));
    j.u64(f.oversize);
    j.raw(key!("peer"));
    match &f.peer {
        Some(label) => j.label(label)?,
        None => j.raw("null"),
    }
    j.raw(key!("paired_by"));
    match f.paired_by {
        Some(p) => serde_json::to_writer(&mut *j.0, &p)?,
        None => j.raw("null"),
    }
    if f.native_ib {
        j.raw(concat!(key!("native_ib"), "true"));
    }
    j.raw("}");
    Ok(())
}

fn psn(j: &mut Json, f: &FlowReport) {
    let p = &f.psn;
    j.raw(concat!(key!("psn"), "{\"gaps\":"));
    j.u64(p.gaps);
    j.raw(key!("missing"));
    j.u64(p.missing);
    j.raw(concat!(key!("missing_ranges"), "["));
    for (i, [from, to]) in p.missing_ranges.iter().enumerate() {
        j.raw(if i == 0 { "[" } else { ",[" });
        j.u64(u64::from(*from));
        j.raw(",");
        j.u64(u64::from(*to));
        j.raw("]");
    }
    j.raw("]");
    j.raw(key!("duplicates"));
    j.u64(p.duplicates);
    j.raw(key!("out_of_order"));
    j.u64(p.out_of_order);
    j.raw(key!("retransmitted"));
    j.u64(p.retransmitted);
    j.raw(key!("recovered"));
    j.u64(p.recovered);
    j.raw("}");
}

fn feedback(j: &mut Json, f: &FlowReport) -> io::Result<()> {
    let b = &f.feedback;
    let n = &b.naks;
    j.raw(concat!(key!("naks"), "{\"psn_sequence_error\":"));
    j.u64(n.psn_sequence_error);
    j.raw(key!("invalid_request"));
    j.u64(n.invalid_request);
    j.raw(key!("remote_access_error"));
    j.u64(n.remote_access_error);
    j.raw(key!("remote_operational_error"));
    j.u64(n.remote_operational_error);
    j.raw(key!("invalid_rd_request"));
    j.u64(n.invalid_rd_request);
    j.raw(key!("other"));
    j.u64(n.other);
    j.raw(key!("rnr"));
    j.u64(n.rnr);
    j.raw("}");
    j.raw(key!("read_responses"));
    j.u64(b.read_responses);
    j.raw(key!("cnps"));
    j.u64(b.cnps);
    j.raw(key!("cnps_sent"));
    j.u64(b.cnps_sent);
    j.raw(key!("ce"));
    j.u64(b.ce);
    j.raw(key!("ce_without_cnp"));
    j.u64(b.ce_without_cnp);
    j.raw(key!("ce_to_cnp_us"));
    j.f64(b.ce_to_cnp_us)
}

/// A key of a flow's counts (`Tally`), written as its `Display` spells it.
trait TallyKey {
    fn write_key(&self, j: &mut Json) -> io::Result<()>;
}

impl TallyKey for &'static str {
    fn write_key(&self, j: &mut Json) -> io::Result<()> {
        j.str(self)
    }
}

impl TallyKey for u8 {
    fn write_key(&self, j: &mut Json) -> io::Result<()> {
        j.raw("\"");
        j.u64(u64::from(*self));
        j.raw("\"");
        Ok(())
    }
}

impl TallyKey for Opcode {
    fn write_key(&self, j: &mut Json) -> io::Result<()> {
        if self.is_known() {
            j.str(self.name())
        } else {
            j.str(&self.to_string())
        }
    }
}

/// The line being written.
struct Json<'a>(&'a mut Vec<u8>);

impl Json<'_> {
    fn raw(&mut self, s: &str) {
        self.0.extend_from_slice(s.as_bytes());
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
            Some(v) if v.is_finite() => CompactFormatter.write_f64(self.0, v),
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
            serde_json::to_writer(&mut *self.0, s).map_err(io::Error::from)
        }
    }

    /// A flow's label, as its `Display` spells it (`a > b qp 0x000213 vlan 100`).
    fn label(&mut self, l: &FlowLabel<Arc<str>>) -> io::Result<()> {
        if !(is_plain(&l.src) && is_plain(&l.dst)) {
            return self.str(&l.to_string());
        }
        self.raw("\"");
        l.write_plain(self.0);
        self.raw("\"");
        Ok(())
    }

    fn tally<K: TallyKey>(&mut self, t: &Tally<K>) -> io::Result<()> {
        self.raw("{");
        for (i, (k, n)) in t.iter().enumerate() {
            if i > 0 {
                self.raw(",");
            }
            k.write_key(self)?;
            self.raw(":");
            self.u64(n);
        }
        self.raw("}");
        Ok(())
    }

    fn list(&mut self, v: &[u64]) {
        self.raw("[");
        for (i, &x) in v.iter().enumerate() {
            if i > 0 {
                self.raw(",");
            }
            self.u64(x);
        }
        self.raw("]");
    }

    /// `{"count":..,"p50":..,"p99":..,"p999":..,"max":..}`.
    fn latency(&mut self, l: &LatencySummary) -> io::Result<()> {
        self.raw("{\"count\":");
        self.u64(l.count);
        self.raw(key!("p50"));
        self.f64(l.p50)?;
        self.raw(key!("p99"));
        self.f64(l.p99)?;
        self.raw(key!("p999"));
        self.f64(l.p999)?;
        self.raw(key!("max"));
        self.f64(l.max)?;
        self.raw("}");
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

    use super::write_flow;
    use crate::analysis::report_build::CaptureMeta;
    use crate::analysis::Analyzer;
    use crate::model::{FlowLabel, FlowReport, LatencySummary, PairingMethod};
    use crate::rare::Rare;

    fn by_hand(f: &FlowReport) -> String {
        let mut out = Vec::new();
        write_flow(&mut out, f).unwrap();
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
                flows += 1;
            }
        }
        assert!(flows > 200, "only {flows} flows in testdata/");
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
    }
}
