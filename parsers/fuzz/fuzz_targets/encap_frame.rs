//! Any bytes behind a mirror or tunnel header (ERSPAN I/II/III, GRE-TEB, plain GRE-IP,
//! VXLAN, MPLS), and any bytes as the encapsulation headers themselves: decoding never panics
//! and the per-frame outputs are produced for whatever decoded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use roce_parsers::{decode_frame, encap};

/// Ethernet + IPv4 (10.9.9.1 > 10.9.9.2, protocol `proto`) with a total length that covers
/// `rest` bytes after the header; the checksum is left zero (it is not checked).
fn outer_ipv4(proto: u8, rest: usize) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
    let total = (20 + rest).min(0xffff) as u16;
    f.extend_from_slice(&[
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        0,
        0x40,
        0,
        64,
        proto,
        0,
        0,
    ]);
    f.extend_from_slice(&[10, 9, 9, 1, 10, 9, 9, 2]);
    f
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, inner)) = data.split_first() else {
        return;
    };
    // The encapsulation header, then the fuzzed inner bytes.
    let (proto, header): (u8, Vec<u8>) = match selector % 7 {
        // ERSPAN I: GRE without sequence, protocol 0x88be.
        0 => (47, vec![0x00, 0x00, 0x88, 0xbe]),
        // ERSPAN II: GRE with sequence, then the 8-byte ERSPAN II header.
        1 => (
            47,
            vec![
                0x10, 0x00, 0x88, 0xbe, 0, 0, 0, 7, 0x10, 0x64, 0x08, 0x05, 0, 0, 0, 1,
            ],
        ),
        // ERSPAN III: GRE with sequence, protocol 0x22eb, the 12-byte header (no sub-header).
        2 => (
            47,
            vec![
                0x10, 0x00, 0x22, 0xeb, 0, 0, 0, 9, 0x20, 0x64, 0x08, 0x05, 0x12, 0x34, 0x56, 0x78,
                0, 0, 0x04, 0x00,
            ],
        ),
        // GRE transparent Ethernet bridging.
        3 => (47, vec![0x00, 0x00, 0x65, 0x58]),
        // Plain GRE carrying IPv4.
        4 => (47, vec![0x00, 0x00, 0x08, 0x00]),
        // VXLAN: UDP to 4789, then the 8-byte header with VNI 100.
        5 => {
            let len = (8 + 8 + inner.len()).min(0xffff) as u16;
            (
                17,
                vec![
                    0xc0,
                    0x00,
                    0x12,
                    0xb5,
                    (len >> 8) as u8,
                    len as u8,
                    0,
                    0,
                    0x08,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0x64,
                    0,
                ],
            )
        }
        // The fuzzed bytes are the GRE header and what follows.
        _ => (47, Vec::new()),
    };
    let mut frame = outer_ipv4(proto, header.len() + inner.len());
    frame.extend_from_slice(&header);
    frame.extend_from_slice(inner);
    let decoded = decode_frame(
        roce_parsers::link::LINKTYPE_ETHERNET,
        &frame,
        frame.len() as u32,
    );
    let mut out = Vec::new();
    roce_sniff::outputs::packets::write_json_line(&mut out, 1, 0, &decoded).expect("write to memory");
    // MPLS: the same inner bytes behind a label stack ending in the fuzzed label.
    let mut mpls = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x88, 0x47];
    mpls.extend_from_slice(inner);
    let _ = decode_frame(
        roce_parsers::link::LINKTYPE_ETHERNET,
        &mpls,
        mpls.len() as u32,
    );
    // The parsers on their own.
    if let Ok((gre, rest)) = encap::gre(inner) {
        let _ = encap::erspan(gre, rest);
    }
});
