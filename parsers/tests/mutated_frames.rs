//! A bounded, stable-toolchain fuzz pass run by the normal test suite: real frames (the scapy
//! test vectors, a RoCEv1 frame, a PFC frame) mutated at random — bytes flipped, cut,
//! lengthened — must decode without a panic, for every link type, and what decodes must stay
//! within the bytes given. The long fuzzing runs with cargo-fuzz (parsers/fuzz).

use proptest::prelude::*;
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
    }
}
