//! Record -> decoded frame, and the one counter of frames every mode fills: what the capture
//! holds (frames, bytes, link types, RoCE, PFC, ICRC) and, per layer, what could not be decoded.

use std::collections::BTreeMap;

pub mod select;
pub mod summary;

use roce_parsers::capture::Record;
use roce_parsers::{decode_frame_with, DecodeError, DecodeOptions, Frame, IcrcStatus, Layer};

use crate::decode::summary::{PacketSummary, Payload};
use crate::model::{MalformedByLayer, TruncatedBy};
use roce_parsers::frame::Truncation;

/// Decodes one record.
pub fn decode<'a>(rec: &Record<'a>, options: DecodeOptions) -> Frame<'a> {
    decode_frame_with(rec.linktype, rec.data, rec.len, options)
}

/// Decodes one record into the summary the counters and the analysis read.
pub fn summarize(frame_no: u64, rec: &Record<'_>, options: DecodeOptions) -> PacketSummary {
    PacketSummary::new(frame_no, rec, &decode(rec, options))
}

/// Counts over every frame of a capture, filled once per frame by the pipeline.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrameCounts {
    pub frames: u64,
    pub bytes: u64,
    /// Link types seen, with frame counts.
    pub linktypes: BTreeMap<u32, u64>,
    pub first_ts: Option<u64>,
    pub last_ts: u64,
    /// Timestamp of the latest frame counted (not the latest time: captures can step back).
    pub last_frame_ts: Option<u64>,
    pub roce: u64,
    pub rocev1: u64,
    /// Native InfiniBand frames (ERF captures), counted within `roce`.
    pub ib: u64,
    pub pfc: u64,
    pub pause: u64,
    /// Frames cut by the snap length (caplen < len).
    pub truncated: u64,
    /// Frames shorter than on the wire, by why.
    pub truncated_by: TruncatedBy,
    /// ERSPAN sessions: frames and the frames lost to holes in their GRE sequence.
    pub mirror_sessions: BTreeMap<u16, MirrorSession>,
    /// Frames with a decode error not explained by the snap length.
    pub malformed: u64,
    pub malformed_by_layer: MalformedByLayer,
    /// The first malformed frames' numbers: the evidence of the finding.
    pub malformed_frames: Vec<u64>,
    pub unsupported_linktype: u64,
    pub icrc_ok: u64,
    pub icrc_bad: u64,
    pub icrc_unchecked: u64,
    /// Of those, the malformed frames (nothing cut them: their lengths contradict each other).
    pub icrc_unchecked_malformed: u64,
}

/// The GRE sequence of one ERSPAN session: a hole is frames the mirror dropped, not the
/// network.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MirrorSession {
    pub frames: u64,
    pub dropped: u64,
    last_seq: Option<u32>,
}

impl MirrorSession {
    fn frame(&mut self, seq: u32) {
        self.frames += 1;
        if let Some(last) = self.last_seq {
            let ahead = seq.wrapping_sub(last);
            // Ahead by less than half the space: a hole of `ahead - 1`; behind: reordering or a
            // restarted session, not counted.
            if (1..1 << 31).contains(&ahead) {
                self.dropped += u64::from(ahead - 1);
            }
            if ahead != 0 && ahead < 1 << 31 {
                self.last_seq = Some(seq);
            }
            return;
        }
        self.last_seq = Some(seq);
    }
}

/// Malformed frames named in the finding: enough to open a few in Wireshark.
const MALFORMED_FRAMES_KEPT: usize = 10;

fn layer_slot(m: &mut MalformedByLayer, layer: Layer) -> &mut u64 {
    match layer {
        Layer::Link => &mut m.link,
        Layer::Vlan => &mut m.vlan,
        Layer::Ip => &mut m.ip,
        Layer::Udp => &mut m.udp,
        Layer::Grh => &mut m.grh,
        Layer::Bth => &mut m.bth,
        Layer::ExtHeader => &mut m.ext_header,
        Layer::MacControl => &mut m.mac_control,
        Layer::Encap => &mut m.encap,
    }
}

impl FrameCounts {
    pub fn add(&mut self, p: &PacketSummary) {
        self.frames += 1;
        self.bytes += u64::from(p.len);
        // A capture has one link type, or a few: found without a search, as a rule.
        match self.linktypes.last_entry() {
            Some(mut last) if *last.key() == p.linktype => *last.get_mut() += 1,
            _ => *self.linktypes.entry(p.linktype).or_default() += 1,
        }
        self.first_ts.get_or_insert(p.ts_ns);
        self.last_ts = self.last_ts.max(p.ts_ns);
        self.last_frame_ts = Some(p.ts_ns);
        if p.caplen < p.len {
            self.truncated += 1;
        }
        match p.truncation {
            Some(Truncation::Snaplen) => self.truncated_by.snaplen += 1,
            Some(Truncation::Mirror) => self.truncated_by.mirror += 1,
            Some(Truncation::LengthMismatch) => self.truncated_by.length_mismatch += 1,
            None => {}
        }
        if let Some((session, seq)) = p.mirror {
            self.mirror_sessions.entry(session).or_default().frame(seq);
        }
        match &p.payload {
            Payload::Roce(r) => {
                self.roce += 1;
                self.rocev1 += u64::from(r.v1);
                self.ib += u64::from(r.ib);
                match r.icrc {
                    IcrcStatus::Ok => self.icrc_ok += 1,
                    IcrcStatus::Bad => self.icrc_bad += 1,
                    IcrcStatus::Unchecked => {
                        self.icrc_unchecked += 1;
                        self.icrc_unchecked_malformed += u64::from(p.malformed);
                    }
                }
            }
            Payload::Pfc { .. } => self.pfc += 1,
            Payload::Pause { .. } => self.pause += 1,
            Payload::IcmpError(_) | Payload::Other => {}
        }
        self.add_error(p.frame_no, p.error, p.malformed);
    }

    fn add_error(&mut self, frame_no: u64, error: Option<DecodeError>, malformed: bool) {
        if let Some(DecodeError::UnsupportedLinkType(_)) = error {
            self.unsupported_linktype += 1;
        } else if malformed {
            self.malformed += 1;
            if self.malformed_frames.len() < MALFORMED_FRAMES_KEPT {
                self.malformed_frames.push(frame_no);
            }
            if let Some(e) = error {
                *layer_slot(&mut self.malformed_by_layer, e.layer()) += 1;
            }
        }
    }
}
