//! The live status lines, for when the full-screen view cannot have standard output (with
//! `--packets`, JSON to standard output, output that is not a terminal, or `--no-tui`): once
//! a second, rates, running totals with what is new since the last line, the most troubled
//! QP, PFC XOFF per priority and the kernel's counters. A line redrawn in place on a
//! terminal (its spinner turning), plain lines on standard error otherwise.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::snapshot::Snapshot;
use crate::common::units::{bit_rate, frame_rate};

const STATUS_EVERY: Duration = Duration::from_secs(1);

pub struct Status {
    bar: Option<ProgressBar>,
    last: Instant,
    previous: Option<Snapshot>,
}

impl Status {
    pub fn start() -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
                    .expect("static template"),
            );
            // The spinner turns while nothing arrives: the capture is alive.
            b.enable_steady_tick(Duration::from_millis(250));
            b
        });
        Status {
            bar,
            last: Instant::now(),
            previous: None,
        }
    }

    pub fn due(&self) -> bool {
        self.last.elapsed() >= STATUS_EVERY
    }

    /// A message above the status line; the line goes on.
    pub fn note(&self, message: &str) {
        match &self.bar {
            Some(b) => b.println(message),
            None => stderr_line!("{message}"),
        }
    }

    pub fn show(&mut self, s: Snapshot) {
        let msg = line(&s, self.previous.as_ref());
        match &self.bar {
            Some(b) => b.set_message(msg),
            None => stderr_line!("roce-sniff: {msg}"),
        }
        self.last = Instant::now();
        self.previous = Some(s);
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// `total (+new)`.
fn running(now: u64, before: u64) -> String {
    if now > before {
        format!("{now} (+{})", now - before)
    } else {
        now.to_string()
    }
}

/// One status line: rates, totals with what is new, the worst QP, PFC, the kernel's counters.
pub fn line(s: &Snapshot, previous: Option<&Snapshot>) -> String {
    let before = |f: fn(&Snapshot) -> u64| previous.map_or(0, f);
    let xoff: String = (0..8u8)
        .filter_map(|prio| {
            let n: u64 = s
                .pfc
                .iter()
                .filter(|p| p.priority == prio)
                .map(|p| p.xoff)
                .sum();
            (n > 0).then(|| format!(" p{prio}:{n}"))
        })
        .collect();
    let worst = s
        .qps
        .first()
        .filter(|q| q.trouble() > 0)
        .map_or(String::new(), |q| {
            format!(
                " | worst {} (gaps {} retx {} NAK {})",
                q.label, q.gaps, q.retx, q.naks
            )
        });
    let kernel = s.kernel.map_or("kernel ?".into(), |k| {
        format!(
            "kernel {} received, {} dropped, {} if-dropped",
            k.received, k.dropped, k.if_dropped
        )
    });
    let mut missed = if s.capture_missed > 0 {
        format!(" | capture missed {} PSNs", s.capture_missed)
    } else {
        String::new()
    };
    if s.records_dropped > 0 {
        missed.push_str(&format!(" | outputs dropped {} records", s.records_dropped));
    }
    format!(
        "{} {} | RoCE {} in {} flows | gaps {} retx {} CE {} CNP {}{worst} | PFC XOFF{} | {kernel}{missed}",
        frame_rate(s.fps),
        bit_rate(s.bps),
        s.roce,
        s.flows_seen,
        running(s.psn_gaps, before(|p| p.psn_gaps)),
        running(s.retransmitted, before(|p| p.retransmitted)),
        running(s.ce, before(|p| p.ce)),
        running(s.cnps, before(|p| p.cnps)),
        if xoff.is_empty() { " -".into() } else { xoff },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outputs::live::snapshot::QpRow;
    use crate::source::KernelCounters;

    #[test]
    fn the_line_has_running_totals_the_worst_qp_and_the_kernel() {
        let mut s = Snapshot {
            fps: 1234.0,
            bps: 5.0e6,
            roce: 900,
            flows: 2,
            flows_seen: 2,
            psn_gaps: 3,
            kernel: Some(KernelCounters {
                received: 1000,
                dropped: 0,
                if_dropped: 0,
            }),
            ..Snapshot::default()
        };
        s.qps.push(QpRow {
            label: "10.0.0.5 > 10.0.0.2 qp 0x000213 vlan 100".into(),
            packets: 10,
            bytes: 1000,
            bps: 0.0,
            gaps: 3,
            retx: 4,
            naks: 1,
            ce: 0,
            cnps: 0,
            rtt_p50_us: None,
            rtt_p99_us: None,
        });
        let before = Snapshot {
            psn_gaps: 1,
            ..Snapshot::default()
        };
        let l = line(&s, Some(&before));
        assert!(l.starts_with("1.23k/s 5.00 Mb/s"), "{l}");
        assert!(l.contains("gaps 3 (+2) retx 0"), "{l}");
        assert!(
            l.contains("worst 10.0.0.5 > 10.0.0.2 qp 0x000213 vlan 100 (gaps 3 retx 4 NAK 1)"),
            "{l}"
        );
        assert!(
            l.contains("kernel 1000 received, 0 dropped, 0 if-dropped"),
            "{l}"
        );
        // A second later with nothing new: the totals stay.
        assert!(line(&s, Some(&s)).contains("gaps 3 retx 0"));
        assert!(!l.contains("outputs dropped"));
        // Outputs that could not keep up are named by their count.
        s.records_dropped = 42;
        assert!(
            line(&s, None).ends_with(" | outputs dropped 42 records"),
            "{}",
            line(&s, None)
        );
    }
}
