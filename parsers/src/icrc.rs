//! Invariant CRC: CRC-32 over the packet from the IP header (or GRH) to the end of the pad,
//! with the fields routers may change set to ones and 8 bytes of ones prepended (standing for
//! the InfiniBand LRH). Stored least-significant byte first: `crc == u32::from_le_bytes(trailer)`.
//!
//! The masked copies are made in small stack buffers, so nothing is allocated.

use crc32fast::Hasher;

use crate::bth::BTH_LEN;

pub const ICRC_LEN: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IcrcStatus {
    /// The trailer matches the CRC computed over the frame.
    Ok,
    /// The trailer does not match: the frame was corrupted (or built wrongly by its sender).
    Bad,
    /// The frame was cut by the capture's snap length: the ICRC could not be checked.
    Unchecked,
}

impl IcrcStatus {
    pub fn name(self) -> &'static str {
        match self {
            IcrcStatus::Ok => "ok",
            IcrcStatus::Bad => "bad",
            IcrcStatus::Unchecked => "unchecked",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IcrcCheck {
    /// The trailer as it appears on the wire, read big-endian (the way tshark shows it);
    /// `None` when the trailer was not captured.
    pub value: Option<u32>,
    /// The CRC computed over the frame, in the same big-endian reading as `value`.
    pub computed: Option<u32>,
    pub status: IcrcStatus,
}

impl IcrcCheck {
    pub const UNCHECKED: IcrcCheck = IcrcCheck {
        value: None,
        computed: None,
        status: IcrcStatus::Unchecked,
    };

    /// Compares the computed CRC with the 4-byte trailer.
    pub fn compare(crc: u32, trailer: [u8; 4]) -> IcrcCheck {
        let computed = crc.swap_bytes();
        let value = u32::from_be_bytes(trailer);
        IcrcCheck {
            value: Some(value),
            computed: Some(computed),
            status: if crc == u32::from_le_bytes(trailer) {
                IcrcStatus::Ok
            } else {
                IcrcStatus::Bad
            },
        }
    }
}

/// The IP-level (or GRH) header of the packet, for masking.
#[derive(Debug, Clone, Copy)]
pub enum NetHeader<'a> {
    /// IPv4 header including options.
    Ipv4(&'a [u8]),
    /// IPv6 fixed header and its extension headers.
    Ipv6 { header: &'a [u8], exts: &'a [u8] },
    /// RoCEv1: the 40-byte GRH.
    Grh(&'a [u8]),
}

fn masked_ipv6_like(header: &[u8], h: &mut Hasher) {
    let mut buf = [0u8; 40];
    let n = header.len().min(40);
    buf[..n].copy_from_slice(&header[..n]);
    // Traffic class (low nibble of byte 0, high nibble of byte 1), flow label, hop limit.
    buf[0] |= 0x0f;
    buf[1] = 0xff;
    buf[2] = 0xff;
    buf[3] = 0xff;
    buf[7] = 0xff;
    h.update(&buf[..n]);
}

/// Computes the ICRC. `udp_header` is the 8-byte UDP header (empty for RoCEv1);
/// `transport` runs from the BTH to the end of the pad (the ICRC itself excluded).
pub fn compute(net: NetHeader<'_>, udp_header: &[u8], transport: &[u8]) -> u32 {
    let mut h = Hasher::new();
    h.update(&[0xff; 8]);
    match net {
        NetHeader::Ipv4(header) => {
            let mut buf = [0u8; 60];
            let n = header.len().min(60);
            buf[..n].copy_from_slice(&header[..n]);
            buf[1] = 0xff; // TOS
            buf[8] = 0xff; // TTL
            buf[10] = 0xff; // header checksum
            buf[11] = 0xff;
            h.update(&buf[..n]);
        }
        NetHeader::Ipv6 { header, exts } => {
            masked_ipv6_like(header, &mut h);
            h.update(exts);
        }
        NetHeader::Grh(grh) => masked_ipv6_like(grh, &mut h),
    }
    if udp_header.len() == 8 {
        let mut udp = [0u8; 8];
        udp.copy_from_slice(udp_header);
        udp[6] = 0xff; // checksum
        udp[7] = 0xff;
        h.update(&udp);
    }
    if transport.len() >= BTH_LEN {
        let mut bth = [0u8; BTH_LEN];
        bth.copy_from_slice(&transport[..BTH_LEN]);
        bth[4] = 0xff; // FECN, BECN, reserved
        h.update(&bth);
        h.update(&transport[BTH_LEN..]);
    } else {
        h.update(transport);
    }
    h.finalize()
}

/// The 4 bytes to append to a crafted frame so that its ICRC is valid.
pub fn trailer(crc: u32) -> [u8; ICRC_LEN] {
    crc.to_le_bytes()
}
