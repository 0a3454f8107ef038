//! Live capture: an interface until -c, --duration or Ctrl-C; then the report, or every frame
//! as it comes (`--packets`).

use std::io::{self, IsTerminal};
use std::time::{Duration, Instant};

use crate::analysis::verify::CaptureContext;
use crate::cli::{Config, Mode, ReportOptions};
use crate::common::destination::{self as output, Destination};
use crate::common::error::Error;
use crate::common::exit;
use crate::outputs::live::snapshot::Snapshots;
use crate::outputs::live::status::Status;
use crate::outputs::packets::{PacketPrinter, PrintSettings};
use crate::pipeline::diagnostics::Diagnostics;
use crate::pipeline::Pipeline;
use crate::run::sink::{ReportSink, SinkEnd};
use crate::source::live::{LiveConfig, LiveSource};

use super::*;

/// Time without any RoCE in a live capture before saying why that may be.
pub(super) const NO_ROCE_HINT_AFTER: Duration = Duration::from_secs(5);

/// A live capture's clock on an idle link: the wall clock less this much, the most a frame
/// may wait between the kernel's timestamp and the analysis.
pub(super) const IDLE_CLOCK_SLACK_NS: u64 = 200_000_000;

/// The clock of an idle link, told by an empty chunk: the wall time at which the capture
/// handed it over, less the slack. Not the time the analysis takes it: behind a queue of
/// chunks (a busy analysis; up to five of 50 ms each on a slow link, longer than the slack),
/// that is past the frames still queued, whose flows it would end before their last frames.
pub(super) fn idle_clock_ns(src: &crate::source::SourceStatus) -> u64 {
    src.handed_ns
        .unwrap_or_else(crate::common::clock::now_ns)
        .saturating_sub(IDLE_CLOCK_SLACK_NS)
}

/// Says once, after a while without RoCE, why a live capture may see none.
pub(super) struct NoRoceHint {
    started: Instant,
    given: bool,
}

impl NoRoceHint {
    /// The hint, once, when no RoCE came in the first seconds: where the display shows it
    /// (above the status line, which goes on; in the live view's findings).
    pub(super) fn check(&mut self, iface: &str, roce: u64) -> Option<String> {
        if self.given || roce > 0 || self.started.elapsed() < NO_ROCE_HINT_AFTER {
            return None;
        }
        self.given = true;
        Some(format!(
            "no RoCE seen on {iface} yet: the RDMA traffic may not have started; a hardware RDMA NIC bypasses the kernel, so its traffic is not visible here: capture on a switch mirror port, with ibdump, or with a libpcap built with RDMA sniffing on the RDMA device (e.g. mlx5_0). Soft-RoCE (rxe) traffic is visible on the netdev it is bound to."
        ))
    }
}

/// How a live report capture shows itself while it runs: the full-screen view when it has
/// standard output (a terminal, no JSON there, no --no-tui), else status lines on stderr.
pub(super) enum LiveDisplay {
    View(crate::outputs::live::terminal::LiveView),
    Lines(Box<Status>),
}

impl LiveDisplay {
    pub(super) fn open(
        opts: &ReportOptions,
        live: &LiveConfig,
        stop: &'static std::sync::atomic::AtomicBool,
    ) -> Self {
        let stdout_free = !matches!(opts.json, Some(Destination::Stdout))
            && !matches!(opts.events, Some(Destination::Stdout));
        if stdout_free && !live.no_tui && std::io::stdout().is_terminal() {
            if let Ok(v) = crate::outputs::live::terminal::LiveView::start(stop) {
                return LiveDisplay::View(v);
            }
        }
        LiveDisplay::Lines(Box::new(Status::start()))
    }

    pub(super) fn is_view(&self) -> bool {
        matches!(self, LiveDisplay::View(_))
    }

    pub(super) fn finish(self) -> Result<(), Error> {
        match self {
            LiveDisplay::View(v) => v
                .finish()
                .map_err(|e| Error::Live(format!("the live view: {e}"))),
            LiveDisplay::Lines(s) => {
                s.finish();
                Ok(())
            }
        }
    }
}

/// How often the live view gets a fresh snapshot.
pub(super) const SNAPSHOT_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Captures on an interface until -c, --duration or Ctrl-C; then the report (or, with
/// --packets, every frame as it comes).
pub(super) fn run_live(config: &Config, live: &LiveConfig) -> Result<u8, Error> {
    check_report_dir(config)?;
    check_outputs(config, &[])?;
    let mut diagnostics = Diagnostics::new(&live.interface, config.max_warnings);
    let source = LiveSource::open(live, &mut diagnostics)?;
    stderr_line!(
        "roce-sniff: listening on {}, link type {} ({}), filter: {}",
        source.interface,
        source.linktype,
        roce_parsers::link::linktype_name(source.linktype),
        if live.filter.is_some() {
            source.filter.as_str()
        } else {
            "the default (RoCEv2, RoCEv1, PFC and PAUSE; tagged or not)"
        }
    );
    let hint = NoRoceHint {
        started: Instant::now(),
        given: false,
    };
    match &config.mode {
        Mode::Packets { settings, out, .. } => {
            live_packets(config, source, diagnostics, settings, out, hint)
        }
        Mode::Report(opts) => live_report(config, live, opts, source, diagnostics, hint),
        Mode::Correlate { .. } => Err(Error::Usage(
            "--correlate reads capture files (-r), one per point".into(),
        )),
    }
}

/// `-i --packets`: every frame printed as it comes.
pub(super) fn live_packets(
    config: &Config,
    source: LiveSource,
    diagnostics: Diagnostics,
    settings: &PrintSettings,
    out: &Destination,
    mut hint: NoRoceHint,
) -> Result<u8, Error> {
    let iface = source.interface.clone();
    let printer = PacketPrinter::new(settings.clone(), output::open(Some(out))?);
    let mut pipeline = Pipeline::new(printer, diagnostics, config.threads);
    let decoder = pipeline.frame_decoder(LiveSource::NANOSECOND_TIMES);
    let stop = crate::common::signals::flag();
    let (end, consumed) = source.for_each_chunk(stop, decoder, |chunk, _, _| {
        pipeline.decoded(chunk)?;
        if let Some(h) = hint.check(&iface, pipeline.counts().roce) {
            stderr_line!("roce-sniff: {h}");
        }
        Ok(())
    });
    consumed.map_err(output_error(Some(out)))?;
    let finished = pipeline.finish().map_err(output_error(Some(out)))?;
    let mut diagnostics = finished.diagnostics;
    let device_failure = end.device_failure().map(|e| format!("{iface}: {e}"));
    record_problems(&mut diagnostics, end);
    diagnostics.finish();
    finished
        .sink
        .into_parts()
        .map_err(output_error(Some(out)))?;
    device_failure.map_or(Ok(exit::OK), |e| Err(Error::Live(e)))
}

/// `-i` with a report: the analysis and its outputs while the capture runs (the view or
/// status lines, events, metrics, the rolling dataset), the report at the end.
pub(super) fn live_report(
    config: &Config,
    live: &LiveConfig,
    opts: &ReportOptions,
    source: LiveSource,
    diagnostics: Diagnostics,
    hint: NoRoceHint,
) -> Result<u8, Error> {
    let iface = source.interface.clone();
    let stop = crate::common::signals::flag();
    let mut out = output::open(opts.json.as_ref())?;
    let ctx = CaptureContext {
        vlan_subinterface: source.vlan_subinterface.clone(),
    };
    let mut sink = ReportSink::new(opts.analysis, opts.expect, opts.decode);
    if let Some(cfg) = &opts.parquet {
        sink = sink.with_export(crate::outputs::parquet::Exporter::new(cfg.clone())?);
    }
    if let Some(out) = &opts.events {
        sink = sink.with_events(events_writer(out)?);
    }
    // Bound (and its address told on stderr) before the view takes the terminal: the line
    // came over the view's third row.
    let metrics = MetricsOutput::open(opts)?;
    let display = LiveDisplay::open(opts, live, stop);
    // The view has the terminal: warnings go to the report, not over the screen.
    let diagnostics = if display.is_view() {
        diagnostics.silent()
    } else {
        diagnostics
    };
    if metrics.is_some() {
        sink = sink.with_metrics();
    }
    // The view and the status lines show the findings the events tell.
    let sink = sink.keep_told_findings();
    let mut pipeline = Pipeline::new(sink, diagnostics, config.threads);
    let shown_filter = match &live.filter {
        Some(f) => f.clone(),
        None => "the default (RoCEv2, RoCEv1, PFC, PAUSE)".into(),
    };
    let mut watch = LiveWatch {
        snapshots: Snapshots::new(&iface, &shown_filter),
        last_snapshot: Instant::now(),
        iface: iface.clone(),
        hint,
        display,
        metrics,
    };
    let decoder = pipeline.frame_decoder(LiveSource::NANOSECOND_TIMES);
    let (mut end, fed) = source.for_each_chunk(stop, decoder, |chunk, frames, src| {
        pipeline.decoded(chunk)?;
        watch.after_chunk(&mut pipeline, frames, src)
    });
    let LiveWatch {
        display,
        mut metrics,
        ..
    } = watch;
    display.finish()?;
    stopped_by_output(&mut end, fed, pipeline.sink(), "capture")?;
    let mut finished = pipeline
        .finish()
        .map_err(output_error(opts.json.as_ref()))?;
    if let Some(m) = metrics.as_mut() {
        let kernel = end.live.as_ref().map(|l| crate::source::KernelCounters {
            received: l.received,
            dropped: l.dropped,
            if_dropped: l.if_dropped,
        });
        let status = crate::source::SourceStatus {
            kernel,
            ..Default::default()
        };
        m.update_from(&finished.counts, &mut finished.sink, &status);
    }
    let name = format!("live capture on {iface}");
    let device_failure = end.device_failure().map(|e| format!("{iface}: {e}"));
    let SinkEnd {
        report,
        plots,
        told_at_end,
        failed,
    } = finish_report(finished, end, name, &ctx, None)?;
    if let Some(m) = metrics.as_mut() {
        // The last scrape before the exit sees the findings told at the end.
        m.metrics.findings_told(&told_at_end);
        m.server.publish(m.metrics.text());
    }
    let code = render(&report, plots.as_ref(), opts, &mut out)?;
    // An output or the device that failed fails the run once everything is written, so that
    // a service manager restarts the monitor.
    failed
        .or(device_failure.map(Error::Live))
        .map_or(Ok(code), Err)
}

/// What a live report capture does after each chunk the analysis took: the clock of an idle
/// link, the findings told, the view or the status lines, the kernel's drops, the metrics.
pub(super) struct LiveWatch {
    iface: String,
    hint: NoRoceHint,
    snapshots: Snapshots,
    last_snapshot: Instant,
    display: LiveDisplay,
    metrics: Option<MetricsOutput>,
}

impl LiveWatch {
    pub(super) fn after_chunk(
        &mut self,
        pipeline: &mut Pipeline<ReportSink>,
        frames: usize,
        src: &crate::source::SourceStatus,
    ) -> io::Result<()> {
        // On an idle link (an empty chunk: the capture had nothing waiting) the clock goes on
        // with wall time, so that idle flows end without a frame to tell the time. A busy
        // link's frames tell it.
        if frames == 0 {
            let (sink, counts) = pipeline.sink_and_counts();
            sink.advance_clock(idle_clock_ns(src), counts)?;
        }
        let told = pipeline.sink_mut().take_told_findings();
        if !told.is_empty() {
            self.snapshots.findings_told(&told);
            if let Some(m) = self.metrics.as_mut() {
                m.metrics.findings_told(&told);
            }
        }
        let hint = self.hint.check(&self.iface, pipeline.counts().roce);
        if let Some(h) = &hint {
            self.snapshots.note("no_roce", h);
        }
        self.show(pipeline, hint.as_deref(), src);
        if let Some(k) = src.kernel {
            let now = crate::common::clock::now_ns();
            pipeline
                .sink_mut()
                .tell_drops(now, k.dropped, k.if_dropped)?;
        }
        if let Some(m) = self.metrics.as_mut().filter(|m| m.due()) {
            let counts = pipeline.counts().clone();
            m.update_from(&counts, pipeline.sink_mut(), src);
        }
        Ok(())
    }

    /// A fresh snapshot for the view (once a second) or the status line (when due).
    pub(super) fn show(
        &mut self,
        pipeline: &Pipeline<ReportSink>,
        hint: Option<&str>,
        src: &crate::source::SourceStatus,
    ) {
        let an = pipeline.sink().analyzer();
        let ack_rtt = |ids: &[u64]| an.ack_rtt_of(ids);
        match &mut self.display {
            LiveDisplay::View(v) => {
                if self.last_snapshot.elapsed() >= SNAPSHOT_EVERY {
                    self.last_snapshot = Instant::now();
                    let figures = an.figures();
                    let shown =
                        self.snapshots
                            .take(pipeline.counts(), &figures, &ack_rtt, src, v.sort());
                    v.offer(shown);
                }
            }
            LiveDisplay::Lines(status) => {
                if let Some(h) = hint {
                    status.note(&format!("roce-sniff: {h}"));
                }
                if status.due() {
                    let figures = an.figures();
                    let shown = self.snapshots.take(
                        pipeline.counts(),
                        &figures,
                        &ack_rtt,
                        src,
                        Default::default(),
                    );
                    status.show(shown);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty chunk handed over long before the analysis takes it (a queue behind a busy
    /// analysis) moves an idle link's clock to when it was handed over, not to now: frames
    /// queued after it keep their flows.
    #[test]
    pub(super) fn an_idle_link_clock_is_the_capture_hand_over_time_not_the_analysis_time() {
        let handed = crate::common::clock::now_ns() - 3_000_000_000;
        let status = crate::source::SourceStatus {
            handed_ns: Some(handed),
            ..Default::default()
        };
        assert_eq!(idle_clock_ns(&status), handed - IDLE_CLOCK_SLACK_NS);
        // Without a hand-over time (no live capture), the wall clock now.
        let before = crate::common::clock::now_ns() - IDLE_CLOCK_SLACK_NS;
        assert!(idle_clock_ns(&Default::default()) >= before);
    }
}
