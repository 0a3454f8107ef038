//! `--metrics` as an output of a running capture. The analysis hands over the flows that end
//! and the findings as they come, and the figures about once a second; a thread of its own (at
//! a lower priority) brings the metrics up to date and publishes them to the server, so that
//! building the text never holds up the capture.
//!
//! What is handed over waits in a mailbox, in order: the ended flows and the findings are
//! taken in whole (they are counts, never dropped; once the thread is behind, the ended flows'
//! counts are merged as they come), while figures the thread has not taken yet are replaced
//! by newer ones (only the latest state matters).

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::http::Publisher;
use super::{Metrics, QpCounts};
use crate::common::error::Error;
use crate::common::queue::spawn_behind;
use crate::decode::FrameCounts;
use crate::model::{Escalation, Finding, Told};
use crate::model::{Figures, FlowCounters, FlowEnded, NewFindings, SourceStatus};
use crate::outputs::{CaptureEnd, Output, Tick, Wants};

/// How often a running capture's metrics are brought up to date.
pub const METRICS_EVERY: Duration = Duration::from_secs(1);

pub struct MetricsOutput {
    mailbox: Arc<Mailbox>,
    thread: Option<JoinHandle<()>>,
    last: Option<Instant>,
    /// The report covers the whole capture (a file): its findings are the final ones. Live,
    /// it covers the open flows only, and the findings told over the run stay.
    report_is_whole: bool,
}

/// The state the metrics show: the figures, the frames counted, the source's counters and
/// the records the outputs dropped.
struct State {
    counts: FrameCounts,
    figures: Option<Figures>,
    source: SourceStatus,
    dropped: [u64; crate::model::DROPPABLE.len()],
}

/// Ended flows handed over one by one before they are merged (`Message::EndedMerged`): the
/// mailbox holds at most this many, a few MB, however far the thread falls behind.
const ENDED_ONE_BY_ONE: usize = 8192;

/// What the analysis hands the metrics' thread.
enum Message {
    Ended(FlowCounters),
    /// Flows that ended while `ENDED_ONE_BY_ONE` messages waited: their counts summed, and
    /// their ids (8 bytes a flow).
    EndedMerged(QpCounts, Vec<u64>),
    /// Findings first told, and those whose severity rose.
    Told(Vec<Told>, Vec<Escalation>),
    State(Box<State>),
    /// A state replaced by a newer one before the thread took it.
    Replaced,
    /// The capture ended: this state, and the report's findings when it covers the whole
    /// capture.
    Final(Box<State>, Option<Vec<Finding>>),
}

#[derive(Default)]
struct Pending {
    messages: Vec<Message>,
    /// Where the state not taken yet waits in `messages`.
    state_at: Option<usize>,
    closed: bool,
}

impl Pending {
    /// Adds ended flow `c` to the merged counts at the end, or starts them.
    fn merge_ended(&mut self, c: &FlowCounters) {
        if !matches!(self.messages.last(), Some(Message::EndedMerged(..))) {
            self.messages
                .push(Message::EndedMerged(QpCounts::default(), Vec::new()));
        }
        if let Some(Message::EndedMerged(counts, ids)) = self.messages.last_mut() {
            counts.plus(QpCounts::from(c));
            ids.push(c.id);
        }
    }
}

#[derive(Default)]
struct Mailbox {
    pending: Mutex<Pending>,
    arrived: Condvar,
}

impl Mailbox {
    /// Hands `m` over. The thread is woken by a state only: the counts before it wait for
    /// it (a wake-up for each ended flow cost the analysis a system call each).
    fn put(&self, m: Message) {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let behind = p.messages.len() >= ENDED_ONE_BY_ONE;
        if let (Message::Ended(c), true) = (&m, behind) {
            return p.merge_ended(c);
        }
        let wake = behind || matches!(m, Message::State(_) | Message::Final(..));
        if let Message::State(_) = m {
            if let Some(at) = p.state_at.take() {
                p.messages[at] = Message::Replaced;
            }
            p.state_at = Some(p.messages.len());
        }
        p.messages.push(m);
        if wake {
            self.arrived.notify_one();
        }
    }

    fn close(&self) {
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .closed = true;
        self.arrived.notify_one();
    }

    /// Every message handed over since the last take, waiting for one; none once closed and
    /// empty.
    fn take(&self) -> Option<Vec<Message>> {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        while p.messages.is_empty() && !p.closed {
            p = self.arrived.wait(p).unwrap_or_else(|e| e.into_inner());
        }
        p.state_at = None;
        let messages = std::mem::take(&mut p.messages);
        (!messages.is_empty()).then_some(messages)
    }
}

impl MetricsOutput {
    pub fn new(
        max_qps: usize,
        publisher: Publisher,
        report_is_whole: bool,
    ) -> std::io::Result<Self> {
        let mailbox = Arc::new(Mailbox::default());
        let theirs = Arc::clone(&mailbox);
        let thread = spawn_behind("metrics-update", move || {
            keep_up(&theirs, Metrics::new(max_qps), &publisher)
        })?;
        Ok(MetricsOutput {
            mailbox,
            thread: Some(thread),
            last: None,
            report_is_whole,
        })
    }

    fn due(&self) -> bool {
        self.last.is_none_or(|t| t.elapsed() >= METRICS_EVERY)
    }
}

/// The metrics' thread: takes in what was handed over, in order, and publishes the text once
/// a state came.
fn keep_up(mailbox: &Mailbox, mut metrics: Metrics, publisher: &Publisher) {
    while let Some(messages) = mailbox.take() {
        let mut changed = false;
        for m in messages {
            match m {
                Message::Ended(c) => metrics.flow_ended(&c),
                Message::EndedMerged(counts, ids) => metrics.flows_ended_merged(counts, &ids),
                Message::Told(told, rose) => {
                    metrics.findings_told(&told);
                    metrics.findings_escalated(&rose);
                }
                Message::Replaced => {}
                Message::State(s) => {
                    take_state(&mut metrics, &s);
                    changed = true;
                }
                Message::Final(s, findings) => {
                    take_state(&mut metrics, &s);
                    if let Some(f) = findings {
                        metrics.report_findings(&f);
                    }
                    changed = true;
                }
            }
        }
        if changed {
            publisher.publish(metrics.text());
        }
    }
}

fn take_state(metrics: &mut Metrics, s: &State) {
    metrics.records_dropped(s.dropped);
    if let Some(figures) = &s.figures {
        metrics.update(&s.counts, figures, &s.source);
    }
}

impl Output for MetricsOutput {
    fn wants(&self) -> Wants {
        Wants {
            ended_flows: true,
            ended_counters: true,
            findings: true,
            final_figures: true,
            ..Wants::default()
        }
    }

    fn flow_ended(&mut self, ended: &FlowEnded) -> Result<(), Error> {
        if let Some(c) = ended.counters {
            self.mailbox.put(Message::Ended(c));
        }
        Ok(())
    }

    fn findings(&mut self, new: &NewFindings) -> Result<(), Error> {
        let told = new.told().collect();
        self.mailbox.put(Message::Told(told, new.escalated.clone()));
        Ok(())
    }

    fn tick(&mut self, tick: &Tick<'_>) -> Result<(), Error> {
        if self.due() {
            self.mailbox.put(Message::State(Box::new(State {
                counts: tick.counts.clone(),
                figures: Some(tick.analysis.figures()),
                source: *tick.source,
                dropped: tick.dropped.by_kind(),
            })));
            self.last = Some(Instant::now());
        }
        Ok(())
    }

    /// The last figures, and the findings (the report's when it covers the whole capture),
    /// published before this returns.
    fn finish(mut self: Box<Self>, end: &CaptureEnd<'_>) -> Result<(), Error> {
        let state = State {
            counts: end.counts.clone(),
            figures: end.figures.cloned(),
            source: *end.source,
            dropped: end.dropped.by_kind(),
        };
        let findings = self.report_is_whole.then(|| end.report.findings.clone());
        self.mailbox.put(Message::Final(Box::new(state), findings));
        self.mailbox.close();
        if let Some(t) = self.thread.take() {
            t.join().map_err(|_| Error::Output {
                path: "--metrics".into(),
                source: std::io::Error::other("the thread that updates the metrics failed"),
            })?;
        }
        Ok(())
    }
}

/// A capture that ends on an error: the thread ends too.
impl Drop for MetricsOutput {
    fn drop(&mut self) {
        self.mailbox.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_not_taken_is_replaced_in_place_and_counts_keep_their_order() {
        let m = Mailbox::default();
        let state = |packets| {
            Message::State(Box::new(State {
                counts: FrameCounts {
                    frames: packets,
                    ..FrameCounts::default()
                },
                figures: None,
                source: SourceStatus::default(),
                dropped: [0; crate::model::DROPPABLE.len()],
            }))
        };
        m.put(state(1));
        m.put(Message::Told(Vec::new(), Vec::new()));
        m.put(state(2));
        m.put(Message::Told(Vec::new(), Vec::new()));
        m.put(state(3));
        let got: Vec<String> = m
            .take()
            .unwrap()
            .iter()
            .map(|m| match m {
                Message::State(s) => format!("state {}", s.counts.frames),
                Message::Replaced => "replaced".into(),
                Message::Told(..) => "told".into(),
                _ => "other".into(),
            })
            .collect();
        assert_eq!(got, ["replaced", "told", "replaced", "told", "state 3"]);
        // Taken: the next state is not placed over a message of the last take.
        m.put(state(4));
        m.close();
        assert_eq!(m.take().unwrap().len(), 1);
        assert!(m.take().is_none());
    }

    #[test]
    fn ended_flows_beyond_the_one_by_one_are_merged_never_dropped() {
        let m = Mailbox::default();
        let ended = |id| FlowCounters {
            id,
            flow: crate::model::FlowLabel {
                src: std::net::IpAddr::from([10, 0, 0, 1]),
                dst: std::net::IpAddr::from([10, 0, 0, 2]),
                dqpn: 1,
                vlan: None,
            },
            packets: 3,
            bytes: 300,
            gaps: 0,
            lost: 0,
            retransmitted: 0,
            ce: 0,
            cnps: 0,
            naks: [0; 6],
            last_ts: 0,
        };
        let n = ENDED_ONE_BY_ONE as u64 + 1000;
        for id in 0..n {
            m.put(Message::Ended(ended(id)));
        }
        let taken = m.take().unwrap();
        assert_eq!(taken.len(), ENDED_ONE_BY_ONE + 1);
        let Some(Message::EndedMerged(counts, ids)) = taken.last() else {
            panic!("the rest merged");
        };
        assert_eq!(ids.len(), 1000);
        assert_eq!(ids[0], ENDED_ONE_BY_ONE as u64);
        assert_eq!((counts.packets, counts.bytes), (3000, 300_000));
    }
}
