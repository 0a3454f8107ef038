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
    ]
}

/// An RC connection from `a` to `b` as the module doc describes it.
fn conn(a: Host, b: Host, req_qpn: u32, resp_qpn: u32) -> Conn {
    let mut c = Conn::rc(a, b, VLAN, TOS, req_qpn, resp_qpn, 1000);
    c.mtu = 4096;
    c
}

/// `messages` WRITEs of 1024 bytes from `t`, each ACKed; returns the time after the last.
fn writes(tl: &mut Timeline, c: &mut Conn, mut t: u64, messages: u32) -> u64 {
    for _ in 0..messages {
        let packets = c.write(1024);
        let last = packets.last().map_or(0, |p| p.bth.psn);
        for (i, p) in packets.iter().enumerate() {
            tl.push(t + i as u64 * US, c.request_frame(p));
        }
        tl.push(t + 5 * US, c.response_frame(&c.ack(last)));
        t += 20 * US;
    }
    t
}

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
