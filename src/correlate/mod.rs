//! `--correlate`: captures taken at several points of one path, in path order from the data
//! sender, and the same RoCE packets followed across them: where each was lost, where CE was
//! set or the DSCP rewritten, how much delay and queueing each hop added.
//!
//! A packet is the same at two points when the fields that do not change in flight agree: IP
//! source and destination, UDP source port, destination QP, opcode and PSN (the ICRC and the
//! payload would too, but a mirror's snap length may cut them at one point and not the other).
//! Copies of one packet (resends, byte-identical when the NIC leaves the IP ID at 0) pair in
//! time order, each with the latest copy upstream early enough to explain it (see `matching`),
//! so a lost original is never paired with its later resend.
//!
//! Every point's packets are held in memory while matching: about 48 bytes per RoCE packet.

mod findings;
mod matching;

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::net::IpAddr;

use roce_parsers::{DecodeOptions, RoceVersion};
use rustc_hash::FxHasher;

use crate::decode::decode;
use crate::diagnostics::Diagnostics;
use crate::error::Error;
use crate::model::{CorrelationDocument, CorrelationReport, PointReport, CORRELATION_SCHEMA};
use crate::source::Input;

/// One RoCEv2 packet seen at one point.
#[derive(Debug, Clone, Copy)]
struct Sighting {
    /// Hash of what identifies the packet at every point (see the module doc).
    group: u64,
    ts: u64,
    frame: u64,
    /// Index of its flow (source, destination, destination QP) in `Flows`.
    flow: u32,
    dscp: u8,
    ecn: u8,
    /// 8 when untagged.
    pcp: u8,
    /// A request: it travels in path order. Everything else travels back.
    forward: bool,
}

/// The flows seen at any point, numbered.
#[derive(Default)]
struct Flows {
    index: HashMap<(IpAddr, IpAddr, u32), u32>,
    keys: Vec<(IpAddr, IpAddr, u32)>,
}

impl Flows {
    fn id(&mut self, key: (IpAddr, IpAddr, u32)) -> u32 {
        *self.index.entry(key).or_insert_with(|| {
            self.keys.push(key);
            (self.keys.len() - 1) as u32
        })
    }
}

/// A capture point: its name and what it saw.
struct Point {
    name: String,
    sightings: Vec<Sighting>,
}

/// Correlates the captures `points` (name and input, in path order).
pub fn correlate(
    points: Vec<(String, Input)>,
    decode_options: DecodeOptions,
    max_warnings: u32,
) -> Result<CorrelationDocument, Error> {
    let mut flows = Flows::default();
    let mut read = Vec::with_capacity(points.len());
    for (name, input) in points {
        read.push(read_point(
            name,
            input,
            decode_options,
            &mut flows,
            max_warnings,
        )?);
    }
    let mut hops = Vec::new();
    let mut reverse_hops = Vec::new();
    let mut flow_hops = vec![Vec::new(); flows.keys.len()];
    let mut offsets = vec![0.0f64];
    for pair in read.windows(2) {
        let hop = matching::match_hop(&pair[0], &pair[1], &flows);
        offsets.push(offsets.last().copied().unwrap_or(0.0) + hop.offset_us);
        for (i, fh) in hop.flows.into_iter().enumerate() {
            if let Some(fh) = fh {
                flow_hops[i].push(fh);
            }
        }
        hops.push(hop.forward);
        reverse_hops.push(hop.reverse);
    }
    let correlated_flows = flows
        .keys
        .iter()
        .zip(flow_hops)
        .filter(|(_, h)| !h.is_empty())
        .map(|(&(src, dst, dqpn), hops)| crate::model::CorrelatedFlow {
            src: src.to_string(),
            dst: dst.to_string(),
            dqpn,
            hops,
        })
        .collect();
    let report = CorrelationReport {
        points: read
            .iter()
            .zip(&offsets)
            .map(|(p, &off)| PointReport {
                name: p.name.clone(),
                roce_packets: p.sightings.len() as u64,
                clock_offset_us: off,
            })
            .collect(),
        hops,
        reverse_hops,
        flows: correlated_flows,
    };
    let findings = findings::find(&report);
    Ok(CorrelationDocument {
        schema: CORRELATION_SCHEMA,
        correlation: report,
        findings,
    })
}

/// Reads one point: every RoCEv2 packet, in capture order. Damage is warned about (and what
/// came before it kept), as for any read.
fn read_point(
    name: String,
    input: Input,
    options: DecodeOptions,
    flows: &mut Flows,
    max_warnings: u32,
) -> Result<Point, Error> {
    let mut diagnostics = Diagnostics::new(&name, max_warnings);
    let mut sightings = Vec::new();
    let mut frame_no = 0u64;
    let end = input.for_each_batch(|records, _| {
        for rec in records {
            frame_no += 1;
            if let Some(s) = sighting(rec, frame_no, options, flows) {
                sightings.push(s);
            }
        }
        Ok(())
    })?;
    for p in end.problems {
        diagnostics.warn_with_hint(p.kind, p.message, &p.hint);
    }
    diagnostics.finish();
    // Files of a rotated set, or a capture that steps back: matching wants time order.
    sightings.sort_by_key(|s| (s.ts, s.frame));
    Ok(Point { name, sightings })
}

fn sighting(
    rec: &roce_parsers::capture::Record<'_>,
    frame_no: u64,
    options: DecodeOptions,
    flows: &mut Flows,
) -> Option<Sighting> {
    let f = decode(rec, options);
    let r = f.roce.as_ref().filter(|r| r.version == RoceVersion::V2)?;
    let (ip, udp) = (f.ip?, f.udp?);
    if f.is_malformed() {
        return None;
    }
    let b = &r.bth;
    let mut h = FxHasher::default();
    (ip.src, ip.dst, udp.sport, b.dqpn, b.opcode.0, b.psn).hash(&mut h);
    Some(Sighting {
        group: h.finish(),
        ts: rec.ts_ns,
        frame: frame_no,
        flow: flows.id((ip.src, ip.dst, b.dqpn)),
        dscp: ip.dscp,
        ecn: ip.ecn,
        pcp: f.inner_vlan().map_or(8, |v| v.pcp),
        forward: b.opcode.is_request() && b.opcode != roce_parsers::Opcode::CNP,
    })
}
