//! The per-frame views of `--packets`: a tcpdump-like line, or one JSON object per line (NDJSON).
//! The JSON names are a public interface described in docs/json.md; keep them stable.

use std::fmt::{self, Write as _};
use std::io::{self, Write};
use std::net::IpAddr;

use roce_parsers::aeth::Aeth;
use roce_parsers::capture::Record;
use roce_parsers::link::linktype_name;
use roce_parsers::{
    AethKind, Ecn, Encap, EncapKind, Frame, IcrcStatus, MacAddr, MacControl, NakCode, RoceInfo,
    RoceVersion, TrafficClass,
};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use crate::decode::decode;
use crate::decode::summary::PacketSummary;

/// A value serialized as its `Display` text (MAC addresses).
struct AsText<T>(T);

impl<T: fmt::Display> Serialize for AsText<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

/// A 32-bit value shown as `0x%08x`.
struct Hex32(u32);

impl Serialize for Hex32 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{:#010x}", self.0))
    }
}

fn ts_seconds(ts_ns: u64) -> f64 {
    (ts_ns / 1_000_000_000) as f64 + (ts_ns % 1_000_000_000) as f64 / 1e9
}

/// One frame as a JSON object. Absent headers are absent keys.
pub struct FrameJson<'a, 'f> {
    pub frame_no: u64,
    pub ts_ns: u64,
    pub frame: &'a Frame<'f>,
    /// The input file, when several are read as one capture, and the frame's number in it.
    pub file: Option<(&'a str, u64)>,
}

impl Serialize for FrameJson<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let f = self.frame;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("frame", &self.frame_no)?;
        if let Some((file, file_frame)) = self.file {
            m.serialize_entry("file", file)?;
            m.serialize_entry("file_frame", &file_frame)?;
        }
        m.serialize_entry("ts", &ts_seconds(self.ts_ns))?;
        m.serialize_entry("ts_ns", &self.ts_ns)?;
        m.serialize_entry("len", &f.len)?;
        m.serialize_entry("caplen", &f.caplen)?;
        m.serialize_entry("kind", frame_kind(f))?;
        if let Some(t) = f.truncation() {
            m.serialize_entry("truncated", t.name())?;
        }
        if !f.encaps().is_empty() {
            let layers: Vec<EncapJson> = f
                .encaps()
                .iter()
                .map(|e| EncapJson::of(e, self.ts_ns))
                .collect();
            m.serialize_entry("encap", &layers)?;
        }
        link_entries(&mut m, f)?;
        network_entries(&mut m, f)?;
        if let Some(r) = &f.roce {
            roce_entries(&mut m, r)?;
        }
        control_entries(&mut m, f)?;
        m.end()
    }
}

/// One outer layer (mirror session or tunnel): `type` and the fields of its kind.
#[derive(Serialize)]
struct EncapJson {
    r#type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    src: Option<IpAddr>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dst: Option<IpAddr>,
    #[serde(skip_serializing_if = "Option::is_none")]
    protocol: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seq: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    session: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    index: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    vlan: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cos: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    truncated: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    direction: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timestamp: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    granularity: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ts_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    vni: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    labels: Option<Vec<u32>>,
}

impl EncapJson {
    /// `e`, of a record captured at `capture_ns`.
    fn of(e: &Encap, capture_ns: u64) -> Self {
        let erspan = matches!(
            e.kind,
            EncapKind::Erspan1 | EncapKind::Erspan2 | EncapKind::Erspan3
        );
        EncapJson {
            r#type: e.kind.name(),
            src: e.outer.map(|o| o.0),
            dst: e.outer.map(|o| o.1),
            protocol: e.gre_protocol,
            key: e.key,
            seq: e.seq,
            session: e.session,
            index: e.index,
            vlan: e.vlan,
            cos: e.cos,
            truncated: erspan.then_some(e.truncated),
            direction: e
                .direction
                .map(|d| if d == 0 { "ingress" } else { "egress" }),
            timestamp: e.timestamp,
            granularity: e.granularity,
            ts_ns: e.timestamp_ns_near(capture_ns).ok().flatten(),
            vni: e.vni,
            labels: (e.kind == EncapKind::Mpls).then(|| e.labels().to_vec()),
        }
    }
}

/// The encapsulation in the text view: `erspan2 session 5 seq 9 | `, `vxlan vni 42 | `...
fn text_encaps(line: &mut String, f: &Frame<'_>) {
    for e in f.encaps() {
        line.push_str(e.kind.name());
        if let Some(s) = e.session {
            let _ = write!(line, " session {s}");
        }
        if let Some(s) = e.seq {
            let _ = write!(line, " seq {s}");
        }
        if let Some(v) = e.vni {
            let _ = write!(line, " vni {v}");
        }
        if e.kind == EncapKind::Mpls {
            let labels: Vec<String> = e.labels().iter().map(u32::to_string).collect();
            let _ = write!(line, " {}", labels.join(","));
        }
        if e.truncated {
            line.push_str(" T");
        }
        line.push_str(" | ");
    }
}

/// `eth` (or `link` for other link types) and `vlan`.
fn link_entries<M: SerializeMap>(m: &mut M, f: &Frame<'_>) -> Result<(), M::Error> {
    if let (Some(src), Some(dst)) = (f.src_mac, f.dst_mac) {
        m.serialize_entry(
            "eth",
            &EthJson {
                src: AsText(MacAddr(src)),
                dst: AsText(MacAddr(dst)),
                r#type: f.ethertype,
            },
        )?;
    } else if f.linktype != roce_parsers::link::LINKTYPE_ETHERNET {
        m.serialize_entry("link", linktype_name(f.linktype))?;
    }
    if !f.vlans().is_empty() {
        let tags: Vec<VlanJson> = f
            .vlans()
            .iter()
            .map(|v| VlanJson {
                tpid: v.tpid,
                vid: v.vid,
                pcp: v.pcp,
                dei: v.dei,
            })
            .collect();
        m.serialize_entry("vlan", &tags)?;
    }
    Ok(())
}

/// `ip`, `lrh`, `grh` and `udp`.
fn network_entries<M: SerializeMap>(m: &mut M, f: &Frame<'_>) -> Result<(), M::Error> {
    if let Some(ip) = &f.ip {
        m.serialize_entry(
            "ip",
            &IpJson {
                version: ip.version,
                src: ip.src,
                dst: ip.dst,
                dscp: ip.dscp,
                ecn: Ecn::from_bits(ip.ecn).name(),
                ttl: ip.ttl,
                flow_label: ip.flow_label,
            },
        )?;
    }
    if let Some(l) = &f.lrh {
        m.serialize_entry(
            "lrh",
            &LrhJson {
                vl: l.vl,
                sl: l.sl,
                lnh: l.lnh,
                dlid: l.dlid,
                slid: l.slid,
                pkt_len: l.pkt_len,
            },
        )?;
    }
    if let Some(g) = &f.grh {
        let (src, dst) = f
            .addresses()
            .unwrap_or((IpAddr::from([0u8; 16]), IpAddr::from([0u8; 16])));
        m.serialize_entry(
            "grh",
            &GrhJson {
                sgid: src,
                dgid: dst,
                dscp: TrafficClass(g.traffic_class).dscp(),
                ecn: TrafficClass(g.traffic_class).ecn().name(),
                hop_limit: g.hop_limit,
                flow_label: g.flow_label,
            },
        )?;
    }
    if let Some(u) = &f.udp {
        m.serialize_entry(
            "udp",
            &UdpJson {
                sport: u.sport,
                dport: u.dport,
            },
        )?;
    }
    Ok(())
}

/// `bth`, the extension headers, `payload_len` and `icrc`.
fn roce_entries<M: SerializeMap>(m: &mut M, r: &RoceInfo<'_>) -> Result<(), M::Error> {
    let b = &r.bth;
    m.serialize_entry(
        "bth",
        &BthJson {
            opcode: b.opcode.0,
            op: b.opcode.name(),
            se: b.se,
            m: b.m,
            pad: b.pad,
            tver: b.tver,
            pkey: b.pkey,
            fecn: b.fecn,
            becn: b.becn,
            dqpn: b.dqpn,
            ackreq: b.ackreq,
            psn: b.psn,
        },
    )?;
    let e = &r.ext;
    if let Some(d) = &e.deth {
        m.serialize_entry(
            "deth",
            &DethJson {
                qkey: d.qkey,
                sqpn: d.sqpn,
            },
        )?;
    }
    if let Some(x) = e.xrc_srqn {
        m.serialize_entry("xrceth", &XrcJson { srqn: x })?;
    }
    if let Some(reth) = &e.reth {
        m.serialize_entry(
            "reth",
            &RethJson {
                va: reth.va,
                rkey: reth.rkey,
                dlen: reth.dlen,
            },
        )?;
    }
    if let Some(a) = &e.atomic {
        m.serialize_entry(
            "atomic",
            &AtomicJson {
                va: a.va,
                rkey: a.rkey,
                swap_add: a.swap_add,
                compare: a.compare,
            },
        )?;
    }
    if let Some(a) = &e.aeth {
        m.serialize_entry("aeth", &aeth_json(a))?;
    }
    if let Some(a) = &e.atomic_ack {
        m.serialize_entry("atomic_ack", &AtomicAckJson { orig: a.orig_data })?;
    }
    if let Some(imm) = e.imm {
        m.serialize_entry("imm", &imm)?;
    }
    if let Some(ieth) = e.ieth {
        m.serialize_entry("ieth", &ieth)?;
    }
    m.serialize_entry("payload_len", &r.payload_len)?;
    m.serialize_entry(
        "icrc",
        &IcrcJson {
            value: r.icrc.value.map(Hex32),
            computed: match r.icrc.status {
                IcrcStatus::Bad => r.icrc.computed.map(Hex32),
                _ => None,
            },
            status: r.icrc.status.name(),
        },
    )?;
    Ok(())
}

/// `pfc`, `pause` or `mac_control`, and the decode `error` when there is one to show.
fn control_entries<M: SerializeMap>(m: &mut M, f: &Frame<'_>) -> Result<(), M::Error> {
    match f.mac_control {
        Some(MacControl::Pfc { cev, quanta }) => {
            m.serialize_entry("pfc", &PfcJson { cev, quanta })?
        }
        Some(MacControl::Pause { quanta }) => m.serialize_entry("pause", &PauseJson { quanta })?,
        Some(MacControl::Other { opcode }) => {
            m.serialize_entry("mac_control", &MacControlJson { opcode })?
        }
        None => {}
    }
    if let Some(e) = &f.icmp {
        m.serialize_entry(
            "icmp",
            &IcmpJson {
                r#type: e.icmp_type,
                code: e.code,
                name: e.name(),
                mtu: e.mtu,
                quoted: QuotedJson {
                    src: AsText(e.src),
                    dst: AsText(e.dst),
                    dqpn: e.dqpn,
                    psn: e.psn,
                },
            },
        )?;
    }
    if let Some(err) = f.error {
        if f.is_malformed() || !matches!(err, roce_parsers::DecodeError::Truncated { .. }) {
            m.serialize_entry("error", &format_args!("{err}").to_string())?;
        }
    }
    Ok(())
}

/// A short word for what a frame is: `rocev2`, `rocev1`, `pfc`, `pause`, `mac_control`, `ip`,
/// `other`.
fn frame_kind(f: &Frame<'_>) -> &'static str {
    if let Some(r) = &f.roce {
        return match r.version {
            RoceVersion::V2 => "rocev2",
            RoceVersion::V1 => "rocev1",
            RoceVersion::Ib => "ib",
        };
    }
    match f.mac_control {
        Some(MacControl::Pfc { .. }) => "pfc",
        Some(MacControl::Pause { .. }) => "pause",
        Some(MacControl::Other { .. }) => "mac_control",
        None if f.ip.is_some() => "ip",
        None => "other",
    }
}

#[derive(Serialize)]
struct IcmpJson {
    r#type: u8,
    code: u8,
    name: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    mtu: Option<u32>,
    quoted: QuotedJson,
}

/// The RoCE packet an ICMP error quotes.
#[derive(Serialize)]
struct QuotedJson {
    src: AsText<std::net::IpAddr>,
    dst: AsText<std::net::IpAddr>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dqpn: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    psn: Option<u32>,
}

#[derive(Serialize)]
struct EthJson {
    src: AsText<MacAddr>,
    dst: AsText<MacAddr>,
    #[serde(skip_serializing_if = "Option::is_none")]
    r#type: Option<u16>,
}

#[derive(Serialize)]
struct VlanJson {
    tpid: u16,
    vid: u16,
    pcp: u8,
    dei: bool,
}

#[derive(Serialize)]
struct IpJson {
    version: u8,
    src: IpAddr,
    dst: IpAddr,
    dscp: u8,
    ecn: &'static str,
    ttl: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    flow_label: Option<u32>,
}

#[derive(Serialize)]
struct LrhJson {
    vl: u8,
    sl: u8,
    lnh: u8,
    dlid: u16,
    slid: u16,
    pkt_len: u16,
}

#[derive(Serialize)]
struct GrhJson {
    sgid: IpAddr,
    dgid: IpAddr,
    dscp: u8,
    ecn: &'static str,
    hop_limit: u8,
    flow_label: u32,
}

#[derive(Serialize)]
struct UdpJson {
    sport: u16,
    dport: u16,
}

#[derive(Serialize)]
struct BthJson {
    opcode: u8,
    op: &'static str,
    se: bool,
    m: bool,
    pad: u8,
    tver: u8,
    pkey: u16,
    fecn: bool,
    becn: bool,
    dqpn: u32,
    ackreq: bool,
    psn: u32,
}

#[derive(Serialize)]
struct DethJson {
    qkey: u32,
    sqpn: u32,
}

#[derive(Serialize)]
struct XrcJson {
    srqn: u32,
}

#[derive(Serialize)]
struct RethJson {
    va: u64,
    rkey: u32,
    dlen: u32,
}

#[derive(Serialize)]
struct AtomicJson {
    va: u64,
    rkey: u32,
    swap_add: u64,
    compare: u64,
}

#[derive(Serialize)]
struct AtomicAckJson {
    orig: u64,
}

#[derive(Serialize)]
struct AethJson {
    kind: &'static str,
    value: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<&'static str>,
    syndrome: u8,
    msn: u32,
}

fn aeth_json(a: &Aeth) -> AethJson {
    AethJson {
        kind: a.kind().name(),
        value: a.value(),
        code: a.nak_code().map(NakCode::name),
        syndrome: a.syndrome,
        msn: a.msn,
    }
}

#[derive(Serialize)]
struct IcrcJson {
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<Hex32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    computed: Option<Hex32>,
    status: &'static str,
}

#[derive(Serialize)]
struct PfcJson {
    cev: u16,
    quanta: [u16; 8],
}

#[derive(Serialize)]
struct PauseJson {
    quanta: u16,
}

#[derive(Serialize)]
struct MacControlJson {
    opcode: u16,
}

/// Writes one NDJSON line.
pub fn write_json_line(
    out: &mut (impl Write + ?Sized),
    frame_no: u64,
    ts_ns: u64,
    f: &Frame<'_>,
) -> io::Result<()> {
    serde_json::to_writer(
        &mut *out,
        &FrameJson {
            frame_no,
            ts_ns,
            frame: f,
            file: None,
        },
    )
    .map_err(io::Error::from)?;
    out.write_all(b"\n")
}

/// Time since the capture's first frame, shown to the microsecond, or to the nanosecond when
/// the capture's timestamps are that fine.
#[derive(Debug, Clone, Copy)]
pub struct RelativeTime {
    pub ns: u64,
    pub nanosecond: bool,
}

/// Writes one tcpdump-like line: frame number, time since the first frame, addresses, VLAN and
/// PCP, DSCP/ECN, then the transport fields.
pub fn write_text_line(
    out: &mut (impl Write + ?Sized),
    frame_no: u64,
    time: RelativeTime,
    f: &Frame<'_>,
    line: &mut String,
) -> io::Result<()> {
    line.clear();
    let secs = time.ns / 1_000_000_000;
    let _ = if time.nanosecond {
        write!(line, "{frame_no:>7} {secs}.{:09} ", time.ns % 1_000_000_000)
    } else {
        write!(
            line,
            "{frame_no:>7} {secs}.{:06} ",
            (time.ns % 1_000_000_000) / 1000
        )
    };
    text_encaps(line, f);
    text_addresses(line, f);
    if let Some(r) = &f.roce {
        text_roce(line, f, r);
    } else if let Some(mc) = f.mac_control {
        text_mac_control(line, f, mc);
    } else if let Some(e) = &f.icmp {
        let _ = write!(line, "ICMP {} about RoCE {} > {}", e.name(), e.src, e.dst);
        if let Some(q) = e.dqpn {
            let _ = write!(line, " qp {q:#08x}");
        }
        if let Some(mtu) = e.mtu {
            let _ = write!(line, " mtu {mtu}");
        }
    } else if let Some(u) = &f.udp {
        let _ = write!(line, "UDP {} > {} len {}", u.sport, u.dport, u.len);
    } else if let Some(ip) = &f.ip {
        let _ = write!(line, "IPv{}", ip.version);
    } else if let Some(t) = f.ethertype {
        let _ = write!(line, "ethertype {t:#06x}");
    }
    if f.is_snapped() {
        let _ = write!(line, " [{} of {} bytes]", f.caplen, f.len);
    }
    if let Some(err) = f.error {
        if f.is_malformed() || !matches!(err, roce_parsers::DecodeError::Truncated { .. }) {
            let _ = write!(line, " [malformed: {err}]");
        }
    }
    line.push('\n');
    out.write_all(line.as_bytes())
}

/// VLAN tags, LIDs, addresses and DSCP/ECN.
fn text_addresses(line: &mut String, f: &Frame<'_>) {
    for v in f.vlans() {
        let _ = write!(line, "vlan {} p{} ", v.vid, v.pcp);
    }
    if let Some(l) = &f.lrh {
        let _ = write!(
            line,
            "IB lid {} > {} sl {} vl {} ",
            l.slid, l.dlid, l.sl, l.vl
        );
    }
    if let Some((src, dst)) = f.addresses() {
        let _ = write!(line, "{src} > {dst} ");
    } else if let (Some(src), Some(dst)) = (f.src_mac, f.dst_mac) {
        let _ = write!(line, "{} > {} ", MacAddr(src), MacAddr(dst));
    }
    if let Some(tc) = f.traffic_class() {
        let tc = TrafficClass(tc);
        let _ = write!(line, "dscp {} {} ", tc.dscp(), tc.ecn().name());
    }
}

/// The BTH, its flags, the extension headers, the payload length and the ICRC.
fn text_roce(line: &mut String, f: &Frame<'_>, r: &RoceInfo<'_>) {
    let b = &r.bth;
    if r.version == RoceVersion::V1 {
        line.push_str("RoCEv1 ");
    } else if let Some(u) = f.udp.filter(|u| u.sport != roce_parsers::ROCEV2_UDP_PORT) {
        let _ = write!(line, "sport {} ", u.sport);
    }
    let _ = write!(line, "{} qp {:#08x} psn {}", b.opcode, b.dqpn, b.psn);
    for (set, flag) in [
        (b.ackreq, " A"),
        (b.se, " SE"),
        (b.fecn, " FECN"),
        (b.becn, " BECN"),
    ] {
        if set {
            line.push_str(flag);
        }
    }
    text_ext_headers(line, r);
    let _ = write!(line, " payload {}", r.payload_len);
    match r.icrc.status {
        IcrcStatus::Ok => {}
        IcrcStatus::Bad => {
            let _ = write!(
                line,
                " ICRC BAD {:#010x} (expected {:#010x})",
                r.icrc.value.unwrap_or(0),
                r.icrc.computed.unwrap_or(0)
            );
        }
        IcrcStatus::Unchecked => line.push_str(" icrc unchecked"),
    }
}

fn text_ext_headers(line: &mut String, r: &RoceInfo<'_>) {
    let e = &r.ext;
    if let Some(d) = &e.deth {
        let _ = write!(line, " sqp {:#x} qkey {:#x}", d.sqpn, d.qkey);
    }
    if let Some(reth) = &e.reth {
        let _ = write!(
            line,
            " reth va {:#x} rkey {:#x} len {}",
            reth.va, reth.rkey, reth.dlen
        );
    }
    if let Some(a) = &e.atomic {
        let _ = write!(
            line,
            " atomic va {:#x} swap/add {} cmp {}",
            a.va, a.swap_add, a.compare
        );
    }
    if let Some(a) = &e.aeth {
        let _ = match a.kind() {
            AethKind::Ack => write!(line, " aeth ack credits {} msn {}", a.value(), a.msn),
            AethKind::RnrNak => write!(line, " aeth rnr_nak timer {} msn {}", a.value(), a.msn),
            AethKind::Nak => write!(
                line,
                " aeth NAK {} msn {}",
                NakCode::from_value(a.value()).name(),
                a.msn
            ),
            AethKind::Reserved => write!(
                line,
                " aeth reserved syndrome {:#04x} msn {}",
                a.syndrome, a.msn
            ),
        };
    }
    if let Some(imm) = e.imm {
        let _ = write!(line, " imm {imm:#x}");
    }
    if let Some(ieth) = e.ieth {
        let _ = write!(line, " inv rkey {ieth:#x}");
    }
}

fn text_mac_control(line: &mut String, f: &Frame<'_>, mc: MacControl) {
    let src = f
        .src_mac
        .map(|m| MacAddr(m).to_string())
        .unwrap_or_default();
    let _ = match mc {
        MacControl::Pfc { cev, quanta } => {
            let _ = write!(line, "PFC from {src} cev {cev:#04x}");
            for (prio, q) in quanta.iter().enumerate() {
                if cev & (1 << prio) != 0 {
                    let _ = match q {
                        0 => write!(line, " p{prio}:XON"),
                        q => write!(line, " p{prio}:{q}"),
                    };
                }
            }
            Ok(())
        }
        MacControl::Pause { quanta } => write!(line, "PAUSE from {src} quanta {quanta}"),
        MacControl::Other { opcode } => write!(line, "MAC Control opcode {opcode:#06x}"),
    };
}

/// The form of `--packets` output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketFormat {
    /// One tcpdump-like line per frame.
    Text,
    /// One JSON object per line (NDJSON).
    Json,
}

/// How frames are printed: shared by the decoding threads.
#[derive(Debug, Clone)]
pub struct PrintSettings {
    pub format: PacketFormat,
    /// Leave out frames that are neither RoCE nor PFC/PAUSE.
    pub roce_only: bool,
    /// The input files when several are read as one (NDJSON names each frame's).
    pub inputs: Vec<String>,
    pub decode: roce_parsers::DecodeOptions,
}

/// A batch of frames printed (on a decoding thread), with their summaries for the counters
/// and the analysis.
pub struct PrintedChunk {
    pub summaries: Vec<PacketSummary>,
    /// The lines of the frames printed, in order.
    pub text: Vec<u8>,
    /// A text line's room, reused.
    line: String,
}

impl PrintedChunk {
    pub fn with_capacity(frames: usize) -> Self {
        PrintedChunk {
            summaries: Vec::with_capacity(frames),
            text: Vec::with_capacity(frames * 256),
            line: String::with_capacity(256),
        }
    }

    pub fn clear(&mut self) {
        self.summaries.clear();
        self.text.clear();
    }

    /// Decodes record `rec`, summarizes it, and prints it unless `roce_only` leaves it out;
    /// text lines tell the time since `capture_start_ns`.
    pub fn print(
        &mut self,
        settings: &PrintSettings,
        rec: &Record<'_>,
        capture_start_ns: u64,
        nanosecond_times: bool,
    ) {
        let frame_no = rec.frame;
        let frame = decode(rec, settings.decode);
        self.summaries
            .push(PacketSummary::new(frame_no, rec, &frame));
        if settings.roce_only && frame.roce.is_none() && frame.mac_control.is_none() {
            return;
        }
        // Writing into a Vec cannot fail.
        let _ = match settings.format {
            PacketFormat::Json => {
                let json = FrameJson {
                    frame_no,
                    ts_ns: rec.ts_ns,
                    frame: &frame,
                    file: settings
                        .inputs
                        .get(usize::from(rec.input))
                        .map(|name| (name.as_str(), rec.input_frame)),
                };
                serde_json::to_writer(&mut self.text, &json)
                    .map_err(io::Error::from)
                    .and_then(|_| self.text.write_all(b"\n"))
            }
            PacketFormat::Text => {
                let time = RelativeTime {
                    ns: rec.ts_ns.saturating_sub(capture_start_ns),
                    nanosecond: nanosecond_times,
                };
                write_text_line(&mut self.text, frame_no, time, &frame, &mut self.line)
            }
        };
    }
}
