//! Record -> decoded frame, and the per-layer counts of what could not be decoded.

use roce_parsers::capture::Record;
use roce_parsers::{decode_frame, DecodeError, Frame, IcrcStatus, Layer};
use serde::Serialize;

use crate::model::MalformedByLayer;

use crate::summary::{PacketSummary, Payload};

/// Decodes one record.
pub fn decode<'a>(rec: &Record<'a>) -> Frame<'a> {
    decode_frame(rec.linktype, rec.data, rec.len)
}

/// Counts over every frame of a capture.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct DecodeCounts {
    pub frames: u64,
    pub roce: u64,
    pub rocev1: u64,
    pub pfc: u64,
    pub pause: u64,
    /// Frames cut by the snap length (caplen < len).
    pub truncated: u64,
    /// Frames with a decode error not explained by the snap length.
    pub malformed: u64,
    pub malformed_by_layer: MalformedByLayer,
    pub unsupported_linktype: u64,
    pub icrc_ok: u64,
    pub icrc_bad: u64,
    pub icrc_unchecked: u64,
}

impl MalformedByLayer {
    fn slot(&mut self, layer: Layer) -> &mut u64 {
        match layer {
            Layer::Link => &mut self.link,
            Layer::Vlan => &mut self.vlan,
            Layer::Ip => &mut self.ip,
            Layer::Udp => &mut self.udp,
            Layer::Grh => &mut self.grh,
            Layer::Bth => &mut self.bth,
            Layer::ExtHeader => &mut self.ext_header,
            Layer::MacControl => &mut self.mac_control,
        }
    }
}

impl DecodeCounts {
    /// Counts a frame from its summary (what the parallel path keeps of it).
    pub fn add_summary(&mut self, p: &PacketSummary) {
        self.frames += 1;
        if p.caplen < p.len {
            self.truncated += 1;
        }
        match &p.payload {
            Payload::Roce(r) => {
                self.roce += 1;
                if r.v1 {
                    self.rocev1 += 1;
                }
                match r.icrc {
                    IcrcStatus::Ok => self.icrc_ok += 1,
                    IcrcStatus::Bad => self.icrc_bad += 1,
                    IcrcStatus::Unchecked => self.icrc_unchecked += 1,
                }
            }
            Payload::Pfc { .. } => self.pfc += 1,
            Payload::Pause { .. } => self.pause += 1,
            Payload::Other => {}
        }
        self.add_error(p.error, p.malformed);
    }

    fn add_error(&mut self, error: Option<DecodeError>, malformed: bool) {
        if let Some(DecodeError::UnsupportedLinkType(_)) = error {
            self.unsupported_linktype += 1;
        } else if malformed {
            self.malformed += 1;
            if let Some(e) = error {
                *self.malformed_by_layer.slot(e.layer()) += 1;
            }
        }
    }

    pub fn add(&mut self, f: &Frame<'_>) {
        self.frames += 1;
        if f.is_snapped() {
            self.truncated += 1;
        }
        if let Some(r) = &f.roce {
            self.roce += 1;
            if r.version == roce_parsers::RoceVersion::V1 {
                self.rocev1 += 1;
            }
            match r.icrc.status {
                IcrcStatus::Ok => self.icrc_ok += 1,
                IcrcStatus::Bad => self.icrc_bad += 1,
                IcrcStatus::Unchecked => self.icrc_unchecked += 1,
            }
        }
        match f.mac_control {
            Some(roce_parsers::MacControl::Pfc { .. }) => self.pfc += 1,
            Some(roce_parsers::MacControl::Pause { .. }) => self.pause += 1,
            _ => {}
        }
        self.add_error(f.error, f.is_malformed());
    }
}

/// Per-frame warnings on stderr: the first few in full, then only a count.
pub struct Warnings {
    /// The input, named in every line.
    source: String,
    /// Link types already reported as unsupported (one line each, not one per frame).
    unsupported: Vec<u32>,
    shown: u32,
    suppressed: u64,
    limit: u32,
}

impl Warnings {
    pub fn new(limit: u32, source: &str) -> Self {
        Warnings {
            source: source.to_string(),
            unsupported: Vec::new(),
            shown: 0,
            suppressed: 0,
            limit,
        }
    }

    pub fn frame(&mut self, frame_no: u64, f: &Frame<'_>) {
        self.error(frame_no, f.error, f.is_malformed());
    }

    pub fn error(&mut self, frame_no: u64, error: Option<DecodeError>, malformed: bool) {
        let Some(err) = error else { return };
        if let DecodeError::UnsupportedLinkType(lt) = err {
            if !self.unsupported.contains(&lt) {
                self.unsupported.push(lt);
                eprintln!(
                    "roce-sniff: warning: {}: frame {frame_no}: link type {lt} ({}) is not supported \
                     (supported: Ethernet, Linux cooked SLL/SLL2, raw IP, ERF Ethernet and InfiniBand); its frames are counted, not decoded",
                    self.source,
                    roce_parsers::link::linktype_name(lt)
                );
            }
            return;
        }
        if !malformed {
            return;
        }
        if self.shown < self.limit {
            self.shown += 1;
            eprintln!(
                "roce-sniff: warning: {}: frame {frame_no}: {err}",
                self.source
            );
        } else {
            self.suppressed += 1;
        }
    }

    pub fn finish(&self) {
        if self.suppressed > 0 {
            eprintln!(
                "roce-sniff: warning: {}: {} more malformed frames not shown",
                self.source, self.suppressed
            );
        }
    }
}
