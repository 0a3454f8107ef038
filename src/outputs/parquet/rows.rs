//! The rows of each table: their columns (the contract docs/parquet.md describes), the
//! fixed-size records packets and timeline bins are spilled as, and the small tables written
//! from the report.

use rustc_hash::FxHashMap as HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;
use std::sync::Arc;

use parquet::data_type::ByteArray;
use roce_parsers::{Aeth, IcrcStatus, NakCode, Opcode, TrafficClass};

use super::bins::PfcBins;
use super::table::{col, Column, Kind, Table};
use crate::common::error::Error;
use crate::decode::summary::{PacketSummary, Payload};
use crate::model::{Finding, FlowReport};
use crate::model::{Outcome, PsnEvent};

pub const PACKET_COLUMNS: &[Column] = &[
    col("frame", Kind::I64, false),
    col("ts", Kind::TimestampMicros, false),
    col("ts_ns", Kind::I64, false),
    col("len", Kind::I32, false),
    col("caplen", Kind::I32, false),
    col("kind", Kind::Str, false),
    col("vlan", Kind::I32, true),
    col("pcp", Kind::I32, true),
    col("src", Kind::Str, true),
    col("dst", Kind::Str, true),
    col("dscp", Kind::I32, true),
    col("ecn", Kind::Str, true),
    col("sport", Kind::I32, true),
    col("opcode", Kind::I32, true),
    col("op", Kind::Str, true),
    col("dqpn", Kind::I32, true),
    col("psn", Kind::I32, true),
    col("ackreq", Kind::Bool, true),
    col("fecn", Kind::Bool, true),
    col("becn", Kind::Bool, true),
    col("payload_len", Kind::I32, true),
    col("aeth_kind", Kind::Str, true),
    col("aeth_code", Kind::Str, true),
    col("aeth_msn", Kind::I32, true),
    col("reth_va", Kind::I64, true),
    col("reth_rkey", Kind::I64, true),
    col("reth_dlen", Kind::I64, true),
    col("icrc_status", Kind::Str, true),
    col("flow_id", Kind::I64, true),
    col("psn_event", Kind::Str, true),
];

pub const TIMELINE_COLUMNS: &[Column] = &[
    col("flow_id", Kind::I64, false),
    col("bin_start_ns", Kind::I64, false),
    col("bin_start", Kind::TimestampMicros, false),
    col("bin_ns", Kind::I64, false),
    col("packets", Kind::I64, false),
    col("bytes", Kind::I64, false),
    col("gbps", Kind::F64, false),
    col("gaps", Kind::I64, false),
    col("retransmitted", Kind::I64, false),
    col("ce", Kind::I64, false),
    col("cnps", Kind::I64, false),
    col("naks", Kind::I64, false),
];

pub const PFC_COLUMNS: &[Column] = &[
    col("src_mac", Kind::Str, false),
    col("priority", Kind::I32, false),
    col("bin_start_ns", Kind::I64, false),
    col("bin_start", Kind::TimestampMicros, false),
    col("bin_ns", Kind::I64, false),
    col("xoff", Kind::I64, false),
    col("xon", Kind::I64, false),
    col("paused_ns", Kind::I64, false),
];

pub const FINDING_COLUMNS: &[Column] = &[
    col("severity", Kind::Str, false),
    col("code", Kind::Str, false),
    col("message", Kind::Str, false),
    col("flow", Kind::Str, true),
    col("count", Kind::I64, false),
    col("ts_ns", Kind::I64, true),
    col("ts", Kind::TimestampMicros, true),
    col("flows", Kind::I64, true),
];

pub const FLOW_COLUMNS: &[Column] = &[
    col("flow_id", Kind::I64, false),
    col("src", Kind::Str, false),
    col("dst", Kind::Str, false),
    col("dqpn", Kind::I32, false),
    col("vlan", Kind::I32, true),
    col("transport", Kind::Str, true),
    col("role", Kind::Str, false),
    col("packets", Kind::I64, false),
    col("bytes", Kind::I64, false),
    col("payload_bytes", Kind::I64, false),
    col("requests", Kind::I64, false),
    col("messages", Kind::I64, false),
    col("gbps", Kind::F64, true),
    col("pps", Kind::F64, true),
    col("messages_per_s", Kind::F64, true),
    col("path_mtu", Kind::I32, true),
    col("first_frame", Kind::I64, false),
    col("first_ts", Kind::TimestampMicros, false),
    col("last_ts", Kind::TimestampMicros, false),
    col("duration_us", Kind::F64, false),
    col("psn_gaps", Kind::I64, false),
    col("psn_missing", Kind::I64, false),
    col("psn_duplicates", Kind::I64, false),
    col("psn_out_of_order", Kind::I64, false),
    col("psn_retransmitted", Kind::I64, false),
    col("psn_recovered", Kind::I64, false),
    col("psn_capture_missed", Kind::I64, false),
    col("psn_damaged", Kind::I64, false),
    col("acks", Kind::I64, false),
    col("naks", Kind::I64, false),
    col("read_responses", Kind::I64, false),
    col("read_response_gaps", Kind::I64, false),
    col("cnps", Kind::I64, false),
    col("cnps_sent", Kind::I64, false),
    col("ce", Kind::I64, false),
    col("ce_without_cnp", Kind::I64, false),
    col("icrc_bad", Kind::I64, false),
    col("oversize", Kind::I64, false),
    col("ack_rtt_p50_us", Kind::F64, true),
    col("ack_rtt_p99_us", Kind::F64, true),
    col("ack_rtt_max_us", Kind::F64, true),
    col("read_latency_p50_us", Kind::F64, true),
    col("read_latency_p99_us", Kind::F64, true),
    col("peer", Kind::Str, true),
    // Added December 2026, at the end (a table's columns never move).
    col("psn_out_of_order_depth_max", Kind::I64, false),
    col("psn_out_of_order_delay_max_us", Kind::F64, false),
];

fn put_ip(out: &mut Vec<u8>, ip: Option<IpAddr>) {
    match ip {
        None => out.extend_from_slice(&[0; 17]),
        Some(IpAddr::V4(v)) => {
            out.push(4);
            out.extend_from_slice(&v.octets());
            out.extend_from_slice(&[0; 12]);
        }
        Some(IpAddr::V6(v)) => {
            out.push(6);
            out.extend_from_slice(&v.octets());
        }
    }
}

fn get_ip(b: &[u8]) -> Option<IpAddr> {
    match b[0] {
        4 => Some(IpAddr::V4(Ipv4Addr::new(b[1], b[2], b[3], b[4]))),
        6 => {
            let o: [u8; 16] = b[1..17].try_into().ok()?;
            Some(IpAddr::V6(Ipv6Addr::from(o)))
        }
        _ => None,
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// What a packet row holds of a RoCE frame.
#[derive(Debug, Clone, Copy, Default)]
struct RoceBits {
    sport: u16,
    opcode: u8,
    /// ackreq 1, fecn 2, becn 4.
    flags: u8,
    dqpn: u32,
    psn: u32,
    payload_len: u32,
    aeth: Option<(u8, u32)>,
    reth: Option<(u64, u32, u32)>,
    icrc: u8,
}

/// A packet, as spilled.
#[derive(Debug, Clone, Copy)]
pub struct PacketRow {
    frame: u64,
    ts: u64,
    len: u32,
    caplen: u32,
    kind: u8,
    vlan: Option<(u16, u8)>,
    src: Option<IpAddr>,
    dst: Option<IpAddr>,
    tclass: Option<u8>,
    roce: Option<RoceBits>,
    flow: Option<u64>,
    psn_event: u8,
}

const KINDS: [&str; 7] = [
    "rocev2",
    "rocev1",
    "ib",
    "pfc",
    "pause",
    "other",
    "malformed",
];
const ICRC: [&str; 3] = ["ok", "bad", "unchecked"];
const PSN_EVENTS: [PsnEvent; 4] = [
    PsnEvent::Gap,
    PsnEvent::Retransmitted,
    PsnEvent::Duplicate,
    PsnEvent::OutOfOrder,
];

impl PacketRow {
    pub const SIZE: usize = 115;

    pub fn new(p: &PacketSummary, o: Outcome) -> Self {
        let roce = p.roce().map(|r| RoceBits {
            sport: r.sport,
            opcode: r.opcode.0,
            flags: u8::from(r.ackreq) | u8::from(r.fecn) << 1 | u8::from(r.becn) << 2,
            dqpn: r.dqpn.0,
            psn: r.psn.value(),
            payload_len: r.payload_len,
            aeth: r.aeth,
            reth: r
                .reth_target
                .map(|(va, rkey)| (va, rkey, r.dma_len.unwrap_or(0))),
            icrc: match r.icrc {
                IcrcStatus::Ok => 0,
                IcrcStatus::Bad => 1,
                IcrcStatus::Unchecked => 2,
            },
        });
        let kind = match (&p.payload, p.malformed) {
            (_, true) => 6,
            (Payload::Roce(r), _) if r.v1 => 1,
            (Payload::Roce(r), _) if r.ib => 2,
            (Payload::Roce(_), _) => 0,
            (Payload::Pfc { .. }, _) => 3,
            (Payload::Pause { .. }, _) => 4,
            _ => 5,
        };
        PacketRow {
            frame: p.frame_no,
            ts: p.ts_ns,
            len: p.len,
            caplen: p.caplen,
            kind,
            vlan: p.vlan,
            src: p.addrs.map(|a| a.0),
            dst: p.addrs.map(|a| a.1),
            tclass: p.tclass.map(|t| t.0),
            roce,
            flow: o.flow.map(|f| f as u64),
            psn_event: o
                .psn
                .and_then(|e| PSN_EVENTS.iter().position(|&x| x == e))
                .map_or(0, |i| i as u8 + 1),
        }
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.frame.to_le_bytes());
        out.extend_from_slice(&self.ts.to_le_bytes());
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&self.caplen.to_le_bytes());
        out.push(self.kind);
        let (vid, pcp) = self.vlan.unwrap_or_default();
        out.push(u8::from(self.vlan.is_some()));
        out.extend_from_slice(&vid.to_le_bytes());
        out.push(pcp);
        put_ip(out, self.src);
        put_ip(out, self.dst);
        out.push(u8::from(self.tclass.is_some()));
        out.push(self.tclass.unwrap_or(0));
        let r = self.roce.unwrap_or_default();
        out.push(u8::from(self.roce.is_some()));
        out.extend_from_slice(&r.sport.to_le_bytes());
        out.push(r.opcode);
        out.push(r.flags);
        out.extend_from_slice(&r.dqpn.to_le_bytes());
        out.extend_from_slice(&r.psn.to_le_bytes());
        out.extend_from_slice(&r.payload_len.to_le_bytes());
        let (syn, msn) = r.aeth.unwrap_or_default();
        out.push(u8::from(r.aeth.is_some()));
        out.push(syn);
        out.extend_from_slice(&msn.to_le_bytes());
        let (va, rkey, dlen) = r.reth.unwrap_or_default();
        out.push(u8::from(r.reth.is_some()));
        out.extend_from_slice(&va.to_le_bytes());
        out.extend_from_slice(&rkey.to_le_bytes());
        out.extend_from_slice(&dlen.to_le_bytes());
        out.push(r.icrc);
        out.extend_from_slice(&self.flow.map_or(u64::MAX, |f| f).to_le_bytes());
        out.push(self.psn_event);
        debug_assert_eq!(out.len(), Self::SIZE);
    }

    pub fn decode(b: &[u8]) -> Self {
        let roce = (b[65] == 1).then(|| RoceBits {
            sport: u16_at(b, 66),
            opcode: b[68],
            flags: b[69],
            dqpn: u32_at(b, 70),
            psn: u32_at(b, 74),
            payload_len: u32_at(b, 78),
            aeth: (b[82] == 1).then(|| (b[83], u32_at(b, 84))),
            reth: (b[88] == 1).then(|| (u64_at(b, 89), u32_at(b, 97), u32_at(b, 101))),
            icrc: b[105],
        });
        let flow = u64_at(b, 106);
        PacketRow {
            frame: u64_at(b, 0),
            ts: u64_at(b, 8),
            len: u32_at(b, 16),
            caplen: u32_at(b, 20),
            kind: b[24],
            vlan: (b[25] == 1).then(|| (u16_at(b, 26), b[28])),
            src: get_ip(&b[29..46]),
            dst: get_ip(&b[46..63]),
            tclass: (b[63] == 1).then_some(b[64]),
            roce,
            flow: (flow != u64::MAX).then_some(flow),
            psn_event: b[114],
        }
    }

    /// Writes the row; `flow_id` maps the analyzer's flow id to the table's.
    pub fn write(
        &self,
        t: &mut Table,
        flow_id: impl Fn(u64) -> Option<i64>,
        cache: &mut TextCache,
    ) -> Result<(), Error> {
        let r = self.roce.as_ref();
        t.i64(0, Some(self.frame as i64));
        t.i64(1, Some((self.ts / 1000) as i64));
        t.i64(2, Some(self.ts as i64));
        t.i32(3, Some(self.len as i32));
        t.i32(4, Some(self.caplen as i32));
        t.name(5, Some(KINDS[usize::from(self.kind)]));
        t.i32(6, self.vlan.map(|v| i32::from(v.0)));
        t.i32(7, self.vlan.map(|v| i32::from(v.1)));
        t.bytes(8, self.src.map(|a| cache.ip(a)).as_ref());
        t.bytes(9, self.dst.map(|a| cache.ip(a)).as_ref());
        let tc = self.tclass.map(TrafficClass);
        t.i32(10, tc.map(|c| i32::from(c.dscp())));
        t.name(11, tc.map(|c| c.ecn().name()));
        t.i32(12, r.filter(|_| self.kind == 0).map(|r| i32::from(r.sport)));
        t.i32(13, r.map(|r| i32::from(r.opcode)));
        t.bytes(14, r.map(|r| cache.op(r.opcode)).as_ref());
        t.i32(15, r.map(|r| r.dqpn as i32));
        t.i32(16, r.map(|r| r.psn as i32));
        t.bool(17, r.map(|r| r.flags & 1 != 0));
        t.bool(18, r.map(|r| r.flags & 2 != 0));
        t.bool(19, r.map(|r| r.flags & 4 != 0));
        t.i32(20, r.map(|r| r.payload_len as i32));
        let aeth = r
            .and_then(|r| r.aeth)
            .map(|(syndrome, msn)| Aeth { syndrome, msn });
        t.name(21, aeth.map(|a| a.kind().name()));
        let nak = aeth.filter(|a| a.kind() == roce_parsers::AethKind::Nak);
        t.name(22, nak.map(|a| NakCode::from_value(a.value()).name()));
        t.i32(23, aeth.map(|a| a.msn as i32));
        let reth = r.and_then(|r| r.reth);
        t.i64(24, reth.map(|x| x.0 as i64));
        t.i64(25, reth.map(|x| i64::from(x.1)));
        t.i64(26, reth.map(|x| i64::from(x.2)));
        t.name(27, r.map(|r| ICRC[usize::from(r.icrc)]));
        t.i64(28, self.flow.and_then(flow_id));
        let event =
            (self.psn_event > 0).then(|| PSN_EVENTS[usize::from(self.psn_event - 1)].name());
        t.name(29, event);
        t.end_row()
    }
}

/// Text columns' values made once: addresses and opcode names repeat on every packet.
#[derive(Default)]
pub struct TextCache {
    ips: HashMap<IpAddr, ByteArray>,
    ops: HashMap<u8, ByteArray>,
    /// A flow's hosts as the report names them: a fabric's few, each copied once, not per flow.
    hosts: HashMap<Arc<str>, ByteArray>,
}

impl TextCache {
    fn ip(&mut self, a: IpAddr) -> ByteArray {
        self.ips
            .entry(a)
            .or_insert_with(|| ByteArray::from(a.to_string().as_str()))
            .clone()
    }

    fn host(&mut self, name: &Arc<str>) -> ByteArray {
        if let Some(b) = self.hosts.get(name) {
            return b.clone();
        }
        let b = ByteArray::from(&**name);
        self.hosts.insert(name.clone(), b.clone());
        b
    }

    fn op(&mut self, op: u8) -> ByteArray {
        let opcode = Opcode(op);
        if opcode.is_known() {
            return super::table::static_bytes(opcode.name());
        }
        self.ops
            .entry(op)
            .or_insert_with(|| ByteArray::from(opcode.to_string().as_str()))
            .clone()
    }
}

/// A flow's counts in one bin, as spilled.
#[derive(Debug, Clone, Copy, Default)]
pub struct TimelineRow {
    pub flow: i64,
    pub bin_start_ns: i64,
    pub packets: i64,
    pub bytes: i64,
    pub gaps: i64,
    pub retransmitted: i64,
    pub ce: i64,
    pub cnps: i64,
    pub naks: i64,
}

impl TimelineRow {
    pub const SIZE: usize = 72;

    pub fn encode(&self, out: &mut Vec<u8>) {
        for v in [
            self.flow,
            self.bin_start_ns,
            self.packets,
            self.bytes,
            self.gaps,
            self.retransmitted,
            self.ce,
            self.cnps,
            self.naks,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }

    pub fn decode(b: &[u8]) -> Self {
        let v = |i: usize| u64_at(b, i * 8) as i64;
        TimelineRow {
            flow: v(0),
            bin_start_ns: v(1),
            packets: v(2),
            bytes: v(3),
            gaps: v(4),
            retransmitted: v(5),
            ce: v(6),
            cnps: v(7),
            naks: v(8),
        }
    }

    /// Writes the row as that of flow `id` of the table.
    pub fn write(&self, t: &mut Table, id: i64, bin_ns: u64) -> Result<(), Error> {
        t.i64(0, Some(id));
        t.i64(1, Some(self.bin_start_ns));
        t.i64(2, Some(self.bin_start_ns / 1000));
        t.i64(3, Some(bin_ns as i64));
        t.i64(4, Some(self.packets));
        t.i64(5, Some(self.bytes));
        t.f64(6, Some(self.bytes as f64 * 8.0 / bin_ns as f64));
        t.i64(7, Some(self.gaps));
        t.i64(8, Some(self.retransmitted));
        t.i64(9, Some(self.ce));
        t.i64(10, Some(self.cnps));
        t.i64(11, Some(self.naks));
        t.end_row()
    }
}

fn i64_of(v: u64) -> Option<i64> {
    Some(v as i64)
}

fn secs_to_micros(s: f64) -> Option<i64> {
    Some((s * 1e6).round() as i64)
}

/// A row of the `flows` table: the JSON flow's scalar fields, PSN counters flattened; `id`
/// is the flow's id in the dataset.
pub fn flow_row(
    t: &mut Table,
    f: &FlowReport,
    id: i64,
    cache: &mut TextCache,
) -> Result<(), Error> {
    t.i64(0, Some(id));
    t.bytes(1, Some(&cache.host(&f.src)));
    t.bytes(2, Some(&cache.host(&f.dst)));
    t.i32(3, Some(f.dqpn as i32));
    t.i32(4, f.vlan.map(i32::from));
    t.name(5, f.transport);
    t.name(6, Some(f.role.name()));
    t.i64(7, i64_of(f.packets));
    t.i64(8, i64_of(f.bytes));
    t.i64(9, i64_of(f.payload_bytes));
    t.i64(10, i64_of(f.requests));
    t.i64(11, i64_of(f.messages));
    t.f64(12, f.rate.gbps);
    t.f64(13, f.rate.pps);
    t.f64(14, f.rate.messages_per_s);
    t.i32(15, f.path_mtu.map(|m| m as i32));
    t.i64(16, i64_of(f.first_frame));
    t.i64(17, secs_to_micros(f.first_ts));
    t.i64(18, secs_to_micros(f.last_ts));
    t.f64(19, Some(f.duration_us));
    let p = &f.psn;
    for (i, v) in [
        p.gaps,
        p.missing,
        p.duplicates,
        p.out_of_order,
        p.retransmitted,
        p.recovered,
        p.capture_missed,
        p.damaged,
    ]
    .into_iter()
    .enumerate()
    {
        t.i64(20 + i, i64_of(v));
    }
    t.i64(28, i64_of(f.acks));
    t.i64(29, i64_of(f.feedback.naks.total()));
    t.i64(30, i64_of(f.feedback.read_responses));
    t.i64(31, i64_of(f.read_response_gaps));
    t.i64(32, i64_of(f.feedback.cnps));
    t.i64(33, i64_of(f.feedback.cnps_sent));
    t.i64(34, i64_of(f.feedback.ce));
    t.i64(35, i64_of(f.feedback.ce_without_cnp));
    t.i64(36, i64_of(f.icrc_bad));
    t.i64(37, i64_of(f.oversize));
    t.f64(38, f.ack_rtt_us.p50);
    t.f64(39, f.ack_rtt_us.p99);
    t.f64(40, f.ack_rtt_us.max);
    t.f64(41, f.read_latency_us.p50);
    t.f64(42, f.read_latency_us.p99);
    let peer = f.peer.as_ref().map(|p| {
        let mut text = Vec::with_capacity(64);
        p.write_plain(&mut text);
        ByteArray::from(text)
    });
    t.owned(43, peer);
    t.i64(44, i64_of(p.out_of_order_depth_max));
    t.f64(45, Some(p.out_of_order_delay_max_us));
    t.end_row()
}

/// A row of the `findings` table; `ts_ns` when the finding first held (rolling dataset).
pub fn finding_row(t: &mut Table, f: &Finding, ts_ns: Option<u64>) -> Result<(), Error> {
    t.str(0, Some(f.severity.name()));
    t.str(1, Some(f.code.name()));
    t.str(2, Some(&f.message));
    t.str(3, f.flow.as_deref());
    t.i64(4, i64_of(f.count));
    t.i64(5, ts_ns.map(|v| v as i64));
    t.i64(6, ts_ns.map(|v| (v / 1000) as i64));
    t.i64(7, finding_flows(f).map(|n| n as i64));
    t.end_row()
}

/// The flows a finding tells of: a group's, 1 for a flow's own, none for a capture-wide one.
fn finding_flows(f: &Finding) -> Option<u64> {
    match (&f.group, &f.flow) {
        (Some(g), _) => Some(g.flows),
        (None, Some(_)) => Some(1),
        (None, None) => None,
    }
}

/// The `pfc` table: per source, priority and bin, XOFF and XON frames and the time paused.
pub fn write_pfc(
    path: &Path,
    bins: &PfcBins,
    bin_ns: u64,
    note: Option<&(String, String)>,
) -> Result<(), Error> {
    let mut t = Table::create(path, "pfc", PFC_COLUMNS)?;
    if let Some((key, value)) = note {
        t.note(key, value);
    }
    for (&(mac, prio, start), &(xoff, xon, paused)) in bins {
        t.str(0, Some(&mac.to_string()));
        t.i32(1, Some(i32::from(prio)));
        t.i64(2, Some(start as i64));
        t.i64(3, Some((start / 1000) as i64));
        t.i64(4, Some(bin_ns as i64));
        t.i64(5, Some(xoff as i64));
        t.i64(6, Some(xon as i64));
        t.i64(7, Some(paused as i64));
        t.end_row()?;
    }
    t.close()
}
