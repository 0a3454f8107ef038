//! `--correlate`: captures taken at several points of one path, in path order from the data
//! sender, and the same RoCE packets followed across them: where each was lost, where CE was
//! set or the DSCP rewritten, how much delay and queueing each hop added.
//!
//! A packet is the same at two points when the fields that do not change in flight agree: IP
//! source and destination, UDP source port, destination QP, opcode and PSN (the ICRC and the
//! payload would too, but a mirror's snap length may cut them at one point and not the other).
//! Copies of one packet (resends, byte-identical when the NIC leaves the IP ID at 0) pair in
//! time order, each with the latest copy upstream early enough to explain it, so a lost
//! original is never paired with its later resend.
//!
//! Two passes. The first reads the start of every point (its first 2^18 RoCE packets; the whole
//! capture, one packet group in 16, when the starts share no packet): from packets seen exactly
//! once at two neighbouring points come each direction's minimum delay and the clocks' offset.
//! The second streams each pair of neighbouring points side by side in time order and pairs
//! packets as they come: memory holds only the packets waiting for their match (at most
//! `MATCH_WINDOW_NS` of traffic), not the captures.

mod findings;
mod matching;
mod reader;

use std::net::IpAddr;

use roce_parsers::DecodeOptions;

use crate::common::error::Error;
use crate::model::CORRELATION_SCHEMA;
use crate::model::{CorrelatedFlow, CorrelationDocument, CorrelationReport, PointReport};

/// One RoCEv2 packet seen at one point.
#[derive(Debug, Clone, Copy)]
pub struct Sighting {
    /// Hash of what identifies the packet at every point (see the module doc).
    group: u64,
    ts: u64,
    frame: u64,
    /// Its flow (source, destination, destination QP), numbered by the point's reader.
    flow: u32,
    dscp: u8,
    ecn: u8,
    /// 8 when untagged.
    pcp: u8,
    /// A request: it travels in path order. Everything else travels back.
    forward: bool,
    psn: u32,
    /// What travels back and says its receiver got every request up to this PSN: an ACK, a
    /// READ response, an RNR or error NAK (its own PSN), a sequence NAK (the one before).
    acked: Option<u32>,
    /// The data's two hosts (sender, receiver), hashed: an ACK names its QP pair only through
    /// them.
    hosts: u64,
}

/// A capture point: its name (the -r argument) and its files (a rotated set, or one).
#[derive(Debug, Clone)]
pub struct PointFiles {
    pub name: String,
    pub files: Vec<String>,
    /// How the files are read (--no-mmap).
    pub read: crate::source::file::ReadMethod,
}

/// RoCE packets of each point's start the clocks are estimated from.
const PREFIX: usize = 1 << 18;
/// When the starts share no packet, the whole captures are sampled: one packet group in this
/// many.
const SAMPLE_ONE_IN: u64 = 16;

/// Correlates the captures of `points`, in path order.
pub fn correlate(
    points: &[PointFiles],
    options: DecodeOptions,
    max_warnings: u32,
) -> Result<CorrelationDocument, Error> {
    let samples = sample_all(points, options, Some(PREFIX), 1)?;
    let mut flows = matching::Flows::default();
    let mut hops = Vec::new();
    let mut reverse_hops = Vec::new();
    let mut offsets = vec![0.0f64];
    // Per flow: its hops going forward, and coming back.
    let mut flow_hops: Vec<[Vec<crate::model::FlowHop>; 2]> = Vec::new();
    let mut roce_packets = Vec::with_capacity(points.len());
    for i in 0..points.len() - 1 {
        let mut clocks = matching::Clocks::estimate(&samples[i], &samples[i + 1]);
        if clocks.is_unknown() {
            let whole = sample_all(&points[i..i + 2], options, None, SAMPLE_ONE_IN)?;
            clocks = matching::Clocks::estimate(&whole[0], &whole[1]);
        }
        // Each point's damage is told once, on the first hop that reads it.
        let warn = [i == 0, true].map(|w| w.then_some(max_warnings));
        let hop = matching::stream_hop(
            &points[i],
            &points[i + 1],
            clocks,
            options,
            &mut flows,
            warn,
        )?;
        if i == 0 {
            roce_packets.push(hop.roce_packets[0]);
        }
        roce_packets.push(hop.roce_packets[1]);
        offsets.push(offsets.last().copied().unwrap_or(0.0) + hop.offset_us);
        flow_hops.resize_with(flows.keys.len(), Default::default);
        for ((id, forward), fh) in hop.flows {
            flow_hops[id as usize][usize::from(!forward)].push(fh);
        }
        hops.push(hop.forward);
        reverse_hops.push(hop.reverse);
    }
    let report = CorrelationReport {
        points: points
            .iter()
            .zip(&roce_packets)
            .zip(&offsets)
            .map(|((p, &n), &off)| PointReport {
                name: p.name.clone(),
                roce_packets: n,
                clock_offset_us: off,
            })
            .collect(),
        hops,
        reverse_hops,
        flows: correlated_flows(&flows.keys, flow_hops),
    };
    let findings = findings::find(&report);
    Ok(CorrelationDocument {
        schema: CORRELATION_SCHEMA,
        correlation: report,
        findings,
    })
}

/// Every flow the points share: those going forward (requests, in path order), then those
/// coming back (ACKs, NAKs, CNPs, READ responses), whose hops are listed in the order their
/// packets travel, from the receiver's side back to the sender's.
fn correlated_flows(
    keys: &[(IpAddr, IpAddr, u32)],
    hops: Vec<[Vec<crate::model::FlowHop>; 2]>,
) -> Vec<CorrelatedFlow> {
    let mut forward = Vec::new();
    let mut reverse = Vec::new();
    for (&(src, dst, dqpn), [fwd, mut rev]) in keys.iter().zip(hops) {
        let flow = |direction, hops| CorrelatedFlow {
            src: src.to_string(),
            dst: dst.to_string(),
            dqpn,
            direction,
            hops,
        };
        if !fwd.is_empty() {
            forward.push(flow("forward", fwd));
        }
        if !rev.is_empty() {
            rev.reverse();
            reverse.push(flow("reverse", rev));
        }
    }
    forward.extend(reverse);
    forward
}

/// Sightings of every point to estimate clocks from, the points read at the same time.
fn sample_all(
    points: &[PointFiles],
    options: DecodeOptions,
    limit: Option<usize>,
    one_in: u64,
) -> Result<Vec<Vec<Sighting>>, Error> {
    let readers: Vec<_> = points.iter().map(|p| reader::spawn(p, options)).collect();
    readers
        .into_iter()
        .map(|rx| sample(rx, limit, one_in))
        .collect()
}

/// The sightings a reader sends: the first `limit` (or all), keeping one packet group in
/// `one_in`.
fn sample(
    rx: std::sync::mpsc::Receiver<reader::Message>,
    limit: Option<usize>,
    one_in: u64,
) -> Result<Vec<Sighting>, Error> {
    let mut kept = Vec::new();
    let mut seen = 0usize;
    for message in rx {
        match message {
            reader::Message::Batch(b) => {
                seen += b.sightings.len();
                kept.extend(b.sightings.iter().filter(|x| x.group % one_in == 0));
                if limit.is_some_and(|l| seen >= l) {
                    // Dropping the receiver stops the reader.
                    break;
                }
            }
            reader::Message::End(end) => {
                (*end)?;
            }
        }
    }
    Ok(kept)
}
