//! `PacketSummary`: the few values of a decoded frame the analysis needs, small, `Copy` and
//! free of borrows, so frames can be decoded in parallel and analysed in order.

use std::net::IpAddr;

use roce_parsers::capture::Record;
use roce_parsers::frame::Truncation;
use roce_parsers::{mad, CmMessage, DecodeError, Frame, IcrcStatus, MacControl, Opcode, Psn, Qpn};
use roce_parsers::{IcmpError, MacAddr, TrafficClass};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoceSummary {
    pub opcode: Opcode,
    pub dqpn: Qpn,
    pub psn: Psn,
    pub ackreq: bool,
    pub fecn: bool,
    pub becn: bool,
    /// AETH syndrome and MSN.
    pub aeth: Option<(u8, u32)>,
    /// RETH DMA length.
    pub dma_len: Option<u32>,
    /// RETH virtual address and R_Key.
    pub reth_target: Option<(u64, u32)>,
    /// UDP source port (0 for RoCEv1 and native InfiniBand).
    pub sport: u16,
    /// IPv6 flow label (0 for IPv4, RoCEv1 and native InfiniBand): with the source port,
    /// what ECMP hashes to pick a path.
    pub flow_label: u32,
    /// UD source QP (DETH).
    pub sqpn: Option<Qpn>,
    pub payload_len: u32,
    pub icrc: IcrcStatus,
    pub v1: bool,
    /// Native InfiniBand (ERF captures): no IP, and ECN is not RoCE's.
    pub ib: bool,
    /// An RDMA-CM message carried in a UD SEND to QP 1.
    pub cm: Option<CmMessage>,
    /// What tells this frame from a resend of it: the IPv4 identification, the ICRC (when
    /// captured) and the length. The same frame captured twice has the same identity.
    pub identity: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload {
    Roce(RoceSummary),
    Pfc {
        cev: u16,
        quanta: [u16; 8],
    },
    Pause {
        quanta: u16,
    },
    /// An ICMP/ICMPv6 error about a RoCEv2 packet.
    IcmpError(IcmpError),
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketSummary {
    pub frame_no: u64,
    pub ts_ns: u64,
    /// The capture point of a set of files read as one (see `Record::point`).
    pub point: u16,
    /// Which capture of its input (see `Record::file`): a new one starts a segment.
    pub file: u16,
    pub len: u32,
    pub caplen: u32,
    pub linktype: u32,
    pub src_mac: Option<MacAddr>,
    pub dst_mac: Option<MacAddr>,
    pub addrs: Option<(IpAddr, IpAddr)>,
    /// Innermost VLAN tag: (VID, PCP).
    pub vlan: Option<(u16, u8)>,
    pub tclass: Option<TrafficClass>,
    pub malformed: bool,
    /// Why the frame is shorter than on the wire, if it is.
    pub truncation: Option<Truncation>,
    /// The ERSPAN session and GRE sequence number of a mirrored frame.
    pub mirror: Option<(u16, u32)>,
    /// The link the frame was seen on: its capture point and interface, and the mirror
    /// session or tunnel that carried it. VLANs are compared only within one link.
    pub link: u64,
    /// An ERSPAN III timestamp far from the record's time whatever its missing upper bits:
    /// the switch's clock is not on the Unix epoch.
    pub mirror_clock_off_epoch: bool,
    /// Why decoding stopped early, if it did (counted per layer, shown as a warning).
    pub error: Option<DecodeError>,
    pub payload: Payload,
}

/// See `RoceSummary::identity`. Without a captured ICRC the payload would not help: a resend
/// carries the same bytes, and hashing them cost 28% of a single-threaded run on a
/// snap-length capture.
fn identity(f: &Frame<'_>, r: &roce_parsers::RoceInfo<'_>) -> u64 {
    let ip_id = u64::from(f.ip.map_or(0, |ip| ip.ident));
    let icrc = u64::from(r.icrc.value.unwrap_or(0));
    icrc ^ ip_id << 48 ^ u64::from(f.len) << 32
}

/// See `PacketSummary::link`: the point and interface, and the outermost mirror session or
/// tunnel (its kind, endpoints, session, key or VNI) hashed in when there is one.
fn link_of(rec: &Record<'_>, f: &Frame<'_>) -> u64 {
    use std::hash::{Hash, Hasher};
    let local = u64::from(rec.point) << 32 | u64::from(rec.interface);
    let Some(e) = f.encaps().first() else {
        return local;
    };
    let mut h = rustc_hash::FxHasher::default();
    (local, e.kind.name(), e.outer, e.session, e.key, e.vni).hash(&mut h);
    h.finish() | 1 << 63
}

impl PacketSummary {
    pub fn new(frame_no: u64, rec: &Record<'_>, f: &Frame<'_>) -> Self {
        let payload = if let Some(r) = &f.roce {
            let b = &r.bth;
            Payload::Roce(RoceSummary {
                opcode: b.opcode,
                dqpn: Qpn(b.dqpn),
                psn: Psn::new(b.psn),
                ackreq: b.ackreq,
                fecn: b.fecn,
                becn: b.becn,
                aeth: r.ext.aeth.map(|a| (a.syndrome, a.msn)),
                dma_len: r.ext.reth.map(|x| x.dlen),
                reth_target: r.ext.reth.map(|x| (x.va, x.rkey)),
                sport: f.udp.map_or(0, |u| u.sport),
                flow_label: f.ip.and_then(|i| i.flow_label).unwrap_or(0),
                sqpn: r.ext.deth.map(|d| Qpn(d.sqpn)),
                payload_len: r.payload_len,
                icrc: r.icrc.status,
                v1: r.version == roce_parsers::RoceVersion::V1,
                ib: r.version == roce_parsers::RoceVersion::Ib,
                identity: identity(f, r),
                cm: if b.dqpn == 1 && r.ext.deth.is_some() {
                    mad::parse(r.payload)
                } else {
                    None
                },
            })
        } else {
            match f.mac_control {
                Some(MacControl::Pfc { cev, quanta }) => Payload::Pfc { cev, quanta },
                Some(MacControl::Pause { quanta }) => Payload::Pause { quanta },
                _ => f.icmp.map_or(Payload::Other, Payload::IcmpError),
            }
        };
        PacketSummary {
            frame_no,
            ts_ns: rec.ts_ns,
            point: rec.point,
            file: rec.file,
            len: f.len,
            caplen: f.caplen,
            linktype: f.linktype,
            src_mac: f.src_mac.map(MacAddr),
            dst_mac: f.dst_mac.map(MacAddr),
            addrs: f.addresses(),
            vlan: f.inner_vlan().map(|v| (v.vid, v.pcp)),
            tclass: f.traffic_class().map(TrafficClass),
            malformed: f.is_malformed(),
            truncation: f.truncation(),
            mirror: f.encaps().iter().find_map(|e| {
                Some((e.session.unwrap_or(0), e.seq?)).filter(|_| e.kind.is_erspan())
            }),
            link: link_of(rec, f),
            mirror_clock_off_epoch: f
                .encaps()
                .iter()
                .any(|e| e.timestamp_ns_near(rec.ts_ns).is_err()),
            error: f.error,
            payload,
        }
    }

    pub fn roce(&self) -> Option<&RoceSummary> {
        match &self.payload {
            Payload::Roce(r) => Some(r),
            _ => None,
        }
    }
}
