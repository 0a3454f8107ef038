//! The live status view: once a second, rates and what is new since the last line (gaps,
//! retransmissions, CE, CNPs, PFC XOFF per priority, capture drops). A live view on a
//! terminal, plain lines on stderr otherwise.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::analysis::{Analyzer, Totals};
use crate::decode::FrameCounts;
use crate::source::SourceStatus;

const STATUS_EVERY: Duration = Duration::from_secs(1);

pub struct Status {
    bar: Option<ProgressBar>,
    last: Instant,
    last_packets: u64,
    last_bytes: u64,
    last_totals: Totals,
}

impl Status {
    pub fn start() -> Self {
        let bar = (std::io::stdout().is_terminal() && std::io::stderr().is_terminal()).then(|| {
            let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
                    .expect("static template"),
            );
            b
        });
        Status {
            bar,
            last: Instant::now(),
            last_packets: 0,
            last_bytes: 0,
            last_totals: Totals::default(),
        }
    }

    pub fn due(&self) -> bool {
        self.last.elapsed() >= STATUS_EVERY
    }

    /// PFC XOFF frames per priority since the last line, as ` p3:12`, or ` -`.
    fn new_xoff(&self, t: &Totals) -> String {
        let pfc: String = (0..8)
            .filter_map(|prio| {
                let n = t.pfc_xoff[prio] - self.last_totals.pfc_xoff[prio];
                (n > 0).then(|| format!(" p{prio}:{n}"))
            })
            .collect();
        if pfc.is_empty() {
            " -".into()
        } else {
            pfc
        }
    }

    pub fn tick(&mut self, c: &FrameCounts, an: &Analyzer, source: &SourceStatus) {
        let now = Instant::now();
        let t = an.totals;
        let secs = now.duration_since(self.last).as_secs_f64().max(1e-3);
        let pps = (c.frames - self.last_packets) as f64 / secs;
        let gbps = (c.bytes - self.last_bytes) as f64 * 8.0 / secs / 1e9;
        let drops = source.capture_drops.map_or("?".into(), |d| d.to_string());
        let msg = format!(
            "{:.0} pkt/s {:.3} Gb/s | RoCE {} in {} flows | new: gaps {} retx {} CE {} CNP {} | PFC XOFF{} | capture drops {}",
            pps,
            gbps,
            c.roce,
            an.flow_count(),
            t.psn_gaps - self.last_totals.psn_gaps,
            t.retransmitted - self.last_totals.retransmitted,
            t.ce - self.last_totals.ce,
            t.cnps - self.last_totals.cnps,
            self.new_xoff(&t),
            drops
        );
        match &self.bar {
            Some(b) => b.set_message(msg),
            None => eprintln!("roce-sniff: {msg}"),
        }
        self.last = now;
        self.last_packets = c.frames;
        self.last_bytes = c.bytes;
        self.last_totals = t;
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
