//! The live capture's screen as an output: the full-screen view when it may take the
//! terminal, else status lines on stderr; a snapshot about once a second, the findings as
//! they are told, the hint when no RoCE comes.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use super::hint::NoRoceHint;
use super::snapshot::Snapshots;
use super::status::Status;
use super::terminal::LiveView;
use crate::common::error::Error;
use crate::model::NewFindings;
use crate::outputs::{CaptureEnd, Output, Tick, Wants};

/// How often the view gets a fresh snapshot.
pub const SNAPSHOT_EVERY: Duration = Duration::from_secs(1);

/// Where the screen is drawn.
enum Display {
    View(LiveView),
    Lines(Box<Status>),
}

pub struct LiveScreen {
    iface: String,
    hint: NoRoceHint,
    snapshots: Snapshots,
    last_snapshot: Instant,
    display: Display,
}

impl LiveScreen {
    /// The view when `may_take_terminal` (standard output is free and a terminal, and no
    /// `--no-tui`) and it starts, else status lines. `filter`: the capture filter as shown.
    pub fn open(
        iface: &str,
        filter: &str,
        may_take_terminal: bool,
        stop: &'static AtomicBool,
    ) -> Self {
        let view = may_take_terminal
            .then(|| LiveView::start(stop).ok())
            .flatten();
        LiveScreen {
            iface: iface.into(),
            hint: NoRoceHint::default(),
            snapshots: Snapshots::new(iface, filter),
            last_snapshot: Instant::now(),
            display: match view {
                Some(v) => Display::View(v),
                None => Display::Lines(Box::new(Status::start())),
            },
        }
    }

    /// Whether the full-screen view has the terminal (warnings then go to the report only).
    pub fn is_view(&self) -> bool {
        matches!(self.display, Display::View(_))
    }
}

impl Output for LiveScreen {
    fn wants(&self) -> Wants {
        Wants {
            findings: true,
            ..Wants::default()
        }
    }

    fn findings(&mut self, new: &NewFindings) -> Result<(), Error> {
        let told: Vec<_> = new.told().collect();
        self.snapshots.findings_told(&told);
        Ok(())
    }

    /// A fresh snapshot for the view (once a second) or the status line (when due).
    fn tick(&mut self, tick: &Tick<'_>) -> Result<(), Error> {
        let hint = self.hint.check(&self.iface, tick.counts.roce);
        if let Some(h) = &hint {
            self.snapshots.note("no_roce", h);
        }
        match &mut self.display {
            Display::View(v) => {
                if self.last_snapshot.elapsed() >= SNAPSHOT_EVERY {
                    self.last_snapshot = Instant::now();
                    let shown = self.snapshots.take(
                        tick.counts,
                        tick.analysis,
                        tick.source,
                        tick.dropped,
                        v.sort(),
                    );
                    v.offer(shown);
                }
            }
            Display::Lines(status) => {
                if let Some(h) = &hint {
                    status.note(&format!("roce-sniff: {h}"));
                }
                if status.due() {
                    let shown = self.snapshots.take(
                        tick.counts,
                        tick.analysis,
                        tick.source,
                        tick.dropped,
                        Default::default(),
                    );
                    status.show(shown);
                }
            }
        }
        Ok(())
    }

    /// The terminal given back (or the last status line ended) before the report is written.
    fn finish(self: Box<Self>, _end: &CaptureEnd<'_>) -> Result<(), Error> {
        match self.display {
            Display::View(v) => v
                .finish()
                .map_err(|e| Error::Live(format!("the live view: {e}"))),
            Display::Lines(s) => {
                s.finish();
                Ok(())
            }
        }
    }
}
