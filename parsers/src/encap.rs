//! Mirror sessions and tunnels around a RoCE frame: GRE (RFC 2784/2890), ERSPAN types I, II and
//! III (draft-foschiano-erspan), VXLAN (RFC 7348), Geneve (RFC 8926), MPLS label stacks
//! (RFC 3032) and IP-in-IP. Each parser reads one header and returns it with the bytes it
//! carries; `frame.rs` chains them and decodes the inner frame.
//!
//! Layouts, all big-endian:
//! - GRE: C(1) R(1) K(1) S(1) ... version(3) | protocol(16), then checksum+reserved (C), key (K)
//!   and sequence number (S), 4 bytes each.
//! - ERSPAN II (GRE 0x88BE with S): ver(4)=1 vlan(12) cos(3) en(2) t(1) session(10) |
//!   reserved(12) index(20). ERSPAN I is GRE 0x88BE without S and without this header.
//! - ERSPAN III (GRE 0x22EB): ver(4)=2 vlan(12) cos(3) bso(2) t(1) session(10) | timestamp(32) |
//!   sgt(16) p(1) ft(5) hwid(6) d(1) gra(2) o(1), then 8 bytes of platform sub-header when O.
//! - VXLAN: flags(8, I = 0x08) reserved(24) | VNI(24) reserved(8).
//! - Geneve: ver(2) optlen(6) | O(1) C(1) reserved(6) | protocol(16) | VNI(24) reserved(8),
//!   then optlen * 4 bytes of options.
//! - MPLS: label(20) tc(3) s(1) ttl(8) per entry, until the bottom of stack (s).

use core::net::IpAddr;

use crate::{truncated, DecodeError, Layer};

/// Most encapsulation layers followed per frame: a mirror session around a tunnel. Each layer
/// is kept in the frame by value (no allocation), so the limit is also what every frame costs.
pub const MAX_ENCAP: usize = 2;
/// Most MPLS labels kept per stack.
pub const MAX_LABELS: usize = 4;

pub const GRE_PROTO_ERSPAN: u16 = 0x88be;
pub const GRE_PROTO_ERSPAN3: u16 = 0x22eb;
pub const GRE_PROTO_TEB: u16 = 0x6558;
pub const VXLAN_PORT: u16 = 4789;
pub const GENEVE_PORT: u16 = 6081;
pub const IP_PROTO_GRE: u8 = 47;
pub const IP_PROTO_IPIP: u8 = 4;
pub const IP_PROTO_IPV6: u8 = 41;
pub const ETHERTYPE_MPLS: u16 = 0x8847;
pub const ETHERTYPE_MPLS_MULTICAST: u16 = 0x8848;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EncapKind {
    Erspan1,
    Erspan2,
    Erspan3,
    /// GRE around Ethernet (transparent Ethernet bridging) or IP.
    #[default]
    Gre,
    Vxlan,
    Geneve,
    Mpls,
    /// IPv4 or IPv6 directly in IPv4 or IPv6.
    IpInIp,
}

impl EncapKind {
    pub fn is_erspan(self) -> bool {
        matches!(
            self,
            EncapKind::Erspan1 | EncapKind::Erspan2 | EncapKind::Erspan3
        )
    }

    /// The name in every output (`encap[].type` in JSON).
    pub fn name(self) -> &'static str {
        match self {
            EncapKind::Erspan1 => "erspan1",
            EncapKind::Erspan2 => "erspan2",
            EncapKind::Erspan3 => "erspan3",
            EncapKind::Gre => "gre",
            EncapKind::Vxlan => "vxlan",
            EncapKind::Geneve => "geneve",
            EncapKind::Mpls => "mpls",
            EncapKind::IpInIp => "ipip",
        }
    }
}

/// One outer layer, with the fields of its kind (the others are None).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Encap {
    pub kind: EncapKind,
    /// The outer IP source and destination (not for MPLS).
    pub outer: Option<(IpAddr, IpAddr)>,
    /// GRE: the protocol, and the key and sequence number when present.
    pub gre_protocol: Option<u16>,
    pub key: Option<u32>,
    pub seq: Option<u32>,
    /// ERSPAN II and III.
    pub session: Option<u16>,
    pub vlan: Option<u16>,
    pub cos: Option<u8>,
    /// The mirror cut the frame (T bit).
    pub truncated: bool,
    /// ERSPAN II.
    pub index: Option<u32>,
    /// ERSPAN III: 0 ingress, 1 egress; the timestamp in units of `granularity`
    /// (0: 100 us, 1: 100 ns, 2: IEEE 1588, 3: custom), and its upper 32 bits when the
    /// platform sub-header gives them.
    pub direction: Option<u8>,
    pub timestamp: Option<u32>,
    pub timestamp_upper: Option<u32>,
    pub granularity: Option<u8>,
    pub hw_id: Option<u8>,
    /// VXLAN and Geneve.
    pub vni: Option<u32>,
    /// MPLS labels, outermost first.
    pub labels: [u32; MAX_LABELS],
    pub label_count: u8,
}

impl Encap {
    pub fn labels(&self) -> &[u32] {
        &self.labels[..usize::from(self.label_count)]
    }

    /// The ERSPAN III timestamp in nanoseconds, when the header holds all of it: its
    /// granularity is a time unit (100 us, 100 ns, or IEEE 1588 seconds and nanoseconds in
    /// the upper and lower words) and the platform sub-header gave the upper 32 bits.
    pub fn timestamp_ns(&self) -> Option<u64> {
        let low = u64::from(self.timestamp?);
        let upper = u64::from(self.timestamp_upper?);
        match self.granularity? {
            0 => Some((upper << 32 | low) * 100_000),
            1 => Some((upper << 32 | low) * 100),
            2 => Some(upper * 1_000_000_000 + low),
            _ => None,
        }
    }

    /// The ERSPAN III timestamp in nanoseconds, the upper bits that the header lacks (no
    /// platform sub-header: only the low 32 bits of a count of 100 ns or 100 us) taken as
    /// those that put it nearest `capture_ns`, the record's own time: the mirror-to-collector
    /// delay is microseconds, and the count wraps every 429.5 s (100 ns). `Err` when even the
    /// nearest lies more than `ERSPAN_EPOCH_TOLERANCE_NS` away: the switch's clock is not on
    /// the Unix epoch (it counts from boot, say), and the timestamp says nothing of the time.
    pub fn timestamp_ns_near(&self, capture_ns: u64) -> Result<Option<u64>, ClockOffEpoch> {
        if self.timestamp_upper.is_some() {
            return Ok(self.timestamp_ns());
        }
        let (Some(low), Some(unit)) = (self.timestamp, self.granularity_unit_ns()) else {
            return Ok(None);
        };
        let (low, wrap) = (u64::from(low), 1u64 << 32);
        // The whole wraps k with k * wrap + low nearest to the capture time, in units.
        let now = capture_ns / unit;
        let k = (now + wrap / 2).saturating_sub(low) / wrap;
        let ts = (k * wrap + low).saturating_mul(unit);
        if ts.abs_diff(capture_ns) > ERSPAN_EPOCH_TOLERANCE_NS {
            return Err(ClockOffEpoch);
        }
        Ok(Some(ts))
    }

    /// The time unit of a counted (not IEEE 1588) ERSPAN III timestamp.
    fn granularity_unit_ns(&self) -> Option<u64> {
        match self.granularity? {
            0 => Some(100_000),
            1 => Some(100),
            _ => None,
        }
    }
}

/// An ERSPAN III timestamp without its upper bits further than this from the record's time
/// whatever upper bits it is given: the switch's clock is not on the Unix epoch. The nearest
/// choice is always within half a wrap (214 s at 100 ns), so the bound that tells a clock on
/// the epoch from one that is not is what mirroring can explain: a collector's clock a
/// second off the switch's at worst (NTP against PTP), plus microseconds of transit.
pub const ERSPAN_EPOCH_TOLERANCE_NS: u64 = 1_000_000_000;

/// See `Encap::timestamp_ns_near`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockOffEpoch;

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn need(layer: Layer, len: usize, data: &[u8]) -> Result<(), DecodeError> {
    if data.len() < len {
        Err(truncated(layer, len, data.len()))
    } else {
        Ok(())
    }
}

/// A GRE header: the layer (kind `Gre`, to be refined by what it carries) and its payload.
pub fn gre(data: &[u8]) -> Result<(Encap, &[u8]), DecodeError> {
    need(Layer::Encap, 4, data)?;
    let flags = be16(data, 0);
    if flags & 0x0007 != 0 {
        return Err(DecodeError::Invalid {
            layer: Layer::Encap,
            what: "GRE version other than 0",
        });
    }
    let (c, k, s) = (
        flags & 0x8000 != 0,
        flags & 0x2000 != 0,
        flags & 0x1000 != 0,
    );
    let len = 4 + 4 * (usize::from(c) + usize::from(k) + usize::from(s));
    need(Layer::Encap, len, data)?;
    let mut at = 4 + 4 * usize::from(c);
    let key = k.then(|| be32(data, at));
    at += 4 * usize::from(k);
    let seq = s.then(|| be32(data, at));
    let layer = Encap {
        kind: EncapKind::Gre,
        gre_protocol: Some(be16(data, 2)),
        key,
        seq,
        ..Encap::default()
    };
    Ok((layer, &data[len..]))
}

/// The ERSPAN header after a GRE header of protocol 0x88BE (type I without a sequence
/// number: no header at all) or 0x22EB (type III); `gre` is refined into the ERSPAN layer.
pub fn erspan(gre: Encap, data: &[u8]) -> Result<(Encap, &[u8]), DecodeError> {
    let mut e = gre;
    match gre.gre_protocol {
        Some(GRE_PROTO_ERSPAN) if gre.seq.is_none() => {
            e.kind = EncapKind::Erspan1;
            Ok((e, data))
        }
        Some(GRE_PROTO_ERSPAN) => {
            need(Layer::Encap, 8, data)?;
            let w0 = be32(data, 0);
            erspan_base(&mut e, w0);
            e.kind = EncapKind::Erspan2;
            e.index = Some(be32(data, 4) & 0x000f_ffff);
            Ok((e, &data[8..]))
        }
        _ => {
            need(Layer::Encap, 12, data)?;
            let w0 = be32(data, 0);
            erspan_base(&mut e, w0);
            e.kind = EncapKind::Erspan3;
            e.timestamp = Some(be32(data, 4));
            let w2 = be16(data, 10);
            e.hw_id = Some(((w2 >> 4) & 0x3f) as u8);
            e.direction = Some(((w2 >> 3) & 1) as u8);
            e.granularity = Some(((w2 >> 1) & 3) as u8);
            if w2 & 1 == 0 {
                return Ok((e, &data[12..]));
            }
            // The platform sub-header: its type in the top 6 bits; types 3 and 4 carry the
            // upper 32 bits of the timestamp in their second word.
            need(Layer::Encap, 20, data)?;
            let platf_type = data[12] >> 2;
            if matches!(platf_type, 3 | 4) {
                e.timestamp_upper = Some(be32(data, 16));
            }
            Ok((e, &data[20..]))
        }
    }
}

/// The first word shared by ERSPAN II and III: VLAN, COS, T and the session.
fn erspan_base(e: &mut Encap, w0: u32) {
    e.vlan = Some(((w0 >> 16) & 0x0fff) as u16);
    e.cos = Some(((w0 >> 13) & 7) as u8);
    e.truncated = w0 & 0x400 != 0;
    e.session = Some((w0 & 0x3ff) as u16);
}

/// A VXLAN header: its VNI and the inner Ethernet frame.
pub fn vxlan(data: &[u8]) -> Result<(Encap, &[u8]), DecodeError> {
    need(Layer::Encap, 8, data)?;
    if data[0] & 0x08 == 0 {
        return Err(DecodeError::Invalid {
            layer: Layer::Encap,
            what: "VXLAN header without a VNI (I flag clear)",
        });
    }
    let layer = Encap {
        kind: EncapKind::Vxlan,
        vni: Some(be32(data, 4) >> 8),
        ..Encap::default()
    };
    Ok((layer, &data[8..]))
}

/// A Geneve header: its VNI, the protocol it carries and the bytes after its options.
pub fn geneve(data: &[u8]) -> Result<(Encap, u16, &[u8]), DecodeError> {
    need(Layer::Encap, 8, data)?;
    if data[0] >> 6 != 0 {
        return Err(DecodeError::Invalid {
            layer: Layer::Encap,
            what: "Geneve version other than 0",
        });
    }
    let len = 8 + usize::from(data[0] & 0x3f) * 4;
    need(Layer::Encap, len, data)?;
    let layer = Encap {
        kind: EncapKind::Geneve,
        vni: Some(be32(data, 4) >> 8),
        ..Encap::default()
    };
    Ok((layer, be16(data, 2), &data[len..]))
}

/// An MPLS label stack: the labels (the first `MAX_LABELS` kept) and the payload after the
/// bottom of the stack.
pub fn mpls(data: &[u8]) -> Result<(Encap, &[u8]), DecodeError> {
    let mut layer = Encap {
        kind: EncapKind::Mpls,
        ..Encap::default()
    };
    let mut at = 0;
    loop {
        need(Layer::Encap, at + 4, data)?;
        let entry = be32(data, at);
        if let Some(slot) = layer.labels.get_mut(usize::from(layer.label_count)) {
            *slot = entry >> 12;
            layer.label_count += 1;
        }
        at += 4;
        if entry & 0x100 != 0 {
            return Ok((layer, &data[at..]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gre_with_key_and_sequence() {
        let raw = [0x30, 0x00, 0x88, 0xbe, 0, 0, 0, 7, 0, 0, 0, 42, 0xaa];
        let (g, rest) = gre(&raw).unwrap();
        assert_eq!(g.gre_protocol, Some(0x88be));
        assert_eq!((g.key, g.seq), (Some(7), Some(42)));
        assert_eq!(rest, &[0xaa]);
        assert!(gre(&raw[..8]).is_err());
        assert!(gre(&[0, 1, 0x65, 0x58]).is_err(), "GRE version 1");
    }

    #[test]
    fn erspan3_low_bits_take_the_upper_bits_nearest_the_capture_time() {
        // 2026-12-01 12:00:00 UTC in ns, and the switch's 100 ns count 3 us earlier.
        let capture = 1_796_126_400_000_000_000u64;
        let sent = capture - 3_000;
        let e = Encap {
            kind: EncapKind::Erspan3,
            timestamp: Some((sent / 100) as u32),
            granularity: Some(1),
            ..Encap::default()
        };
        assert_eq!(e.timestamp_ns(), None, "the header lacks the upper bits");
        assert_eq!(e.timestamp_ns_near(capture), Ok(Some(sent)));
        // The low bits just before a wrap, the record just after it: still the nearest.
        let wrap_ns = (1u64 << 32) * 100;
        let after_wrap = (capture / wrap_ns + 1) * wrap_ns + 50;
        let before = Encap {
            timestamp: Some(u32::MAX),
            ..e
        };
        assert_eq!(
            before.timestamp_ns_near(after_wrap),
            Ok(Some(after_wrap - 150))
        );
        // A switch clock counting from boot: far from the record time whatever the upper bits.
        let boot = Encap {
            timestamp: Some(((sent / 100) as u32).wrapping_add(1 << 30)),
            ..e
        };
        assert_eq!(boot.timestamp_ns_near(capture), Err(ClockOffEpoch));
        // 100 us granularity, and IEEE 1588 without its seconds: none.
        let coarse = Encap {
            timestamp: Some((sent / 100_000) as u32),
            granularity: Some(0),
            ..e
        };
        let t = coarse.timestamp_ns_near(capture).unwrap().unwrap();
        assert!(t.abs_diff(sent) < 100_000, "{t}");
        let ptp = Encap {
            granularity: Some(2),
            ..e
        };
        assert_eq!(ptp.timestamp_ns_near(capture), Ok(None));
    }

    #[test]
    fn erspan_types() {
        let g1 = Encap {
            gre_protocol: Some(GRE_PROTO_ERSPAN),
            ..Encap::default()
        };
        assert_eq!(erspan(g1, &[1, 2]).unwrap().0.kind, EncapKind::Erspan1);
        // Type II: version 1, VLAN 100, COS 3, T set, session 5; index 0x12345.
        let w0: u32 = 1 << 28 | 100 << 16 | 3 << 13 | 1 << 10 | 5;
        let mut raw = w0.to_be_bytes().to_vec();
        raw.extend_from_slice(&0xfff1_2345u32.to_be_bytes());
        let g2 = Encap { seq: Some(9), ..g1 };
        let (e, rest) = erspan(g2, &raw).unwrap();
        assert_eq!(e.kind, EncapKind::Erspan2);
        assert_eq!((e.vlan, e.cos, e.session), (Some(100), Some(3), Some(5)));
        assert!(e.truncated);
        assert_eq!(e.index, Some(0x12345));
        assert!(rest.is_empty());
        // Type III: egress, 100 ns granularity, hardware 9, a platform sub-header of type 3.
        let w0: u32 = 2 << 28 | 7 << 16 | 6;
        let mut raw = w0.to_be_bytes().to_vec();
        raw.extend_from_slice(&1000u32.to_be_bytes());
        let w2: u16 = 9 << 4 | 1 << 3 | 1 << 1 | 1;
        raw.extend_from_slice(&[0, 0]);
        raw.extend_from_slice(&w2.to_be_bytes());
        raw.extend_from_slice(&[3 << 2, 0, 0, 0, 0, 0, 0, 2]);
        let g3 = Encap {
            gre_protocol: Some(GRE_PROTO_ERSPAN3),
            ..Encap::default()
        };
        let (e, rest) = erspan(g3, &raw).unwrap();
        assert_eq!(e.kind, EncapKind::Erspan3);
        assert_eq!(
            (e.direction, e.granularity, e.hw_id),
            (Some(1), Some(1), Some(9))
        );
        assert_eq!(e.timestamp_upper, Some(2));
        assert_eq!(e.timestamp_ns(), Some(((2u64 << 32) + 1000) * 100));
        assert!(rest.is_empty());
        assert!(erspan(g3, &raw[..11]).is_err());
    }

    #[test]
    fn vxlan_geneve_mpls() {
        let (v, rest) = vxlan(&[0x08, 0, 0, 0, 0x12, 0x34, 0x56, 0, 0xee]).unwrap();
        assert_eq!((v.vni, rest.len()), (Some(0x123456), 1));
        assert!(vxlan(&[0, 0, 0, 0, 0, 0, 0, 0]).is_err());
        let (g, proto, rest) = geneve(&[1, 0, 0x65, 0x58, 0, 0, 9, 0, 1, 2, 3, 4, 0xee]).unwrap();
        assert_eq!((g.vni, proto, rest), (Some(9), 0x6558, &[0xee][..]));
        let (m, rest) = mpls(&[0, 0x01, 0x00, 0x40, 0x00, 0x02, 0x01, 0x40, 0x45]).unwrap();
        assert_eq!(m.labels(), &[16, 32]);
        assert_eq!(rest, &[0x45]);
        assert!(mpls(&[0, 1, 0, 0x40]).is_err(), "no bottom of stack");
    }
}
