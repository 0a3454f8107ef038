//! Link types of capture files, and the Linux cooked headers (SLL, SLL2) that etherparse's lax
//! slicer does not take: they are stripped here, leaving a protocol type and its payload.

use crate::{truncated, DecodeError, Layer};

pub const LINKTYPE_ETHERNET: u32 = 1;
/// Raw IP (IPv4 or IPv6 by version nibble). 101 is the pcap value; 12 and 14 are old DLT values
/// some writers still use.
pub const LINKTYPE_RAW: u32 = 101;
pub const LINKTYPE_LINUX_SLL: u32 = 113;
pub const LINKTYPE_IPV4: u32 = 228;
pub const LINKTYPE_IPV6: u32 = 229;
pub const LINKTYPE_LINUX_SLL2: u32 = 276;
pub const LINKTYPE_ERF: u32 = 197;
/// InfiniBand frames from the LRH on, as libpcap's RDMA sniffer writes them on IB ports.
pub const LINKTYPE_INFINIBAND: u32 = 247;

/// Every link type roce-sniff decodes, with its name: the one list that names, support checks
/// and messages read.
const SUPPORTED: &[(u32, &str)] = &[
    (LINKTYPE_ETHERNET, "Ethernet"),
    (LINKTYPE_RAW, "raw IP"),
    (12, "raw IP"),
    (14, "raw IP"),
    (LINKTYPE_LINUX_SLL, "Linux cooked (SLL)"),
    (LINKTYPE_LINUX_SLL2, "Linux cooked (SLL2)"),
    (LINKTYPE_IPV4, "raw IPv4"),
    (LINKTYPE_IPV6, "raw IPv6"),
    (LINKTYPE_ERF, "ERF"),
    (LINKTYPE_INFINIBAND, "InfiniBand"),
];

/// The supported link types in one phrase, for messages.
pub const SUPPORTED_SUMMARY: &str =
    "Ethernet, Linux cooked SLL/SLL2, raw IP, InfiniBand (247), ERF Ethernet and InfiniBand";

/// Names of link types roce-sniff does not decode but users meet, so that a message can say
/// what a capture is (a Wi-Fi capture, a USB one) rather than "unknown".
const OTHER_NAMES: &[(u32, &str)] = &[
    (0, "BSD loopback"),
    (6, "Token Ring"),
    (9, "PPP"),
    (10, "FDDI"),
    (105, "IEEE 802.11"),
    (108, "OpenBSD loopback"),
    (119, "802.11 Prism"),
    (127, "802.11 radiotap"),
    (187, "Bluetooth HCI H4"),
    (189, "USB Linux"),
    (192, "PPI"),
    (201, "Bluetooth HCI H4 with direction"),
    (220, "USB Linux mmapped"),
    (249, "USB packets"),
    (253, "Linux netlink"),
];

pub fn linktype_name(linktype: u32) -> &'static str {
    SUPPORTED
        .iter()
        .chain(OTHER_NAMES)
        .find(|&&(lt, _)| lt == linktype)
        .map_or("unknown", |&(_, name)| name)
}

/// Whether frames of this link type carry no Ethernet header of their own: Linux cooked
/// captures (`tcpdump -i any`), where VLAN tags and PCP cannot be seen.
pub fn is_cooked(linktype: u32) -> bool {
    matches!(linktype, LINKTYPE_LINUX_SLL | LINKTYPE_LINUX_SLL2)
}

/// A Linux cooked header: the protocol (an ethertype for Ethernet-born packets) and the bytes after.
#[derive(Debug, Clone, Copy)]
pub struct Cooked<'a> {
    pub protocol: u16,
    /// The sender's link-layer address, when it is a 6-byte MAC.
    pub src_mac: Option<[u8; 6]>,
    /// ARPHRD type of the interface (1 = Ethernet).
    pub hatype: u16,
    pub payload: &'a [u8],
}

const SLL_LEN: usize = 16;
const SLL2_LEN: usize = 20;

/// Strips an SLL (16 bytes) header.
pub fn linux_sll(data: &[u8]) -> Result<Cooked<'_>, DecodeError> {
    if data.len() < SLL_LEN {
        return Err(truncated(Layer::Link, SLL_LEN, data.len()));
    }
    Ok(Cooked {
        hatype: u16::from_be_bytes([data[2], data[3]]),
        protocol: u16::from_be_bytes([data[14], data[15]]),
        src_mac: mac(u16::from_be_bytes([data[4], data[5]]).into(), &data[6..14]),
        payload: &data[SLL_LEN..],
    })
}

/// Strips an SLL2 (20 bytes) header.
pub fn linux_sll2(data: &[u8]) -> Result<Cooked<'_>, DecodeError> {
    if data.len() < SLL2_LEN {
        return Err(truncated(Layer::Link, SLL2_LEN, data.len()));
    }
    Ok(Cooked {
        protocol: u16::from_be_bytes([data[0], data[1]]),
        hatype: u16::from_be_bytes([data[8], data[9]]),
        src_mac: mac(data[11].into(), &data[12..20]),
        payload: &data[SLL2_LEN..],
    })
}

fn mac(halen: usize, addr: &[u8]) -> Option<[u8; 6]> {
    (halen == 6).then(|| [addr[0], addr[1], addr[2], addr[3], addr[4], addr[5]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_types_are_named_even_when_not_decoded() {
        assert_eq!(linktype_name(1), "Ethernet");
        assert_eq!(linktype_name(105), "IEEE 802.11");
        assert_eq!(linktype_name(127), "802.11 radiotap");
        assert_eq!(linktype_name(65000), "unknown");
    }

    #[test]
    fn cooked_headers() {
        let mut sll = [0u8; 18];
        sll[2..4].copy_from_slice(&1u16.to_be_bytes());
        sll[14..16].copy_from_slice(&0x0800u16.to_be_bytes());
        let c = linux_sll(&sll).unwrap();
        assert_eq!((c.protocol, c.hatype, c.payload.len()), (0x0800, 1, 2));
        assert!(linux_sll(&sll[..15]).is_err());

        let mut sll2 = [0u8; 20];
        sll2[0..2].copy_from_slice(&0x86ddu16.to_be_bytes());
        let c = linux_sll2(&sll2).unwrap();
        assert_eq!((c.protocol, c.payload.len()), (0x86dd, 0));
        assert!(linux_sll2(&sll2[..19]).is_err());
    }
}
