//! Frame builders: Ethernet (with any VLAN stack), IPv4/IPv6, UDP 4791, BTH, extension headers,
//! payload, pad and a valid (or deliberately wrong) ICRC; RoCEv1; PFC and PAUSE.

use std::net::{Ipv4Addr, Ipv6Addr};

use roce_parsers::aeth::Aeth;
use roce_parsers::atomic::AtomicEth;
use roce_parsers::bth::BTH_LEN;
use roce_parsers::deth::Deth;
use roce_parsers::grh::{Grh, NEXT_HEADER_BTH};
use roce_parsers::icrc::{self, NetHeader};
use roce_parsers::pfc::MAC_CONTROL_DST;
use roce_parsers::reth::Reth;
use roce_parsers::{Bth, MacControl, Opcode, ETHERTYPE_MAC_CONTROL, ETHERTYPE_ROCEV1};

pub const TPID_8021Q: u16 = 0x8100;
pub const TPID_8021AD: u16 = 0x88a8;

/// The link part of a frame.
#[derive(Debug, Clone)]
pub struct FrameSpec {
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    /// (TPID, PCP, DEI, VID), outermost first.
    pub vlans: Vec<(u16, u8, bool, u16)>,
}

impl FrameSpec {
    pub fn new(src_mac: [u8; 6], dst_mac: [u8; 6]) -> Self {
        FrameSpec {
            src_mac,
            dst_mac,
            vlans: Vec::new(),
        }
    }

    /// Adds an 802.1Q tag (innermost so far).
    pub fn vlan(mut self, vid: u16, pcp: u8) -> Self {
        self.vlans.push((TPID_8021Q, pcp, false, vid));
        self
    }

    pub fn tag(mut self, tpid: u16, vid: u16, pcp: u8, dei: bool) -> Self {
        self.vlans.push((tpid, pcp, dei, vid));
        self
    }

    fn ethernet(&self, ethertype: u16, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.dst_mac);
        out.extend_from_slice(&self.src_mac);
        for &(tpid, pcp, dei, vid) in &self.vlans {
            out.extend_from_slice(&tpid.to_be_bytes());
            let tci = (u16::from(pcp & 7) << 13) | (u16::from(dei) << 12) | (vid & 0x0fff);
            out.extend_from_slice(&tci.to_be_bytes());
        }
        out.extend_from_slice(&ethertype.to_be_bytes());
    }
}

/// The network part of a RoCEv2 frame.
#[derive(Debug, Clone, Copy)]
pub enum Net {
    V4 {
        src: Ipv4Addr,
        dst: Ipv4Addr,
        tos: u8,
        ttl: u8,
    },
    V6 {
        src: Ipv6Addr,
        dst: Ipv6Addr,
        tclass: u8,
        flow_label: u32,
        hop_limit: u8,
    },
}

impl Net {
    pub fn v4(src: [u8; 4], dst: [u8; 4], tos: u8) -> Self {
        Net::V4 {
            src: src.into(),
            dst: dst.into(),
            tos,
            ttl: 64,
        }
    }

    pub fn with_tos(self, tos: u8) -> Self {
        match self {
            Net::V4 { src, dst, ttl, .. } => Net::V4 { src, dst, tos, ttl },
            Net::V6 {
                src,
                dst,
                flow_label,
                hop_limit,
                ..
            } => Net::V6 {
                src,
                dst,
                tclass: tos,
                flow_label,
                hop_limit,
            },
        }
    }

    /// The same path in the other direction.
    pub fn reversed(self) -> Self {
        match self {
            Net::V4 { src, dst, tos, ttl } => Net::V4 {
                src: dst,
                dst: src,
                tos,
                ttl,
            },
            Net::V6 {
                src,
                dst,
                tclass,
                flow_label,
                hop_limit,
            } => Net::V6 {
                src: dst,
                dst: src,
                tclass,
                flow_label,
                hop_limit,
            },
        }
    }
}

/// The transport part: BTH fields and extension headers. Headers the opcode requires but that
/// are left `None` are written with zeros, so the layout always matches the opcode.
#[derive(Debug, Clone, Copy)]
pub struct RoceSpec {
    pub bth: Bth,
    pub reth: Option<Reth>,
    pub aeth: Option<Aeth>,
    pub deth: Option<Deth>,
    pub atomic: Option<AtomicEth>,
    pub atomic_ack: Option<u64>,
    pub imm: Option<u32>,
    pub ieth: Option<u32>,
    pub xrc_srqn: Option<u32>,
    pub payload_len: usize,
    /// A MAD as the payload (always 256 bytes); without it, `payload_len` bytes counting up.
    pub mad: Option<[u8; 256]>,
    /// Flip the ICRC so that it is wrong.
    pub corrupt_icrc: bool,
}

impl RoceSpec {
    pub fn new(opcode: u8, dqpn: u32, psn: u32) -> Self {
        RoceSpec {
            bth: Bth {
                opcode: Opcode(opcode),
                se: false,
                m: false,
                pad: 0,
                tver: 0,
                pkey: 0xffff,
                fecn: false,
                becn: opcode == Opcode::CNP.0,
                dqpn,
                ackreq: false,
                psn,
            },
            reth: None,
            aeth: None,
            deth: None,
            atomic: None,
            atomic_ack: None,
            imm: None,
            ieth: None,
            xrc_srqn: None,
            payload_len: 0,
            mad: None,
            corrupt_icrc: false,
        }
    }

    /// A MAD as the payload.
    pub fn mad(mut self, mad: [u8; 256]) -> Self {
        self.payload_len = mad.len();
        self.mad = Some(mad);
        self
    }

    pub fn ackreq(mut self) -> Self {
        self.bth.ackreq = true;
        self
    }

    pub fn payload(mut self, len: usize) -> Self {
        self.payload_len = len;
        self
    }

    pub fn reth(mut self, va: u64, rkey: u32, dlen: u32) -> Self {
        self.reth = Some(Reth { va, rkey, dlen });
        self
    }

    pub fn aeth(mut self, syndrome: u8, msn: u32) -> Self {
        self.aeth = Some(Aeth { syndrome, msn });
        self
    }

    /// BTH, extension headers, payload and pad (everything the ICRC covers after UDP).
    fn transport(&self, out: &mut Vec<u8>) {
        let layout = self.bth.opcode.ext_layout();
        let mut bth = self.bth;
        bth.pad = ((4 - self.payload_len % 4) % 4) as u8;
        let mut raw = [0u8; BTH_LEN];
        bth.emit(&mut raw);
        out.extend_from_slice(&raw);
        if layout.deth {
            self.deth.unwrap_or(Deth { qkey: 0, sqpn: 0 }).emit(out);
        }
        if layout.xrceth {
            out.extend_from_slice(&self.xrc_srqn.unwrap_or(0).to_be_bytes());
        }
        if layout.reth {
            self.reth
                .unwrap_or(Reth {
                    va: 0,
                    rkey: 0,
                    dlen: 0,
                })
                .emit(out);
        }
        if layout.atomic_eth {
            self.atomic
                .unwrap_or(AtomicEth {
                    va: 0,
                    rkey: 0,
                    swap_add: 0,
                    compare: 0,
                })
                .emit(out);
        }
        if layout.aeth {
            self.aeth
                .unwrap_or(Aeth {
                    syndrome: 0x1f,
                    msn: 0,
                })
                .emit(out);
        }
        if layout.atomic_ack_eth {
            out.extend_from_slice(&self.atomic_ack.unwrap_or(0).to_be_bytes());
        }
        if layout.immdt {
            out.extend_from_slice(&self.imm.unwrap_or(0).to_be_bytes());
        }
        if layout.ieth {
            out.extend_from_slice(&self.ieth.unwrap_or(0).to_be_bytes());
        }
        if layout.cnp_reserved {
            out.extend_from_slice(&[0u8; 16]);
        }
        match &self.mad {
            Some(bytes) => out.extend_from_slice(bytes),
            None => out.extend((0..self.payload_len).map(|i| (i % 251) as u8)),
        }
        out.extend(std::iter::repeat_n(0u8, usize::from(bth.pad)));
    }

    fn icrc(&self, crc: u32) -> [u8; 4] {
        let crc = if self.corrupt_icrc { !crc } else { crc };
        icrc::trailer(crc)
    }
}

/// The Internet checksum (RFC 1071) of `header`: IPv4 headers, ICMP messages.
pub fn internet_checksum(header: &[u8]) -> u16 {
    let mut sum = 0u32;
    for pair in header.chunks(2) {
        sum += u32::from(u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An IPv4 header (no options, DF set unless `df` is false) with a valid checksum.
pub fn ipv4_header(
    src: [u8; 4],
    dst: [u8; 4],
    tos: u8,
    ttl: u8,
    proto: u8,
    payload_len: u16,
    df: bool,
) -> [u8; 20] {
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[1] = tos;
    ip[2..4].copy_from_slice(&(20 + payload_len).to_be_bytes());
    if df {
        ip[6] = 0x40;
    }
    ip[8] = ttl;
    ip[9] = proto;
    ip[12..16].copy_from_slice(&src);
    ip[16..20].copy_from_slice(&dst);
    let ck = internet_checksum(&ip);
    ip[10..12].copy_from_slice(&ck.to_be_bytes());
    ip
}

/// Pads a frame to the Ethernet minimum of 60 bytes (without FCS), as NICs do.
fn pad_min(mut frame: Vec<u8>) -> Vec<u8> {
    if frame.len() < 60 {
        frame.resize(60, 0);
    }
    frame
}

/// A complete RoCEv2 frame.
pub fn rocev2(link: &FrameSpec, net: Net, sport: u16, roce: &RoceSpec) -> Vec<u8> {
    let mut transport = Vec::with_capacity(64 + roce.payload_len);
    roce.transport(&mut transport);
    let udp_len = (8 + transport.len() + 4) as u16;
    let mut udp = [0u8; 8];
    udp[0..2].copy_from_slice(&sport.to_be_bytes());
    udp[2..4].copy_from_slice(&roce_parsers::ROCEV2_UDP_PORT.to_be_bytes());
    udp[4..6].copy_from_slice(&udp_len.to_be_bytes());

    let mut frame = Vec::with_capacity(128 + transport.len());
    match net {
        Net::V4 { src, dst, tos, ttl } => {
            link.ethernet(0x0800, &mut frame);
            let ip = ipv4_header(src.octets(), dst.octets(), tos, ttl, 17, udp_len, true);
            let crc = icrc::compute(NetHeader::Ipv4(&ip), &udp, &transport);
            frame.extend_from_slice(&ip);
            frame.extend_from_slice(&udp);
            frame.extend_from_slice(&transport);
            frame.extend_from_slice(&roce.icrc(crc));
        }
        Net::V6 {
            src,
            dst,
            tclass,
            flow_label,
            hop_limit,
        } => {
            link.ethernet(0x86dd, &mut frame);
            let mut ip = [0u8; 40];
            let word = (6u32 << 28) | (u32::from(tclass) << 20) | (flow_label & 0xfffff);
            ip[0..4].copy_from_slice(&word.to_be_bytes());
            ip[4..6].copy_from_slice(&udp_len.to_be_bytes());
            ip[6] = 17;
            ip[7] = hop_limit;
            ip[8..24].copy_from_slice(&src.octets());
            ip[24..40].copy_from_slice(&dst.octets());
            let crc = icrc::compute(
                NetHeader::Ipv6 {
                    header: &ip,
                    exts: &[],
                },
                &udp,
                &transport,
            );
            frame.extend_from_slice(&ip);
            frame.extend_from_slice(&udp);
            frame.extend_from_slice(&transport);
            frame.extend_from_slice(&roce.icrc(crc));
        }
    }
    pad_min(frame)
}

/// A complete RoCEv1 frame (ethertype 0x8915, GRH).
pub fn rocev1(
    link: &FrameSpec,
    sgid: Ipv6Addr,
    dgid: Ipv6Addr,
    tclass: u8,
    roce: &RoceSpec,
) -> Vec<u8> {
    let mut transport = Vec::new();
    roce.transport(&mut transport);
    let grh = Grh {
        ip_version: 6,
        traffic_class: tclass,
        flow_label: 0,
        payload_len: (transport.len() + 4) as u16,
        next_header: NEXT_HEADER_BTH,
        hop_limit: 64,
        sgid: sgid.octets(),
        dgid: dgid.octets(),
    };
    let mut grh_raw = Vec::with_capacity(40);
    grh.emit(&mut grh_raw);
    let crc = icrc::compute(NetHeader::Grh(&grh_raw), &[], &transport);
    let mut frame = Vec::new();
    link.ethernet(ETHERTYPE_ROCEV1, &mut frame);
    frame.extend_from_slice(&grh_raw);
    frame.extend_from_slice(&transport);
    frame.extend_from_slice(&roce.icrc(crc));
    pad_min(frame)
}

/// An 802.1Qbb PFC frame from `src_mac`.
pub fn pfc(src_mac: [u8; 6], cev: u16, quanta: [u16; 8]) -> Vec<u8> {
    mac_control(src_mac, MacControl::Pfc { cev, quanta })
}

/// An 802.3x PAUSE frame from `src_mac`.
pub fn pause(src_mac: [u8; 6], quanta: u16) -> Vec<u8> {
    mac_control(src_mac, MacControl::Pause { quanta })
}

fn mac_control(src_mac: [u8; 6], mc: MacControl) -> Vec<u8> {
    let mut frame = Vec::with_capacity(60);
    FrameSpec::new(src_mac, MAC_CONTROL_DST).ethernet(ETHERTYPE_MAC_CONTROL, &mut frame);
    mc.emit(&mut frame);
    frame
}

/// A plain UDP/IPv4 frame (not RoCE), for mixed captures.
pub fn udp_v4(
    link: &FrameSpec,
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    payload: &[u8],
) -> Vec<u8> {
    udp_v4_tos(link, Net::v4(src, dst, 0), sport, dport, payload)
}

/// A plain UDP/IPv4 frame with the TOS of `net`.
pub fn udp_v4_tos(link: &FrameSpec, net: Net, sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let Net::V4 { src, dst, tos, .. } = net else {
        panic!("udp_v4_tos takes IPv4");
    };
    let udp_len = (8 + payload.len()) as u16;
    let mut frame = Vec::new();
    link.ethernet(0x0800, &mut frame);
    let ip = ipv4_header(src.octets(), dst.octets(), tos, 64, 17, udp_len, false);
    frame.extend_from_slice(&ip);
    frame.extend_from_slice(&sport.to_be_bytes());
    frame.extend_from_slice(&dport.to_be_bytes());
    frame.extend_from_slice(&udp_len.to_be_bytes());
    frame.extend_from_slice(&[0, 0]);
    frame.extend_from_slice(payload);
    pad_min(frame)
}

/// Wraps an Ethernet frame's payload (after the MACs) in a Linux cooked SLL header.
pub fn to_sll(ethernet_frame: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(ethernet_frame.len() + 4);
    out.extend_from_slice(&0u16.to_be_bytes()); // packet type: to us
    out.extend_from_slice(&1u16.to_be_bytes()); // ARPHRD_ETHER
    out.extend_from_slice(&6u16.to_be_bytes());
    out.extend_from_slice(&ethernet_frame[6..12]);
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&ethernet_frame[12..]);
    out
}

/// Wraps an Ethernet frame's payload in a Linux cooked SLL2 header.
pub fn to_sll2(ethernet_frame: &[u8], ifindex: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(ethernet_frame.len() + 8);
    out.extend_from_slice(&ethernet_frame[12..14]); // protocol
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&ifindex.to_be_bytes());
    out.extend_from_slice(&1u16.to_be_bytes()); // ARPHRD_ETHER
    out.push(0); // packet type
    out.push(6);
    out.extend_from_slice(&ethernet_frame[6..12]);
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&ethernet_frame[14..]);
    out
}
