//! `testdata/correlate/{leaf,spine,receiver}.pcap`: one path captured at three points, for
//! `--correlate`. The leaf mirror sees the senders' traffic first, the spine mirror next, the
//! receiver .2 last. True delays: leaf to spine 2 us, spine to receiver 3 us, the same back.
//! The spine's clock runs 300 us ahead of the leaf's, the receiver's 200 us behind.
//!
//! - .1 > .2 qp 0x100: 40 WRITEs of 1024 bytes (PSN 1000-1039), one every 20 us, each ACKed by
//!   the receiver 1 us after it arrives. PSN 1005 is lost between leaf and spine, PSN 1020
//!   between spine and receiver: the receiver NAKs it when the next one arrives and the sender
//!   resends the two (byte-identical: IP ID 0) 12 and 13 us after sending the next. PSNs
//!   1030-1033 queue 10 us more at the spine's egress and arrive CE-marked; the receiver
//!   answers each with a CNP 2 us after it arrives.
//! - .3 > .2 qp 0x101: 10 WRITEs with TOS 0x02 (DSCP 0), which the spine's egress rewrites to
//!   DSCP 26: the receiver sees TOS 0x6a.
//!
//! Expected: hop leaf > spine matched 53, lost 1, delay 2 us; hop spine > receiver matched 52,
//! lost 1, CE 4, DSCP changed 10, delay 3 us (13 us for the queued four); back: 56 matched on
//! both hops, none lost; clock offsets 0, 300, -200 us.

use super::frames::{self, Net, RoceSpec};
use super::scenario::{host, Conn};
use super::writer::{Frames, T0_NS};

const US: u64 = 1_000;
/// Each point's clock minus true time.
const OFFSETS_NS: [i64; 3] = [0, 300_000, -200_000];
/// True one-way delay from the leaf to each point (the same back).
const DEPTH_NS: [u64; 3] = [0, 2_000, 5_000];

/// A frame on its way: emitted at one end at true time `t`, as each point sees it.
struct Transit {
    t: u64,
    /// Travels from the leaf towards the receiver.
    forward: bool,
    /// The frame at each point (None: it did not get there).
    at: [Option<Vec<u8>>; 3],
    /// Extra queueing between spine and receiver.
    queued: u64,
}

impl Transit {
    fn everywhere(t: u64, forward: bool, frame: Vec<u8>) -> Self {
        Transit {
            t,
            forward,
            at: [Some(frame.clone()), Some(frame.clone()), Some(frame)],
            queued: 0,
        }
    }

    /// When point `p` sees it, by true time.
    fn arrival(&self, p: usize) -> u64 {
        if self.forward {
            self.t + DEPTH_NS[p] + if p == 2 { self.queued } else { 0 }
        } else {
            self.t + DEPTH_NS[2] - DEPTH_NS[p]
        }
    }
}

/// The three captures: (file name, frames).
pub fn points() -> Vec<(&'static str, Frames)> {
    points_with_spine_missing(&[])
}

/// The three captures, the spine's missing the requests of .1 > .2 with these PSNs (its mirror
/// dropped them; the receiver got them and ACKs them): what the spine's capture missed, not
/// what the hop lost.
pub fn points_with_spine_missing(psns: &[u32]) -> Vec<(&'static str, Frames)> {
    let mut transits = Vec::new();
    data_flow(&mut transits, psns);
    remarked_flow(&mut transits);
    ["leaf.pcap", "spine.pcap", "receiver.pcap"]
        .into_iter()
        .enumerate()
        .map(|(p, name)| {
            let mut frames: Frames = transits
                .iter()
                .filter_map(|tr| {
                    let seen = (tr.arrival(p) as i64 + OFFSETS_NS[p]) as u64;
                    tr.at[p].clone().map(|f| (seen, f))
                })
                .collect();
            frames.sort_by_key(|(t, _)| *t);
            (name, frames)
        })
        .collect()
}

/// .1 > .2 qp 0x100 as the module doc tells, the spine's capture missing `spine_misses`.
fn data_flow(out: &mut Vec<Transit>, spine_misses: &[u32]) {
    let mut c = Conn::rc(host(1), host(2), Some((100, 3)), 0x6a, 0x400, 0x100, 1000);
    c.mtu = 4096;
    let packets: Vec<RoceSpec> = (0..40).map(|_| c.write(1024).remove(0)).collect();
    for (i, p) in packets.iter().enumerate() {
        let t = T0_NS + i as u64 * 20 * US;
        let psn = p.bth.psn;
        let mut tr = Transit::everywhere(t, true, c.request_frame(p));
        if spine_misses.contains(&psn) {
            tr.at[1] = None;
        }
        let arrives = t + DEPTH_NS[2];
        match psn {
            1005 => tr.at[1..].iter_mut().for_each(|f| *f = None),
            1020 => tr.at[2] = None,
            1030..=1033 => {
                tr.queued = 10 * US;
                let marked = c.fwd_net.with_tos(0x6b);
                tr.at[2] = Some(frames::rocev2(&c.fwd_link, marked, c.sport, p));
                let seen = arrives + tr.queued;
                out.push(Transit::everywhere(
                    seen + US,
                    false,
                    c.response_frame(&c.ack(psn)),
                ));
                out.push(Transit::everywhere(seen + 2 * US, false, c.cnp_frame()));
            }
            1006 | 1021 => {
                // The one before was lost: a NAK, and the sender goes back.
                let nak = c.nak(psn - 1, 0);
                out.push(Transit::everywhere(
                    arrives + US,
                    false,
                    c.response_frame(&nak),
                ));
                for (k, resent) in [&packets[i - 1], p].into_iter().enumerate() {
                    let at = t + 12 * US + k as u64 * US;
                    out.push(Transit::everywhere(at, true, c.request_frame(resent)));
                    let ack = c.ack(resent.bth.psn);
                    out.push(Transit::everywhere(
                        at + DEPTH_NS[2] + US,
                        false,
                        c.response_frame(&ack),
                    ));
                }
            }
            _ => {}
        }
        if !matches!(psn, 1005 | 1006 | 1020 | 1021 | 1030..=1033) {
            out.push(Transit::everywhere(
                arrives + US,
                false,
                c.response_frame(&c.ack(psn)),
            ));
        }
        out.push(tr);
    }
}

/// .3 > .2 qp 0x101: DSCP 0 rewritten to 26 between spine and receiver.
fn remarked_flow(out: &mut Vec<Transit>) {
    let mut c = Conn::rc(host(3), host(2), Some((100, 3)), 0x02, 0x401, 0x101, 500);
    c.mtu = 4096;
    c.rev_net = c.rev_net.with_tos(0x6a);
    for i in 0..10u64 {
        let t = T0_NS + 7 * US + i * 20 * US;
        let p = c.write(1024).remove(0);
        let mut tr = Transit::everywhere(t, true, c.request_frame(&p));
        let rewritten: Net = c.fwd_net.with_tos(0x6a);
        tr.at[2] = Some(frames::rocev2(&c.fwd_link, rewritten, c.sport, &p));
        out.push(tr);
        let ack = c.ack(p.bth.psn);
        out.push(Transit::everywhere(
            t + DEPTH_NS[2] + US,
            false,
            c.response_frame(&ack),
        ));
    }
}
