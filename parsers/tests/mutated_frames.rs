//! A bounded, stable-toolchain fuzz pass run by the normal test suite: real frames (the scapy
//! test vectors, a RoCEv1 frame, a PFC frame) mutated at random — bytes flipped, cut,
//! lengthened — must decode without a panic, for every link type, and what decodes must stay
//! within the bytes given. The long fuzzing runs with cargo-fuzz (parsers/fuzz).

use proptest::prelude::*;
use roce_parsers::frame::decode_frame_general;
use roce_parsers::{decode_frame, IcrcStatus};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn seeds() -> Vec<Vec<u8>> {
    vec![
        // ConnectX-4 Lx CNP (IPv4).
        hex("e41d2dab2bc27cfe90643b32080045c2003c718c4000401191610a0011010a001201000012b7002800008100ffff40000118000000000000000000000000000000000000000082fd002a"),
        // RoCEv1 RDMA WRITE Only.
        hex("7cfe90753cd87cfe90753cd889156020000000281b4000000000000000000000ffff0f00000200000000000000000000ffff0f0000020a70ffff0000010a80a788bc000055d4c0726000000047b3000000050000000001000000e3d856bb"),
        // PFC, priority 3.
        {
            let mut f = hex("0180c20000010200000000 5e8808".replace(' ', "").as_str());
            f.extend_from_slice(&[0x01, 0x01, 0x00, 0x08, 0, 0, 0, 0, 0, 0, 0xff, 0xff]);
            f.resize(60, 0);
            f
        },
    ]
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Cut(usize),
    Insert(usize, u8),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        any::<usize>().prop_map(Mutation::Cut),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutated_frames_never_panic(
        seed in 0usize..3,
        muts in proptest::collection::vec(mutation(), 0..8),
        linktype in prop::sample::select(vec![1u32, 113, 276, 101, 228, 229, 147]),
        snapped in any::<bool>(),
    ) {
        let mut f = seeds()[seed].clone();
        for m in muts {
            match m {
                Mutation::Flip(i, b) if !f.is_empty() => { let n = f.len(); f[i % n] ^= b; }
                Mutation::Cut(i) => { let n = f.len() + 1; f.truncate(i % n); }
                Mutation::Insert(i, b) => { let n = f.len() + 1; f.insert(i % n, b); }
                _ => {}
            }
        }
        let len = f.len() as u32 + if snapped { 64 } else { 0 };
        let frame = decode_frame(linktype, &f, len);
        prop_assert!(frame.caplen as usize == f.len());
        prop_assert!(frame.vlans().len() <= 3);
        if let Some(r) = frame.roce {
            prop_assert!(r.payload.len() <= f.len());
            prop_assert!(r.payload.len() as u64 <= u64::from(r.payload_len));
            if snapped && r.icrc.status != IcrcStatus::Unchecked {
                // A frame cut short cannot have had its whole ICRC checked... unless the cut
                // fell in trailing Ethernet padding after the ICRC.
                prop_assert!(frame.caplen >= 4);
            }
        }
        let _ = frame.is_malformed();
        let _ = frame.addresses();
        // The direct path for common RoCEv2 frames decodes exactly as the general one.
        prop_assert_eq!(frame, decode_frame_general(linktype, &f, len));
    }

    #[test]
    fn direct_path_agrees_on_rocev2_variants(
        tags in 0usize..4,
        v6 in any::<bool>(),
        tos in any::<u8>(),
        opcode in any::<u8>(),
        payload in 0usize..300,
        cut in 0usize..400,
        udp_len_delta in -12i32..12,
        ihl_or_frag in 0u8..4,
    ) {
        let f = roce_frame(tags, v6, tos, opcode, payload, udp_len_delta, ihl_or_frag);
        let cut = cut.min(f.len());
        let data = &f[..f.len() - cut / 4];
        let fast = decode_frame(1, data, f.len() as u32);
        prop_assert_eq!(fast, decode_frame_general(1, data, f.len() as u32));
    }
}

/// A RoCEv2 frame with `tags` VLAN tags, over IPv4 or IPv6, with a lying UDP length when
/// `udp_len_delta` is not 0 and IPv4 options (1), fragmentation (2) or DF (0, 3).
fn roce_frame(
    tags: usize,
    v6: bool,
    tos: u8,
    opcode: u8,
    payload: usize,
    udp_len_delta: i32,
    ihl_or_frag: u8,
) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
    for i in 0..tags {
        f.extend_from_slice(&[0x81, 0x00, 0x60 | i as u8, 100]);
    }
    let mut transport = vec![opcode, 0, 0xff, 0xff, 0, 0, 0, 0x11, 0x80, 0, 0, 5];
    transport.extend(std::iter::repeat_n(0xab, payload + 4));
    let udp_len = (8 + transport.len()) as i32 + udp_len_delta;
    let mut udp = vec![0xc0, 0x00, 0x12, 0xb7];
    udp.extend_from_slice(&(udp_len.clamp(0, 65535) as u16).to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(&transport);
    if v6 {
        f.extend_from_slice(&[0x86, 0xdd]);
        f.push(0x60 | (tos >> 4));
        f.push(tos << 4);
        f.extend_from_slice(&[0, 0]);
        f.extend_from_slice(&(udp.len() as u16).to_be_bytes());
        f.extend_from_slice(&[17, 64]);
        f.extend_from_slice(&[0xfd; 16]);
        f.extend_from_slice(&[0xfe; 16]);
    } else {
        f.extend_from_slice(&[0x08, 0x00]);
        let opts = if ihl_or_frag == 1 { 4 } else { 0 };
        f.push(0x45 + (opts / 4) as u8);
        f.push(tos);
        f.extend_from_slice(&((20 + opts + udp.len()) as u16).to_be_bytes());
        f.extend_from_slice(&[0, 0]);
        f.extend_from_slice(if ihl_or_frag == 2 {
            &[0x20, 0x10]
        } else {
            &[0x40, 0x00]
        });
        f.extend_from_slice(&[64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        f.extend(std::iter::repeat_n(1u8, opts));
    }
    f.extend_from_slice(&udp);
    f
}
