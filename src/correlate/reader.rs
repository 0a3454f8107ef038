//! One capture point read on a thread of its own: its RoCEv2 packets decoded into sightings and
//! sent in batches, with the flows they belong to numbered as they first appear.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::net::IpAddr;
use std::sync::mpsc::{self, Receiver};

use roce_parsers::capture::Record;
use roce_parsers::{DecodeOptions, Opcode, RoceVersion};
use rustc_hash::FxHasher;

use super::{PointFiles, Sighting};
use crate::common::error::Error;
use crate::decode::decode;
use crate::source::file::{FileSource, ReadMethod};
use crate::source::{Input, SourceEnd};

/// Sightings per batch handed over.
const BATCH: usize = 8192;

/// A flow: source, destination, destination QP.
pub type FlowKey = (IpAddr, IpAddr, u32);

pub struct Batch {
    pub sightings: Vec<Sighting>,
    /// Flows first seen in this batch, numbered on from those of earlier batches.
    pub new_flows: Vec<FlowKey>,
}

pub enum Message {
    Batch(Batch),
    /// Boxed: a batch is sent thousands of times, the end once.
    End(Box<Result<SourceEnd, Error>>),
}

/// The files of one point as one input (several: a rotated set, merged by time).
fn open(files: &[String], read: ReadMethod) -> Result<Input, Error> {
    let sources = files
        .iter()
        .map(|f| FileSource::open(f, read))
        .collect::<Result<Vec<_>, Error>>()?;
    Ok(Input::of_files(sources))
}

/// Reads `files` (one point) on a thread.
pub fn spawn(point: &PointFiles, options: DecodeOptions) -> Receiver<Message> {
    let (tx, rx) = mpsc::sync_channel(4);
    let (files, read) = (point.files.clone(), point.read);
    std::thread::spawn(move || {
        let input = match open(&files, read) {
            Ok(i) => i,
            Err(e) => {
                let _ = tx.send(Message::End(Box::new(Err(e))));
                return;
            }
        };
        let mut flows: HashMap<FlowKey, u32> = HashMap::new();
        let mut batch = Batch {
            sightings: Vec::with_capacity(BATCH),
            new_flows: Vec::new(),
        };
        let mut frame_no = 0u64;
        let end = input.for_each_batch(|records, _| {
            for rec in records {
                frame_no += 1;
                if let Some(s) = sighting(rec, frame_no, options, &mut flows, &mut batch) {
                    batch.sightings.push(s);
                }
                if batch.sightings.len() == BATCH {
                    let full = std::mem::replace(
                        &mut batch,
                        Batch {
                            sightings: Vec::with_capacity(BATCH),
                            new_flows: Vec::new(),
                        },
                    );
                    tx.send(Message::Batch(full))
                        .map_err(|_| std::io::Error::other("the correlation stopped"))?;
                }
            }
            Ok(())
        });
        let _ = tx.send(Message::Batch(batch));
        let _ = tx.send(Message::End(Box::new(end)));
    });
    rx
}

fn sighting(
    rec: &Record<'_>,
    frame_no: u64,
    options: DecodeOptions,
    flows: &mut HashMap<FlowKey, u32>,
    batch: &mut Batch,
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
    let key = (ip.src, ip.dst, b.dqpn);
    let next = flows.len() as u32;
    let flow = *flows.entry(key).or_insert_with(|| {
        batch.new_flows.push(key);
        next
    });
    let forward = b.opcode.is_request() && b.opcode != Opcode::CNP;
    let mut hosts = FxHasher::default();
    if forward {
        (ip.src, ip.dst).hash(&mut hosts);
    } else {
        (ip.dst, ip.src).hash(&mut hosts);
    }
    Some(Sighting {
        group: h.finish(),
        ts: rec.ts_ns,
        frame: frame_no,
        flow,
        dscp: ip.dscp,
        ecn: ip.ecn,
        pcp: f.inner_vlan().map_or(8, |v| v.pcp),
        forward,
        psn: b.psn,
        acked: acked_to(b, r.ext.aeth),
        hosts: hosts.finish(),
    })
}

/// The PSN up to which a packet travelling back says its receiver got every request: an ACK
/// or a READ response its own, an RNR or error NAK its own (the request arrived and was
/// refused), a sequence NAK the one before it (the PSN it names did not arrive).
fn acked_to(b: &roce_parsers::Bth, aeth: Option<roce_parsers::Aeth>) -> Option<u32> {
    use roce_parsers::{AethKind, NakCode, Operation};
    if b.opcode.operation() == Operation::ReadResponse && aeth.is_none() {
        return Some(b.psn);
    }
    let aeth = aeth?;
    match aeth.kind() {
        AethKind::Ack | AethKind::RnrNak => Some(b.psn),
        AethKind::Nak if NakCode::from_value(aeth.value()) == NakCode::PsnSequenceError => {
            Some(b.psn.wrapping_sub(1) & 0xff_ffff)
        }
        AethKind::Nak => Some(b.psn),
        AethKind::Reserved => None,
    }
}
