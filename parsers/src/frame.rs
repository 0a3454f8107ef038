//! One captured frame, decoded as far as its bytes go: link, VLAN tags, IP, UDP, RoCE (v1 or
//! v2) with its extension headers and ICRC check, or a MAC Control (PAUSE / PFC) frame.

use core::net::{IpAddr, Ipv6Addr};

use etherparse::{
    err, EtherType, LaxLinkExtSlice, LaxNetSlice, LaxSlicedPacket, LinkSlice, TransportSlice,
};

use crate::bth::BTH_LEN;
use crate::encap::{self, Encap, EncapKind, MAX_ENCAP};
use crate::grh::{Grh, GRH_LEN};
use crate::icrc::{self, IcrcCheck, NetHeader, ICRC_LEN};
use crate::link::{
    self, LINKTYPE_ETHERNET, LINKTYPE_IPV4, LINKTYPE_IPV6, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2,
    LINKTYPE_RAW,
};
use crate::{
    truncated, Bth, DecodeError, ExtHeaders, Layer, MacControl, ETHERTYPE_MAC_CONTROL,
    ETHERTYPE_ROCEV1, ROCEV2_UDP_PORT,
};

/// Most VLAN tags kept per frame (etherparse's limit of link extensions).
pub const MAX_VLAN_TAGS: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VlanTag {
    /// 0x8100 (802.1Q) or 0x88a8 (802.1ad), as found before the tag.
    pub tpid: u16,
    pub pcp: u8,
    pub dei: bool,
    pub vid: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpInfo {
    pub version: u8,
    pub src: IpAddr,
    pub dst: IpAddr,
    pub dscp: u8,
    pub ecn: u8,
    /// TTL (IPv4) or hop limit (IPv6).
    pub ttl: u8,
    /// IPv6 only.
    pub flow_label: Option<u32>,
    /// IPv4 identification (0 for IPv6): with the ICRC, what tells the same frame captured
    /// twice from a resend.
    pub ident: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoceVersion {
    V1,
    V2,
    /// Native InfiniBand (LRH, optional GRH), from ERF captures.
    Ib,
}

/// InfiniBand Local Route Header (8 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lrh {
    pub vl: u8,
    pub sl: u8,
    /// Link next header: 2 = BTH follows, 3 = GRH then BTH, 0/1 = raw.
    pub lnh: u8,
    pub dlid: u16,
    pub slid: u16,
    /// Packet length in 4-byte words, LRH to ICRC.
    pub pkt_len: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoceInfo<'a> {
    pub version: RoceVersion,
    pub bth: Bth,
    pub ext: ExtHeaders,
    /// Payload bytes as captured (may be shorter than `payload_len` in a snap-length capture).
    pub payload: &'a [u8],
    /// Payload length on the wire, from the UDP (or GRH) length: pad and ICRC excluded.
    pub payload_len: u32,
    pub icrc: IcrcCheck,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpInfo {
    pub sport: u16,
    pub dport: u16,
    pub len: u16,
}

/// A decoded frame. Every field is a small copy of a header value except `RoceInfo::payload`,
/// which borrows the capture buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    pub linktype: u32,
    /// Captured length and length on the wire.
    pub caplen: u32,
    pub len: u32,
    pub src_mac: Option<[u8; 6]>,
    pub dst_mac: Option<[u8; 6]>,
    vlan_tags: [VlanTag; MAX_VLAN_TAGS],
    vlan_count: u8,
    /// The innermost ethertype (after the VLAN tags).
    pub ethertype: Option<u16>,
    pub ip: Option<IpInfo>,
    pub udp: Option<UdpInfo>,
    pub grh: Option<Grh>,
    /// Native InfiniBand only.
    pub lrh: Option<Lrh>,
    pub roce: Option<RoceInfo<'a>>,
    pub mac_control: Option<MacControl>,
    /// An ICMP/ICMPv6 error quoting a RoCEv2 packet.
    pub icmp: Option<crate::icmp::IcmpError>,
    /// Why decoding stopped early, if it did.
    pub error: Option<DecodeError>,
    /// Mirror and tunnel layers around the frame described above, outermost first.
    encaps: [Encap; MAX_ENCAP],
    encap_count: u8,
    /// The IP or UDP length claims more bytes than the frame holds.
    lengths_exceed: bool,
}

/// Why a frame holds fewer bytes than it had on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Truncation {
    /// The capture's snap length (the record says how long the frame was).
    Snaplen,
    /// The mirror cut it (an ERSPAN header says so).
    Mirror,
    /// The IP or UDP length says more than is there, while the record itself is complete:
    /// a mirror that cuts without saying so.
    LengthMismatch,
}

impl Truncation {
    pub fn name(self) -> &'static str {
        match self {
            Truncation::Snaplen => "snaplen",
            Truncation::Mirror => "mirror",
            Truncation::LengthMismatch => "length_mismatch",
        }
    }
}

impl<'a> Frame<'a> {
    fn empty(linktype: u32, caplen: u32, len: u32) -> Self {
        Frame {
            linktype,
            caplen,
            len,
            src_mac: None,
            dst_mac: None,
            vlan_tags: [VlanTag::default(); MAX_VLAN_TAGS],
            vlan_count: 0,
            ethertype: None,
            ip: None,
            udp: None,
            grh: None,
            lrh: None,
            roce: None,
            mac_control: None,
            icmp: None,
            error: None,
            encaps: [Encap::default(); MAX_ENCAP],
            encap_count: 0,
            lengths_exceed: false,
        }
    }

    /// Mirror and tunnel layers around this frame, outermost first.
    pub fn encaps(&self) -> &[Encap] {
        &self.encaps[..usize::from(self.encap_count)]
    }

    /// Why the frame is shorter than on the wire, if it is.
    pub fn truncation(&self) -> Option<Truncation> {
        if self.is_snapped() {
            Some(Truncation::Snaplen)
        } else if self.encaps().iter().any(|e| e.truncated) {
            Some(Truncation::Mirror)
        } else if self.lengths_exceed {
            Some(Truncation::LengthMismatch)
        } else {
            None
        }
    }

    /// VLAN tags, outermost first.
    pub fn vlans(&self) -> &[VlanTag] {
        &self.vlan_tags[..self.vlan_count as usize]
    }

    /// The innermost VLAN tag (the one the RoCE priority is usually set on).
    pub fn inner_vlan(&self) -> Option<&VlanTag> {
        self.vlans().last()
    }

    /// Whether the capture cut this frame (snap length).
    pub fn is_snapped(&self) -> bool {
        self.caplen < self.len
    }

    /// A decode error that is not explained by a truncation (snap length, mirror).
    pub fn is_malformed(&self) -> bool {
        match self.error {
            None => false,
            Some(DecodeError::Truncated { .. }) => self.truncation().is_none(),
            Some(_) => true,
        }
    }

    /// Network source and destination: the IP addresses, or the GIDs of a RoCEv1 GRH.
    pub fn addresses(&self) -> Option<(IpAddr, IpAddr)> {
        if let Some(ip) = &self.ip {
            return Some((ip.src, ip.dst));
        }
        self.grh.map(|g| {
            (
                IpAddr::V6(Ipv6Addr::from(g.sgid)),
                IpAddr::V6(Ipv6Addr::from(g.dgid)),
            )
        })
    }

    /// The traffic class byte (IPv4 TOS, IPv6 or GRH traffic class): DSCP << 2 | ECN.
    pub fn traffic_class(&self) -> Option<u8> {
        if let Some(ip) = &self.ip {
            return Some(ip.dscp << 2 | ip.ecn);
        }
        self.grh.map(|g| g.traffic_class)
    }

    fn push_vlan(&mut self, tag: VlanTag) {
        if let Some(slot) = self.vlan_tags.get_mut(self.vlan_count as usize) {
            *slot = tag;
            self.vlan_count += 1;
        }
    }
}

fn map_layer(layer: err::Layer) -> Layer {
    use err::Layer as L;
    match layer {
        L::LinuxSllHeader
        | L::Ethernet2Header
        | L::EtherPayload
        | L::MacsecHeader
        | L::MacsecPacket => Layer::Link,
        L::VlanHeader => Layer::Vlan,
        L::UdpHeader | L::UdpPayload => Layer::Udp,
        _ => Layer::Ip,
    }
}

fn map_stop(e: &err::packet::SliceError, layer: err::Layer) -> DecodeError {
    match e {
        err::packet::SliceError::Len(len) => DecodeError::Truncated {
            layer: map_layer(len.layer),
            need: len.required_len,
            have: len.len,
        },
        _ => DecodeError::Invalid {
            layer: map_layer(layer),
            what: "malformed header",
        },
    }
}

/// Decodes one frame of the given link type. Never panics; see the crate contract.
///
/// The common case, Ethernet (up to three tags) to IPv4 or IPv6 to UDP port 4791, takes a
/// direct path; everything else, and anything unusual on the way (IP options, fragments, IPv6
/// extension headers, short headers), goes through etherparse's lax slicing. Both give the same
/// `Frame` (a test checks it on real and mutated frames); the direct path only saves time.
pub fn decode_frame(linktype: u32, data: &[u8], orig_len: u32) -> Frame<'_> {
    decode_frame_with(linktype, data, orig_len, DecodeOptions::default())
}

/// What decoding can be told beyond the bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DecodeOptions {
    /// A UDP port that carries VXLAN besides 4789 (`--vxlan-port`).
    pub vxlan_port: Option<u16>,
}

/// `decode_frame` with options.
pub fn decode_frame_with(
    linktype: u32,
    data: &[u8],
    orig_len: u32,
    options: DecodeOptions,
) -> Frame<'_> {
    decode_nested(linktype, data, orig_len, Nesting { depth: 0, options })
}

/// Where a frame sits: how many encapsulations deep, and the options of the whole decode.
#[derive(Debug, Clone, Copy)]
struct Nesting {
    depth: usize,
    options: DecodeOptions,
}

/// `decode_frame` for a frame inside `depth` encapsulations.
#[inline(always)]
fn decode_nested(linktype: u32, data: &[u8], orig_len: u32, depth: Nesting) -> Frame<'_> {
    // One return of one local: the frame is built where the caller wants it, not copied
    // there (720 bytes a frame, 2.6% of a live analysis's CPU).
    let caplen = u32::try_from(data.len()).unwrap_or(u32::MAX);
    let mut frame = Frame::empty(linktype, caplen, orig_len.max(caplen));
    if !(linktype == LINKTYPE_ETHERNET && fast_rocev2(&mut frame, data)) {
        frame = general_at(linktype, data, orig_len, depth);
    }
    frame
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// An option-free IPv4 header carrying UDP, unfragmented: its info, header and payload.
fn fast_ipv4(l3: &[u8]) -> Option<(IpInfo, NetHeader<'_>, &[u8])> {
    if l3.len() < 28 || l3[0] != 0x45 || l3[9] != 17 || be16(l3, 6) & 0x3fff != 0 {
        return None;
    }
    let total = usize::from(be16(l3, 2));
    if total < 28 {
        return None;
    }
    let header = &l3[..20];
    let end = total.min(l3.len());
    Some((
        IpInfo {
            version: 4,
            src: IpAddr::from([l3[12], l3[13], l3[14], l3[15]]),
            dst: IpAddr::from([l3[16], l3[17], l3[18], l3[19]]),
            dscp: l3[1] >> 2,
            ecn: l3[1] & 3,
            ttl: l3[8],
            flow_label: None,
            ident: be16(l3, 4),
        },
        NetHeader::Ipv4(header),
        &l3[20..end],
    ))
}

/// An IPv6 header with no extension headers, carrying UDP.
fn fast_ipv6(l3: &[u8]) -> Option<(IpInfo, NetHeader<'_>, &[u8])> {
    if l3.len() < 48 || l3[0] >> 4 != 6 || l3[6] != 17 {
        return None;
    }
    let plen = usize::from(be16(l3, 4));
    if plen < 8 {
        return None;
    }
    let mut src = [0u8; 16];
    let mut dst = [0u8; 16];
    src.copy_from_slice(&l3[8..24]);
    dst.copy_from_slice(&l3[24..40]);
    let tclass = ((l3[0] & 0x0f) << 4) | (l3[1] >> 4);
    let end = (40 + plen).min(l3.len());
    Some((
        IpInfo {
            version: 6,
            src: IpAddr::from(src),
            dst: IpAddr::from(dst),
            dscp: tclass >> 2,
            ecn: tclass & 3,
            ttl: l3[7],
            flow_label: Some(u32::from_be_bytes([0, l3[1] & 0x0f, l3[2], l3[3]])),
            ident: 0,
        },
        NetHeader::Ipv6 {
            header: &l3[..40],
            exts: &[],
        },
        &l3[40..end],
    ))
}

/// The direct path for Ethernet RoCEv2 frames; false (with `frame` untouched in what matters)
/// when the frame needs the general path.
fn fast_rocev2<'a>(frame: &mut Frame<'a>, data: &'a [u8]) -> bool {
    if data.len() < 14 {
        return false;
    }
    let mut ethertype = be16(data, 12);
    let mut off = 14;
    let mut tags = [VlanTag::default(); MAX_VLAN_TAGS];
    let mut ntags = 0;
    while matches!(ethertype, 0x8100 | 0x88a8 | 0x9100) {
        if ntags == MAX_VLAN_TAGS || data.len() < off + 4 {
            return false;
        }
        let tci = be16(data, off);
        tags[ntags] = VlanTag {
            tpid: ethertype,
            pcp: (tci >> 13) as u8,
            dei: tci & 0x1000 != 0,
            vid: tci & 0x0fff,
        };
        ntags += 1;
        ethertype = be16(data, off + 2);
        off += 4;
    }
    let l3 = &data[off..];
    let parsed = match ethertype {
        0x0800 => fast_ipv4(l3),
        0x86dd => fast_ipv6(l3),
        _ => None,
    };
    let Some((ip, net, ip_payload)) = parsed else {
        return false;
    };
    if ip_payload.len() < 8 || be16(ip_payload, 2) != ROCEV2_UDP_PORT {
        return false;
    }
    let udp_len = be16(ip_payload, 4);
    // As etherparse's lax UDP slice: the UDP length when it fits, else what was captured.
    let udp = if usize::from(udp_len) < 8 || usize::from(udp_len) > ip_payload.len() {
        // A UDP length beyond an IP payload captured whole contradicts the IP header: the
        // general path says so.
        let ip_claims = match ethertype {
            0x0800 => usize::from(be16(l3, 2)),
            _ => 40 + usize::from(be16(l3, 4)),
        };
        if ip_claims <= l3.len() {
            return false;
        }
        ip_payload
    } else {
        &ip_payload[..usize::from(udp_len)]
    };
    frame.dst_mac = Some([data[0], data[1], data[2], data[3], data[4], data[5]]);
    frame.src_mac = Some([data[6], data[7], data[8], data[9], data[10], data[11]]);
    frame.vlan_tags = tags;
    frame.vlan_count = ntags as u8;
    frame.ethertype = Some(ethertype);
    frame.ip = Some(ip);
    frame.udp = Some(UdpInfo {
        sport: be16(udp, 0),
        dport: ROCEV2_UDP_PORT,
        len: udp_len,
    });
    decode_rocev2(frame, net, &udp[..8], &udp[8..], udp_len);
    true
}

/// The general path: etherparse's lax slicing for every link type and every frame.
pub fn decode_frame_general(linktype: u32, data: &[u8], orig_len: u32) -> Frame<'_> {
    let top = Nesting {
        depth: 0,
        options: DecodeOptions::default(),
    };
    general_at(linktype, data, orig_len, top)
}

fn general_at(linktype: u32, data: &[u8], orig_len: u32, depth: Nesting) -> Frame<'_> {
    let caplen = u32::try_from(data.len()).unwrap_or(u32::MAX);
    let mut frame = Frame::empty(linktype, caplen, orig_len.max(caplen));
    if linktype == link::LINKTYPE_ERF {
        return decode_erf(frame, data);
    }
    if linktype == link::LINKTYPE_INFINIBAND {
        decode_ib(&mut frame, data);
        return frame;
    }
    let Some((sliced, first_type)) = slice_link(&mut frame, data) else {
        return frame;
    };
    // VLAN tags: the TPID of each is the ethertype found just before it.
    let mut tpid = first_type.unwrap_or(0);
    for ext in &sliced.link_exts {
        if let LaxLinkExtSlice::Vlan(v) = ext {
            frame.push_vlan(VlanTag {
                tpid,
                pcp: v.priority_code_point().value(),
                dei: v.drop_eligible_indicator(),
                vid: v.vlan_identifier().value(),
            });
            tpid = v.ether_type().0;
        }
    }
    let ether_payload = sliced.ether_payload();
    frame.ethertype = ether_payload
        .as_ref()
        .map(|p| p.ether_type.0)
        .or(first_type);
    if let Some((e, layer)) = &sliced.stop_err {
        frame.error = Some(map_stop(e, *layer));
    }
    if let Some(p) = &ether_payload {
        match p.ether_type.0 {
            ETHERTYPE_MAC_CONTROL => {
                match MacControl::parse(p.payload) {
                    Ok(mc) => frame.mac_control = Some(mc),
                    Err(e) => frame.error = Some(e),
                }
                return frame;
            }
            ETHERTYPE_ROCEV1 => {
                decode_rocev1(&mut frame, p.payload);
                return frame;
            }
            encap::ETHERTYPE_MPLS | encap::ETHERTYPE_MPLS_MULTICAST => {
                return match encap::mpls(p.payload) {
                    // IPv4 or IPv6, told by the first nibble (raw IP).
                    Ok((layer, inner)) => {
                        decode_inner_as(&frame, data, inner, layer, LINKTYPE_RAW, depth)
                    }
                    Err(e) => {
                        frame.error = Some(e);
                        frame
                    }
                };
            }
            _ => {}
        }
    }
    let net_header = net_info(&mut frame, &sliced);
    if let Some(inner) = decapsulate(&mut frame, &sliced, data, depth) {
        return inner;
    }
    frame.icmp = icmp_error(&sliced);
    if let Some(TransportSlice::Udp(u)) = &sliced.transport {
        let udp = UdpInfo {
            sport: u.source_port(),
            dport: u.destination_port(),
            len: u.length(),
        };
        frame.udp = Some(udp);
        if udp.dport == ROCEV2_UDP_PORT {
            if let Some(net) = net_header {
                let ip_payload = sliced.net.as_ref().and_then(|n| n.ip_payload_ref());
                // The IP header's own length, when every byte it claims was captured.
                let complete_ip_payload = ip_payload
                    .filter(|p| !p.incomplete)
                    .map(|p| p.payload.len());
                decode_rocev2(&mut frame, net, u.header_slice(), u.payload(), udp.len);
                if complete_ip_payload.is_some_and(|n| usize::from(udp.len) > n) {
                    // Not a cut frame: the IP header says every byte is there, and the UDP
                    // length claims more. Headers that contradict each other are malformed.
                    frame.lengths_exceed = false;
                    frame.error = Some(DecodeError::Invalid {
                        layer: Layer::Udp,
                        what: "UDP length longer than the IP payload",
                    });
                }
            }
        }
    }
    frame
}

/// Slices the link layer of `data` (and what etherparse finds after it) by the frame's link
/// type; the ethertype or protocol of the link header. None, with the error set, when the
/// link header itself does not parse or the link type is not supported.
fn slice_link<'a>(
    frame: &mut Frame<'a>,
    data: &'a [u8],
) -> Option<(LaxSlicedPacket<'a>, Option<u16>)> {
    match frame.linktype {
        LINKTYPE_ETHERNET => match LaxSlicedPacket::from_ethernet(data) {
            Ok(p) => {
                let mut first_type = None;
                if let Some(LinkSlice::Ethernet2(e)) = &p.link {
                    frame.src_mac = Some(e.source());
                    frame.dst_mac = Some(e.destination());
                    first_type = Some(e.ether_type().0);
                }
                Some((p, first_type))
            }
            Err(_) => {
                frame.error = Some(truncated(Layer::Link, 14, data.len()));
                None
            }
        },
        lt @ (LINKTYPE_LINUX_SLL | LINKTYPE_LINUX_SLL2) => {
            let cooked = if lt == LINKTYPE_LINUX_SLL {
                link::linux_sll(data)
            } else {
                link::linux_sll2(data)
            };
            match cooked {
                Ok(c) => {
                    frame.src_mac = c.src_mac;
                    let p = LaxSlicedPacket::from_ether_type(EtherType(c.protocol), c.payload);
                    Some((p, Some(c.protocol)))
                }
                Err(e) => {
                    frame.error = Some(e);
                    None
                }
            }
        }
        LINKTYPE_RAW | 12 | 14 | LINKTYPE_IPV4 | LINKTYPE_IPV6 => {
            match LaxSlicedPacket::from_ip(data) {
                Ok(p) => Some((p, None)),
                Err(_) => {
                    frame.error = Some(DecodeError::Invalid {
                        layer: Layer::Ip,
                        what: "not an IP header",
                    });
                    None
                }
            }
        }
        other => {
            frame.error = Some(DecodeError::UnsupportedLinkType(other));
            None
        }
    }
}

/// The frame inside a tunnel or mirror session carried by IP (GRE, ERSPAN, IP-in-IP, VXLAN,
/// Geneve), decoded with the outer layer in front of its own; None when `sliced` carries no
/// tunnel. A tunnel header that does not parse sets the error and gives None.
fn decapsulate<'a>(
    frame: &mut Frame<'a>,
    sliced: &LaxSlicedPacket<'a>,
    data: &'a [u8],
    depth: Nesting,
) -> Option<Frame<'a>> {
    let payload = match &sliced.net {
        Some(LaxNetSlice::Ipv4(s)) => s.payload(),
        Some(LaxNetSlice::Ipv6(s)) => s.payload(),
        _ => return None,
    };
    let outer = frame.addresses();
    let parsed = match payload.ip_number.0 {
        encap::IP_PROTO_GRE => gre_inner(payload.payload),
        encap::IP_PROTO_IPIP | encap::IP_PROTO_IPV6 => {
            let layer = Encap {
                kind: EncapKind::IpInIp,
                ..Encap::default()
            };
            Ok((layer, LINKTYPE_RAW, payload.payload))
        }
        17 => match &sliced.transport {
            Some(TransportSlice::Udp(u))
                if u.destination_port() == encap::VXLAN_PORT
                    || Some(u.destination_port()) == depth.options.vxlan_port =>
            {
                encap::vxlan(u.payload()).map(|(l, inner)| (l, LINKTYPE_ETHERNET, inner))
            }
            Some(TransportSlice::Udp(u)) if u.destination_port() == encap::GENEVE_PORT => {
                encap::geneve(u.payload()).map(|(l, proto, inner)| (l, linktype_of(proto), inner))
            }
            _ => return None,
        },
        _ => return None,
    };
    match parsed {
        Ok((mut layer, linktype, inner)) => {
            layer.outer = outer;
            Some(decode_inner_as(frame, data, inner, layer, linktype, depth))
        }
        Err(e) => {
            frame.error = Some(e);
            None
        }
    }
}

/// The ICMP error quoting a RoCEv2 packet that `sliced` carries, if it does.
fn icmp_error(sliced: &LaxSlicedPacket<'_>) -> Option<crate::icmp::IcmpError> {
    let payload = match &sliced.net {
        Some(LaxNetSlice::Ipv4(s)) => s.payload(),
        Some(LaxNetSlice::Ipv6(s)) => s.payload(),
        _ => return None,
    };
    match payload.ip_number.0 {
        crate::icmp::IP_PROTO_ICMP => crate::icmp::parse(payload.payload, false),
        crate::icmp::IP_PROTO_ICMPV6 => crate::icmp::parse(payload.payload, true),
        _ => None,
    }
}

/// What a GRE header carries: ERSPAN (I, II, III) or bridged Ethernet, or IP.
fn gre_inner(data: &[u8]) -> Result<(Encap, u32, &[u8]), DecodeError> {
    let (gre, rest) = encap::gre(data)?;
    match gre.gre_protocol {
        Some(encap::GRE_PROTO_ERSPAN | encap::GRE_PROTO_ERSPAN3) => {
            let (layer, inner) = encap::erspan(gre, rest)?;
            Ok((layer, LINKTYPE_ETHERNET, inner))
        }
        Some(proto) => Ok((gre, linktype_of(proto), rest)),
        None => Ok((gre, LINKTYPE_RAW, rest)),
    }
}

/// The link type of what a protocol number (an ethertype) announces.
fn linktype_of(protocol: u16) -> u32 {
    match protocol {
        encap::GRE_PROTO_TEB => LINKTYPE_ETHERNET,
        0x0800 => LINKTYPE_IPV4,
        0x86dd => LINKTYPE_IPV6,
        // Anything else: tried as raw IP, which names what it is not.
        _ => LINKTYPE_RAW,
    }
}

/// Decodes `inner` (a part of `data`) as a frame of `linktype`: the result describes the inner
/// frame, with the outer frame's layers and `layer` in front of its own, and the record's
/// lengths.
fn decode_inner_as<'a>(
    outer: &Frame<'a>,
    data: &'a [u8],
    inner: &'a [u8],
    layer: Encap,
    linktype: u32,
    depth: Nesting,
) -> Frame<'a> {
    if depth.depth + 1 >= MAX_ENCAP {
        let mut f = *outer;
        f.error = Some(DecodeError::Invalid {
            layer: Layer::Encap,
            what: "more nested encapsulations than roce-sniff follows",
        });
        return f;
    }
    let offset = (inner.as_ptr() as usize).saturating_sub(data.as_ptr() as usize);
    let wire = (outer.len as usize).saturating_sub(offset);
    let mut f = decode_nested(
        linktype,
        inner,
        u32::try_from(wire).unwrap_or(u32::MAX),
        Nesting {
            depth: depth.depth + 1,
            ..depth
        },
    );
    let own = f.encaps;
    let own_count = usize::from(f.encap_count);
    f.encap_count = 0;
    for l in outer
        .encaps()
        .iter()
        .chain([&layer])
        .chain(&own[..own_count])
    {
        if let Some(slot) = f.encaps.get_mut(usize::from(f.encap_count)) {
            *slot = *l;
            f.encap_count += 1;
        }
    }
    f.linktype = outer.linktype;
    f.caplen = outer.caplen;
    f.len = outer.len;
    f
}

/// Fills `frame.ip` from the sliced IP header; the header as the ICRC masks it.
fn net_info<'a>(frame: &mut Frame<'_>, sliced: &'a LaxSlicedPacket<'_>) -> Option<NetHeader<'a>> {
    match &sliced.net {
        Some(LaxNetSlice::Ipv4(s)) => {
            let h = s.header();
            frame.ip = Some(IpInfo {
                version: 4,
                src: IpAddr::V4(h.source_addr()),
                dst: IpAddr::V4(h.destination_addr()),
                dscp: h.dcp().value(),
                ecn: h.ecn().value(),
                ttl: h.ttl(),
                flow_label: None,
                ident: h.identification(),
            });
            Some(NetHeader::Ipv4(s.header().slice()))
        }
        Some(LaxNetSlice::Ipv6(s)) => {
            let h = s.header();
            frame.ip = Some(IpInfo {
                version: 6,
                src: IpAddr::V6(h.source_addr()),
                dst: IpAddr::V6(h.destination_addr()),
                dscp: h.dscp().value(),
                ecn: h.ecn().value(),
                ttl: h.hop_limit(),
                flow_label: Some(h.flow_label().value()),
                ident: 0,
            });
            Some(NetHeader::Ipv6 {
                header: h.slice(),
                exts: s.extensions().slice(),
            })
        }
        _ => None,
    }
}

fn decode_rocev2<'a>(
    frame: &mut Frame<'a>,
    net: NetHeader<'_>,
    udp_header: &[u8],
    data: &'a [u8],
    udp_len: u16,
) {
    // The UDP length says how long the RoCE part was on the wire, whatever the snap length cut.
    let wire_len = match usize::from(udp_len).checked_sub(8) {
        Some(n) if udp_len != 0 => n,
        _ => {
            frame.error = Some(DecodeError::Invalid {
                layer: Layer::Udp,
                what: "UDP length shorter than its header",
            });
            data.len()
        }
    };
    decode_transport(frame, RoceVersion::V2, net, udp_header, data, wire_len);
}

const ERF_HEADER_LEN: usize = 16;
const ERF_TYPE_ETH: u8 = 2;
const ERF_TYPE_INFINIBAND: u8 = 21;
const ERF_TYPE_INFINIBAND_LINK: u8 = 22;

/// An ERF record (Endace): Ethernet records are decoded as Ethernet, InfiniBand records as
/// native InfiniBand (LRH, optional GRH, BTH...). Other record types are not supported.
fn decode_erf<'a>(mut frame: Frame<'a>, data: &'a [u8]) -> Frame<'a> {
    if data.len() < ERF_HEADER_LEN {
        frame.error = Some(truncated(Layer::Link, ERF_HEADER_LEN, data.len()));
        return frame;
    }
    let record_type = data[8] & 0x7f;
    let wlen = usize::from(u16::from_be_bytes([data[14], data[15]]));
    // Extension headers: 8 bytes each while the top bit of the previous type byte is set.
    let mut off = ERF_HEADER_LEN;
    let mut more = data[8] & 0x80 != 0;
    while more {
        if data.len() < off + 8 {
            frame.error = Some(truncated(Layer::Link, off + 8, data.len()));
            return frame;
        }
        more = data[off] & 0x80 != 0;
        off += 8;
    }
    let body = &data[off..];
    match record_type {
        ERF_TYPE_ETH if body.len() >= 2 => {
            // Two bytes of offset and padding precede the Ethernet frame.
            let mut inner =
                decode_frame(LINKTYPE_ETHERNET, &body[2..], wlen.saturating_sub(4) as u32);
            inner.linktype = frame.linktype;
            inner.caplen = frame.caplen;
            inner.len = frame.len;
            inner
        }
        ERF_TYPE_INFINIBAND | ERF_TYPE_INFINIBAND_LINK => {
            decode_ib(&mut frame, body);
            frame
        }
        _ => {
            frame.error = Some(DecodeError::UnsupportedLinkType(link::LINKTYPE_ERF));
            frame
        }
    }
}

const LRH_LEN: usize = 8;

/// Native InfiniBand: LRH, GRH when LNH says so, then the same transport as RoCE. Without a GRH
/// the ICRC covers the real LRH (VL masked); with one, the LRH counts as ones, as in RoCE
/// (checked against the invariant CRCs of a real ERF capture).
fn decode_ib<'a>(frame: &mut Frame<'a>, data: &'a [u8]) {
    if data.len() < LRH_LEN {
        frame.error = Some(truncated(Layer::Link, LRH_LEN, data.len()));
        return;
    }
    let lrh = Lrh {
        vl: data[0] >> 4,
        sl: data[1] >> 4,
        lnh: data[1] & 3,
        dlid: u16::from_be_bytes([data[2], data[3]]),
        pkt_len: u16::from_be_bytes([data[4], data[5]]) & 0x07ff,
        slid: u16::from_be_bytes([data[6], data[7]]),
    };
    frame.lrh = Some(lrh);
    let packet_len = usize::from(lrh.pkt_len) * 4;
    let rest = &data[LRH_LEN..];
    match lrh.lnh {
        2 => {
            let wire = packet_len.saturating_sub(LRH_LEN);
            decode_transport(
                frame,
                RoceVersion::Ib,
                NetHeader::Lrh(&data[..LRH_LEN]),
                &[],
                rest,
                wire,
            );
        }
        3 => {
            let (grh, after) = match Grh::parse(rest) {
                Ok(v) => v,
                Err(e) => {
                    frame.error = Some(e);
                    return;
                }
            };
            frame.grh = Some(grh);
            let wire = packet_len.saturating_sub(LRH_LEN + GRH_LEN);
            decode_transport(
                frame,
                RoceVersion::Ib,
                NetHeader::Grh(&rest[..GRH_LEN]),
                &[],
                after,
                wire,
            );
        }
        // Raw packets (IPv6 or ethertype-tagged) carry no BTH.
        _ => {}
    }
}

fn decode_rocev1<'a>(frame: &mut Frame<'a>, data: &'a [u8]) {
    let (grh, rest) = match Grh::parse(data) {
        Ok(v) => v,
        Err(e) => {
            frame.error = Some(e);
            return;
        }
    };
    frame.grh = Some(grh);
    if grh.next_header != crate::grh::NEXT_HEADER_BTH {
        frame.error = Some(DecodeError::Invalid {
            layer: Layer::Grh,
            what: "next header is not a BTH",
        });
        return;
    }
    let net = NetHeader::Grh(&data[..GRH_LEN]);
    decode_transport(
        frame,
        RoceVersion::V1,
        net,
        &[],
        rest,
        usize::from(grh.payload_len),
    );
}

/// Decodes BTH, extension headers, payload and ICRC. `data` holds the captured bytes from the
/// BTH on; `wire_len` is how long that part was on the wire (ICRC included).
fn decode_transport<'a>(
    frame: &mut Frame<'a>,
    version: RoceVersion,
    net: NetHeader<'_>,
    udp_header: &[u8],
    data: &'a [u8],
    wire_len: usize,
) {
    let (bth, after_bth) = match Bth::parse(data) {
        Ok(v) => v,
        Err(e) => {
            frame.error = Some(e);
            return;
        }
    };
    let (ext, after_ext, ext_err) = ExtHeaders::parse(bth.opcode, after_bth);
    if let Some(e) = ext_err {
        frame.error = Some(e);
    }
    let headers_len = BTH_LEN + ExtHeaders::wire_len(bth.opcode);
    let trailer_len = usize::from(bth.pad) + ICRC_LEN;
    let payload_len = wire_len.checked_sub(headers_len + trailer_len);
    if payload_len.is_none() {
        frame.error = Some(DecodeError::Invalid {
            layer: Layer::Bth,
            what: "packet shorter than its headers, pad and ICRC",
        });
    }
    let payload = &after_ext[..after_ext.len().min(payload_len.unwrap_or(0))];
    // A packet too short for its own headers has no ICRC where one would look for it.
    // Lengths that claim more than the frame holds: the ICRC cannot be checked (the frame was
    // cut: by the snap length, or by a mirror).
    frame.lengths_exceed = data.len() < wire_len;
    let icrc = if payload_len.is_some() && data.len() >= wire_len {
        let icrc_at = wire_len - ICRC_LEN;
        let crc = icrc::compute(net, udp_header, &data[..icrc_at]);
        let mut trailer = [0u8; ICRC_LEN];
        trailer.copy_from_slice(&data[icrc_at..wire_len]);
        IcrcCheck::compare(crc, trailer)
    } else {
        IcrcCheck::UNCHECKED
    };
    frame.roce = Some(RoceInfo {
        version,
        bth,
        ext,
        payload,
        payload_len: u32::try_from(payload_len.unwrap_or(0)).unwrap_or(u32::MAX),
        icrc,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::LINKTYPE_ETHERNET;

    // The ConnectX-4 Lx CNP of scapy's vectors.
    const CNP: &str = "e41d2dab2bc27cfe90643b32080045c2003c718c4000401191610a0011010a001201000012b7002800008100ffff40000118000000000000000000000000000000000000000082fd002a";

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn cnp_decodes_completely() {
        let raw = hex(CNP);
        let f = decode_frame(LINKTYPE_ETHERNET, &raw, raw.len() as u32);
        assert_eq!(f.error, None);
        let ip = f.ip.unwrap();
        assert_eq!((ip.dscp, ip.ecn), (48, 2));
        assert_eq!(f.udp.unwrap().sport, 0);
        let r = f.roce.unwrap();
        assert_eq!(r.bth.opcode, crate::Opcode::CNP);
        assert!(r.bth.becn);
        assert_eq!(r.bth.dqpn, 0x118);
        assert_eq!(r.payload_len, 0);
    }

    #[test]
    fn every_cut_decodes_as_far_as_bytes_go() {
        let raw = hex(CNP);
        for cut in 0..raw.len() {
            // As a snap-length cut: lax, not malformed once the headers are in.
            let f = decode_frame(LINKTYPE_ETHERNET, &raw[..cut], raw.len() as u32);
            assert!(f.is_snapped());
            if cut >= 14 + 20 + 8 + 12 {
                assert_eq!(f.roce.unwrap().bth.dqpn, 0x118, "cut {cut}");
                assert_eq!(f.roce.unwrap().icrc.status, crate::IcrcStatus::Unchecked);
            }
            if cut >= 14 + 20 {
                assert!(f.ip.is_some(), "cut {cut}");
            }
            // As a frame whose wire length is its captured length: the error names a layer.
            let g = decode_frame(LINKTYPE_ETHERNET, &raw[..cut], cut as u32);
            if g.roce.is_none() && cut > 0 {
                assert!(g.error.is_some() || g.udp.is_none(), "cut {cut}: {g:?}");
            }
        }
    }

    #[test]
    fn a_udp_length_beyond_a_whole_ip_payload_is_malformed_not_cut() {
        let mut raw = hex(CNP);
        // UDP length (at 14 + 20 + 4) 16 bytes longer than the IP payload, which is all there.
        let udp_len = u16::from_be_bytes([raw[38], raw[39]]) + 16;
        raw[38..40].copy_from_slice(&udp_len.to_be_bytes());
        for f in [
            decode_frame(LINKTYPE_ETHERNET, &raw, raw.len() as u32),
            decode_frame_general(LINKTYPE_ETHERNET, &raw, raw.len() as u32),
        ] {
            assert!(f.is_malformed(), "{f:?}");
            assert_eq!(f.error.map(|e| e.layer()), Some(Layer::Udp));
            assert_eq!(f.truncation(), None);
        }
        // The IP length longer too: a mirror that cut the frame without saying so.
        let ip_len = u16::from_be_bytes([raw[16], raw[17]]) + 16;
        raw[16..18].copy_from_slice(&ip_len.to_be_bytes());
        for f in [
            decode_frame(LINKTYPE_ETHERNET, &raw, raw.len() as u32),
            decode_frame_general(LINKTYPE_ETHERNET, &raw, raw.len() as u32),
        ] {
            assert!(!f.is_malformed(), "{f:?}");
            assert_eq!(f.truncation(), Some(Truncation::LengthMismatch));
        }
    }

    #[test]
    fn udp_source_port_4791_is_not_rocev2() {
        let mut raw = hex(CNP);
        // Swap the ports: source 4791, destination 0.
        raw[34..36].copy_from_slice(&4791u16.to_be_bytes());
        raw[36..38].copy_from_slice(&0u16.to_be_bytes());
        let f = decode_frame(LINKTYPE_ETHERNET, &raw, raw.len() as u32);
        assert!(f.roce.is_none());
        assert_eq!(f.udp.unwrap().sport, 4791);
    }

    #[test]
    fn raw_ip_and_unknown_link_types() {
        let raw = hex(CNP);
        let f = decode_frame(
            crate::link::LINKTYPE_RAW,
            &raw[14..],
            (raw.len() - 14) as u32,
        );
        assert!(f.roce.is_some());
        let f = decode_frame(147, &raw, raw.len() as u32);
        assert_eq!(f.error, Some(DecodeError::UnsupportedLinkType(147)));
    }
}
