//! ICMP and ICMPv6 errors that quote a RoCEv2 packet: a router or host saying the packet could
//! not be delivered (unreachable, too big for the next hop, hop limit exceeded). The quoted
//! packet starts 8 bytes into the message (RFC 792, RFC 4443): its IP header, its UDP header and,
//! when the router quoted enough (RFC 1812 asks for as much as fits), the BTH.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::ROCEV2_UDP_PORT;

pub const IP_PROTO_ICMP: u8 = 1;
pub const IP_PROTO_ICMPV6: u8 = 58;

/// An ICMP error about a RoCEv2 packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IcmpError {
    /// ICMPv6 rather than ICMP.
    pub v6: bool,
    pub icmp_type: u8,
    pub code: u8,
    /// The next hop's MTU of a "fragmentation needed" (v4) or "packet too big" (v6).
    pub mtu: Option<u32>,
    /// The quoted packet's addresses, and its destination QP and PSN when the BTH was quoted.
    pub src: IpAddr,
    pub dst: IpAddr,
    pub dqpn: Option<u32>,
    pub psn: Option<u32>,
}

impl IcmpError {
    /// What it says, as people name it.
    pub fn name(&self) -> &'static str {
        match (self.v6, self.icmp_type, self.code) {
            (false, 3, 4) => "fragmentation needed",
            (false, 3, 0) | (true, 1, 0) => "network unreachable",
            (false, 3, 1) | (true, 1, 3) => "host unreachable",
            (false, 3, 3) | (true, 1, 4) => "port unreachable",
            (false, 3, 13) | (true, 1, 1) => "administratively prohibited",
            (false, 3, _) | (true, 1, _) => "destination unreachable",
            (true, 2, _) => "packet too big",
            (false, 11, _) | (true, 3, _) => "time exceeded",
            _ => "ICMP error",
        }
    }
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at + 4)?;
    Some(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

/// An ICMP (`v6` false) or ICMPv6 message; `None` unless it is an error quoting a RoCEv2
/// packet.
pub fn parse(msg: &[u8], v6: bool) -> Option<IcmpError> {
    let (icmp_type, code) = (*msg.first()?, *msg.get(1)?);
    let mtu = match (v6, icmp_type) {
        (false, 3 | 11) | (true, 1 | 3) => None,
        (true, 2) => Some(be32(msg, 4)?),
        _ => return None,
    };
    let mtu = mtu.or_else(|| {
        (!v6 && icmp_type == 3 && code == 4)
            .then(|| be16(msg, 6).map(u32::from))
            .flatten()
    });
    let quoted = msg.get(8..)?;
    let (src, dst, proto, udp) = if v6 {
        let s: [u8; 16] = quoted.get(8..24)?.try_into().ok()?;
        let d: [u8; 16] = quoted.get(24..40)?.try_into().ok()?;
        let src = IpAddr::V6(Ipv6Addr::from(s));
        (
            src,
            IpAddr::V6(Ipv6Addr::from(d)),
            *quoted.get(6)?,
            quoted.get(40..)?,
        )
    } else {
        let ihl = usize::from(*quoted.first()? & 0x0f) * 4;
        if *quoted.first()? >> 4 != 4 || ihl < 20 {
            return None;
        }
        let s: [u8; 4] = quoted.get(12..16)?.try_into().ok()?;
        let d: [u8; 4] = quoted.get(16..20)?.try_into().ok()?;
        let src = IpAddr::V4(Ipv4Addr::from(s));
        (
            src,
            IpAddr::V4(Ipv4Addr::from(d)),
            *quoted.get(9)?,
            quoted.get(ihl..)?,
        )
    };
    if proto != 17 || be16(udp, 2)? != ROCEV2_UDP_PORT {
        return None;
    }
    let bth = udp.get(8..20);
    Some(IcmpError {
        v6,
        icmp_type,
        code,
        mtu,
        src,
        dst,
        dqpn: bth.map(|b| u32::from_be_bytes([0, b[5], b[6], b[7]])),
        psn: bth.map(|b| u32::from_be_bytes([0, b[9], b[10], b[11]])),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ICMP "fragmentation needed" (MTU 1500) quoting a RoCEv2 WRITE to QP 0x100, PSN 7.
    fn frag_needed(quote_bth: bool) -> Vec<u8> {
        let mut m = vec![3, 4, 0, 0, 0, 0, 0x05, 0xdc];
        let mut ip = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0];
        ip.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        m.extend_from_slice(&ip);
        m.extend_from_slice(&[0xc0, 0x00, 0x12, 0xb7, 0x10, 0x10, 0, 0]);
        if quote_bth {
            m.extend_from_slice(&[0x0a, 0, 0xff, 0xff, 0, 0, 0x01, 0x00, 0x80, 0, 0, 7]);
        }
        m
    }

    #[test]
    fn fragmentation_needed_quoting_roce() {
        let e = parse(&frag_needed(true), false).unwrap();
        assert_eq!(e.name(), "fragmentation needed");
        assert_eq!(e.mtu, Some(1500));
        assert_eq!(e.src, IpAddr::from([10, 0, 0, 1]));
        assert_eq!(e.dst, IpAddr::from([10, 0, 0, 2]));
        assert_eq!((e.dqpn, e.psn), (Some(0x100), Some(7)));
        let short = parse(&frag_needed(false), false).unwrap();
        assert_eq!((short.dqpn, short.psn), (None, None));
    }

    #[test]
    fn not_roce_or_not_an_error_gives_none() {
        let mut m = frag_needed(true);
        m[8 + 20 + 3] = 53; // quoted UDP port 4661, not RoCE
        assert_eq!(parse(&m, false), None);
        assert_eq!(parse(&[8, 0, 0, 0, 0, 0, 0, 0], false), None); // echo request
        for cut in 0..frag_needed(false).len() {
            let _ = parse(&frag_needed(false)[..cut], false);
        }
    }

    #[test]
    fn packet_too_big_v6() {
        let mut m = vec![2, 0, 0, 0, 0, 0, 0x05, 0x00];
        let mut ip6 = vec![0x60, 0, 0, 0, 0, 20, 17, 64];
        ip6.extend_from_slice(&[0xfd; 16]);
        ip6.extend_from_slice(&[0xfe; 16]);
        m.extend_from_slice(&ip6);
        m.extend_from_slice(&[0xc0, 0x00, 0x12, 0xb7, 0, 20, 0, 0]);
        let e = parse(&m, true).unwrap();
        assert_eq!((e.name(), e.mtu), ("packet too big", Some(1280)));
    }
}
