//! The crafted captures of `testdata/`: what each holds is written here, so that every value a
//! test expects is known. `cargo run --bin gen-testdata` rewrites them; a test checks that the
//! committed files are exactly what this code produces.

use std::net::Ipv6Addr;

use roce_parsers::atomic::AtomicEth;
use roce_parsers::deth::Deth;
use roce_parsers::link::{LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2};

use super::frames::{self, FrameSpec, Net, RoceSpec, TPID_8021AD};
use super::writer::{PcapFlavor, PcapWriter, PcapngWriter};

/// Start of every crafted capture: 2023-11-14 22:13:20 UTC.
pub const T0_NS: u64 = 1_700_000_000_000_000_000;

pub const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];
pub const MAC_B: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];
pub const MAC_SWITCH: [u8; 6] = [0x02, 0, 0, 0, 0, 0x5e];
pub const IP_A: [u8; 4] = [10, 0, 0, 1];
pub const IP_B: [u8; 4] = [10, 0, 0, 2];

/// A capture as a list of (timestamp, frame).
pub type Frames = Vec<(u64, Vec<u8>)>;

pub fn pcap_bytes(frames: &Frames, flavor: PcapFlavor, linktype: u32, snaplen: u32) -> Vec<u8> {
    let mut w = PcapWriter::new(Vec::new(), flavor, linktype, snaplen).expect("write to memory");
    for (ts, f) in frames {
        w.write(*ts, f).expect("write to memory");
    }
    w.into_inner()
}

fn link_ab() -> FrameSpec {
    FrameSpec::new(MAC_A, MAC_B).vlan(100, 3)
}

/// `decode_all.pcap`: every RC, UC, UD and XRC opcode, the CNP, unknown opcodes, every
/// extension header, IPv6, RoCEv1, 802.1ad + 802.1Q, well-known UDP source ports, PFC, PAUSE
/// and non-RoCE UDP. One frame per line of `decode_all_expected()`.
pub fn decode_all() -> Frames {
    let mut out = Frames::new();
    let mut t = T0_NS;
    let mut push = |f: Vec<u8>| {
        t += 1_000;
        out.push((t, f));
    };
    let net = Net::v4(IP_A, IP_B, 0x6a);
    let rc_ops: Vec<u8> = (0x00..=0x17).filter(|&o| o != 0x15).collect();
    for (i, &op) in rc_ops.iter().enumerate() {
        let mut r =
            RoceSpec::new(op, 0x12, 100 + i as u32).payload(if op == 0x0c { 0 } else { 16 });
        r.bth.ackreq = i % 2 == 0;
        r.bth.se = op == 0x04;
        r.reth = Some(roce_parsers::Reth {
            va: 0x7f00_0000_1000 + i as u64,
            rkey: 0x1000 + i as u32,
            dlen: 4096 * (i as u32 + 1),
        });
        r.aeth = Some(roce_parsers::Aeth {
            syndrome: match op {
                0x11 => 0x1f,
                _ => 0x00,
            },
            msn: 7 + i as u32,
        });
        r.imm = Some(0xdead_0000 + i as u32);
        r.ieth = Some(0xbeef_0000 + i as u32);
        r.atomic = Some(AtomicEth {
            va: 0x7f00_0000_2000,
            rkey: 0x55,
            swap_add: 3,
            compare: 4,
        });
        r.atomic_ack = Some(0x1122_3344_5566_7788);
        if matches!(op, 0x0d..=0x12) {
            r.payload_len = if op == 0x11 || op == 0x12 { 0 } else { 16 };
            push(frames::rocev2(
                &link_ab(),
                net.reversed(),
                49152 + i as u16,
                &r,
            ));
        } else {
            push(frames::rocev2(&link_ab(), net, 49152 + i as u16, &r));
        }
    }
    // AETH syndromes: RNR NAK (timer 14), NAK PSN sequence error, NAK remote access error.
    for syndrome in [0x2e, 0x60, 0x62] {
        let r = RoceSpec::new(0x11, 0x12, 140).aeth(syndrome, 9);
        push(frames::rocev2(&link_ab(), net.reversed(), 49200, &r));
    }
    // UC: SEND and WRITE (0x20..0x2b).
    for op in 0x20..=0x2b {
        let r = RoceSpec::new(op, 0x34, 0xfffffe + u32::from(op - 0x20))
            .payload(8)
            .reth(0x1000, 0x77, 8);
        push(frames::rocev2(&link_ab(), net, 50000, &r));
    }
    // UD with DETH, with and without immediate.
    for op in [0x64, 0x65] {
        let mut r = RoceSpec::new(op, 0x56, 1).payload(256);
        r.deth = Some(Deth {
            qkey: 0x8001_0000,
            sqpn: 0x99,
        });
        r.imm = Some(0x42);
        push(frames::rocev2(&link_ab(), net, 50001, &r));
    }
    // XRC SEND Only (XRCETH) and XRC ACK (no XRCETH).
    let mut r = RoceSpec::new(0xa4, 0x78, 5).payload(12);
    r.xrc_srqn = Some(0xabc);
    push(frames::rocev2(&link_ab(), net, 50002, &r));
    push(frames::rocev2(
        &link_ab(),
        net.reversed(),
        50002,
        &RoceSpec::new(0xb1, 0x78, 5).aeth(0x1f, 1),
    ));
    // CNP with FECN too, UDP source port 0, DSCP 48.
    let mut cnp = RoceSpec::new(0x81, 0x12, 0);
    cnp.bth.fecn = true;
    push(frames::rocev2(
        &FrameSpec::new(MAC_B, MAC_A).vlan(100, 6),
        net.reversed().with_tos(0xc2),
        0,
        &cnp,
    ));
    // Unknown opcodes: kept and shown.
    for op in [0x15, 0x1f, 0xe5] {
        push(frames::rocev2(
            &link_ab(),
            net,
            50003,
            &RoceSpec::new(op, 0x12, 300).payload(8),
        ));
    }
    // Well-known source ports that other dissectors grab.
    for sport in [69, 53, 123] {
        push(frames::rocev2(
            &link_ab(),
            net,
            sport,
            &RoceSpec::new(0x04, 0x12, 400 + u32::from(sport)).payload(32),
        ));
    }
    // IPv6 RoCEv2, untagged, flow label set.
    let v6 = Net::V6 {
        src: "fd00::1".parse().expect("literal"),
        dst: "fd00::2".parse().expect("literal"),
        tclass: 0x6b,
        flow_label: 0x12345,
        hop_limit: 63,
    };
    push(frames::rocev2(
        &FrameSpec::new(MAC_A, MAC_B),
        v6,
        51000,
        &RoceSpec::new(0x0a, 0x9a, 77)
            .ackreq()
            .payload(100)
            .reth(0x2000, 9, 100),
    ));
    // RoCEv1 WRITE Only and ACK.
    let sgid: Ipv6Addr = "fe80::a".parse().expect("literal");
    let dgid: Ipv6Addr = "fe80::b".parse().expect("literal");
    push(frames::rocev1(
        &FrameSpec::new(MAC_A, MAC_B),
        sgid,
        dgid,
        0x68,
        &RoceSpec::new(0x0a, 0x10a, 5000)
            .ackreq()
            .payload(5)
            .reth(0x3000, 0x47, 5),
    ));
    push(frames::rocev1(
        &FrameSpec::new(MAC_B, MAC_A),
        dgid,
        sgid,
        0x68,
        &RoceSpec::new(0x11, 0x109, 5000).aeth(0x1f, 1),
    ));
    // 802.1ad outer (VID 10, PCP 5) + 802.1Q inner (VID 100, PCP 3, DEI).
    let qinq = FrameSpec::new(MAC_A, MAC_B)
        .tag(TPID_8021AD, 10, 5, false)
        .tag(0x8100, 100, 3, true);
    push(frames::rocev2(
        &qinq,
        net,
        52000,
        &RoceSpec::new(0x04, 0x12, 500).payload(64),
    ));
    // PFC XOFF on priority 3, XON on priority 3, 802.3x PAUSE.
    push(frames::pfc(
        MAC_SWITCH,
        0x0008,
        [0, 0, 0, 0xffff, 0, 0, 0, 0],
    ));
    push(frames::pfc(MAC_SWITCH, 0x0008, [0; 8]));
    push(frames::pause(MAC_SWITCH, 0x1234));
    // Not RoCE: DNS, and UDP *from* port 4791 to another port.
    push(frames::udp_v4(
        &link_ab(),
        IP_A,
        IP_B,
        33333,
        53,
        b"not roce",
    ));
    push(frames::udp_v4(
        &link_ab(),
        IP_A,
        IP_B,
        4791,
        5000,
        &[0u8; 40],
    ));
    out
}

/// A small mixed set written in every container format (`formats/`): the same frames must
/// decode the same from each.
pub fn format_frames() -> Frames {
    let net = Net::v4(IP_A, IP_B, 0x6a);
    let mut out = Frames::new();
    let specs = [
        RoceSpec::new(0x06, 0x11, 10)
            .reth(0x1000, 1, 3000)
            .payload(1024),
        RoceSpec::new(0x07, 0x11, 11).payload(1024),
        RoceSpec::new(0x08, 0x11, 12).ackreq().payload(952),
    ];
    for (i, s) in specs.iter().enumerate() {
        // Nanosecond-distinct timestamps, so that resolution differences show.
        out.push((
            T0_NS + 1_000_123 * (i as u64 + 1),
            frames::rocev2(&link_ab(), net, 49999, s),
        ));
    }
    out.push((
        T0_NS + 5_000_456,
        frames::rocev2(
            &FrameSpec::new(MAC_B, MAC_A).vlan(100, 3),
            net.reversed(),
            49999,
            &RoceSpec::new(0x11, 0x22, 12).aeth(0x1f, 1),
        ),
    ));
    out.push((
        T0_NS + 6_000_789,
        frames::pfc(MAC_SWITCH, 0x0008, [0, 0, 0, 100, 0, 0, 0, 0]),
    ));
    out
}

/// `snaplen128.pcap`: large WRITEs cut at 128 bytes (ICRC unchecked, payload length still known
/// from the UDP header) and small ACKs that fit whole (ICRC ok).
pub fn snaplen_frames() -> Frames {
    let net = Net::v4(IP_A, IP_B, 0x6a);
    let mut out = Frames::new();
    for i in 0..4u32 {
        let op = match i {
            0 => 0x06,
            3 => 0x08,
            _ => 0x07,
        };
        let mut s = RoceSpec::new(op, 0x11, 20 + i).payload(1024);
        if op == 0x06 {
            s = s.reth(0x1000, 1, 4096);
        }
        out.push((
            T0_NS + u64::from(i) * 1000,
            frames::rocev2(&link_ab(), net, 49999, &s),
        ));
    }
    out.push((
        T0_NS + 9000,
        frames::rocev2(
            &FrameSpec::new(MAC_B, MAC_A).vlan(100, 3),
            net.reversed(),
            49999,
            &RoceSpec::new(0x11, 0x22, 23).aeth(0x1f, 1),
        ),
    ));
    out
}

/// `damaged.pcap`: frame 1 good; 2 UDP 4791 with 5 bytes (no room for a BTH); 3 a WRITE First
/// whose RETH is cut by its own lengths (not by the snap length); 4 a bad ICRC; 5 a UDP length
/// shorter than its header; 6 good; then a last record cut in the middle (the file ends early).
pub fn damaged() -> Vec<u8> {
    let net = Net::v4(IP_A, IP_B, 0x6a);
    let good = |psn| {
        frames::rocev2(
            &link_ab(),
            net,
            49999,
            &RoceSpec::new(0x04, 0x11, psn).payload(64),
        )
    };
    let mut w = PcapWriter::new(Vec::new(), PcapFlavor::MICRO_LE, LINKTYPE_ETHERNET, 65535)
        .expect("memory");
    let mut t = T0_NS;
    let mut put = |w: &mut PcapWriter<Vec<u8>>, f: &[u8]| {
        t += 1000;
        w.write(t, f).expect("memory");
    };
    put(&mut w, &good(1));
    put(
        &mut w,
        &frames::udp_v4(&link_ab(), IP_A, IP_B, 49999, 4791, &[1, 2, 3, 4, 5]),
    );
    put(
        &mut w,
        &frames::udp_v4(
            &link_ab(),
            IP_A,
            IP_B,
            49999,
            4791,
            &[
                0x06, 0, 0xff, 0xff, 0, 0, 0, 0x11, 0, 0, 0, 2, 0xaa, 0xbb, 0xcc, 0xdd,
            ],
        ),
    );
    let mut bad = RoceSpec::new(0x04, 0x11, 3).payload(64);
    bad.corrupt_icrc = true;
    put(&mut w, &frames::rocev2(&link_ab(), net, 49999, &bad));
    let mut short_udp = good(4);
    // UDP length field (after 14 + 4 + 20 + 4 bytes) set to 4.
    short_udp[42..44].copy_from_slice(&4u16.to_be_bytes());
    put(&mut w, &short_udp);
    put(&mut w, &good(5));
    let mut bytes = w.into_inner();
    // A last record whose header promises 200 bytes, of which 50 made it to disk.
    let mut h = Vec::new();
    for v in [1_700_000_001u32, 0, 200, 200] {
        h.extend_from_slice(&v.to_le_bytes());
    }
    bytes.extend_from_slice(&h);
    bytes.extend_from_slice(&good(6)[..50]);
    bytes
}

/// `unknown_linktype.pcapng`: interface 0 is Ethernet, interface 1 has link type 147 (USER0).
/// Frames alternate: the Ethernet ones decode, the others are counted as unsupported.
pub fn unknown_linktype() -> Vec<u8> {
    let mut w = PcapngWriter::new(Vec::new()).expect("memory");
    w.add_interface(LINKTYPE_ETHERNET as u16, 65535, 6)
        .expect("memory");
    w.add_interface(147, 65535, 6).expect("memory");
    let net = Net::v4(IP_A, IP_B, 0x6a);
    for i in 0..4u32 {
        let f = frames::rocev2(
            &link_ab(),
            net,
            49999,
            &RoceSpec::new(0x04, 0x11, i).payload(16),
        );
        w.write(i % 2, T0_NS + u64::from(i) * 1000, &f)
            .expect("memory");
    }
    w.into_inner()
}

/// Every file of `testdata/` made by this module, as (path relative to testdata/, bytes).
pub fn all() -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    files.push((
        "decode_all.pcap".to_string(),
        pcap_bytes(
            &decode_all(),
            PcapFlavor::MICRO_LE,
            LINKTYPE_ETHERNET,
            65535,
        ),
    ));
    let fmt = format_frames();
    for (name, nanos, big_endian) in [
        ("formats/pcap_us_le.pcap", false, false),
        ("formats/pcap_us_be.pcap", false, true),
        ("formats/pcap_ns_le.pcap", true, false),
        ("formats/pcap_ns_be.pcap", true, true),
    ] {
        files.push((
            name.to_string(),
            pcap_bytes(
                &fmt,
                PcapFlavor { nanos, big_endian },
                LINKTYPE_ETHERNET,
                65535,
            ),
        ));
    }
    let sll: Frames = fmt.iter().map(|(t, f)| (*t, frames::to_sll(f))).collect();
    files.push((
        "formats/linux_sll.pcap".to_string(),
        pcap_bytes(
            &sll,
            PcapFlavor {
                nanos: true,
                big_endian: false,
            },
            LINKTYPE_LINUX_SLL,
            65535,
        ),
    ));
    // pcapng: Ethernet frames on interface 0 (microseconds), the same frames as SLL2 on
    // interface 1 (nanoseconds), and an unknown block between them that must be skipped.
    let mut ng = PcapngWriter::new(Vec::new()).expect("memory");
    let eth = ng
        .add_interface(LINKTYPE_ETHERNET as u16, 65535, 6)
        .expect("memory");
    let sll2 = ng
        .add_interface(LINKTYPE_LINUX_SLL2 as u16, 65535, 9)
        .expect("memory");
    ng.write_unknown_block(0x0bad_0001, b"skip me")
        .expect("memory");
    for (t, f) in &fmt {
        ng.write(eth, *t, f).expect("memory");
        ng.write(sll2, *t, &frames::to_sll2(f, 7)).expect("memory");
    }
    files.push((
        "formats/multi_interface.pcapng".to_string(),
        ng.into_inner(),
    ));
    files.push((
        "snaplen128.pcap".to_string(),
        pcap_bytes(
            &snaplen_frames(),
            PcapFlavor::MICRO_LE,
            LINKTYPE_ETHERNET,
            128,
        ),
    ));
    files.push(("damaged.pcap".to_string(), damaged()));
    files.push(("unknown_linktype.pcapng".to_string(), unknown_linktype()));
    files
}
