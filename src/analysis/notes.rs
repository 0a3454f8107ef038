//! Notes on single frames for `--annotate`: what the analysis saw happen at a frame (the
//! first frame after a PSN gap, a resend, a NAK, a CE mark never answered, a CNP, a PFC
//! storm's start and end, a capture copy), kept compact while the capture is read and turned
//! into the pcapng comments (`roce-sniff: <code>: ...`) when the copy is written. The
//! findings' own frames are added once the findings are known (`add_findings`).
//!
//! Only collected when asked for: a note is 32 bytes, and a capture full of CNPs has one per
//! CNP.

use std::fmt::Write as _;

use rustc_hash::{FxHashMap, FxHashSet};

use roce_parsers::MacAddr;

use super::flow::FlowKey;
use crate::common::units::duration_ns;
use crate::model::{Finding, FindingCode};

/// Why the requester resent: a NAK asking from a PSN, or silence (its retry timer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResendCause {
    Nak {
        from_psn: u32,
    },
    Timeout {
        idle_ns: u64,
    },
    /// The resend of a frame captured with a bad ICRC (which its receiver dropped).
    Damaged {
        psn: u32,
    },
    /// A go-back from `from_psn` whose NAK the capture did not see.
    Unseen {
        from_psn: u32,
    },
}

/// A NAK, by what it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NakNote {
    /// PSN sequence error: the responder saw a gap and asks for a resend from the PSN.
    Sequence,
    /// PSN sequence error for a PSN that went by: no gap explains it.
    SequenceWithoutGap,
    Rnr,
    /// An error NAK, by the name of its code.
    Error(&'static str),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteKind {
    PsnGap {
        flow: u64,
        expected: u32,
        seen: u32,
        missing: u32,
        /// The other end acknowledged the PSNs it skipped: the capture missed them.
        missed: bool,
    },
    Resend {
        flow: u64,
        psn: u32,
        cause: Option<ResendCause>,
    },
    Nak {
        /// The data flow it answers.
        flow: u64,
        what: NakNote,
        psn: u32,
    },
    /// A CE mark whose CNP window ended without a CNP for its flow.
    CeUnanswered { flow: u64 },
    /// A CNP, and the data flow it slows (None: no data flow could be told).
    Cnp { slows: Option<u64> },
    PfcStorm {
        start: bool,
        mac: MacAddr,
        priority: u8,
        duration_ns: u64,
        frames: u64,
    },
    /// The same frame again, copied by the capture (a mirror of both directions, or another
    /// capture point).
    CaptureCopy { flow: u64 },
    /// A frame a finding cites: the finding's index in `findings`.
    Finding { index: u32 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Note {
    pub frame: u64,
    pub kind: NoteKind,
}

/// The notes of a run, and what their text needs: the flows' labels, which flows got CNPs,
/// the findings.
#[derive(Debug, Default)]
pub struct Notes {
    list: Vec<Note>,
    labels: FxHashMap<u64, String>,
    flows_with_cnps: FxHashSet<u64>,
    findings: Vec<(FindingCode, String, String)>,
}

impl Notes {
    /// Remembers the label of flow `id` (once: a flow's key never changes).
    pub fn flow(&mut self, id: u64, key: &FlowKey) {
        self.labels.entry(id).or_insert_with(|| key.to_string());
    }

    pub fn add(&mut self, frame: u64, kind: NoteKind) {
        if let NoteKind::Cnp { slows: Some(flow) } = kind {
            self.flows_with_cnps.insert(flow);
        }
        self.list.push(Note { frame, kind });
    }

    /// Notes on the frames each finding cites (its group's worst flows' frames too).
    pub fn add_findings(&mut self, findings: &[Finding]) {
        for f in findings {
            let index = self.findings.len() as u32;
            let code = f.code.name();
            let severity = f.severity.name();
            self.findings
                .push((f.code, format!("{code} ({severity})"), f.message.clone()));
            for &frame in &f.frames {
                self.add(frame, NoteKind::Finding { index });
            }
            for m in f.group.iter().flat_map(|g| &g.worst) {
                let index = self.findings.len() as u32;
                self.findings
                    .push((f.code, format!("{code} ({severity})"), m.message.clone()));
                for &frame in &m.frames {
                    self.add(frame, NoteKind::Finding { index });
                }
            }
        }
    }

    /// The gap noted at `frame` on flow `flow` was missed by the capture, not lost (the
    /// other end acknowledged what it skipped): its note says so. The latest notes first:
    /// a gap is judged within its flow's ACK allowance.
    pub fn gap_missed(&mut self, frame: u64, flow: u64) {
        let note = self.list.iter_mut().rev().find(|n| {
            n.frame == frame && matches!(n.kind, NoteKind::PsnGap { flow: f, .. } if f == flow)
        });
        if let Some(Note {
            kind: NoteKind::PsnGap { missed, .. },
            ..
        }) = note
        {
            *missed = true;
        }
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The notes in frame order (a frame's own in the order they were made), each frame's
    /// texts once.
    pub fn into_sorted(mut self) -> SortedNotes {
        self.list.sort_by_key(|n| n.frame);
        SortedNotes { notes: self, at: 0 }
    }

    fn label(&self, flow: u64) -> &str {
        self.labels.get(&flow).map_or("?", String::as_str)
    }

    /// The comment of one note, `roce-sniff: ` and its code first.
    pub fn text(&self, kind: &NoteKind) -> String {
        let mut t = String::from("roce-sniff: ");
        let _ = match *kind {
            NoteKind::PsnGap {
                flow,
                expected,
                seen,
                missing,
                missed: false,
            } => write!(
                t,
                "psn_loss: first frame after a PSN gap on {}: expected PSN {expected}, saw {seen}, {missing} skipped",
                self.label(flow)
            ),
            NoteKind::PsnGap {
                flow,
                expected,
                seen,
                missing,
                missed: true,
            } => write!(
                t,
                "capture_missed: first frame after a PSN gap on {}: expected PSN {expected}, saw {seen}; the other end acknowledged the {missing} skipped, so the capture point missed them",
                self.label(flow)
            ),
            NoteKind::Resend { flow, psn, cause } => {
                let after = match cause {
                    Some(ResendCause::Nak { from_psn }) => {
                        format!("after a NAK asking from PSN {from_psn}")
                    }
                    Some(ResendCause::Timeout { idle_ns }) => format!(
                        "after a timeout ({} without a request)",
                        duration_ns(idle_ns)
                    ),
                    Some(ResendCause::Damaged { psn }) => {
                        format!("after PSN {psn} was captured with a bad ICRC")
                    }
                    Some(ResendCause::Unseen { from_psn }) => format!(
                        "going back to PSN {from_psn}: a NAK the capture did not see asked for it"
                    ),
                    None => "without a NAK or a timeout before it".to_string(),
                };
                write!(
                    t,
                    "retransmissions: resend of PSN {psn} on {}, {after}",
                    self.label(flow)
                )
            }
            NoteKind::Nak { flow, what, psn } => {
                let label = self.label(flow);
                match what {
                    NakNote::Sequence => write!(
                        t,
                        "psn_loss: NAK (PSN sequence error) for {label}: resend from PSN {psn}"
                    ),
                    NakNote::SequenceWithoutGap => write!(
                        t,
                        "nak_without_gap: NAK (PSN sequence error) for {label} asks from PSN {psn}, which went by"
                    ),
                    NakNote::Rnr => write!(t, "rnr_nak: RNR NAK for {label} at PSN {psn}"),
                    NakNote::Error(code) => {
                        write!(t, "nak_error: NAK ({code}) for {label} at PSN {psn}")
                    }
                }
            }
            NoteKind::CeUnanswered { flow } => {
                if self.flows_with_cnps.contains(&flow) {
                    write!(
                        t,
                        "ce_unanswered: CE mark on {} got no CNP within {}",
                        self.label(flow),
                        duration_ns(super::CNP_WINDOW_NS)
                    )
                } else {
                    write!(
                        t,
                        "ce_without_cnp: CE mark on {}, and no CNP came back for this flow",
                        self.label(flow)
                    )
                }
            }
            NoteKind::Cnp { slows: Some(flow) } => {
                write!(t, "cnp: CNP slowing {}", self.label(flow))
            }
            NoteKind::Cnp { slows: None } => {
                write!(t, "cnp: CNP for no data flow this capture shows")
            }
            NoteKind::PfcStorm {
                start,
                mac,
                priority,
                duration_ns,
                frames,
            } => {
                let edge = if start { "starts" } else { "ends" };
                write!(
                    t,
                    "pfc_storm: PFC storm on priority {priority} from {mac} {edge} ({}, {frames} frames)",
                    crate::common::units::duration_ns(duration_ns)
                )
            }
            NoteKind::CaptureCopy { flow } => write!(
                t,
                "capture_duplicates: a copy of a frame already captured on {}",
                self.label(flow)
            ),
            NoteKind::Finding { index } => {
                let (_, head, message) = &self.findings[index as usize];
                write!(t, "{head}: {message}")
            }
        };
        t
    }
}

impl super::Analyzer {
    /// The notes, once every frame is fed: the CE marks still unanswered at the end of the
    /// capture and the PFC storms' first and last frames added (None when not collected).
    pub fn take_notes(&mut self) -> Option<Notes> {
        let mut notes = self.notes.take()?;
        let last_ts = self.state.last_ts;
        for f in self.flows.iter() {
            f.note_pending_ce(last_ts, super::CNP_WINDOW_NS, &mut notes);
        }
        let cfg = self.config().pfc;
        for (&(mac, priority), tracker) in &self.pfc {
            let mut done = tracker.clone();
            done.finish(&cfg);
            for (first, last, duration_ns, frames) in done.storm_edges() {
                for (frame, start) in [(first, true), (last, false)] {
                    let kind = NoteKind::PfcStorm {
                        start,
                        mac,
                        priority,
                        duration_ns,
                        frames,
                    };
                    notes.add(frame, kind);
                }
            }
        }
        Some(notes)
    }

    /// Notes the CE marks of open flow `i`, which ends at `now`, that stayed unanswered.
    pub(super) fn note_ending(&mut self, i: usize, now: u64) {
        if let Some(n) = self.notes.as_mut() {
            self.flows[i].note_pending_ce(now, super::CNP_WINDOW_NS, n);
        }
    }
}

/// The notes in frame order, taken frame by frame as the copy is written.
#[derive(Debug)]
pub struct SortedNotes {
    notes: Notes,
    at: usize,
}

impl SortedNotes {
    /// The comments of `frame` (frames must be asked for in increasing order).
    pub fn comments_of(&mut self, frame: u64) -> Vec<String> {
        let list = &self.notes.list;
        while self.at < list.len() && list[self.at].frame < frame {
            self.at += 1;
        }
        let mut out: Vec<String> = Vec::new();
        while self.at < list.len() && list[self.at].frame == frame {
            let text = self.notes.text(&list[self.at].kind);
            if !out.contains(&text) {
                out.push(text);
            }
            self.at += 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use roce_parsers::Qpn;

    fn key() -> FlowKey {
        FlowKey {
            src: "10.0.0.1".parse().unwrap(),
            dst: "10.0.0.2".parse().unwrap(),
            dqpn: Qpn(0x213),
            vlan: Some(100),
        }
    }

    #[test]
    fn comments_come_in_frame_order_once_each() {
        let mut n = Notes::default();
        n.flow(0, &key());
        n.add(9, NoteKind::CeUnanswered { flow: 0 });
        let gap = NoteKind::PsnGap {
            flow: 0,
            expected: 10,
            seen: 13,
            missing: 3,
            missed: false,
        };
        n.add(5, gap);
        n.add(5, gap);
        let mut sorted = n.into_sorted();
        assert!(sorted.comments_of(1).is_empty());
        let five = sorted.comments_of(5);
        assert_eq!(five.len(), 1);
        assert!(five[0].starts_with("roce-sniff: psn_loss: "), "{}", five[0]);
        assert!(five[0].contains("expected PSN 10, saw 13, 3 skipped"));
        assert!(five[0].contains("qp 0x000213"), "{}", five[0]);
        // A gap the other end acknowledged: the capture missed it.
        let mut m = Notes::default();
        m.flow(0, &key());
        m.add(5, gap);
        m.gap_missed(5, 0);
        let five = m.into_sorted().comments_of(5);
        assert!(
            five[0].starts_with("roce-sniff: capture_missed: "),
            "{}",
            five[0]
        );
        // No CNP for the flow: the CE mark is one of ce_without_cnp.
        assert!(sorted.comments_of(9)[0].contains("ce_without_cnp"));
        assert!(sorted.comments_of(10).is_empty());
    }

    #[test]
    fn a_ce_mark_of_a_flow_that_got_cnps_is_unanswered() {
        let mut n = Notes::default();
        n.add(2, NoteKind::Cnp { slows: Some(4) });
        n.add(1, NoteKind::CeUnanswered { flow: 4 });
        let mut sorted = n.into_sorted();
        assert!(sorted.comments_of(1)[0].contains("ce_unanswered"));
        assert!(sorted.comments_of(2)[0].starts_with("roce-sniff: cnp: CNP slowing "));
    }
}
