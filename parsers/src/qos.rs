//! What a frame carries for quality of service: the IP traffic class (IPv4 TOS, IPv6 traffic
//! class) split into DSCP and ECN, and the queue pair numbers it is addressed to.

use std::fmt;

/// ECN codepoint (RFC 3168): the low two bits of the traffic class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ecn {
    NotEct = 0,
    Ect1 = 1,
    Ect0 = 2,
    /// Congestion experienced: set by a switch on an ECN-capable packet.
    Ce = 3,
}

impl Ecn {
    pub const ALL: [Ecn; 4] = [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce];

    pub fn from_bits(bits: u8) -> Ecn {
        Ecn::ALL[usize::from(bits & 3)]
    }

    pub fn bits(self) -> u8 {
        self as u8
    }

    /// Whether a switch may mark it (ECT(0), ECT(1) or already CE).
    pub fn is_capable(self) -> bool {
        self != Ecn::NotEct
    }

    /// The name every output of roce-sniff uses.
    pub fn name(self) -> &'static str {
        match self {
            Ecn::NotEct => "not_ect",
            Ecn::Ect1 => "ect1",
            Ecn::Ect0 => "ect0",
            Ecn::Ce => "ce",
        }
    }
}

/// IPv4 TOS or IPv6 traffic class: DSCP (upper 6 bits) | ECN (lower 2 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TrafficClass(pub u8);

impl TrafficClass {
    pub fn dscp(self) -> u8 {
        self.0 >> 2
    }

    pub fn ecn(self) -> Ecn {
        Ecn::from_bits(self.0)
    }
}

/// A queue pair number (24 bits), shown as 0x plus six hex digits like everywhere in RDMA tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Qpn(pub u32);

impl Qpn {
    /// QP 1: the general services QP that carries RDMA-CM (connection management) MADs.
    pub const GSI: Qpn = Qpn(1);
}

impl fmt::Display for Qpn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#08x}", self.0)
    }
}

/// An Ethernet MAC address, shown as six colon-separated hex bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MacAddr(pub [u8; 6]);

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            m[0], m[1], m[2], m[3], m[4], m[5]
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tos_splits_into_dscp_and_ecn() {
        assert_eq!(TrafficClass(0x68).dscp(), 26);
        assert_eq!(TrafficClass(0x68).ecn(), Ecn::NotEct);
        assert_eq!(TrafficClass(0x6a).ecn(), Ecn::Ect0);
        assert_eq!(TrafficClass(0x6b).ecn(), Ecn::Ce);
        assert!(TrafficClass(0x69).ecn().is_capable());
        assert_eq!(Ecn::Ect1.name(), "ect1");
    }

    #[test]
    fn labels() {
        assert_eq!(Qpn(0x45).to_string(), "0x000045");
        assert_eq!(
            MacAddr([0, 1, 2, 0xaa, 0xbb, 0xcc]).to_string(),
            "00:01:02:aa:bb:cc"
        );
    }
}
