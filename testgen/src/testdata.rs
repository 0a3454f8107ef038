//! The crafted captures of `testdata/`: what each holds is written here, so that every value a
//! test expects is known. `make testdata` (`cargo run -p roce-testgen --bin gen-testdata`) rewrites them; a test checks that the
//! committed files are exactly what this code produces.

use std::net::Ipv6Addr;

use roce_parsers::atomic::AtomicEth;
use roce_parsers::deth::Deth;
use roce_parsers::link::{LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2};

use super::frames::{self, FrameSpec, Net, RoceSpec, TPID_8021AD};
use super::writer::{pcap_bytes, Frames, PcapFlavor, PcapWriter, PcapngWriter, T0_NS};

pub const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];
pub const MAC_B: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];
pub const MAC_SWITCH: [u8; 6] = [0x02, 0, 0, 0, 0, 0x5e];
pub const IP_A: [u8; 4] = [10, 0, 0, 1];
pub const IP_B: [u8; 4] = [10, 0, 0, 2];

fn link_ab() -> FrameSpec {
    FrameSpec::new(MAC_A, MAC_B).vlan(100, 3)
}

/// `decode_all.pcap`: every RC, UC, UD and XRC opcode, the CNP, unknown opcodes, every
/// extension header, IPv6, RoCEv1, 802.1ad + 802.1Q, well-known UDP source ports, PFC, PAUSE
/// and non-RoCE UDP. One frame per line of `decode_all_expected()`.
pub fn decode_all() -> Frames {
    let net = Net::v4(IP_A, IP_B, 0x6a);
    let frames = [
        rc_frames(net),
        other_transport_frames(net),
        variant_frames(net),
    ]
    .concat();
    (1..)
        .zip(frames)
        .map(|(i, f)| (T0_NS + i * 1_000, f))
        .collect()
}

/// Every RC opcode with every extension header, and the AETH syndromes.
fn rc_frames(net: Net) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut push = |f: Vec<u8>| out.push(f);
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
    out
}

/// UC, UD and XRC opcodes, the CNP, unknown opcodes and well-known source ports.
fn other_transport_frames(net: Net) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut push = |f: Vec<u8>| out.push(f);
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
    out
}

/// IPv6, RoCEv1, 802.1ad + 802.1Q, PFC, PAUSE and UDP that is not RoCE.
fn variant_frames(net: Net) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut push = |f: Vec<u8>| out.push(f);
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

/// `encap.pcap`: RoCE as mirror sessions and tunnels deliver it. Two clean RC flows, each
/// packet wrapped differently: flow 0x100 (VLAN 100, PCP 3 inside) in ERSPAN I, II (outer VLAN
/// 200) and III (outer IPv6, platform sub-header), GRE bridging, VXLAN and Geneve (outer
/// IPv6); flow 0x200 (untagged inside) in GRE carrying IP, IP-in-IP and MPLS. Then flow 0x300
/// cut by the mirror (ERSPAN II with T set, 128 bytes kept) and flow 0x301 cut without a word
/// (ERSPAN I, the inner lengths claim more): no loss, no bad ICRC, ICRC unchecked.
pub fn encap() -> Frames {
    use crate::encap::{self as wrap, Outer};
    let v4 = Outer {
        vlan: None,
        v6: false,
    };
    let v4_tagged = Outer {
        vlan: Some((200, 5)),
        v6: false,
    };
    let v6 = Outer {
        vlan: None,
        v6: true,
    };
    let net = Net::v4(IP_A, IP_B, 0x6a);
    let write = |qp: u32, psn: u32, link: &FrameSpec| {
        let r = RoceSpec::new(0x0a, qp, psn)
            .ackreq()
            .payload(64)
            .reth(0x1000, 7, 64);
        frames::rocev2(link, net, 50500, &r)
    };
    let tagged = link_ab();
    let plain = FrameSpec::new(MAC_A, MAC_B);
    let mut out: Vec<Vec<u8>> = vec![
        wrap::erspan1(v4, &write(0x100, 1, &tagged)),
        wrap::erspan2(v4_tagged, 10, 5, 0x1234, false, &write(0x100, 2, &tagged)),
        wrap::erspan3(v6, 11, 6, 123_456, Some(2), &write(0x100, 3, &tagged)),
        wrap::gre_teb(v4, &write(0x100, 4, &tagged)),
        wrap::vxlan(v4, 4242, &write(0x100, 5, &tagged)),
        wrap::geneve(v6, 77, &write(0x100, 6, &tagged)),
        wrap::gre_ip(v4, &write(0x200, 1, &plain)),
        wrap::ipip(v6, &write(0x200, 2, &plain)),
        wrap::mpls(&[16, 1000], &write(0x200, 3, &plain)),
    ];
    for psn in 0..4 {
        let big = |qp| {
            let r = RoceSpec::new(0x0a, qp, psn)
                .payload(1024)
                .reth(0x2000, 7, 1024);
            frames::rocev2(&tagged, net, 50501, &r)
        };
        let cut = |f: Vec<u8>| f[..128].to_vec();
        out.push(wrap::erspan2(v4, 20 + psn, 9, psn, true, &cut(big(0x300))));
        out.push(wrap::erspan1(v4, &cut(big(0x301))));
    }
    (1..)
        .zip(out)
        .map(|(i, f)| (T0_NS + i * 1_000, f))
        .collect()
}

/// How long before the collector's record the switch stamped a mirrored frame, in
/// `erspan3_low_bits.pcap`.
pub const ERSPAN_TRANSIT_NS: u64 = 2_000;

/// `erspan3_low_bits.pcap`: ERSPAN III without the platform sub-header, so the timestamp is
/// only the low 32 bits of a 100 ns count. Session 6 (4 frames of a clean WRITE flow) comes
/// from a switch on the Unix epoch that stamped each frame `ERSPAN_TRANSIT_NS` before the
/// collector recorded it; session 7 (2 frames) from a switch counting from its boot.
pub fn erspan3_low_bits() -> Frames {
    use crate::encap::{self as wrap, Outer};
    let v4 = Outer {
        vlan: None,
        v6: false,
    };
    let net = Net::v4(IP_A, IP_B, 0x6a);
    let write = |psn: u32| {
        let r = RoceSpec::new(0x0a, 0x100, psn)
            .ackreq()
            .payload(64)
            .reth(0x1000, 7, 64);
        frames::rocev2(&link_ab(), net, 50500, &r)
    };
    let mut out = Frames::new();
    for i in 0..6u32 {
        let at = T0_NS + u64::from(i + 1) * 1_000;
        let (session, count) = if i < 4 {
            (6, ((at - ERSPAN_TRANSIT_NS) / 100) as u32)
        } else {
            (7, 123_456 + i)
        };
        out.push((
            at,
            wrap::erspan3(v4, 30 + i, session, count, None, &write(i + 1)),
        ));
    }
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
    files.push((
        "encap.pcap".to_string(),
        pcap_bytes(&encap(), PcapFlavor::NANO_LE, LINKTYPE_ETHERNET, 65535),
    ));
    files.push((
        "erspan3_low_bits.pcap".to_string(),
        pcap_bytes(
            &erspan3_low_bits(),
            PcapFlavor::NANO_LE,
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
    for (name, frames) in [
        ("analysis_psn.pcap", analysis_psn()),
        ("analysis_congestion.pcap", analysis_congestion()),
        ("analysis_marking.pcap", analysis_marking()),
        ("verify_pass.pcap", verify_pass()),
        ("no_roce.pcap", no_roce()),
        ("report_burst.pcap", report_burst()),
    ] {
        files.push((
            name.to_string(),
            pcap_bytes(
                &frames,
                PcapFlavor {
                    nanos: true,
                    big_endian: false,
                },
                LINKTYPE_ETHERNET,
                65535,
            ),
        ));
    }
    for (name, frames) in super::correlate::points() {
        files.push((
            format!("correlate/{name}"),
            pcap_bytes(&frames, PcapFlavor::NANO_LE, LINKTYPE_ETHERNET, 65535),
        ));
    }
    for s in super::diagnose::scenarios() {
        files.push((
            format!("diagnose/{}.pcap", s.name),
            pcap_bytes(&s.frames, PcapFlavor::NANO_LE, LINKTYPE_ETHERNET, 65535),
        ));
    }
    files.push(("unknown_linktype.pcapng".to_string(), unknown_linktype()));
    files.push((
        "sample.pcap".to_string(),
        pcap_bytes(
            &sample(),
            PcapFlavor {
                nanos: true,
                big_endian: false,
            },
            LINKTYPE_ETHERNET,
            128,
        ),
    ));
    files.push((
        "verify_cooked.pcap".to_string(),
        pcap_bytes(
            &verify_cooked(),
            PcapFlavor::MICRO_LE,
            LINKTYPE_LINUX_SLL2,
            65535,
        ),
    ));
    files
}

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

/// `analysis_psn.pcap`: PSN behaviour on seven QPs, every expected count known (VLAN 100, PCP 3,
/// DSCP 26 ECT(0) throughout; path MTU 1024).
///
/// | flow (requests)            | what happens                                     | expected                                  |
/// |----------------------------|--------------------------------------------------|-------------------------------------------|
/// | .1 > .2 qp 0x100, RC WRITE | PSNs wrap 0xfffff8..7; PSN 1 lost; NAK(1); go-back resends 1..5 | gaps 1, missing 0, retransmitted 5, NAK seq 1, ACKs 3, RTT samples 3 |
/// | .3 > .2 qp 0x101, RC SEND  | 1003 and 1004 swapped                            | gaps 1, out_of_order 1, missing 0         |
/// | .4 > .2 qp 0x102, RC WRITE | 5001 captured twice, 100 ns apart                | capture_duplicates 1, duplicates 0        |
/// | .5 > .2 qp 0x103, UC WRITE | 203..205 lost, never resent                      | gaps 1, missing 3, range 203-205          |
/// | .1 > .2 qp 0x104, RC SEND  | 302 resent after 5 ms without ACK (timeout)      | retransmitted 1, duplicates 0             |
/// | .1 > .2 qp 0x105, RC READ  | READs of 4096, 10000, 100 bytes, then a WRITE    | no gap; 15 READ responses, 3 READ latencies |
/// | .3 > .2 qp 0x106, RC       | RNR NAK then resend; remote access error NAK     | rnr 1, retransmitted 1, remote_access_error 1 |
pub fn analysis_psn() -> Frames {
    use super::scenario::{host, Conn, Timeline};
    let (a, b, c, d, e) = (host(1), host(2), host(3), host(4), host(5));
    let v = Some((100, 3));
    let mut tl = Timeline::default();
    let t0 = T0_NS;

    // Loss, NAK, go-back-N across the PSN wrap.
    let mut l = Conn::rc(a, b, v, 0x6a, 0x200, 0x100, 0xff_fff8);
    let mut pkts = Vec::new();
    for _ in 0..4 {
        pkts.extend(l.write(4096));
    }
    // pkts[i] has PSN 0xfffff8 + i; PSN 1 is pkts[9].
    let mut t = t0;
    for (i, p) in pkts.iter().enumerate().take(14) {
        t += US;
        if i != 9 {
            tl.push(t, l.request_frame(p));
        }
        if i == 3 || i == 7 {
            tl.push(t + 500, l.response_frame(&l.ack(p.bth.psn)));
        }
    }
    // The responder saw PSN 2 ahead of 1 and NAKs; the requester goes back to 1.
    tl.push(t0 + 11 * US + 500, l.response_frame(&l.nak(1, 0)));
    t = t0 + 20 * US;
    for p in &pkts[9..16] {
        t += US;
        tl.push(t, l.request_frame(p));
    }
    tl.push(t + 500, l.response_frame(&l.ack(pkts[15].bth.psn)));

    // Reordering.
    let mut r = Conn::rc(c, b, v, 0x6a, 0x201, 0x101, 1000);
    let mut pk = r.send(8192);
    pk.swap(3, 4);
    for (i, p) in pk.iter().enumerate() {
        tl.push(t0 + 100 * US + i as u64 * US, r.request_frame(p));
    }
    tl.push(t0 + 110 * US, r.response_frame(&r.ack(1007)));

    // A duplicate.
    let mut dup = Conn::rc(d, b, v, 0x6a, 0x202, 0x102, 5000);
    let pk = dup.write(4096);
    for (i, p) in pk.iter().enumerate() {
        tl.push(t0 + 200 * US + i as u64 * US, dup.request_frame(p));
        if i == 1 {
            tl.push(t0 + 200 * US + i as u64 * US + 100, dup.request_frame(p));
        }
    }

    // UC: unrepaired loss.
    let mut uc = Conn::rc(e, b, v, 0x6a, 0x203, 0x103, 200).uc();
    for (i, p) in uc.write(8192).iter().enumerate() {
        if !(3..=5).contains(&i) {
            tl.push(t0 + 300 * US + i as u64 * US, uc.request_frame(p));
        }
    }

    // Timeout retransmission.
    let mut to = Conn::rc(a, b, v, 0x6a, 0x204, 0x104, 300);
    let mut last = None;
    for i in 0..3u64 {
        let p = to.send(256).remove(0);
        tl.push(t0 + 400 * US + i * US, to.request_frame(&p));
        if i < 2 {
            tl.push(
                t0 + 400 * US + i * US + 500,
                to.response_frame(&to.ack(p.bth.psn)),
            );
        }
        last = Some(p);
    }
    let last = last.expect("three sends");
    tl.push(t0 + 5 * MS, to.request_frame(&last));
    tl.push(t0 + 5 * MS + 600, to.response_frame(&to.ack(last.bth.psn)));

    // READs: the request PSN advances by the number of responses.
    let mut rd = Conn::rc(a, b, v, 0x6a, 0x205, 0x105, 7000);
    let mut t = t0 + 600 * US;
    for len in [4096, 10000, 100] {
        let (req, resps) = rd.read(len);
        tl.push(t, rd.request_frame(&req));
        for (i, resp) in resps.iter().enumerate() {
            tl.push(t + 3 * US + i as u64 * US, rd.response_frame(resp));
        }
        t += 20 * US;
    }
    let w = rd.write(512).remove(0);
    tl.push(t, rd.request_frame(&w));
    tl.push(t + 2 * US, rd.response_frame(&rd.ack(w.bth.psn)));

    // RNR NAK, resend, ACK; then a remote access error.
    let mut n = Conn::rc(c, b, v, 0x6a, 0x206, 0x106, 40);
    let s = n.send(64).remove(0);
    tl.push(t0 + 800 * US, n.request_frame(&s));
    tl.push(t0 + 801 * US, n.response_frame(&n.rnr_nak(40)));
    tl.push(t0 + 900 * US, n.request_frame(&s));
    tl.push(t0 + 901 * US, n.response_frame(&n.ack(40)));
    let w = n.write(64).remove(0);
    tl.push(t0 + 950 * US, n.request_frame(&w));
    tl.push(t0 + 951 * US, n.response_frame(&n.nak(41, 2)));
    tl.into_frames()
}

/// `analysis_congestion.pcap`: ECN and PFC.
///
/// - .1 > .2 qp 0x110: 100 WRITE Only (1024 B, 1 us apart), packets 40..59 CE-marked; CNPs
///   come back at first CE + 10 us and + 60 us; ACKs every 10 packets. Expected: ce 20, cnps 2,
///   ce_to_cnp_us 10, ce_without_cnp 0.
/// - .3 > .2 qp 0x111: 50 WRITE Only, packets 10..19 CE-marked, no CNP. Expected: ce 10,
///   cnps 0, ce_without_cnp 10.
/// - PFC from 02:00:00:00:00:5e on priority 3 (a RoCE priority): XOFF 0xffff at 200 us,
///   refreshed at 300 us, XON at 400 us; XOFF 1000 quanta at 1 ms. Expected: xoff 3, xon 1,
///   quanta 132070, paused 205.12 us at 100G, longest 200 us, no storm.
/// - PFC from 02:00:00:00:00:5f on priority 4: XOFF 0xffff every 250 us from 2 ms to 152 ms
///   (601 frames). Expected: one storm, paused throughout, 601 frames.
/// - 802.3x PAUSE from 02:00:00:00:00:60: 256 quanta at 500 us and 600 us. Expected: 2 frames,
///   2.62 us paused.
pub fn analysis_congestion() -> Frames {
    use super::scenario::{host, Conn, Timeline};
    let (a, b, c) = (host(1), host(2), host(3));
    let v = Some((100, 3));
    let mut tl = Timeline::default();
    let t0 = T0_NS;

    let mut x = Conn::rc(a, b, v, 0x6a, 0x300, 0x110, 10);
    for i in 0..100u64 {
        let p = x.write(1024).remove(0);
        let ce = (40..60).contains(&i);
        let conn = if ce { x.clone().tos(0x6b) } else { x.clone() };
        tl.push(t0 + i * US, conn.request_frame(&p));
        if i % 10 == 9 {
            tl.push(t0 + i * US + 500, x.response_frame(&x.ack(p.bth.psn)));
        }
    }
    tl.push(t0 + 50 * US, x.cnp_frame());
    tl.push(t0 + 100 * US, x.cnp_frame());

    let mut y = Conn::rc(c, b, v, 0x6a, 0x301, 0x111, 10);
    for i in 0..50u64 {
        let p = y.write(1024).remove(0);
        let conn = if (10..20).contains(&i) {
            y.clone().tos(0x6b)
        } else {
            y.clone()
        };
        tl.push(t0 + 3 + i * US, conn.request_frame(&p));
    }

    let sw = [0x02, 0, 0, 0, 0, 0x5e];
    let p3 = |q| {
        let mut quanta = [0u16; 8];
        quanta[3] = q;
        frames::pfc(sw, 1 << 3, quanta)
    };
    tl.push(t0 + 200 * US, p3(0xffff));
    tl.push(t0 + 300 * US, p3(0xffff));
    tl.push(t0 + 400 * US, p3(0));
    tl.push(t0 + MS, p3(1000));
    let storm_src = [0x02, 0, 0, 0, 0, 0x5f];
    for i in 0..=600u64 {
        let mut quanta = [0u16; 8];
        quanta[4] = 0xffff;
        tl.push(
            t0 + 2 * MS + i * 250 * US,
            frames::pfc(storm_src, 1 << 4, quanta),
        );
    }
    let pause_src = [0x02, 0, 0, 0, 0, 0x60];
    tl.push(t0 + 500 * US, frames::pause(pause_src, 256));
    tl.push(t0 + 600 * US, frames::pause(pause_src, 256));
    tl.into_frames()
}

/// `analysis_marking.pcap`: QoS marking mistakes, four senders to .2 at once (an incast).
///
/// - .1 > .2 qp 0x120: VLAN 100 PCP 3 but TOS 0x00: dscp0_with_pcp 10, not_ect 10.
/// - .3 > .2 qp 0x121: untagged while the others are tagged, TOS 0x6a.
/// - .4 > .2 qp 0x122: PCP 3, TOS 0x68 (DSCP 26, Not-ECT): not_ect 10.
/// - .5 > .2 qp 0x123: PCP 3, TOS 0x6a: WRITE of 3072 at MTU 1024, then a WRITE Only of 2048
///   (oversize 1), then a SEND Only with a bad ICRC (icrc_bad 1); a CNP back with DSCP 48, PCP 6.
pub fn analysis_marking() -> Frames {
    use super::scenario::{host, Conn, Timeline};
    let b = host(2);
    let v = Some((100, 3));
    let mut tl = Timeline::default();
    let t0 = T0_NS;
    let mut m1 = Conn::rc(host(1), b, v, 0x00, 0x400, 0x120, 1);
    let mut m2 = Conn::rc(host(3), b, None, 0x6a, 0x401, 0x121, 1);
    let mut m3 = Conn::rc(host(4), b, v, 0x68, 0x402, 0x122, 1);
    for i in 0..10u64 {
        for (k, conn) in [&mut m1, &mut m2, &mut m3].into_iter().enumerate() {
            let p = conn.send(512).remove(0);
            tl.push(t0 + i * US + k as u64 * 100, conn.request_frame(&p));
        }
    }
    let mut m4 = Conn::rc(host(5), b, v, 0x6a, 0x403, 0x123, 1);
    let mut t = t0 + 300;
    for p in m4.write(3072) {
        tl.push(t, m4.request_frame(&p));
        t += US;
    }
    // A WRITE Only of 2048 bytes on a path whose MTU is 1024.
    let big = RoceSpec::new(0x0a, m4.resp_qpn, m4.psn)
        .ackreq()
        .payload(2048)
        .reth(0x7f00_0000_0000, 0x1234, 2048);
    m4.psn += 1;
    tl.push(t, m4.request_frame(&big));
    let mut bad = m4.send(64).remove(0);
    bad.corrupt_icrc = true;
    tl.push(t + US, m4.request_frame(&bad));
    tl.push(t + 2 * US, m4.cnp_frame());
    tl.into_frames()
}

/// `sample.pcap`, the README's demo and the sample report: an incast of four senders to
/// 10.0.0.2 on VLAN 100 PCP 3, 380 ms, captured with a 128-byte snap length as mirror ports
/// often are. Every sender writes 4096 bytes (WRITE Only) every 100, 110, 90 and 125 us,
/// AckReq on every 10th, and gets an ACK 3 to 9 us later (30 us more from 80 to 160 ms,
/// while the switch is congested):
///
/// - .1 qp 0x210 and .3 qp 0x211 (DSCP 26, ECT(0)): from 80 ms (.3: 100 ms) to 160 ms every
///   packet with an even PSN is CE-marked; a CNP comes back 5 us after each mark and the
///   sender halves its rate until 200 ms.
/// - .4 qp 0x212 (DSCP 26, ECT(0)): CE-marked from 80 ms, but no CNP ever comes back.
/// - .5 qp 0x213 (DSCP 0 with PCP 3: mis-marked, so it sits in a lossy queue): near 120 ms
///   three packets (PSNs 1960-1962) are dropped; the receiver NAKs 1960 when 1963 arrives, the
///   sender goes back and resends 1960-1963.
/// - PFC: the switch (02:00:00:00:00:5e) pauses priority 3 from 150 ms to 190 ms (XOFF 0xffff
///   every 200 us); no RoCE packet is sent meanwhile. Another port (02:00:00:00:00:5f) floods
///   priority 4 with XOFF every 250 us from 220 ms to 370 ms: a storm.
pub fn sample() -> Frames {
    use super::scenario::{host, Conn, Timeline};
    let b = host(2);
    let v = Some((100, 3));
    let mut tl = Timeline::default();
    let t0 = T0_NS;
    let end = 380 * MS;
    let paused = |t: u64| (150 * MS..190 * MS + 336 * US).contains(&t);
    // (host, QPN, TOS, gap between packets in us, start of CE marking in ms)
    let senders = [
        (host(1), 0x210u32, 0x6a, 100, 80),
        (host(3), 0x211, 0x6a, 110, 100),
        (host(4), 0x212, 0x6a, 90, 80),
        (host(5), 0x213, 0x02, 125, 80),
    ];
    for (k, (a, qpn, tos, gap_us, ce_from_ms)) in senders.into_iter().enumerate() {
        let mut c = Conn::rc(a, b, v, tos, 0x300 + k as u32, qpn, 1000);
        let reacts = k < 2;
        let marked = k < 3;
        let lossy = k == 3;
        let mut t = k as u64 * 25 * US;
        let mut n = 0u64;
        let mut resend: Vec<RoceSpec> = Vec::new();
        let mut lost = false;
        while t < end {
            if paused(t) {
                t += gap_us * US;
                continue;
            }
            let gap = gap_us * US;
            let p = if let Some(p) = resend.first().copied() {
                resend.remove(0);
                p
            } else {
                let mut p = RoceSpec::new(0x0a, qpn, c.psn).payload(4096).reth(
                    0x7f00_0000_0000,
                    0x1234,
                    4096,
                );
                c.psn += 1;
                n += 1;
                p.bth.ackreq = n.is_multiple_of(10);
                p
            };
            let psn = p.bth.psn;
            let ce = marked && (ce_from_ms * MS..160 * MS).contains(&t) && psn % 2 == 0;
            let dropped = lossy && !lost && (1960..=1962).contains(&psn);
            if !dropped {
                let conn = if ce {
                    c.clone().tos(tos | 3)
                } else {
                    c.clone()
                };
                tl.push(t0 + t, conn.request_frame(&p));
            }
            if lossy && !lost && psn == 1963 {
                lost = true;
                // The receiver sees 1963 after 1959: NAK(1960); the sender resends 1960..1963.
                tl.push(t0 + t + 5 * US, c.response_frame(&c.nak(1960, 0)));
                for q in 1960..=1963 {
                    let mut r = RoceSpec::new(0x0a, qpn, q).payload(4096).reth(
                        0x7f00_0000_0000,
                        0x1234,
                        4096,
                    );
                    r.bth.ackreq = q == 1963;
                    resend.push(r);
                }
            }
            if ce && reacts {
                tl.push(t0 + t + 5 * US, c.cnp_frame());
            }
            if p.bth.ackreq && !dropped {
                // 3-9 us, plus 30 us of queueing while the switch is congested.
                let queueing = if (80 * MS..160 * MS).contains(&t) {
                    30 * US
                } else {
                    0
                };
                let rtt = 3 * US + u64::from(psn % 7) * US + queueing;
                tl.push(t0 + t + rtt, c.response_frame(&c.ack(psn)));
            }
            let slowed = reacts && (ce_from_ms * MS..200 * MS).contains(&t);
            t += if slowed { 2 * gap } else { gap };
        }
    }
    let p3 = |q| {
        let mut quanta = [0u16; 8];
        quanta[3] = q;
        frames::pfc(MAC_SWITCH, 1 << 3, quanta)
    };
    let mut t = 150 * MS;
    while t < 190 * MS {
        tl.push(t0 + t, p3(0xffff));
        t += 200 * US;
    }
    let storm_src = [0x02, 0, 0, 0, 0, 0x5f];
    let mut t = 220 * MS;
    while t <= 370 * MS {
        let mut quanta = [0u16; 8];
        quanta[4] = 0xffff;
        tl.push(t0 + t, frames::pfc(storm_src, 1 << 4, quanta));
        t += 250 * US;
    }
    tl.into_frames()
}

/// `verify_pass.pcap`: everything marked as configured: data and ACKs with DSCP 26 ECT(0)
/// (TOS 0x6a) on VLAN 100 PCP 3, CNPs with DSCP 48 on PCP 6. Passes
/// `--expect-tos 0x68 --expect-pcp 3 --expect-vlan 100 --expect-ecn ect --expect-cnp-dscp 48
/// --expect-cnp-pcp 6`; 3 flows of 8 WRITE packets, their ACKs and one CNP.
pub fn verify_pass() -> Frames {
    use super::scenario::{host, Conn, Timeline};
    let mut tl = Timeline::default();
    let b = host(2);
    for (k, a) in [host(1), host(3), host(4)].into_iter().enumerate() {
        let mut c = Conn::rc(
            a,
            b,
            Some((100, 3)),
            0x6a,
            0x500 + k as u32,
            0x130 + k as u32,
            100,
        );
        let t = T0_NS + k as u64 * 100;
        for (i, p) in c.write(8192).iter().enumerate() {
            tl.push(t + i as u64 * US, c.request_frame(p));
        }
        tl.push(t + 9 * US, c.response_frame(&c.ack(107)));
        if k == 0 {
            tl.push(t + 10 * US, c.cnp_frame());
        }
    }
    tl.into_frames()
}

/// `verify_cooked.pcap`: `tcpdump -i any` style (Linux cooked SLL2), untagged: DSCP and ECN can
/// be verified, PCP and VLAN cannot.
pub fn verify_cooked() -> Frames {
    use super::scenario::{host, Conn};
    let mut c = Conn::rc(host(1), host(2), None, 0x6a, 0x600, 0x140, 1);
    c.write(4096)
        .iter()
        .enumerate()
        .map(|(i, p)| {
            (
                T0_NS + i as u64 * US,
                frames::to_sll2(&c.request_frame(p), 3),
            )
        })
        .collect()
}

/// `no_roce.pcap`: DNS over UDP and PFC frames, and no RoCE at all.
pub fn no_roce() -> Frames {
    let link = FrameSpec::new(MAC_A, MAC_B).vlan(100, 3);
    vec![
        (
            T0_NS,
            frames::udp_v4(&link, IP_A, IP_B, 33333, 53, b"query"),
        ),
        (
            T0_NS + US,
            frames::pfc(MAC_SWITCH, 0x08, [0, 0, 0, 100, 0, 0, 0, 0]),
        ),
        (
            T0_NS + 2 * US,
            frames::udp_v4(&link, IP_B, IP_A, 53, 33333, b"answer"),
        ),
    ]
}

/// `report_burst.pcap`: a 21 s capture whose RoCE is one 5 ms burst 10 s in (two RC senders,
/// 50 WRITEs of 2 KiB each, 100 us apart, each ACKed), between a DNS query at the start and its
/// answer at the end: the plots must zoom to the burst (issue #26).
pub fn report_burst() -> Frames {
    use super::scenario::{host, Conn, Timeline};
    let mut tl = Timeline::default();
    let link = FrameSpec::new(MAC_A, MAC_B);
    tl.push(
        T0_NS,
        frames::udp_v4(&link, IP_A, IP_B, 33333, 53, b"query"),
    );
    let burst = T0_NS + 10_000_000_000;
    let b = host(2);
    for (k, a) in [host(1), host(3)].into_iter().enumerate() {
        let mut c = Conn::rc(
            a,
            b,
            Some((100, 3)),
            0x6a,
            0x600 + k as u32,
            0x140 + k as u32,
            0,
        );
        for m in 0..50u64 {
            let t = burst + m * 100 * US + k as u64 * 10 * US;
            let packets = c.write(2048);
            for (i, p) in packets.iter().enumerate() {
                tl.push(t + i as u64 * US, c.request_frame(p));
            }
            let last = packets.last().expect("a packet").bth.psn;
            tl.push(t + 5 * US, c.response_frame(&c.ack(last)));
        }
    }
    tl.push(
        T0_NS + 21_000_000_000,
        frames::udp_v4(&link, IP_B, IP_A, 53, 33333, b"answer"),
    );
    tl.into_frames()
}
