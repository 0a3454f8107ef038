//! One hop: the packets of two neighbouring points paired as the two captures stream by, the
//! clocks' offset, and what the hop did to the packets.
//!
//! Clocks: the minimum delay of packets seen exactly once at both points is the hop's
//! propagation plus the clocks' offset one way, and propagation minus the offset the other way;
//! half their difference is the offset (NTP's estimate, exact when both directions take the
//! same minimum time). Queueing (delay beyond the minimum) needs no offset.
//!
//! Streaming: every sighting becomes an event at a time on the first point's clock: a packet
//! leaving (`from`) at its own time, a packet arriving (`to`) at the latest time its upstream
//! copy can have left (its time minus the minimum delay, plus a little slack). Events are
//! handled in that order, so when an arrival is handled, every upstream copy that can explain
//! it is already waiting. Copies that wait longer than `MATCH_WINDOW_NS` were lost.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::mpsc::Receiver;

use roce_parsers::{DecodeOptions, Psn};
use rustc_hash::FxHashMap;

use super::reader::{self, Message};
use super::{PointFiles, Sighting};
use crate::analysis::latency::Samples;
use crate::common::error::Error;
use crate::model::{DelayStats, FlowHop, HopReport, QueueingStats};
use crate::pipeline::diagnostics::Diagnostics;

/// Two captures' timestamps may disagree by this much beyond the minimum delay (timestamping
/// jitter, a minimum estimated from a sample) and still explain each other.
const SLACK_NS: i64 = 5_000;
/// A packet waits this long (beyond the hop's minimum delay) for its copy downstream before
/// it counts as lost: the most queueing a hop can add.
pub const MATCH_WINDOW_NS: i64 = 50_000_000;
/// Lost packets listed by frame number, per hop and per flow.
const LOST_FRAMES_LISTED: usize = 1_000;
/// Delay samples kept per flow for its median.
const FLOW_SAMPLES: usize = 256;

/// Every flow of the correlation, numbered.
#[derive(Default)]
pub struct Flows {
    index: HashMap<(IpAddr, IpAddr, u32), u32>,
    pub keys: Vec<(IpAddr, IpAddr, u32)>,
}

impl Flows {
    fn id(&mut self, key: (IpAddr, IpAddr, u32)) -> u32 {
        *self.index.entry(key).or_insert_with(|| {
            self.keys.push(key);
            (self.keys.len() - 1) as u32
        })
    }
}

/// The two clocks of a hop: each direction's minimum raw delay (later timestamp minus
/// earlier, clocks as they are) and the offset of the later point's clock.
#[derive(Debug, Clone, Copy)]
pub struct Clocks {
    min_fwd: i64,
    min_rev: i64,
    offset: i64,
    method: &'static str,
}

impl Clocks {
    /// From packets seen exactly once in both samples.
    pub fn estimate(a: &[Sighting], b: &[Sighting]) -> Clocks {
        let mut groups: FxHashMap<u64, (Vec<&Sighting>, Vec<&Sighting>)> = FxHashMap::default();
        for s in a {
            groups.entry(s.group).or_default().0.push(s);
        }
        for s in b {
            groups.entry(s.group).or_default().1.push(s);
        }
        let (mut fwd, mut rev): (Option<i64>, Option<i64>) = (None, None);
        for (xa, xb) in groups.values() {
            if let ([sa], [sb]) = (xa.as_slice(), xb.as_slice()) {
                if sa.forward {
                    let raw = sb.ts as i64 - sa.ts as i64;
                    fwd = Some(fwd.map_or(raw, |m| m.min(raw)));
                } else {
                    let raw = sa.ts as i64 - sb.ts as i64;
                    rev = Some(rev.map_or(raw, |m| m.min(raw)));
                }
            }
        }
        // With one direction only, its minimum delay is taken as zero.
        match (fwd, rev) {
            (Some(f), Some(r)) => Clocks {
                min_fwd: f,
                min_rev: r,
                offset: (f - r) / 2,
                method: "two_way",
            },
            (Some(f), None) => Clocks {
                min_fwd: f,
                min_rev: -f,
                offset: f,
                method: "forward_only",
            },
            (None, Some(r)) => Clocks {
                min_fwd: -r,
                min_rev: r,
                offset: -r,
                method: "reverse_only",
            },
            (None, None) => Clocks {
                min_fwd: 0,
                min_rev: 0,
                offset: 0,
                method: "none",
            },
        }
    }

    /// Nothing was seen once at both points: the sample tells nothing.
    pub fn is_unknown(&self) -> bool {
        self.method == "none"
    }

    /// When an event of this sighting is handled, on the first point's clock. `at_b`: seen at
    /// the later point. Whether it is a departure (`from`).
    fn event(&self, s: &Sighting, at_b: bool) -> (i64, bool) {
        let t = s.ts as i64;
        match (at_b, s.forward) {
            (false, true) => (t, true),
            (false, false) => (t - self.min_rev - self.offset + SLACK_NS, false),
            (true, true) => (t - self.min_fwd + SLACK_NS, false),
            (true, false) => (t - self.offset, true),
        }
    }

    /// The earliest event time a sighting of stream `at_b` at time `t` or later can have.
    fn earliest(&self, t: i64, at_b: bool) -> i64 {
        if at_b {
            (t - self.min_fwd + SLACK_NS).min(t - self.offset)
        } else {
            t.min(t - self.min_rev - self.offset + SLACK_NS)
        }
    }
}

/// What one direction (or one flow) of a hop saw.
struct Tally {
    matched: u64,
    lost: u64,
    /// Never seen at the later point, though its receiver acknowledged it: missed there.
    missed: u64,
    appeared: u64,
    ce_marked: u64,
    dscp_changed: u64,
    pcp_changed: u64,
    /// Delay beyond the estimated minimum, ns.
    queueing: Samples,
    min_raw: Option<i64>,
    max_raw: Option<i64>,
    lost_frames: Vec<u64>,
}

impl Tally {
    fn new(samples: Samples) -> Self {
        Tally {
            matched: 0,
            lost: 0,
            missed: 0,
            appeared: 0,
            ce_marked: 0,
            dscp_changed: 0,
            pcp_changed: 0,
            queueing: samples,
            min_raw: None,
            max_raw: None,
            lost_frames: Vec::new(),
        }
    }

    fn pair(&mut self, from: &Sighting, to: &Sighting, min_raw: i64) {
        let raw = to.ts as i64 - from.ts as i64;
        self.matched += 1;
        self.ce_marked += u64::from(from.ecn != 3 && to.ecn == 3);
        self.dscp_changed += u64::from(from.dscp != to.dscp);
        self.pcp_changed += u64::from(from.pcp != 8 && to.pcp != 8 && from.pcp != to.pcp);
        self.queueing.add((raw - min_raw).max(0) as u64);
        self.min_raw = Some(self.min_raw.map_or(raw, |m| m.min(raw)));
        self.max_raw = Some(self.max_raw.map_or(raw, |m| m.max(raw)));
    }

    fn lose(&mut self, from: &Sighting) {
        self.lost += 1;
        if self.lost_frames.len() < LOST_FRAMES_LISTED {
            self.lost_frames.push(from.frame);
        }
    }

    /// Delays with the offset `offset` taken out, and queueing, in us; `min_raw` is the
    /// minimum the queueing samples were measured from.
    fn delays(&self, min_raw: i64, offset: i64) -> (DelayStats, QueueingStats) {
        let (Some(lo), Some(hi)) = (self.min_raw, self.max_raw) else {
            return Default::default();
        };
        let q = self.queueing.summary();
        let us = |ns: i64| ns as f64 / 1e3;
        // Percentiles come in us from the samples: back to delays and to queueing beyond the
        // smallest delay actually seen.
        let delay = |p: Option<f64>| p.map(|v| v + us(min_raw - offset));
        let queue = |p: Option<f64>| p.map(|v| v + us(min_raw - lo));
        (
            DelayStats {
                min: Some(us(lo - offset)),
                p50: delay(q.p50),
                p99: delay(q.p99),
                max: Some(us(hi - offset)),
            },
            QueueingStats {
                p50: queue(q.p50),
                p99: queue(q.p99),
                max: Some(us(hi - lo)),
            },
        )
    }
}

/// The requests one host sends another, as far as their acknowledgements go: an ACK names its
/// QP pair only by the hosts, so it proves delivery only where one flow runs between them.
#[derive(Clone, Copy)]
struct Sent {
    flow: u32,
    /// Another flow runs between the same hosts: the ACKs cannot be told apart.
    several: bool,
    highest: Psn,
    /// The highest PSN an acknowledgement has covered, never beyond `highest`.
    acked: Option<Psn>,
}

/// A departure waiting for its arrival downstream.
#[derive(Clone, Copy)]
struct Waiting {
    seq: u64,
    sighting: Sighting,
}

/// One stream of sightings: a point's reader, and what was taken from it.
struct Stream {
    rx: Receiver<Message>,
    at_b: bool,
    batch: VecDeque<Sighting>,
    /// The correlation's number (`Flows`) of each flow number of the reader.
    flows: Vec<u32>,
    ended: bool,
    /// RoCE packets read.
    packets: u64,
    /// Where the point's damage is told: None when another hop tells it.
    diagnostics: Option<Diagnostics>,
}

impl Stream {
    /// The next sighting's time, reading a batch when needed; None at the end.
    fn peek(&mut self, flows: &mut Flows) -> Result<Option<u64>, Error> {
        while self.batch.is_empty() && !self.ended {
            match self.rx.recv() {
                Ok(Message::Batch(b)) => {
                    for key in b.new_flows {
                        self.flows.push(flows.id(key));
                    }
                    self.packets += b.sightings.len() as u64;
                    self.batch.extend(b.sightings);
                }
                Ok(Message::End(end)) => {
                    let end = (*end)?;
                    if let Some(mut d) = self.diagnostics.take() {
                        for p in end.problems {
                            d.warn_with_hint(p.kind, p.message, &p.hint);
                        }
                        d.finish();
                    }
                    self.ended = true;
                }
                Err(_) => self.ended = true,
            }
        }
        Ok(self.batch.front().map(|s| s.ts))
    }
}

pub struct Hop {
    pub forward: HopReport,
    pub reverse: HopReport,
    /// Per (flow by `Flows` index, travels forward) with packets on this hop: the forward
    /// flows, then the reverse ones, each in flow order.
    pub flows: Vec<((u32, bool), FlowHop)>,
    /// The later point's clock minus the earlier's.
    pub offset_us: f64,
    /// RoCE packets of each point.
    pub roce_packets: [u64; 2],
}

/// The matching of one hop as events come.
struct Matcher {
    clocks: Clocks,
    waiting: FxHashMap<u64, VecDeque<Waiting>>,
    /// Departures in event order, to give up on those that waited too long.
    queue: VecDeque<(i64, u64, u64)>,
    seq: u64,
    fwd: Tally,
    rev: Tally,
    /// Per (flow, travels forward): the reverse flows (ACKs, NAKs, CNPs, READ responses) too.
    per_flow: HashMap<(u32, bool), Tally>,
    /// Per pair of hosts (`Sighting::hosts`): what was sent, and acknowledged.
    sent: FxHashMap<u64, Sent>,
}

impl Matcher {
    fn new(clocks: Clocks) -> Self {
        Matcher {
            clocks,
            waiting: FxHashMap::default(),
            queue: VecDeque::new(),
            seq: 0,
            fwd: Tally::new(Samples::default()),
            rev: Tally::new(Samples::default()),
            per_flow: HashMap::new(),
            sent: FxHashMap::default(),
        }
    }

    fn handle(&mut self, time: i64, departure: bool, s: Sighting) {
        self.learn(&s);
        self.give_up_before(time - MATCH_WINDOW_NS);
        if departure {
            self.seq += 1;
            let w = Waiting {
                seq: self.seq,
                sighting: s,
            };
            self.waiting.entry(s.group).or_default().push_back(w);
            self.queue.push_back((time, s.group, self.seq));
        } else {
            self.arrive(s);
        }
    }

    /// An arrival: paired with the latest waiting copy that left early enough to explain it
    /// (by the minimum delay), or failing that the first within the slack; the copies waiting
    /// before it were lost.
    fn arrive(&mut self, to: Sighting) {
        let Matcher {
            clocks,
            waiting,
            fwd,
            rev,
            per_flow,
            ..
        } = self;
        let min_raw = if to.forward {
            clocks.min_fwd
        } else {
            clocks.min_rev
        };
        let (tally, flow_tally) = tallies(fwd, rev, per_flow, to.forward, to.flow);
        let t = to.ts as i64;
        let chosen = waiting.get(&to.group).and_then(|copies| {
            let fits = |limit: i64| {
                copies
                    .iter()
                    .take_while(|w| (w.sighting.ts as i64) <= limit)
                    .count()
                    .checked_sub(1)
            };
            fits(t - min_raw).or_else(|| fits(t - min_raw + SLACK_NS).map(|_| 0))
        });
        let Some(chosen) = chosen else {
            tally.appeared += 1;
            flow_tally.appeared += 1;
            return;
        };
        let copies = waiting.get_mut(&to.group).expect("chosen from them");
        for w in copies.drain(..chosen) {
            tally.lose(&w.sighting);
            flow_tally.lose(&w.sighting);
        }
        let from = copies.pop_front().expect("chosen").sighting;
        if copies.is_empty() {
            waiting.remove(&to.group);
        }
        tally.pair(&from, &to, min_raw);
        flow_tally.pair(&from, &to, min_raw);
    }

    /// What a sighting at either point tells of the requests between its hosts: sent up to
    /// its PSN, or acknowledged up to `acked` (never past what was sent).
    fn learn(&mut self, s: &Sighting) {
        let psn = Psn::new(s.psn);
        if s.forward {
            let e = self.sent.entry(s.hosts).or_insert(Sent {
                flow: s.flow,
                several: false,
                highest: psn,
                acked: None,
            });
            e.several |= e.flow != s.flow;
            if psn > e.highest {
                e.highest = psn;
            }
        } else if let (Some(acked), Some(e)) = (s.acked, self.sent.get_mut(&s.hosts)) {
            let acked = Psn::new(acked);
            if acked <= e.highest && e.acked.is_none_or(|a| acked > a) {
                e.acked = Some(acked);
            }
        }
    }

    /// Whether the receiver acknowledged request `s` (one flow between its hosts): it got
    /// it, whatever a capture point saw.
    fn delivered(&self, s: &Sighting) -> bool {
        s.forward
            && self
                .sent
                .get(&s.hosts)
                .is_some_and(|e| !e.several && e.acked.is_some_and(|a| Psn::new(s.psn) <= a))
    }

    /// Departures handled before `time` that are still waiting were lost, unless their
    /// receiver acknowledged them and no copy of them left after (no resend): then the later
    /// point's capture missed them.
    fn give_up_before(&mut self, time: i64) {
        while let Some(&(t, group, seq)) = self.queue.front() {
            if t >= time {
                break;
            }
            self.queue.pop_front();
            let Some(copies) = self.waiting.get_mut(&group) else {
                continue;
            };
            if copies.front().is_some_and(|w| w.seq == seq) {
                let w = copies.pop_front().expect("front");
                let resent = !copies.is_empty();
                if !resent {
                    self.waiting.remove(&group);
                }
                let missed = !resent && self.delivered(&w.sighting);
                let (tally, flow_tally) = tallies(
                    &mut self.fwd,
                    &mut self.rev,
                    &mut self.per_flow,
                    w.sighting.forward,
                    w.sighting.flow,
                );
                if missed {
                    tally.missed += 1;
                    flow_tally.missed += 1;
                } else {
                    tally.lose(&w.sighting);
                    flow_tally.lose(&w.sighting);
                }
            }
        }
    }
}

/// The tallies a packet counts in: its direction's, and its flow's.
fn tallies<'a>(
    fwd: &'a mut Tally,
    rev: &'a mut Tally,
    per_flow: &'a mut HashMap<(u32, bool), Tally>,
    forward: bool,
    flow: u32,
) -> (&'a mut Tally, &'a mut Tally) {
    let f = per_flow
        .entry((flow, forward))
        .or_insert_with(|| Tally::new(Samples::with_reservoir(FLOW_SAMPLES)));
    (if forward { fwd } else { rev }, f)
}

/// Streams points `a` and `b` side by side and pairs their packets.
pub fn stream_hop(
    a: &PointFiles,
    b: &PointFiles,
    clocks: Clocks,
    options: DecodeOptions,
    flows: &mut Flows,
    warn: [Option<u32>; 2],
) -> Result<Hop, Error> {
    let diagnostics = |p: &PointFiles, w: Option<u32>| w.map(|max| Diagnostics::new(&p.name, max));
    let mut streams = [
        stream(reader::spawn(a, options), false, diagnostics(a, warn[0])),
        stream(reader::spawn(b, options), true, diagnostics(b, warn[1])),
    ];
    let mut matcher = Matcher::new(clocks);
    let mut events: BinaryHeap<Reverse<Event>> = BinaryHeap::new();
    let mut n = 0u64;
    loop {
        let mut next = [None, None];
        for (i, s) in streams.iter_mut().enumerate() {
            next[i] = s
                .peek(flows)?
                .map(|t| (clocks.earliest(t as i64, s.at_b), i));
        }
        let earliest = next.iter().flatten().min().copied();
        // Every event not later than what the streams can still bring is final.
        let horizon = earliest.map_or(i64::MAX, |(t, _)| t);
        while events.peek().is_some_and(|Reverse(e)| e.time <= horizon) {
            let Reverse(e) = events.pop().expect("peeked");
            matcher.handle(e.time, e.departure, e.sighting);
        }
        let Some((_, i)) = earliest else { break };
        let st = &mut streams[i];
        let mut s = st.batch.pop_front().expect("peeked");
        s.flow = st.flows[s.flow as usize];
        let (time, departure) = clocks.event(&s, st.at_b);
        n += 1;
        events.push(Reverse(Event {
            time,
            stream: i as u8,
            seq: n,
            departure,
            sighting: s,
        }));
    }
    matcher.give_up_before(i64::MAX);
    Ok(finish(a, b, matcher, streams.map(|s| s.packets)))
}

fn stream(rx: Receiver<Message>, at_b: bool, diagnostics: Option<Diagnostics>) -> Stream {
    Stream {
        rx,
        at_b,
        batch: VecDeque::new(),
        flows: Vec::new(),
        ended: false,
        packets: 0,
        diagnostics,
    }
}

/// A sighting to handle at `time` (first point's clock); ordered by time, then stream and
/// reading order, so that every run handles them alike.
struct Event {
    time: i64,
    stream: u8,
    seq: u64,
    departure: bool,
    sighting: Sighting,
}

impl Event {
    fn order(&self) -> (i64, u8, u64) {
        (self.time, self.stream, self.seq)
    }
}

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        self.order() == other.order()
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Event {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.order().cmp(&other.order())
    }
}

fn hop_report(
    from: &str,
    to: &str,
    t: &mut Tally,
    min_raw: i64,
    offset: i64,
    method: &'static str,
) -> HopReport {
    let (delay_us, queueing_us) = t.delays(min_raw, offset);
    t.lost_frames.sort_unstable();
    HopReport {
        from: from.to_string(),
        to: to.to_string(),
        matched: t.matched,
        lost: t.lost,
        missed: t.missed,
        appeared: t.appeared,
        ce_marked: t.ce_marked,
        dscp_changed: t.dscp_changed,
        pcp_changed: t.pcp_changed,
        delay_us,
        queueing_us,
        lost_frames: std::mem::take(&mut t.lost_frames),
        clock_method: method,
    }
}

fn finish(a: &PointFiles, b: &PointFiles, mut m: Matcher, roce_packets: [u64; 2]) -> Hop {
    let c = m.clocks;
    let forward = hop_report(&a.name, &b.name, &mut m.fwd, c.min_fwd, c.offset, c.method);
    let reverse = hop_report(&b.name, &a.name, &mut m.rev, c.min_rev, -c.offset, c.method);
    let mut flows: Vec<((u32, bool), FlowHop)> = m
        .per_flow
        .into_iter()
        .map(|((id, forward), mut t)| {
            // A reverse flow crosses the hop from the later point to the earlier one.
            let ((from, to), (min_raw, offset)) = if forward {
                ((a, b), (c.min_fwd, c.offset))
            } else {
                ((b, a), (c.min_rev, -c.offset))
            };
            let (delay, _) = t.delays(min_raw, offset);
            t.lost_frames.sort_unstable();
            let hop = FlowHop {
                from: from.name.clone(),
                to: to.name.clone(),
                matched: t.matched,
                lost: t.lost,
                missed: t.missed,
                ce_marked: t.ce_marked,
                dscp_changed: t.dscp_changed,
                pcp_changed: t.pcp_changed,
                delay_p50_us: delay.p50,
                lost_frames: t.lost_frames,
            };
            ((id, forward), hop)
        })
        .collect();
    // Forward flows first, then the reverse ones, each by flow.
    flows.sort_by_key(|&((id, forward), _)| (!forward, id));
    Hop {
        forward,
        reverse,
        flows,
        offset_us: c.offset as f64 / 1e3,
        roce_packets,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sighting(group: u64, ts: u64, forward: bool) -> Sighting {
        Sighting {
            group,
            ts,
            frame: ts,
            flow: 0,
            dscp: 26,
            ecn: 2,
            pcp: 3,
            forward,
            psn: group as u32,
            acked: None,
            hosts: 1,
        }
    }

    fn clocks(min: i64) -> Clocks {
        Clocks {
            min_fwd: min,
            min_rev: min,
            offset: 0,
            method: "two_way",
        }
    }

    #[test]
    fn a_lost_original_is_not_paired_with_its_resend() {
        // Upstream the original at 0 and its resend at 500 us; downstream only the resend,
        // 2 us later. The hop's minimum delay is 2 us.
        let mut m = Matcher::new(clocks(2_000));
        m.handle(0, true, sighting(7, 0, true));
        m.handle(500_000, true, sighting(7, 500_000, true));
        m.handle(505_000, false, sighting(7, 502_000, true));
        m.give_up_before(i64::MAX);
        assert_eq!((m.fwd.matched, m.fwd.lost, m.fwd.appeared), (1, 1, 0));
        assert_eq!(m.fwd.lost_frames, vec![0]);
    }

    #[test]
    fn identical_copies_pair_in_order_and_strays_appear() {
        let mut m = Matcher::new(clocks(0));
        m.handle(0, true, sighting(7, 0, true));
        m.handle(500, true, sighting(7, 500, true));
        m.handle(5_000, false, sighting(7, 0, true));
        m.handle(5_500, false, sighting(7, 500, true));
        // Downstream only, and nothing upstream can explain it.
        m.handle(9_000, false, sighting(8, 4_000, true));
        m.give_up_before(i64::MAX);
        assert_eq!((m.fwd.matched, m.fwd.lost, m.fwd.appeared), (2, 0, 1));
        assert_eq!(m.fwd.max_raw, Some(0));
    }

    /// A request never seen downstream that its receiver then acknowledged (one flow between
    /// the hosts) was missed by the downstream capture; with a resend after it, or with
    /// another flow between the same hosts, it was lost.
    #[test]
    fn an_acknowledged_request_never_seen_downstream_was_missed_not_lost() {
        let ack = |psn: u32, ts: u64| Sighting {
            acked: Some(psn),
            ..sighting(1_000 + u64::from(psn), ts, false)
        };
        let mut m = Matcher::new(clocks(0));
        m.handle(0, true, sighting(7, 0, true));
        m.handle(1_000, true, ack(7, 1_000));
        m.give_up_before(i64::MAX);
        assert_eq!((m.fwd.lost, m.fwd.missed), (0, 1));
        // An ACK past the highest PSN sent proves nothing.
        let mut beyond = Matcher::new(clocks(0));
        beyond.handle(0, true, sighting(7, 0, true));
        beyond.handle(1_000, true, ack(9, 1_000));
        beyond.give_up_before(i64::MAX);
        assert_eq!((beyond.fwd.lost, beyond.fwd.missed), (1, 0));
        // Resent: the original was lost (the resend, never seen downstream either and then
        // acknowledged, was missed there).
        let mut resent = Matcher::new(clocks(0));
        resent.handle(0, true, sighting(7, 0, true));
        resent.handle(400, true, sighting(7, 400, true));
        resent.handle(1_000, true, ack(7, 1_000));
        resent.give_up_before(200);
        assert_eq!((resent.fwd.lost, resent.fwd.missed), (1, 0));
        resent.give_up_before(i64::MAX);
        assert_eq!((resent.fwd.lost, resent.fwd.missed), (1, 1));
        // Two flows between the hosts: whose ACK it is cannot be told.
        let mut two = Matcher::new(clocks(0));
        two.handle(0, true, sighting(7, 0, true));
        two.handle(
            10,
            true,
            Sighting {
                flow: 1,
                ..sighting(8, 10, true)
            },
        );
        two.handle(1_000, true, ack(8, 1_000));
        two.give_up_before(i64::MAX);
        assert_eq!((two.fwd.lost, two.fwd.missed), (2, 0));
    }

    #[test]
    fn departures_that_wait_past_the_window_are_lost() {
        let mut m = Matcher::new(clocks(0));
        m.handle(0, true, sighting(7, 0, true));
        m.handle(MATCH_WINDOW_NS + 1, true, sighting(9, 1, true));
        assert_eq!(m.fwd.lost, 1);
        assert!(!m.waiting.contains_key(&7));
    }

    #[test]
    fn the_offset_is_half_the_difference_of_the_minimum_delays() {
        // Forward 2 us, back 2 us; the later clock 300 us ahead.
        let a = [sighting(1, 0, true), sighting(2, 10_000, false)];
        let b = [sighting(1, 302_000, true), sighting(2, 308_000, false)];
        let c = Clocks::estimate(&a, &b);
        assert_eq!((c.offset, c.method), (300_000, "two_way"));
        assert_eq!((c.min_fwd, c.min_rev), (302_000, -298_000));
        // One direction seen: said so, and the offset takes in its minimum delay.
        let c = Clocks::estimate(&a[..1], &b[..1]);
        assert_eq!((c.offset, c.method), (302_000, "forward_only"));
        let c = Clocks::estimate(&a[1..], &b[1..]);
        assert_eq!((c.offset, c.method), (298_000, "reverse_only"));
        assert_eq!(Clocks::estimate(&[], &b).method, "none");
    }
}
