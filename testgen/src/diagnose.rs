//! `testdata/diagnose/*.pcap`: one failure mode of the field per capture, crafted the way the
//! wire shows it, each with the findings (code and count) the report must give exactly. The
//! `clean` capture has no fault and must give none.
//!
//! Unless a scenario says otherwise, every connection is RC on VLAN 100 with PCP 3 and TOS 0x6a
//! (DSCP 26, ECT(0)) both ways, path MTU 4096; the requester writes 1024 bytes (a WRITE Only
//! with AckReq) every 20 us and the ACK comes 5 us later. Frames stay small: the captures are
//! committed.

use std::net::Ipv6Addr;

use roce_parsers::deth::Deth;

use super::frames::{self, FrameSpec, Net, RoceSpec};
use super::scenario::{host, Conn, Host, Timeline};
use super::writer::{Frames, T0_NS};

const US: u64 = 1_000;
const VLAN: Option<(u16, u8)> = Some((100, 3));
/// DSCP 26, ECT(0).
const TOS: u8 = 0x6a;

/// One crafted capture, the arguments to read it with, and the findings it must give.
pub struct Scenario {
    pub name: &'static str,
    pub args: &'static [&'static str],
    pub frames: Frames,
    /// (finding code, count), in any order.
    pub expected: Vec<(&'static str, u64)>,
}

fn scenario(name: &'static str, frames: Frames, expected: &[(&'static str, u64)]) -> Scenario {
    Scenario {
        name,
        args: &[],
        frames,
        expected: expected.to_vec(),
    }
}

/// Every scenario, in the order of the README's table.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario("clean", clean(), &[]),
        scenario(
            "responses_mismarked",
            responses_mismarked(),
            &[
                ("dscp0_with_pcp", 11),
                ("not_ect", 11),
                ("dscp_mismatch", 11),
            ],
        ),
        scenario(
            "pcp0_with_dscp",
            pcp0_with_dscp(),
            &[("pcp0_with_dscp", 10), ("pcp0_with_dscp", 10)],
        ),
        scenario("cnp_marking", cnp_marking(), &[("cnp_marking", 2)]),
        scenario(
            "host_dscp_mismatch",
            host_dscp_mismatch(),
            &[("dscp_mismatch", 10)],
        ),
        scenario("vlan_mismatch", vlan_mismatch(), &[("vlan_mismatch", 1)]),
        scenario(
            "vlan_mismatch_at_receiver",
            vlan_mismatch_at_receiver(),
            &[("vlan_mismatch", 1)],
        ),
        scenario("vlans_of_two_links", vlans_of_two_links(), &[]),
        scenario("rocev1_frames", rocev1_frames(), &[("rocev1_frames", 5)]),
        scenario(
            "link_local_gid",
            link_local_gid(),
            &[("link_local_gid", 10)],
        ),
        scenario(
            "lossless_class_polluted",
            lossless_class_polluted(),
            &[
                ("lossless_class_polluted", 10),
                ("lossless_class_polluted", 6),
            ],
        ),
        scenario(
            "loss_on_lossless_priority",
            loss_on_lossless_priority(),
            &[
                ("psn_loss", 1),
                ("loss_on_lossless_priority", 1),
                ("retransmissions", 2),
                ("pfc_pause_roce_priority", 2),
            ],
        ),
        scenario(
            "pfc_priority_mismatch",
            pfc_priority_mismatch(),
            &[("pfc_priority_mismatch", 3)],
        ),
        scenario(
            "pfc_mutual",
            pfc_mutual(),
            &[
                ("pfc_mutual", 1),
                ("pfc_pause_roce_priority", 1),
                ("pfc_pause_roce_priority", 1),
            ],
        ),
        scenario(
            "pfc_not_honoured",
            pfc_not_honoured(),
            &[("pfc_not_honoured", 16), ("pfc_pause_roce_priority", 1)],
        ),
        scenario(
            "pfc_before_ecn",
            pfc_before_ecn(),
            &[("pfc_before_ecn", 3), ("pfc_pause_roce_priority", 3)],
        ),
        scenario("ecn_heavy", ecn_heavy(), &[("ecn_heavy", 24)]),
        scenario("incast_of_two", incast_of_two(), &[("incast", 2)]),
        scenario("reordered", reordered(), &[("out_of_order", 1)]),
        scenario(
            "low_path_entropy",
            qps_on_ports(|_| 49152),
            &[("low_path_entropy", 8)],
        ),
        scenario(
            "path_entropy_spread",
            qps_on_ports(|k| 49152 + k as u16),
            &[],
        ),
        scenario(
            "slow_nak",
            naks_after(nic::SLOW_NAK_NS, 20 * US, Resend::GoBackN),
            &[("slow_nak", 3), ("psn_loss", 3), ("retransmissions", 33)],
        ),
        scenario(
            "fast_nak",
            naks_after(nic::FAST_NAK_NS, 20 * US, Resend::GoBackN),
            &[("psn_loss", 3), ("retransmissions", 6)],
        ),
        scenario(
            "go_back_n_resend",
            naks_after(nic::RESEND_NAK_NS, 2 * US, Resend::GoBackN),
            &[("psn_loss", 3), ("retransmissions", 33)],
        ),
        scenario(
            "selective_resend",
            naks_after(nic::RESEND_NAK_NS, 2 * US, Resend::Selective),
            &[("psn_loss", 3), ("retransmissions", 3)],
        ),
        scenario(
            "timeout_resend",
            timeout_resend(),
            &[("retransmissions", 1)],
        ),
        scenario("cnp_pacing", cnp_pacing(), &[("ecn_heavy", 400)]),
        scenario("sender_halves_rate", sender_halves_rate(), &[]),
        scenario(
            "sender_keeps_rate",
            sender_keeps_rate(),
            &[("cnp_without_slowdown", 40), ("ecn_heavy", 1050)],
        ),
        scenario(
            "sender_halves_at_first_cnp",
            sender_halves_at_first_cnp(),
            &[("ecn_heavy", 252)],
        ),
        scenario(
            "mtu_black_hole",
            mtu_black_hole(),
            &[("unacknowledged_requests", 3), ("retransmissions", 9)],
        ),
        scenario(
            "retries_exhausted",
            retries_exhausted(),
            &[("unacknowledged_requests", 1), ("retransmissions", 7)],
        ),
        scenario(
            "retries_exhausted_cm",
            retries_exhausted_cm(),
            &[("unacknowledged_requests", 1), ("retransmissions", 3)],
        ),
        scenario(
            "rnr_retries_exhausted_cm",
            rnr_retries_exhausted_cm(),
            &[
                ("unacknowledged_requests", 1),
                ("rnr_nak", 3),
                ("retransmissions", 2),
            ],
        ),
        scenario(
            "nak_without_gap",
            nak_without_gap(),
            &[("nak_without_gap", 1), ("retransmissions", 5)],
        ),
        scenario("cm_rejected", cm_rejected(), &[("cm_rejected", 1)]),
        scenario("cm_unanswered", cm_unanswered(), &[("cm_unanswered", 1)]),
        scenario(
            "cm_retried_at_the_end",
            cm_retried_at_the_end(),
            &[("cm_unanswered", 1)],
        ),
        scenario("cm_answered_at_the_end", cm_answered_at_the_end(), &[]),
        scenario("cm_slow_accept", cm_slow_accept(), &[]),
        scenario(
            "cm_pending_at_the_end",
            cm_pending_at_the_end(),
            &[("cm_unanswered", 1)],
        ),
        scenario("qp_reused", qp_reused(), &[]),
        // Its flows end while the bystander runs: they panicked there when the ACK flow kept
        // pointing at the first connection's data flow as well as the second's.
        Scenario {
            args: &["--flow-timeout", "1ms"],
            ..scenario(
                "qp_reused_by_another_peer",
                qp_reused_by_another_peer(),
                &[],
            )
        },
        scenario(
            "read_range_violation",
            read_range_violation(),
            &[("read_range_violation", 1)],
        ),
        scenario(
            "small_path_mtu",
            small_path_mtu(),
            &[("small_path_mtu", 40)],
        ),
        scenario("path_mtu_1024", path_mtu_1024(), &[]),
        scenario(
            "cm_mtu_exceeded",
            cm_mtu_exceeded(),
            &[("exceeds_path_mtu", 3), ("exceeds_path_mtu", 2)],
        ),
        scenario(
            "path_mtu_below_another_qps",
            path_mtu_below_another_qps(),
            &[("small_path_mtu", 20)],
        ),
        scenario(
            "path_mtu_below_cm_offer",
            path_mtu_below_cm_offer(),
            &[("small_path_mtu", 20)],
        ),
        scenario(
            "acks_stop_before_the_end",
            acks_stop_before_the_end(),
            &[("unacknowledged_requests", 4)],
        ),
        scenario(
            "loss_early_in_a_long_capture",
            loss_early_in_a_long_capture(),
            &[("psn_loss", 1), ("retransmissions", 2)],
        ),
        scenario(
            "incast_turns_troubled",
            incast_turns_troubled(),
            &[("incast", 4)],
        ),
        scenario("damaged_bad_icrc", damaged_bad_icrc(), &[("icrc_bad", 1)]),
        scenario(
            "capture_missed",
            capture_missed(),
            &[
                ("capture_missed", 5),
                ("psn_loss", 1),
                ("psn_loss", 1),
                ("psn_loss", 1),
                ("retransmissions", 2),
                ("retransmissions", 2),
                ("unacknowledged_requests", 2),
            ],
        ),
        scenario("one_way_loss", one_way_loss(), &[("psn_loss", 1)]),
        scenario("ambiguous_pairing", ambiguous_pairing(), &[("psn_loss", 1)]),
        scenario(
            "bad_icrc_in_sequence",
            bad_icrc_in_sequence(),
            &[("icrc_bad", 5), ("icrc_bad", 1), ("retransmissions", 1)],
        ),
        scenario(
            "damaged_udp_length",
            damaged_udp_length(),
            &[("malformed_frames", 1)],
        ),
        Scenario {
            args: &["--link-speed", "100"],
            ..scenario("host_limited", host_limited(), &[("host_limited", 120)])
        },
        scenario(
            "icmp_fragmentation_needed",
            icmp_fragmentation_needed(),
            &[("icmp_unreachable", 3), ("unacknowledged_requests", 3)],
        ),
    ]
}

/// An RC connection from `a` to `b` as the module doc describes it.
fn conn(a: Host, b: Host, req_qpn: u32, resp_qpn: u32) -> Conn {
    let mut c = Conn::rc(a, b, VLAN, TOS, req_qpn, resp_qpn, 1000);
    c.mtu = 4096;
    c
}

/// `messages` WRITEs of 1024 bytes from `t`, each ACKed; returns the time after the last.
fn writes(tl: &mut Timeline, c: &mut Conn, t: u64, messages: u32) -> u64 {
    writes_with(tl, c, t, messages, |_| Send::Plain)
}

/// How message `i` of `writes_with` goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Send {
    Plain,
    /// CE-marked on the way; a CNP (PCP 6, DSCP 48) comes back 3 us later.
    CeMarked,
    /// Not sent: the sender waits (a pause).
    Held,
}

/// Like `writes`, each message as `how` says.
fn writes_with(
    tl: &mut Timeline,
    c: &mut Conn,
    mut t: u64,
    messages: u32,
    how: impl Fn(u32) -> Send,
) -> u64 {
    for i in 0..messages {
        let send = how(i);
        if send != Send::Held {
            let p = c.write(1024).remove(0);
            if send == Send::CeMarked {
                let marked = c.fwd_net.with_tos(TOS | 3);
                tl.push(t, frames::rocev2(&c.fwd_link, marked, c.sport, &p));
                tl.push(t + 3 * US, c.cnp_frame());
            } else {
                tl.push(t, c.request_frame(&p));
            }
            tl.push(t + 5 * US, c.response_frame(&c.ack(p.bth.psn)));
        }
        t += 20 * US;
    }
    t
}

/// A PFC XOFF from `mac` for priority `prio`, the longest pause (65535 quanta: 335 us at
/// 100 Gb/s).
fn xoff(mac: [u8; 6], prio: u8) -> Vec<u8> {
    let mut quanta = [0u16; 8];
    quanta[usize::from(prio)] = 0xffff;
    frames::pfc(mac, 1 << prio, quanta)
}

/// The switch's MAC, where it sends PFC from.
const SWITCH: [u8; 6] = [0x02, 0, 0, 0, 0, 0x5e];

/// A READ of 2048 bytes at `t`: the request, and its response 5 us later.
fn read(tl: &mut Timeline, c: &mut Conn, t: u64) {
    let (req, resps) = c.read(2048);
    tl.push(t, c.request_frame(&req));
    for (i, r) in resps.iter().enumerate() {
        tl.push(t + (5 + i as u64) * US, c.response_frame(r));
    }
}

/// No fault: two requesters writing to .2 and one READ.
fn clean() -> Frames {
    let mut tl = Timeline::default();
    let mut a = conn(host(1), host(2), 0x400, 0x100);
    let mut b = conn(host(3), host(2), 0x401, 0x101);
    let end = writes(&mut tl, &mut a, T0_NS, 20);
    writes(&mut tl, &mut b, T0_NS + 7 * US, 20);
    read(&mut tl, &mut a, end);
    tl.into_frames()
}

/// The responder .2 answers (10 ACKs, 1 READ response) with TOS 0x00: DSCP 0 with PCP 3,
/// Not-ECT, and a DSCP other than its requests'.
fn responses_mismarked() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    c.rev_net = c.rev_net.with_tos(0x00);
    let end = writes(&mut tl, &mut c, T0_NS, 10);
    read(&mut tl, &mut c, end);
    tl.into_frames()
}

/// Tagged PCP 0 while DSCP 26 is set, both ways: 10 data packets, 10 ACKs.
fn pcp0_with_dscp() -> Frames {
    let mut tl = Timeline::default();
    let mut c = Conn::rc(host(1), host(2), Some((100, 0)), TOS, 0x400, 0x100, 1000);
    c.mtu = 4096;
    writes(&mut tl, &mut c, T0_NS, 10);
    tl.into_frames()
}

/// Packets 10 and 30 (of 40) are CE-marked; each CNP comes back 3 us later with PCP 0 and
/// DSCP 0, below the data's PCP 3, DSCP 26.
fn cnp_marking() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    let mut t = T0_NS;
    let mut n = 0;
    for _ in 0..40 {
        let packets = c.write(1024);
        for (i, p) in packets.iter().enumerate() {
            n += 1;
            let at = t + i as u64 * US;
            if n % 20 == 10 {
                let marked = frames::rocev2(&c.fwd_link, c.fwd_net.with_tos(TOS | 3), c.sport, p);
                tl.push(at, marked);
                let low = FrameSpec::new(c.rev_link.src_mac, c.rev_link.dst_mac).vlan(100, 0);
                let cnp = RoceSpec::new(0x81, c.req_qpn, 0);
                tl.push(
                    at + 3 * US,
                    frames::rocev2(&low, c.rev_net.with_tos(0x02), 0, &cnp),
                );
            } else {
                tl.push(at, c.request_frame(p));
            }
        }
        tl.push(t + 5 * US, c.response_frame(&c.ack(c.psn.wrapping_sub(1))));
        t += 20 * US;
    }
    tl.into_frames()
}

/// Three requesters write to .2 (10 messages each); the connection of .5 is set up with PCP 0
/// and TOS 0x02 both ways: consistent in itself, but its DSCP 0 is not the others' DSCP 26.
fn host_dscp_mismatch() -> Frames {
    let mut tl = Timeline::default();
    let mut a = conn(host(1), host(2), 0x400, 0x100);
    let mut b = conn(host(3), host(2), 0x401, 0x101);
    let mut c = Conn::rc(host(5), host(2), Some((100, 0)), 0x02, 0x402, 0x102, 1000);
    c.mtu = 4096;
    writes(&mut tl, &mut a, T0_NS, 10);
    writes(&mut tl, &mut b, T0_NS + 7 * US, 10);
    writes(&mut tl, &mut c, T0_NS + 13 * US, 10);
    tl.into_frames()
}

/// .1 writes to .2 on two QPs over VLAN 100 and on a third over VLAN 200.
fn vlan_mismatch() -> Frames {
    let mut tl = Timeline::default();
    let mut a = conn(host(1), host(2), 0x400, 0x100);
    let mut b = conn(host(1), host(2), 0x401, 0x101);
    let mut c = Conn::rc(host(1), host(2), Some((200, 3)), TOS, 0x402, 0x102, 1000);
    c.mtu = 4096;
    writes(&mut tl, &mut a, T0_NS, 5);
    writes(&mut tl, &mut b, T0_NS + 7 * US, 5);
    writes(&mut tl, &mut c, T0_NS + 13 * US, 5);
    tl.into_frames()
}

/// A RoCEv2 connection, and 5 RoCEv1 SENDs from the same host (a GID index of a v1 entry).
fn rocev1_frames() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    writes(&mut tl, &mut c, T0_NS, 10);
    let link = FrameSpec::new(host(1).mac, host(2).mac).vlan(100, 3);
    let (sgid, dgid) = (
        Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1),
        Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 2),
    );
    for i in 0..5u32 {
        let send = RoceSpec::new(0x04, 0x300, 50 + i).payload(256);
        tl.push(
            T0_NS + 3 * US + u64::from(i) * 20 * US,
            frames::rocev1(&link, sgid, dgid, TOS, &send),
        );
    }
    tl.into_frames()
}

/// RoCEv2 between fe80::1 and fe80::2 (10 data packets, 10 ACKs).
fn link_local_gid() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    let v6 = |last| Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, last);
    c.fwd_net = Net::V6 {
        src: v6(1),
        dst: v6(2),
        tclass: TOS,
        flow_label: 0,
        hop_limit: 64,
    };
    c.rev_net = c.fwd_net.reversed();
    writes(&mut tl, &mut c, T0_NS, 10);
    tl.into_frames()
}

/// RC from .1 to .2 in PCP 3 / DSCP 26; a UD sender .3 in the same class (10 SENDs); 6 UDP
/// frames (not RoCE) tagged PCP 3 and 4 untagged ones with DSCP 26.
fn lossless_class_polluted() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    writes(&mut tl, &mut c, T0_NS, 10);
    let ud_link = FrameSpec::new(host(3).mac, host(2).mac).vlan(100, 3);
    let ud_net = Net::v4(host(3).ip, host(2).ip, TOS);
    for i in 0..10u32 {
        let mut send = RoceSpec::new(0x64, 0x200, 7 + i).payload(512);
        send.deth = Some(Deth {
            qkey: 0x1111,
            sqpn: 0x210,
        });
        tl.push(
            T0_NS + 2 * US + u64::from(i) * 20 * US,
            frames::rocev2(&ud_link, ud_net, 50000, &send),
        );
    }
    let tagged = FrameSpec::new(host(4).mac, host(2).mac).vlan(100, 3);
    let untagged = FrameSpec::new(host(4).mac, host(2).mac);
    for i in 0..6u64 {
        let net = Net::v4(host(4).ip, host(2).ip, 0x00);
        tl.push(
            T0_NS + 4 * US + i * 30 * US,
            frames::udp_v4_tos(&tagged, net, 5000, 6000, &[0; 64]),
        );
    }
    for i in 0..4u64 {
        let net = Net::v4(host(4).ip, host(2).ip, 0x68);
        tl.push(
            T0_NS + 9 * US + i * 30 * US,
            frames::udp_v4_tos(&untagged, net, 5000, 6000, &[0; 64]),
        );
    }
    tl.into_frames()
}

/// PSN 1010 is lost on priority 3, which the switch paused twice before (the data is
/// CE-marked then, and CNPs come back): the receiver NAKs it when 1011 arrives and the sender
/// goes back, resending 1010 and 1011.
fn loss_on_lossless_priority() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    tl.push(T0_NS + 10 * US, xoff(SWITCH, 3));
    tl.push(T0_NS + 50 * US, xoff(SWITCH, 3));
    let mut t = writes_with(&mut tl, &mut c, T0_NS, 10, |i| {
        if i == 1 || i == 4 {
            Send::CeMarked
        } else {
            Send::Plain
        }
    });
    let lost = c.write(1024).remove(0);
    let next = c.write(1024).remove(0);
    tl.push(t + US, c.request_frame(&next));
    tl.push(t + 4 * US, c.response_frame(&c.nak(lost.bth.psn, 0)));
    t += 10 * US;
    tl.push(t, c.request_frame(&lost));
    tl.push(t + US, c.request_frame(&next));
    tl.push(t + 6 * US, c.response_frame(&c.ack(next.bth.psn)));
    writes(&mut tl, &mut c, t + 20 * US, 5);
    tl.into_frames()
}

/// RoCE is tagged PCP 3, but the switch pauses priority 4 (3 XOFF), where nothing runs.
fn pfc_priority_mismatch() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    writes(&mut tl, &mut c, T0_NS, 20);
    for i in 0..3 {
        tl.push(T0_NS + 30 * US + i * 100 * US, xoff(SWITCH, 4));
    }
    tl.into_frames()
}

/// The switch pauses priority 3 at 100 us, and the receiver .2 pauses it at 150 us, while the
/// switch's pause still runs: the two ends of the link pause each other. Nothing is sent
/// meanwhile; the data before is CE-marked twice.
fn pfc_mutual() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    tl.push(T0_NS + 100 * US, xoff(SWITCH, 3));
    tl.push(T0_NS + 150 * US, xoff(host(2).mac, 3));
    writes_with(&mut tl, &mut c, T0_NS, 40, |i| match i {
        1 | 3 => Send::CeMarked,
        5..=24 => Send::Held,
        _ => Send::Plain,
    });
    tl.into_frames()
}

/// The receiver .2 pauses priority 3 at 100 us for 335 us; .1 goes on sending to it every
/// 20 us: the 16 frames from 120 to 420 us are sent into the pause. Data at 40 us is
/// CE-marked (and gets its CNP).
fn pfc_not_honoured() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    tl.push(T0_NS + 100 * US, xoff(host(2).mac, 3));
    writes_with(&mut tl, &mut c, T0_NS, 30, |i| {
        if i == 2 {
            Send::CeMarked
        } else {
            Send::Plain
        }
    });
    tl.into_frames()
}

/// The switch pauses priority 3 three times while no packet is CE-marked.
fn pfc_before_ecn() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    for i in 0..3 {
        tl.push(T0_NS + 30 * US + i * 400 * US, xoff(SWITCH, 3));
    }
    writes_with(&mut tl, &mut c, T0_NS, 70, |i| {
        // Nothing is sent while paused (335 us after each XOFF).
        let t = u64::from(i) * 20 * US;
        let paused = (0..3).any(|k| {
            let from = 30 * US + k * 400 * US;
            (from..from + 340 * US).contains(&t)
        });
        if paused {
            Send::Held
        } else {
            Send::Plain
        }
    });
    tl.into_frames()
}

/// 24 of 40 packets (60%) CE-marked, each answered by a CNP.
fn ecn_heavy() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    writes_with(&mut tl, &mut c, T0_NS, 40, |i| {
        if i % 5 < 3 {
            Send::CeMarked
        } else {
            Send::Plain
        }
    });
    tl.into_frames()
}

/// .1 and .3 write to .2 at once; two packets of each are CE-marked.
fn incast_of_two() -> Frames {
    let mut tl = Timeline::default();
    let mut a = conn(host(1), host(2), 0x400, 0x100);
    let mut b = conn(host(3), host(2), 0x401, 0x101);
    let marked = |i| {
        if i == 5 || i == 15 {
            Send::CeMarked
        } else {
            Send::Plain
        }
    };
    writes_with(&mut tl, &mut a, T0_NS, 20, marked);
    writes_with(&mut tl, &mut b, T0_NS + 7 * US, 20, marked);
    tl.into_frames()
}

/// .1 writes 20 messages to .2; the network delivers message 10 after 11, 12 and 13 (1 us
/// apart, 3 us after its gap): reordered 3 deep, no loss. The receiver places them out of
/// order (adaptive routing) and acknowledges 13 once 10 is in.
fn reordered() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    let requests: Vec<_> = (0..20).map(|_| c.write(1024).remove(0)).collect();
    let mut t = T0_NS;
    for (i, p) in requests.iter().enumerate() {
        match i {
            10 => continue,
            11..=13 => {
                tl.push(t + (i as u64 - 11) * US, c.request_frame(p));
                if i == 13 {
                    tl.push(t + 3 * US, c.request_frame(&requests[10]));
                    tl.push(t + 8 * US, c.response_frame(&c.ack(p.bth.psn)));
                    t += 20 * US;
                }
            }
            _ => {
                tl.push(t, c.request_frame(p));
                tl.push(t + 5 * US, c.response_frame(&c.ack(p.bth.psn)));
                t += 20 * US;
            }
        }
    }
    tl.into_frames()
}

/// What the NIC scenarios made, for the tests that check the figures measured of them.
pub mod nic {
    /// The NAK delays of `slow_nak` and `fast_nak`, after the first request past the gap.
    pub const SLOW_NAK_NS: u64 = 200_000;
    pub const FAST_NAK_NS: u64 = 2_000;
    /// The NAK delay of the resend scenarios, and the PSNs in flight after each loss then.
    pub const RESEND_NAK_NS: u64 = 19_000;
    pub const IN_FLIGHT: u64 = 10;
    /// Losses in each of the NAK scenarios.
    pub const LOSSES: u64 = 3;
    /// The resend after `timeout_resend`'s silence.
    pub const TIMEOUT_NS: u64 = 4_000_000;
    /// `cnp_pacing`: CNPs every this long, and how many.
    pub const CNP_PACING_NS: u64 = 50_000;
    pub const PACED_CNPS: u64 = 8;
    /// `sender_halves_rate`: CNPs, their spacing, and the rate after each over the rate before.
    pub const HALVING_CNPS: u64 = 12;
    pub const HALVING_CNP_SPACING_NS: u64 = 250_000;
    pub const RATE_CUT: f64 = 0.5;
    /// `sender_keeps_rate`: CNPs, 50 us apart.
    pub const KEPT_RATE_CNPS: u64 = 40;
    /// `sender_halves_at_first_cnp`: CNPs, 50 us apart, the first this long after the first
    /// CE mark.
    pub const HALVED_AT_FIRST_CNPS: u64 = 20;
    pub const FIRST_CNP_AFTER_CE_NS: u64 = 3_000;
}

/// How a sender resends after a sequence NAK.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Resend {
    /// The NAKed PSN and everything after it.
    GoBackN,
    /// The NAKed PSN alone, then new ones.
    Selective,
}

/// .1 writes 70 small messages to .2, one every `spacing`, each ACKed 5 us later; messages 10,
/// 30 and 50 are lost before the capture point. .2 NAKs each loss `nak_delay` after the first
/// request past it, dropping what came meanwhile (no ACK), and .1 resends as `resend` says,
/// 2 us after the NAK (1 us apart), then goes on.
fn naks_after(nak_delay: u64, spacing: u64, resend: Resend) -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    let sent: Vec<RoceSpec> = (0..70).map(|_| c.write(16).remove(0)).collect();
    let (mut t, mut i) = (T0_NS, 0);
    while i < sent.len() {
        if ![10, 30, 50].contains(&i) {
            tl.push(t, c.request_frame(&sent[i]));
            tl.push(t + 5 * US, c.response_frame(&c.ack(sent[i].bth.psn)));
            (t, i) = (t + spacing, i + 1);
            continue;
        }
        // Lost: what follows goes out until the NAK comes.
        let nak_at = t + spacing + nak_delay;
        let mut next = i + 1;
        t += spacing;
        while t < nak_at && next < sent.len() {
            tl.push(t, c.request_frame(&sent[next]));
            (t, next) = (t + spacing, next + 1);
        }
        tl.push(nak_at, c.response_frame(&c.nak(sent[i].bth.psn, 0)));
        let resent = match resend {
            Resend::GoBackN => &sent[i..next],
            Resend::Selective => &sent[i..=i],
        };
        let mut tr = nak_at + 2 * US;
        for p in resent {
            tl.push(tr, c.request_frame(p));
            tr += US;
        }
        tl.push(
            tr + 4 * US,
            c.response_frame(&c.ack(sent[next - 1].bth.psn)),
        );
        (t, i) = (tr + spacing, next);
    }
    tl.into_frames()
}

/// .1 writes 10 messages to .2, ACKed; the 11th goes by the capture and is lost after it, and
/// no NAK comes (nothing follows it): .1 resends it 4 ms later, and it is ACKed.
fn timeout_resend() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    let t = writes(&mut tl, &mut c, T0_NS, 10);
    let lost = c.write(1024).remove(0);
    tl.push(t, c.request_frame(&lost));
    tl.push(t + nic::TIMEOUT_NS, c.request_frame(&lost));
    tl.push(
        t + nic::TIMEOUT_NS + 5 * US,
        c.response_frame(&c.ack(lost.bth.psn)),
    );
    tl.into_frames()
}

/// Small WRITEs from .1 to .2 from `from` to `until`, the next `gap(t)` after the one at `t`,
/// CE-marked where `marked(t)`; an ACK after every 50th and the last.
fn stream(
    tl: &mut Timeline,
    c: &mut Conn,
    (from, until): (u64, u64),
    gap: impl Fn(u64) -> u64,
    marked: impl Fn(u64) -> bool,
) {
    let (mut t, mut n) = (from, 0);
    while t < until {
        let p = c.write(16).remove(0);
        let tos = if marked(t) { TOS | 3 } else { TOS };
        tl.push(
            t,
            frames::rocev2(&c.fwd_link, c.fwd_net.with_tos(tos), c.sport, &p),
        );
        n += 1;
        let next = t + gap(t);
        if n % 50 == 0 || next >= until {
            tl.push(t + 5 * US, c.response_frame(&c.ack(p.bth.psn)));
        }
        t = next;
    }
}

/// .1 writes to .2 one packet a microsecond for 400 us, every packet CE-marked (a marking
/// threshold of one packet); .2 sends its first CNP 2 us after the first mark, then one every
/// 50 us: its CNP pacing.
fn cnp_pacing() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    stream(&mut tl, &mut c, (T0_NS, T0_NS + 400 * US), |_| US, |_| true);
    for k in 0..nic::PACED_CNPS {
        tl.push(T0_NS + 2 * US + k * nic::CNP_PACING_NS, c.cnp_frame());
    }
    tl.into_frames()
}

/// .1 writes to .2 back to back, a packet every 2 us; the switch marks 5 us of packets before
/// each of 12 CNPs 250 us apart (the first 150 us in), each CNP 2 us after the first mark. .1
/// halves its rate for the 100 us after each CNP (a packet every 4 us), then recovers.
fn sender_halves_rate() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    let first = T0_NS + 150 * US;
    let spacing = nic::HALVING_CNP_SPACING_NS;
    let cnps: Vec<u64> = (0..nic::HALVING_CNPS)
        .map(|k| first + k * spacing)
        .collect();
    let end = first + nic::HALVING_CNPS * spacing;
    let slowed = |t: u64| cnps.iter().any(|&cnp| t >= cnp && t < cnp + 100 * US);
    let marked = |t: u64| {
        cnps.iter()
            .any(|&cnp| t + 2 * US >= cnp && t + 2 * US < cnp + 5 * US)
    };
    let gap = |t: u64| if slowed(t) { 4 * US } else { 2 * US };
    stream(&mut tl, &mut c, (T0_NS, end), gap, marked);
    for &cnp in &cnps {
        tl.push(cnp, c.cnp_frame());
    }
    tl.into_frames()
}

/// .1 writes to .2 a packet every 2 us for 2.1 ms, every packet CE-marked; .2 sends 40 CNPs,
/// 2 us after the first mark and 50 us apart: .1 keeps its rate through all of them.
fn sender_keeps_rate() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    stream(
        &mut tl,
        &mut c,
        (T0_NS, T0_NS + 2_100 * US),
        |_| 2 * US,
        |_| true,
    );
    for k in 0..nic::KEPT_RATE_CNPS {
        tl.push(T0_NS + 2 * US + k * nic::CNP_PACING_NS, c.cnp_frame());
    }
    tl.into_frames()
}

/// .1 writes to .2 back to back, a packet every 2 us; from 300 us on the switch marks every
/// packet, and .2 sends 20 CNPs 3 us after the first mark and 50 us apart. .1 halves its rate
/// at the first CNP (a packet every 4 us) and keeps to it: the rate before that CNP is from
/// before the marks began.
fn sender_halves_at_first_cnp() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    let marked_from = T0_NS + 300 * US;
    let first_cnp = marked_from + nic::FIRST_CNP_AFTER_CE_NS;
    let end = first_cnp + nic::HALVED_AT_FIRST_CNPS * nic::CNP_PACING_NS;
    let gap = |t: u64| if t >= first_cnp { 4 * US } else { 2 * US };
    stream(&mut tl, &mut c, (T0_NS, end), gap, |t| t >= marked_from);
    for k in 0..nic::HALVED_AT_FIRST_CNPS {
        tl.push(first_cnp + k * nic::CNP_PACING_NS, c.cnp_frame());
    }
    tl.into_frames()
}

/// 8 QPs from .1 to .2 writing at once (20 messages each, 2.5 us apart), QP `k` from UDP
/// source port `port(k)`: one port puts them all on one ECMP path.
fn qps_on_ports(port: impl Fn(u32) -> u16) -> Frames {
    let mut tl = Timeline::default();
    for k in 0..8u32 {
        let mut c = conn(host(1), host(2), 0x400 + k, 0x100 + k);
        c.sport = port(k);
        writes(&mut tl, &mut c, T0_NS + u64::from(k) * 2_500, 20);
    }
    tl.into_frames()
}

/// A bystander: .3 writes to .4 from `from` for `messages` messages, so that the capture goes
/// on after the connection under test fell silent.
fn bystander(tl: &mut Timeline, from: u64, messages: u32) {
    let mut c = conn(host(3), host(4), 0x410, 0x110);
    writes(tl, &mut c, from, messages);
}

/// .1 writes 10 messages of 1024 bytes to .2, all ACKed; then 3 WRITEs of 4096 bytes that a
/// hop with a smaller MTU drops: no ACK, and the sender resends the three after 500 us,
/// three times.
fn mtu_black_hole() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    let t = writes(&mut tl, &mut c, T0_NS, 10);
    let big: Vec<RoceSpec> = (0..3).map(|_| c.write(4096).remove(0)).collect();
    for round in 0..4u64 {
        for (i, p) in big.iter().enumerate() {
            tl.push(t + round * 500 * US + i as u64 * 2 * US, c.request_frame(p));
        }
    }
    bystander(&mut tl, T0_NS, 200);
    tl.into_frames()
}

/// .1 writes 10 ACKed messages to .2, then one that never gets an ACK: it resends it 7 times,
/// 500 us apart, and falls silent.
fn retries_exhausted() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    let t = writes(&mut tl, &mut c, T0_NS, 10);
    let lost = c.write(1024).remove(0);
    for attempt in 0..8u64 {
        tl.push(t + attempt * 500 * US, c.request_frame(&lost));
    }
    bystander(&mut tl, T0_NS, 300);
    tl.into_frames()
}

/// On a connection RDMA-CM set up with RNR Retry Count 2, .1 writes 10 messages to .2, ACKed;
/// .2 answers the 11th with an RNR NAK (no receive posted), and each of its 2 resends, 1 ms
/// apart, with another; the QP then gives up and falls silent.
fn rnr_retries_exhausted_cm() -> Frames {
    let mut tl = Timeline::default();
    let mut req = cm_req(0x1001, 0x400, 1000);
    // Retry Count 7 (rdma_cm's), RNR Retry Count 2.
    req[24 + 47] = 7;
    req[24 + 50] |= 2;
    tl.push(T0_NS, mad_frame(host(1), host(2), 1, req));
    let rep = cm_rep(0x2001, 0x1001, 0x100, 7000);
    tl.push(T0_NS + 5 * US, mad_frame(host(2), host(1), 1, rep));
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    let t = writes(&mut tl, &mut c, T0_NS + 20 * US, 10);
    let refused = c.send(1024).remove(0);
    for attempt in 0..3u64 {
        let at = t + attempt * 1_000 * US;
        tl.push(at, c.request_frame(&refused));
        tl.push(at + 5 * US, c.response_frame(&c.rnr_nak(refused.bth.psn)));
    }
    bystander(&mut tl, T0_NS, 300);
    tl.into_frames()
}

/// As `retries_exhausted`, on a connection RDMA-CM set up with Retry Count 3 (RNR Retry Count
/// 6, Local ACK Timeout 262 us): the PSN is sent and resent 3 times, then the QP falls silent.
fn retries_exhausted_cm() -> Frames {
    let mut tl = Timeline::default();
    let mut req = cm_req(0x1001, 0x400, 1000);
    req[24 + 47] = 3;
    // RNR Retry Count 6 (beside the MTU code); Local ACK Timeout 6: 262 us, the resends
    // come after 500 us.
    req[24 + 50] |= 6;
    req[24 + 95] = 6 << 3;
    tl.push(T0_NS, mad_frame(host(1), host(2), 1, req));
    let rep = cm_rep(0x2001, 0x1001, 0x100, 7000);
    tl.push(T0_NS + 5 * US, mad_frame(host(2), host(1), 1, rep));
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    let t = writes(&mut tl, &mut c, T0_NS + 20 * US, 10);
    let lost = c.write(1024).remove(0);
    for attempt in 0..4u64 {
        tl.push(t + attempt * 500 * US, c.request_frame(&lost));
    }
    bystander(&mut tl, T0_NS, 300);
    tl.into_frames()
}

/// .1 sends PSNs 1000-1009 to .2 and the capture sees them all; .2 NAKs 1005 (lost after the
/// capture point), and .1 goes back and resends 1005-1009, which are ACKed.
fn nak_without_gap() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    let sent: Vec<RoceSpec> = (0..10).map(|_| c.write(1024).remove(0)).collect();
    let mut t = T0_NS;
    for p in &sent {
        tl.push(t, c.request_frame(p));
        t += 2 * US;
    }
    tl.push(t, c.response_frame(&c.nak(sent[5].bth.psn, 0)));
    t += 5 * US;
    for p in &sent[5..] {
        tl.push(t, c.request_frame(p));
        t += 2 * US;
    }
    tl.push(t + 3 * US, c.response_frame(&c.ack(sent[9].bth.psn)));
    tl.into_frames()
}

const CM_ATTR_REQ: u16 = 0x0010;
const CM_ATTR_REJ: u16 = 0x0012;
const CM_ATTR_REP: u16 = 0x0013;

/// A CM MAD (class 0x07, version 2, method Send) of attribute `attr`, with `fields` (offset in
/// the CM data after the 24-byte MAD header, bytes) set.
fn cm_mad(attr: u16, fields: &[(usize, &[u8])]) -> [u8; 256] {
    let mut m = [0u8; 256];
    m[..4].copy_from_slice(&[1, 0x07, 2, 0x03]);
    m[16..18].copy_from_slice(&attr.to_be_bytes());
    for &(at, bytes) in fields {
        m[24 + at..24 + at + bytes.len()].copy_from_slice(bytes);
    }
    m
}

fn be24(v: u32) -> [u8; 3] {
    let b = v.to_be_bytes();
    [b[1], b[2], b[3]]
}

/// REQ: the active side's communication ID, QPN and first PSN; path MTU 4096.
fn cm_req(comm_id: u32, qpn: u32, psn: u32) -> [u8; 256] {
    cm_req_with_mtu(comm_id, qpn, psn, 4096)
}

/// A REQ offering path MTU `mtu` (256..4096).
fn cm_req_with_mtu(comm_id: u32, qpn: u32, psn: u32, mtu: u32) -> [u8; 256] {
    // IB MTU codes: 1 = 256 bytes ... 5 = 4096.
    let code = (mtu / 256).trailing_zeros() as u8 + 1;
    cm_mad(
        CM_ATTR_REQ,
        &[
            (0, &comm_id.to_be_bytes()),
            (32, &be24(qpn)),
            (44, &be24(psn)),
            (50, &[code << 4]),
        ],
    )
}

/// A REQ as rdma_cm sends it: its sender waits 4.3 s for the answer (Remote CM Response
/// Timeout 20) before it sends it again.
fn cm_req_rdma_cm(comm_id: u32, qpn: u32, psn: u32) -> [u8; 256] {
    let mut m = cm_req(comm_id, qpn, psn);
    m[24 + 43] = 20 << 3;
    m
}

/// REP: the passive side's communication ID and the request's, its QPN and first PSN.
fn cm_rep(comm_id: u32, remote_comm_id: u32, qpn: u32, psn: u32) -> [u8; 256] {
    cm_mad(
        CM_ATTR_REP,
        &[
            (0, &comm_id.to_be_bytes()),
            (4, &remote_comm_id.to_be_bytes()),
            (12, &be24(qpn)),
            (20, &be24(psn)),
        ],
    )
}

/// REJ of a REQ (`remote_comm_id`) with `reason`.
fn cm_rej(comm_id: u32, remote_comm_id: u32, reason: u16) -> [u8; 256] {
    cm_mad(
        CM_ATTR_REJ,
        &[
            (0, &comm_id.to_be_bytes()),
            (4, &remote_comm_id.to_be_bytes()),
            (8, &[0]),
            (10, &reason.to_be_bytes()),
        ],
    )
}

/// A MAD from `from` to `to`: a UD SEND to QP 1 from QP 1, PSN `psn` of the sender's QP 1.
fn mad_frame(from: Host, to: Host, psn: u32, mad: [u8; 256]) -> Vec<u8> {
    let mut send = RoceSpec::new(0x64, 1, psn).mad(mad);
    send.deth = Some(Deth {
        qkey: 0x8001_0000,
        sqpn: 1,
    });
    let link = FrameSpec::new(from.mac, to.mac).vlan(100, 3);
    frames::rocev2(&link, Net::v4(from.ip, to.ip, TOS), 0xc000, &send)
}

/// .1 asks .2 for a connection; .2 rejects it: invalid service ID (nothing listens there).
fn cm_rejected() -> Frames {
    let mut tl = Timeline::default();
    tl.push(
        T0_NS,
        mad_frame(host(1), host(2), 1, cm_req(0x1001, 0x400, 1000)),
    );
    tl.push(
        T0_NS + 50 * US,
        mad_frame(host(2), host(1), 1, cm_rej(0x2001, 0x1001, 8)),
    );
    tl.into_frames()
}

/// .1 asks .2 for a connection three times, 20 ms apart; nothing answers. A bystander keeps
/// the capture going for 100 ms.
fn cm_unanswered() -> Frames {
    let mut tl = Timeline::default();
    for attempt in 0..3u32 {
        let at = T0_NS + u64::from(attempt) * 20_000 * US;
        tl.push(
            at,
            mad_frame(host(1), host(2), 1 + attempt, cm_req(0x1001, 0x400, 1000)),
        );
    }
    let mut c = conn(host(3), host(4), 0x410, 0x110);
    for i in 0..21u64 {
        writes(&mut tl, &mut c, T0_NS + 10 * US + i * 5_000 * US, 1);
    }
    tl.into_frames()
}

/// Two connections one after the other on the same QPs, each set up by RDMA-CM: the first
/// runs from PSN 1000, the second starts again at PSN 200, as its REQ announces. Neither is
/// judged against the other: no finding.
fn qp_reused() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    let mut t = T0_NS;
    for (k, start) in [(0u32, 1000u32), (1, 200)] {
        let (comm, reply) = (0x1001 + k, 0x2001 + k);
        tl.push(
            t,
            mad_frame(host(1), host(2), 1 + k, cm_req(comm, 0x400, start)),
        );
        tl.push(
            t + 20 * US,
            mad_frame(host(2), host(1), 1 + k, cm_rep(reply, comm, 0x100, 7000)),
        );
        c.psn = start;
        t = writes(&mut tl, &mut c, t + 40 * US, 10) + 200 * US;
    }
    tl.into_frames()
}

/// .1's QP 0x400 connects to .2's QP 0x100, then, set up by RDMA-CM again, to .2's QP 0x101:
/// the flow of .2's ACKs to QP 0x400 belongs to the second connection from then on.
fn qp_reused_by_another_peer() -> Frames {
    let mut tl = Timeline::default();
    let mut t = T0_NS;
    for (k, peer_qpn) in [(0u32, 0x100u32), (1, 0x101)] {
        let (comm, reply) = (0x1001 + k, 0x2001 + k);
        tl.push(
            t,
            mad_frame(host(1), host(2), 1 + k, cm_req(comm, 0x400, 1000)),
        );
        tl.push(
            t + 20 * US,
            mad_frame(host(2), host(1), 1 + k, cm_rep(reply, comm, peer_qpn, 7000)),
        );
        let mut c = conn(host(1), host(2), 0x400, peer_qpn);
        t = writes(&mut tl, &mut c, t + 40 * US, 10) + 200 * US;
    }
    // A bystander goes on for 3 ms: a short --flow-timeout ends the connections meanwhile.
    let mut by = conn(host(3), host(4), 0x410, 0x110);
    for i in 0..30u64 {
        writes(&mut tl, &mut by, t + i * 100 * US, 1);
    }
    tl.into_frames()
}

/// One step of `reconnections`: hosts are numbered as `host(n)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// RDMA-CM connects host `a`'s QP `a_qp` to host `p`'s QP `p_qp` (a REQ and its REP).
    Connect { a: u8, p: u8, a_qp: u32, p_qp: u32 },
    /// `n` WRITEs from QP `a_qp` of host `a` to QP `p_qp` of host `p`, each ACKed.
    Write {
        a: u8,
        p: u8,
        a_qp: u32,
        p_qp: u32,
        n: u32,
    },
    /// Nothing for `us` microseconds.
    Idle(u64),
}

/// `steps` one after the other, 10 us apart: QPs connected, connected anew to others, used
/// and left idle. For properties of flow pairing and lifetime.
pub fn reconnections(steps: &[Step]) -> Frames {
    let mut tl = Timeline::default();
    let mut t = T0_NS;
    let mut comm = 0x1000u32;
    for &step in steps {
        match step {
            Step::Connect { a, p, a_qp, p_qp } => {
                comm += 1;
                tl.push(t, mad_frame(host(a), host(p), 1, cm_req(comm, a_qp, 1000)));
                let rep = cm_rep(comm + 0x1000, comm, p_qp, 7000);
                tl.push(t + 5 * US, mad_frame(host(p), host(a), 1, rep));
                t += 10 * US;
            }
            Step::Write {
                a,
                p,
                a_qp,
                p_qp,
                n,
            } => {
                let mut c = conn(host(a), host(p), a_qp, p_qp);
                t = writes(&mut tl, &mut c, t, n);
            }
            Step::Idle(us) => t += us * US,
        }
        t += 10 * US;
    }
    tl.into_frames()
}

/// An ICMP "fragmentation needed" (next-hop MTU 1500) from router 10.0.0.254 to `to`, quoting
/// the first 64 bytes of the IP packet in `roce_frame` (an Ethernet frame with one VLAN tag).
fn icmp_frag_needed(to: Host, roce_frame: &[u8]) -> Vec<u8> {
    let router = Host {
        mac: [0x02, 0, 0, 0, 0, 0xfe],
        ip: [10, 0, 0, 254],
    };
    let quote = &roce_frame[18..18 + 64];
    let mut icmp = vec![3, 4, 0, 0, 0, 0];
    icmp.extend_from_slice(&1500u16.to_be_bytes());
    icmp.extend_from_slice(quote);
    let sum = frames::internet_checksum(&icmp);
    icmp[2..4].copy_from_slice(&sum.to_be_bytes());
    let ip = frames::ipv4_header(router.ip, to.ip, 0xc0, 64, 1, icmp.len() as u16, false);
    let mut frame = Vec::new();
    let link = FrameSpec::new(router.mac, to.mac).vlan(100, 0);
    frame.extend_from_slice(&link.dst_mac);
    frame.extend_from_slice(&link.src_mac);
    frame.extend_from_slice(&[0x81, 0x00, 0x00, 100, 0x08, 0x00]);
    frame.extend_from_slice(&ip);
    frame.extend_from_slice(&icmp);
    frame
}

/// .1 writes 10 ACKed messages of 1024 bytes to .2, then 3 of 4096 bytes; a router whose next
/// hop carries 1500 bytes answers each with an ICMP "fragmentation needed", and no ACK comes.
fn icmp_fragmentation_needed() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    let t = writes(&mut tl, &mut c, T0_NS, 10);
    for i in 0..3u64 {
        let big = c.write(4096).remove(0);
        let frame = c.request_frame(&big);
        tl.push(t + i * 20 * US + 10 * US, icmp_frag_needed(host(1), &frame));
        tl.push(t + i * 20 * US, frame);
    }
    bystander(&mut tl, T0_NS, 150);
    tl.into_frames()
}

/// `messages` WRITEs of 4096 bytes from `t` on `c` (cut at its MTU), each ACKed 8 us after it
/// started; returns the time after the last.
fn big_writes(tl: &mut Timeline, c: &mut Conn, mut t: u64, messages: u32) -> u64 {
    for _ in 0..messages {
        let packets = c.write(4096);
        let last = packets.last().map_or(0, |p| p.bth.psn);
        for (i, p) in packets.iter().enumerate() {
            tl.push(t + i as u64 * US, c.request_frame(p));
        }
        tl.push(t + 8 * US, c.response_frame(&c.ack(last)));
        t += 20 * US;
    }
    t
}

/// .1 writes 5 messages of 4096 bytes to .2 with a path MTU of 512: 8 packets each, below
/// what even a 1500-byte Ethernet carries.
fn small_path_mtu() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    c.mtu = 512;
    big_writes(&mut tl, &mut c, T0_NS, 5);
    tl.into_frames()
}

/// The same with a path MTU of 1024, the largest a standard 1500-byte Ethernet allows and
/// the most common setting: healthy, no finding.
fn path_mtu_1024() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    c.mtu = 1024;
    big_writes(&mut tl, &mut c, T0_NS, 5);
    tl.into_frames()
}

/// Two QPs from .1 to .2: one runs at 4096, the other at 1024 (5 messages of 4 packets): the
/// path evidently carries 4096, so the second's 1024 is a finding.
fn path_mtu_below_another_qps() -> Frames {
    let mut tl = Timeline::default();
    let mut big = conn(host(1), host(2), 0x400, 0x100);
    let mut small = conn(host(1), host(2), 0x401, 0x101);
    small.mtu = 1024;
    big_writes(&mut tl, &mut big, T0_NS, 5);
    big_writes(&mut tl, &mut small, T0_NS + 10 * US, 5);
    tl.into_frames()
}

/// RDMA-CM sets up .1 > .2 offering a path MTU of 4096; the QPs then run at 1024.
fn path_mtu_below_cm_offer() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    c.mtu = 1024;
    tl.push(
        T0_NS,
        mad_frame(host(1), host(2), 1, cm_req(0x1001, 0x400, 1000)),
    );
    tl.push(
        T0_NS + 20 * US,
        mad_frame(host(2), host(1), 1, cm_rep(0x2001, 0x1001, 0x100, 7000)),
    );
    big_writes(&mut tl, &mut c, T0_NS + 40 * US, 5);
    tl.into_frames()
}

/// RDMA-CM sets up .1 > .2 with a path MTU of 1024; the requester then writes 12288 bytes
/// in three segments of 4096 (FIRST, MIDDLE, LAST), and .2 answers a READ of 8192 bytes with
/// two responses of 4096: five packets over the negotiated MTU, though the packets themselves
/// show 4096.
fn cm_mtu_exceeded() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    tl.push(
        T0_NS,
        mad_frame(
            host(1),
            host(2),
            1,
            cm_req_with_mtu(0x1001, 0x400, 1000, 1024),
        ),
    );
    tl.push(
        T0_NS + 20 * US,
        mad_frame(host(2), host(1), 1, cm_rep(0x2001, 0x1001, 0x100, 7000)),
    );
    let mut t = T0_NS + 40 * US;
    let packets = c.write(12288);
    for (i, p) in packets.iter().enumerate() {
        tl.push(t + i as u64 * US, c.request_frame(p));
    }
    tl.push(t + 8 * US, c.response_frame(&c.ack(packets[2].bth.psn)));
    t += 20 * US;
    let (req, resps) = c.read(8192);
    tl.push(t, c.request_frame(&req));
    for (i, r) in resps.iter().enumerate() {
        tl.push(t + (5 + i as u64) * US, c.response_frame(r));
    }
    tl.into_frames()
}

/// Read with `--link-speed 100`: one WRITE of 1024 bytes every 100 us for 12 ms (about
/// 0.09 Gb/s), each ACKed, no CE, pause, NAK or loss.
fn host_limited() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    for i in 0..120u64 {
        writes(&mut tl, &mut c, T0_NS + i * 100 * US, 1);
    }
    tl.into_frames()
}

/// A WRITE of 8192 bytes (PSNs 1000-1001) shows path MTU 4096; a READ of 16384 bytes then
/// takes PSNs 1002-1005 for its four responses, but the requester sends its next WRITE with
/// PSN 1003; then it goes on correctly from 1006.
fn read_range_violation() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    let mut t = T0_NS;
    let two = c.write(8192);
    for (i, p) in two.iter().enumerate() {
        tl.push(t + i as u64 * US, c.request_frame(p));
    }
    tl.push(t + 5 * US, c.response_frame(&c.ack(two[1].bth.psn)));
    t += 20 * US;
    let (req, resps) = c.read(16384);
    tl.push(t, c.request_frame(&req));
    for (i, r) in resps.iter().enumerate() {
        tl.push(t + (5 + i as u64) * US, c.response_frame(r));
    }
    let wrong = RoceSpec::new(0x0a, c.resp_qpn, req.bth.psn + 1)
        .payload(256)
        .reth(0x7f00_0000_0000, 0x1234, 256);
    tl.push(t + 2 * US, c.request_frame(&wrong));
    writes(&mut tl, &mut c, t + 20 * US, 5);
    tl.into_frames()
}

/// 40 in-order WRITEs of .1 to .2, all ACKed, with one damaged frame among them after the
/// 20th: PSN 114 ahead of the flow, made unusable by `damage`. A NIC drops such a frame, so
/// the flow's PSNs must read as they are: no gap, no reordering.
fn damaged_among_writes(damage: impl Fn(&mut RoceSpec, &mut Vec<u8>)) -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    let t = writes(&mut tl, &mut c, T0_NS, 20);
    let mut stray = RoceSpec::new(0x0a, c.resp_qpn, c.psn + 114)
        .payload(1024)
        .reth(0x7f00_0000_0000, 0x1234, 1024)
        .ackreq();
    let mut frame = Vec::new();
    damage(&mut stray, &mut frame);
    if frame.is_empty() {
        frame = c.request_frame(&stray);
    }
    tl.push(t - 10 * US, frame);
    writes(&mut tl, &mut c, t, 20);
    tl.into_frames()
}

/// What becomes of message `i` of `writes_as`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fate {
    Plain,
    /// The capture misses the data frame (the responder got it and ACKs it).
    DataUnseen,
    /// The capture misses the ACK.
    AckUnseen,
    /// Lost on the path: the next message reveals the gap, the responder NAKs it (captured
    /// or not) and the requester goes back to it 10 us later, resending both.
    Lost {
        nak_seen: bool,
    },
    /// Lost on the path, and the responder answers nothing from then on.
    LostUnanswered,
    /// The capture point damaged its copy (bad ICRC); the responder got it and ACKs it.
    CopyDamaged,
    /// Damaged on the path (bad ICRC): the responder drops it, NAKs it, and gets it resent.
    Damaged,
}

/// `messages` WRITEs of 1024 bytes from `t`, 20 us apart, each ACKed 5 us later unless
/// `fate` says otherwise; returns the time after the last.
fn writes_as(
    tl: &mut Timeline,
    c: &mut Conn,
    mut t: u64,
    messages: u32,
    fate: impl Fn(u32) -> Fate,
) -> u64 {
    let mut answering = true;
    let mut i = 0;
    while i < messages {
        let p = c.write(1024).remove(0);
        match fate(i) {
            Fate::Lost { nak_seen } if i + 1 < messages => {
                let next = c.write(1024).remove(0);
                tl.push(t + 20 * US, c.request_frame(&next));
                if nak_seen {
                    tl.push(t + 25 * US, c.response_frame(&c.nak(p.bth.psn, 0)));
                }
                tl.push(t + 30 * US, c.request_frame(&p));
                tl.push(t + 31 * US, c.request_frame(&next));
                tl.push(t + 36 * US, c.response_frame(&c.ack(next.bth.psn)));
                t += 40 * US;
                i += 2;
                continue;
            }
            Fate::LostUnanswered => answering = false,
            Fate::DataUnseen => {}
            Fate::CopyDamaged | Fate::Damaged => {
                let mut bad = p;
                bad.corrupt_icrc = true;
                tl.push(t, c.request_frame(&bad));
            }
            _ => tl.push(t, c.request_frame(&p)),
        }
        match fate(i) {
            Fate::Damaged => {
                tl.push(t + 5 * US, c.response_frame(&c.nak(p.bth.psn, 0)));
                tl.push(t + 10 * US, c.request_frame(&p));
                tl.push(t + 15 * US, c.response_frame(&c.ack(p.bth.psn)));
            }
            Fate::AckUnseen => {}
            _ if answering => tl.push(t + 5 * US, c.response_frame(&c.ack(p.bth.psn))),
            _ => {}
        }
        t += 20 * US;
        i += 1;
    }
    t
}

/// A capture that missed frames beside a network that lost some, one responder each (no
/// incast). .1 > .2: 20 WRITEs, the capture missing the data frames of messages 5, 6, 12 and
/// 15 (the ACKs of 5 and 6 too): 4 PSNs the ACKs show delivered. .3 > .4: three READs of
/// 4096 bytes at MTU 1024, the capture missing the third response of the second READ (no
/// re-issue follows). .5 > .6: message 8 lost, NAKed and resent with message 9. .7 > .8: the
/// same, the capture missing the NAK. .9 > .10: message 10 lost, and the responder answers
/// nothing after it (messages 11 and 12 wait for their ACK while the others run on).
fn capture_missed() -> Frames {
    let mut tl = Timeline::default();
    let mut a = conn(host(1), host(2), 0x400, 0x100);
    writes_as(&mut tl, &mut a, T0_NS, 20, |i| match i {
        5 | 6 | 12 | 15 => Fate::DataUnseen,
        4 => Fate::AckUnseen,
        _ => Fate::Plain,
    });
    let mut b = conn(host(3), host(4), 0x401, 0x101);
    b.mtu = 1024;
    for k in 0..3u64 {
        let t = T0_NS + 3 * US + k * 40 * US;
        let (req, resps) = b.read(4096);
        tl.push(t, b.request_frame(&req));
        for (i, r) in resps.iter().enumerate() {
            if !(k == 1 && i == 2) {
                tl.push(t + (5 + i as u64) * US, b.response_frame(r));
            }
        }
    }
    let mut c = conn(host(5), host(6), 0x402, 0x102);
    writes_as(&mut tl, &mut c, T0_NS + 7 * US, 20, |i| match i {
        8 => Fate::Lost { nak_seen: true },
        _ => Fate::Plain,
    });
    let mut d = conn(host(7), host(8), 0x403, 0x103);
    writes_as(&mut tl, &mut d, T0_NS + 9 * US, 20, |i| match i {
        8 => Fate::Lost { nak_seen: false },
        _ => Fate::Plain,
    });
    let mut e = conn(host(9), host(10), 0x404, 0x104);
    writes_as(&mut tl, &mut e, T0_NS + 11 * US, 13, |i| match i {
        10 => Fate::LostUnanswered,
        _ => Fate::Plain,
    });
    tl.into_frames()
}

/// Two QPs from .1 to .2 whose PSNs run side by side (both from 1000, 1 us apart, both in
/// flight before the first ACK): whose ACK is whose cannot be told from the PSNs, so the ACKs
/// prove nothing. The capture misses the data frame of message 5 of the second, which its
/// ACK covers: a gap that stays loss.
fn ambiguous_pairing() -> Frames {
    let mut tl = Timeline::default();
    let mut a = conn(host(1), host(2), 0x400, 0x100);
    let mut b = conn(host(1), host(2), 0x401, 0x101);
    writes(&mut tl, &mut a, T0_NS, 20);
    writes_as(&mut tl, &mut b, T0_NS + US, 20, |i| match i {
        5 => Fate::DataUnseen,
        _ => Fate::Plain,
    });
    tl.into_frames()
}

/// A one-way mirror: only .1 > .2's requests, 20 WRITEs with message 5 missing. Nothing can
/// tell the capture's miss from the network's loss.
fn one_way_loss() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    for i in 0..20u64 {
        let p = c.write(1024).remove(0);
        if i != 5 {
            tl.push(T0_NS + i * 20 * US, c.request_frame(&p));
        }
    }
    tl.into_frames()
}

/// .1 > .2: 20 WRITEs, each ACKed, the capture point's copies of messages 5, 8, 11, 14 and 17
/// damaged (bad ICRC): 5 PSNs damaged in their place, no gap. .3 > .4: message 6 damaged on
/// the path: its responder NAKs it and gets it resent.
fn bad_icrc_in_sequence() -> Frames {
    let mut tl = Timeline::default();
    let mut a = conn(host(1), host(2), 0x400, 0x100);
    writes_as(&mut tl, &mut a, T0_NS, 20, |i| match i {
        5 | 8 | 11 | 14 | 17 => Fate::CopyDamaged,
        _ => Fate::Plain,
    });
    let mut b = conn(host(3), host(4), 0x401, 0x101);
    writes_as(&mut tl, &mut b, T0_NS + 7 * US, 20, |i| match i {
        6 => Fate::Damaged,
        _ => Fate::Plain,
    });
    tl.into_frames()
}

/// The damaged frame has a bad ICRC.
fn damaged_bad_icrc() -> Frames {
    damaged_among_writes(|spec, _| spec.corrupt_icrc = true)
}

/// The damaged frame's UDP length claims 16 bytes more than its (complete) IP payload.
fn damaged_udp_length() -> Frames {
    let c = conn(host(1), host(2), 0x400, 0x100);
    damaged_among_writes(|spec, frame| {
        *frame = c.request_frame(spec);
        // Ethernet 14, VLAN 4, IPv4 20: the UDP length is at 42..44.
        let udp_len = u16::from_be_bytes([frame[42], frame[43]]) + 16;
        frame[42..44].copy_from_slice(&udp_len.to_be_bytes());
    })
}

/// .1 writes 10 messages to .2, each ACKed 5 us later; then 30 WRITEs with AckReq, 2 us apart,
/// get nothing, and the capture ends with the last of them (the oldest 58 us before the end).
/// The flow's own ACK delay allows 50 us (10 x its p99 RTT): the 4 sent before that count.
fn acks_stop_before_the_end() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    let mut t = writes(&mut tl, &mut c, T0_NS, 10);
    for _ in 0..30 {
        let p = c.write(1024).remove(0);
        tl.push(t, c.request_frame(&p));
        t += 2 * US;
    }
    tl.into_frames()
}

/// .1 sends the same REQ (one communication ID) four times, 1 ms apart; nothing answers, and
/// the capture ends 3 ms after the last try. The sender itself repeated it: unanswered,
/// however short the capture after it.
fn cm_retried_at_the_end() -> Frames {
    let mut tl = Timeline::default();
    for attempt in 0..4u32 {
        let at = T0_NS + u64::from(attempt) * 1_000 * US;
        tl.push(
            at,
            mad_frame(host(1), host(2), 1 + attempt, cm_req(0x1001, 0x400, 1000)),
        );
    }
    let mut c = conn(host(3), host(4), 0x410, 0x110);
    for i in 0..4u64 {
        writes(&mut tl, &mut c, T0_NS + 3_000 * US + i * 1_000 * US, 1);
    }
    tl.into_frames()
}

/// One REQ 3 ms before the capture ends, sent once: its reply may still be on the way, so
/// no finding.
fn cm_answered_at_the_end() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(3), host(4), 0x410, 0x110);
    writes(&mut tl, &mut c, T0_NS, 5);
    tl.push(
        T0_NS + 200 * US,
        mad_frame(host(1), host(2), 1, cm_req(0x1001, 0x400, 1000)),
    );
    for i in 0..3u64 {
        writes(&mut tl, &mut c, T0_NS + 1_200 * US + i * 1_000 * US, 1);
    }
    tl.into_frames()
}

/// .1 asks .2 for a connection 0.9 s into a 2-second capture; .2's application accepts it
/// 200 ms later (a REP well within the 4.3 s its REQ said it would wait). Evaluated while the
/// capture runs, at 1 s, the request is 100 ms old: pending, not unanswered. No finding.
fn cm_slow_accept() -> Frames {
    let mut tl = rdma_cm_request_at_900ms(41);
    tl.push(
        T0_NS + 1_100_000 * US,
        mad_frame(host(2), host(1), 1, cm_rep(0x2001, 0x1001, 0x100, 5000)),
    );
    let mut a = conn(host(1), host(2), 0x400, 0x100);
    writes(&mut tl, &mut a, T0_NS + 1_100_100 * US, 3);
    tl.into_frames()
}

/// .1 asks .2 for a connection as rdma_cm does (it waits 4.3 s for the answer) 300 ms before
/// the capture ends, and nothing answers by then: the capture cannot tell whether the answer
/// came later. Told as information, not as a request the passive side left unanswered.
fn cm_pending_at_the_end() -> Frames {
    rdma_cm_request_at_900ms(25).into_frames()
}

/// .1's rdma_cm REQ to .2 0.9 s into a capture that a bystander keeps going with a WRITE
/// every 50 ms, `ticks` of them.
fn rdma_cm_request_at_900ms(ticks: u64) -> Timeline {
    let mut tl = Timeline::default();
    let mut c = conn(host(3), host(4), 0x410, 0x110);
    for i in 0..ticks {
        writes(&mut tl, &mut c, T0_NS + i * 50_000 * US, 1);
    }
    tl.push(
        T0_NS + 900_000 * US,
        mad_frame(host(1), host(2), 1, cm_req_rdma_cm(0x1001, 0x400, 1000)),
    );
    tl
}

/// .1 and .4 write to .2 on VLAN 100; .3 reaches .2 on VLAN 200 (its QP uses the GID of
/// another VLAN's interface), and .2 answers on both. No sender uses two VLANs: the receiver
/// does, and .3 is the peer on the minority VLAN.
fn vlan_mismatch_at_receiver() -> Frames {
    let mut tl = Timeline::default();
    let mut a = conn(host(1), host(2), 0x400, 0x100);
    let mut b = conn(host(4), host(2), 0x401, 0x101);
    let mut c = Conn::rc(host(3), host(2), Some((200, 3)), TOS, 0x402, 0x102, 1000);
    c.mtu = 4096;
    writes(&mut tl, &mut a, T0_NS, 5);
    writes(&mut tl, &mut b, T0_NS + 7 * US, 5);
    writes(&mut tl, &mut c, T0_NS + 13 * US, 5);
    tl.into_frames()
}

/// Two mirror sessions (ERSPAN II sessions 1 and 2) of two routed links: .1 writes to .2 on
/// VLAN 100 on the first, and on VLAN 200 on the second, where the fabric numbers its VLANs
/// otherwise. Traffic of different links is never compared: no finding.
fn vlans_of_two_links() -> Frames {
    use super::encap::{erspan2, Outer};
    let outer = Outer {
        vlan: None,
        v6: false,
    };
    let mut link_a = Timeline::default();
    let mut link_b = Timeline::default();
    let mut a = conn(host(1), host(2), 0x400, 0x100);
    let mut b = Conn::rc(host(1), host(2), Some((200, 3)), TOS, 0x400, 0x100, 1000);
    b.mtu = 4096;
    writes(&mut link_a, &mut a, T0_NS, 5);
    writes(&mut link_b, &mut b, T0_NS + 1_000 * US, 5);
    let mut tl = Timeline::default();
    for (session, frames) in [(1u16, link_a.into_frames()), (2, link_b.into_frames())] {
        for (seq, (ts, f)) in (1u32..).zip(frames) {
            tl.push(ts, erspan2(outer, seq, session, 0, false, &f));
        }
    }
    tl.into_frames()
}

/// Milliseconds in ns.
const MS: u64 = 1_000_000;

/// .1 writes to .2 every 100 ms for 3 s, each ACKed; at 0.5 s one WRITE is lost: the next
/// arrives, .2 NAKs the lost PSN and .1 resends both. The loss first holds in the capture's
/// first second: `--events` tells it then, long before the end.
fn loss_early_in_a_long_capture() -> Frames {
    let mut tl = Timeline::default();
    let mut c = conn(host(1), host(2), 0x400, 0x100);
    let mut t = T0_NS;
    for i in 0..30u64 {
        if i == 5 {
            let lost = c.write(1024).remove(0);
            let next = c.write(1024).remove(0);
            tl.push(t + 2 * US, c.request_frame(&next));
            tl.push(t + 7 * US, c.response_frame(&c.nak(lost.bth.psn, 0)));
            tl.push(t + 12 * US, c.request_frame(&lost));
            tl.push(t + 14 * US, c.request_frame(&next));
            tl.push(t + 19 * US, c.response_frame(&c.ack(next.bth.psn)));
        } else {
            let p = c.write(1024).remove(0);
            tl.push(t, c.request_frame(&p));
            tl.push(t + 5 * US, c.response_frame(&c.ack(p.bth.psn)));
        }
        t += 100 * MS;
    }
    tl.into_frames()
}

/// .1, .3, .4 and .5 write 10 messages each to .2 at once, none CE-marked: an incast of four,
/// information only. 1.5 s later .1 writes 10 more, two of them CE-marked (each answered by a
/// CNP): the receiver now shows congestion, and the incast is a warning. Evaluated every
/// second as the capture runs, the incast is told as information first, then its rise.
fn incast_turns_troubled() -> Frames {
    let mut tl = Timeline::default();
    let mut conns: Vec<Conn> = [1, 3, 4, 5]
        .into_iter()
        .zip(0u32..)
        .map(|(h, k)| conn(host(h), host(2), 0x400 + k, 0x100 + k))
        .collect();
    for (c, k) in conns.iter_mut().zip(0u64..) {
        writes(&mut tl, c, T0_NS + k * 3 * US, 10);
    }
    let marked = |i| match i {
        3 | 7 => Send::CeMarked,
        _ => Send::Plain,
    };
    writes_with(&mut tl, &mut conns[0], T0_NS + 1_500 * MS, 10, marked);
    tl.into_frames()
}
