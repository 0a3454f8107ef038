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
    /// Native InfiniBand without a GRH: the LRH itself, VL masked. (With a GRH, routers may
    /// rewrite the whole LRH, so it counts as ones, as in RoCE: use `Grh`.)
    Lrh(&'a [u8]),
}

/// Longest masked prefix: 8 bytes of ones, an IPv4 header with options (60) or an IPv6
/// header / GRH (40), UDP (8) and the BTH (12).
const HEAD_MAX: usize = 8 + 60 + 8 + BTH_LEN;

/// Computes the ICRC. `udp_header` is the 8-byte UDP header (empty for RoCEv1);
/// `transport` runs from the BTH to the end of the pad (the ICRC itself excluded).
///
/// The masked headers are assembled in one stack buffer and hashed in one call: CRC-32 of many
/// small pieces costs more than of one buffer (this showed in profiles).
/// A new hasher, made once and cloned: `Hasher::new` asks which CPU features there are every
/// time, about 30 instructions a frame.
static HASHER: std::sync::LazyLock<Hasher> = std::sync::LazyLock::new(Hasher::new);

pub fn compute(net: NetHeader<'_>, udp_header: &[u8], transport: &[u8]) -> u32 {
    let mut head = [0u8; HEAD_MAX];
    // RoCE: eight bytes of ones stand for the LRH; native IB has the LRH itself, VL masked.
    match net {
        NetHeader::Lrh(lrh) if lrh.len() == 8 => {
            head[..8].copy_from_slice(lrh);
            head[0] |= 0xf0;
        }
        _ => head[..8].fill(0xff),
    }
    let mut n = 8;
    let mut ipv6_exts: &[u8] = &[];
    match net {
        NetHeader::Ipv4(header) => {
            let len = header.len().min(60);
            head[n..n + len].copy_from_slice(&header[..len]);
            head[n + 1] = 0xff; // TOS
            head[n + 8] = 0xff; // TTL
            head[n + 10] = 0xff; // header checksum
            head[n + 11] = 0xff;
            n += len;
        }
        NetHeader::Ipv6 { header, exts } => {
            n += mask_ipv6_like(header, &mut head[n..]);
            ipv6_exts = exts;
        }
        NetHeader::Grh(grh) => n += mask_ipv6_like(grh, &mut head[n..]),
        NetHeader::Lrh(_) => {}
    }
    let mut h = HASHER.clone();
    if !ipv6_exts.is_empty() {
        // Extension headers sit between the IPv6 header and UDP: hash in order.
        h.update(&head[..n]);
        h.update(ipv6_exts);
        n = 0;
    }
    if udp_header.len() == 8 {
        head[n..n + 8].copy_from_slice(udp_header);
        head[n + 6] = 0xff; // checksum
        head[n + 7] = 0xff;
        n += 8;
    }
    let body = if transport.len() >= BTH_LEN {
        head[n..n + BTH_LEN].copy_from_slice(&transport[..BTH_LEN]);
        head[n + 4] = 0xff; // FECN, BECN, reserved
        n += BTH_LEN;
        &transport[BTH_LEN..]
    } else {
        transport
    };
    h.update(&head[..n]);
    h.update(body);
    h.finalize()
}

/// Copies an IPv6 header or GRH into `out` with traffic class, flow label and hop limit set
/// to ones; returns the bytes written.
fn mask_ipv6_like(header: &[u8], out: &mut [u8]) -> usize {
    let n = header.len().min(40);
    out[..n].copy_from_slice(&header[..n]);
    if n == 40 {
        out[0] |= 0x0f;
        out[1] = 0xff;
        out[2] = 0xff;
        out[3] = 0xff;
        out[7] = 0xff;
    }
    n
}

/// The 4 bytes to append to a crafted frame so that its ICRC is valid.
pub fn trailer(crc: u32) -> [u8; ICRC_LEN] {
    crc.to_le_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{decode_frame, link::LINKTYPE_ETHERNET};

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// Published vectors (scapy's roce.uts): a ConnectX-4 Lx CNP, a RoCEv1 RDMA WRITE Only and
    /// a RoCEv1 ACK, each with the ICRC as shown on the wire.
    const VECTORS: [(&str, u32); 3] = [
        ("e41d2dab2bc27cfe90643b32080045c2003c718c4000401191610a0011010a001201000012b7002800008100ffff40000118000000000000000000000000000000000000000082fd002a", 0x82fd002a),
        ("7cfe90753cd87cfe90753cd889156020000000281b4000000000000000000000ffff0f00000200000000000000000000ffff0f0000020a70ffff0000010a80a788bc000055d4c0726000000047b3000000050000000001000000e3d856bb", 0xe3d856bb),
        ("7cfe90753cd87cfe90753cd889156020000000141b4000000000000000000000ffff0f00000200000000000000000000ffff0f0000021140ffff0000010900a788c00000000525f0c038", 0x25f0c038),
    ];

    #[test]
    fn published_vectors_check_ok() {
        for (frame, icrc) in VECTORS {
            let raw = hex(frame);
            let f = decode_frame(LINKTYPE_ETHERNET, &raw, raw.len() as u32);
            let r = f.roce.expect("RoCE frame");
            assert_eq!(r.icrc.status, IcrcStatus::Ok);
            assert_eq!(r.icrc.value, Some(icrc));
            assert_eq!(r.icrc.computed, Some(icrc));
        }
    }

    #[test]
    fn any_changed_covered_byte_is_bad_and_masked_bytes_are_not() {
        let raw = hex(VECTORS[0].0);
        // IPv4 TOS (byte 15), TTL (22) and checksum (24, 25), UDP checksum (40, 41) and
        // BTH byte 4 (46) are masked: changing them keeps the ICRC valid.
        for at in [15, 22, 24, 25, 40, 41, 46] {
            let mut m = raw.clone();
            m[at] ^= 0x01;
            let f = decode_frame(LINKTYPE_ETHERNET, &m, m.len() as u32);
            assert_eq!(f.roce.unwrap().icrc.status, IcrcStatus::Ok, "byte {at}");
        }
        // The destination QP is covered.
        let mut m = raw.clone();
        m[49] ^= 0x01;
        let f = decode_frame(LINKTYPE_ETHERNET, &m, m.len() as u32);
        assert_eq!(f.roce.unwrap().icrc.status, IcrcStatus::Bad);
    }

    #[test]
    fn cut_frame_is_unchecked() {
        let raw = hex(VECTORS[0].0);
        let f = decode_frame(LINKTYPE_ETHERNET, &raw[..70], raw.len() as u32);
        assert!(f.is_snapped() && !f.is_malformed());
        assert_eq!(f.roce.unwrap().icrc, IcrcCheck::UNCHECKED);
    }
}
