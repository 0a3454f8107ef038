//! Mirror sessions and tunnels around crafted frames: ERSPAN I, II and III, GRE (bridged
//! Ethernet or IP), IP-in-IP, VXLAN, Geneve and MPLS, over IPv4 or IPv6, with VLAN tags outside.
//! Every field is the caller's, so tests know what each layer must decode to.

use std::net::Ipv6Addr;

use super::frames::ipv4_header;

/// The mirror or tunnel endpoints: outer Ethernet (with an optional tag) and IP.
#[derive(Debug, Clone, Copy)]
pub struct Outer {
    pub vlan: Option<(u16, u8)>,
    pub v6: bool,
}

const SRC4: [u8; 4] = [192, 168, 50, 1];
const DST4: [u8; 4] = [192, 168, 50, 2];
const SRC6: &str = "fd50::1";
const DST6: &str = "fd50::2";

impl Outer {
    /// Outer Ethernet + IP carrying `payload` as IP protocol `proto`.
    pub fn ip(&self, proto: u8, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![0x02, 0, 0, 0, 0, 0xbb, 0x02, 0, 0, 0, 0, 0xaa];
        if let Some((vid, pcp)) = self.vlan {
            f.extend_from_slice(&0x8100u16.to_be_bytes());
            f.extend_from_slice(&(u16::from(pcp) << 13 | vid).to_be_bytes());
        }
        let len = payload.len() as u16;
        if self.v6 {
            f.extend_from_slice(&0x86ddu16.to_be_bytes());
            let mut ip = [0u8; 40];
            ip[0] = 0x60;
            ip[4..6].copy_from_slice(&len.to_be_bytes());
            ip[6] = proto;
            ip[7] = 64;
            ip[8..24].copy_from_slice(&SRC6.parse::<Ipv6Addr>().expect("literal").octets());
            ip[24..40].copy_from_slice(&DST6.parse::<Ipv6Addr>().expect("literal").octets());
            f.extend_from_slice(&ip);
        } else {
            f.extend_from_slice(&0x0800u16.to_be_bytes());
            f.extend_from_slice(&ipv4_header(SRC4, DST4, 0, 64, proto, len, true));
        }
        f.extend_from_slice(payload);
        f
    }

    /// Outer Ethernet + IP + UDP to `dport` carrying `payload`.
    pub fn udp(&self, dport: u16, payload: &[u8]) -> Vec<u8> {
        let mut u = Vec::with_capacity(8 + payload.len());
        u.extend_from_slice(&54321u16.to_be_bytes());
        u.extend_from_slice(&dport.to_be_bytes());
        u.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        u.extend_from_slice(&[0, 0]);
        u.extend_from_slice(payload);
        self.ip(17, &u)
    }
}

/// A GRE header: key and sequence number when given.
pub fn gre(protocol: u16, key: Option<u32>, seq: Option<u32>) -> Vec<u8> {
    let flags: u16 =
        if key.is_some() { 0x2000 } else { 0 } | if seq.is_some() { 0x1000 } else { 0 };
    let mut g = flags.to_be_bytes().to_vec();
    g.extend_from_slice(&protocol.to_be_bytes());
    for v in key.into_iter().chain(seq) {
        g.extend_from_slice(&v.to_be_bytes());
    }
    g
}

/// ERSPAN type I: GRE 0x88BE without a sequence number, then the mirrored frame.
pub fn erspan1(outer: Outer, frame: &[u8]) -> Vec<u8> {
    outer.ip(47, &[gre(0x88be, None, None), frame.to_vec()].concat())
}

/// ERSPAN type II: GRE 0x88BE with `seq`, the version 1 header, then the mirrored frame.
pub fn erspan2(outer: Outer, seq: u32, session: u16, index: u32, t: bool, frame: &[u8]) -> Vec<u8> {
    let w0: u32 = 1 << 28 | 100 << 16 | 3 << 13 | u32::from(t) << 10 | u32::from(session & 0x3ff);
    let mut p = gre(0x88be, None, Some(seq));
    p.extend_from_slice(&w0.to_be_bytes());
    p.extend_from_slice(&(index & 0xfffff).to_be_bytes());
    p.extend_from_slice(frame);
    outer.ip(47, &p)
}

/// ERSPAN type III: GRE 0x22EB with `seq`, the version 2 header with a timestamp of
/// granularity 1 (100 ns) and egress direction, and a platform sub-header of type 3 giving the
/// timestamp's upper word when `upper` is given.
pub fn erspan3(
    outer: Outer,
    seq: u32,
    session: u16,
    ts: u32,
    upper: Option<u32>,
    frame: &[u8],
) -> Vec<u8> {
    let w0: u32 = 2 << 28 | 100 << 16 | 3 << 13 | u32::from(session & 0x3ff);
    let mut p = gre(0x22eb, None, Some(seq));
    p.extend_from_slice(&w0.to_be_bytes());
    p.extend_from_slice(&ts.to_be_bytes());
    let w2: u16 = 5 << 4 | 1 << 3 | 1 << 1 | u16::from(upper.is_some());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(&w2.to_be_bytes());
    if let Some(up) = upper {
        p.extend_from_slice(&[3 << 2, 0, 0, 0]);
        p.extend_from_slice(&up.to_be_bytes());
    }
    p.extend_from_slice(frame);
    outer.ip(47, &p)
}

/// The IP part of an Ethernet frame (its 14-byte header stripped; untagged frames only).
fn ip_of(frame: &[u8]) -> &[u8] {
    &frame[14..]
}

/// GRE carrying bridged Ethernet (0x6558).
pub fn gre_teb(outer: Outer, frame: &[u8]) -> Vec<u8> {
    outer.ip(47, &[gre(0x6558, Some(77), None), frame.to_vec()].concat())
}

/// GRE carrying the IPv4 packet of an untagged frame.
pub fn gre_ip(outer: Outer, frame: &[u8]) -> Vec<u8> {
    outer.ip(
        47,
        &[gre(0x0800, None, None), ip_of(frame).to_vec()].concat(),
    )
}

/// IPv4 in the outer IP (protocol 4).
pub fn ipip(outer: Outer, frame: &[u8]) -> Vec<u8> {
    outer.ip(4, ip_of(frame))
}

/// VXLAN (UDP 4789) with `vni`.
pub fn vxlan(outer: Outer, vni: u32, frame: &[u8]) -> Vec<u8> {
    let mut v = vec![0x08, 0, 0, 0];
    v.extend_from_slice(&(vni << 8).to_be_bytes());
    v.extend_from_slice(frame);
    outer.udp(4789, &v)
}

/// Geneve (UDP 6081) with `vni`, one 8-byte option, carrying Ethernet.
pub fn geneve(outer: Outer, vni: u32, frame: &[u8]) -> Vec<u8> {
    let mut g = vec![2, 0, 0x65, 0x58];
    g.extend_from_slice(&(vni << 8).to_be_bytes());
    g.extend_from_slice(&[0x01, 0x02, 0x03, 0x01, 0, 0, 0, 9]);
    g.extend_from_slice(frame);
    outer.udp(6081, &g)
}

/// An MPLS label stack (ethertype 0x8847) carrying the IPv4 packet of an untagged frame.
pub fn mpls(labels: &[u32], frame: &[u8]) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 0xbb, 0x02, 0, 0, 0, 0, 0xaa, 0x88, 0x47];
    for (i, l) in labels.iter().enumerate() {
        let bottom = u32::from(i + 1 == labels.len());
        f.extend_from_slice(&(l << 12 | bottom << 8 | 64).to_be_bytes());
    }
    f.extend_from_slice(ip_of(frame));
    f
}
