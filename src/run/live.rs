//! Live capture: an interface until -c, --duration or Ctrl-C; then the report, or every frame
//! as it comes (`--packets`).

use std::io::{self, IsTerminal};

use crate::analysis::verify::CaptureContext;
use crate::cli::{Config, Mode, ReportOptions};
use crate::common::destination::{self, Destination};
use crate::common::error::Error;
use crate::common::exit;
use crate::outputs::live::hint::NoRoceHint;
use crate::outputs::live::screen::LiveScreen;
use crate::outputs::packets::PrintSettings;
use crate::pipeline::diagnostics::Diagnostics;
use crate::pipeline::Pipeline;
use crate::run::packets::PacketPrinter;
use crate::run::sink::{ReportSink, SinkEnd};
use crate::source::live::{LiveConfig, LiveSource};

use super::*;

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
            "the default (RoCEv2, RoCEv1, PFC and PAUSE, bare or in the mirror sessions and tunnels roce-sniff decodes; tagged or not)"
        }
    );
    match &config.mode {
        Mode::Packets { settings, out, .. } => {
            live_packets(config, source, diagnostics, settings, out)
        }
        Mode::Report(opts) => live_report(config, live, opts, source, diagnostics),
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
) -> Result<u8, Error> {
    let iface = source.interface.clone();
    let mut hint = NoRoceHint::default();
    let printer = PacketPrinter::new(settings.clone(), destination::open(Some(out))?);
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
) -> Result<u8, Error> {
    let iface = source.interface.clone();
    let stop = crate::common::signals::flag();
    let mut out = destination::open(opts.json.as_ref())?;
    let ctx = CaptureContext {
        vlan_subinterface: source.vlan_subinterface.clone(),
    };
    let mut sink = ReportSink::new(opts.analysis, opts.expect, opts.decode);
    sink = with_record_outputs(sink, opts, WhenFull::Drop)?;
    // Bound (and its address told on stderr) before the view takes the terminal: the line
    // came over the view's third row. The server serves until the run ends.
    let _metrics_server = match open_metrics(opts, false)? {
        Some((server, output)) => {
            sink = sink.with_output(output);
            Some(server)
        }
        None => None,
    };
    let screen = open_screen(&iface, live, opts, stop);
    // The view has the terminal: warnings go to the report, not over the screen.
    let diagnostics = if screen.is_view() {
        diagnostics.silent()
    } else {
        diagnostics
    };
    let sink = sink.with_output(Box::new(screen));
    let mut pipeline = Pipeline::new(sink, diagnostics, config.threads);
    let decoder = pipeline.frame_decoder(LiveSource::NANOSECOND_TIMES);
    let (mut end, fed) = source.for_each_chunk(stop, decoder, |chunk, frames, src| {
        pipeline.decoded(chunk)?;
        after_chunk(&mut pipeline, frames, src)
    });
    stopped_by_output(&mut end, fed, pipeline.sink(), "capture")?;
    let finished = pipeline
        .finish()
        .map_err(output_error(opts.json.as_ref()))?;
    let name = format!("live capture on {iface}");
    let device_failure = end.device_failure().map(|e| format!("{iface}: {e}"));
    let SinkEnd {
        report,
        plots,
        failed,
    } = finish_report(finished, end, name, &ctx, None)?;
    let code = render(&report, plots.as_ref(), opts, &mut out)?;
    // An output or the device that failed fails the run once everything is written, so that
    // a service manager restarts the monitor.
    failed
        .or(device_failure.map(Error::Live))
        .map_or(Ok(code), Err)
}

/// The live view when standard output is a terminal with nothing else to write there (no
/// JSON, no events) and no --no-tui, else status lines on stderr.
fn open_screen(
    iface: &str,
    live: &LiveConfig,
    opts: &ReportOptions,
    stop: &'static std::sync::atomic::AtomicBool,
) -> LiveScreen {
    let stdout_free = !matches!(opts.json, Some(Destination::Stdout))
        && !matches!(opts.events, Some(Destination::Stdout));
    let may_take_terminal = stdout_free && !live.no_tui && std::io::stdout().is_terminal();
    let shown_filter = match &live.filter {
        Some(f) => f.clone(),
        None => "the default (RoCE, PFC, PAUSE, tunnels)".into(),
    };
    LiveScreen::open(iface, &shown_filter, may_take_terminal, stop)
}

/// After each chunk the analysis took: the clock of an idle link, then the outputs see the
/// state now (the screen, the kernel's drops, the metrics).
fn after_chunk(
    pipeline: &mut Pipeline<ReportSink>,
    frames: usize,
    src: &crate::source::SourceStatus,
) -> io::Result<()> {
    let (sink, counts) = pipeline.sink_and_counts();
    // On an idle link (an empty chunk: the capture had nothing waiting) the clock goes on
    // with wall time, so that idle flows end without a frame to tell the time. A busy link's
    // frames tell it.
    if frames == 0 {
        sink.advance_clock(idle_clock_ns(src), counts)?;
    }
    sink.tick(counts, src)
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

/// The live view's snapshots as a real analysis feeds them: rates of flows that end and
/// start, the troubled QPs first, the findings told.
#[cfg(test)]
mod snapshot_tests {
    use crate::analysis::testing::analysed;
    use crate::analysis::AnalysisConfig;
    use crate::analysis::Analyzer;
    use crate::model::{KernelCounters, SourceStatus};
    use crate::outputs::live::snapshot::{Snapshot, Snapshots, SortBy, FINDINGS_KEPT};

    /// sample.pcap analysed, and its findings as the events tell them: the report's, by
    /// their codes.
    fn sample_told() -> (
        Analyzer,
        crate::decode::FrameCounts,
        Vec<crate::model::Told>,
    ) {
        let (an, counts) = analysed("sample.pcap");
        let meta = crate::analysis::report_build::CaptureMeta {
            counts: counts.clone(),
            ..Default::default()
        };
        let mut watch = crate::analysis::watch::FindingWatch::default();
        let told = watch
            .untold(0, &an.findings_now(&meta, false))
            .expect("findings")
            .told()
            .collect();
        (an, counts, told)
    }

    /// Flows end and new ones take their indexes (a churn with a 1 ms flow timeout): each
    /// row's rate is its own flow's bytes since the last snapshot, 0 before it for a new flow,
    /// never another flow's that had its index.
    #[test]
    fn rates_follow_each_flow_while_flows_end_and_indexes_move() {
        use roce_testgen::churn::{write_churn, ChurnConfig};
        let mut data = Vec::new();
        write_churn(
            &mut data,
            ChurnConfig {
                qps: 400,
                ..ChurnConfig::default()
            },
        )
        .unwrap();
        let an = Analyzer::new(AnalysisConfig {
            flow_timeout_ns: Some(1_000_000),
            keep_ended: false,
            ..AnalysisConfig::default()
        });
        let mut snaps = Snapshots::new("eth0", "the default");
        let mut first: Option<Snapshot> = None;
        let (an, counts) = crate::analysis::testing::feed(&data, an, |an, counts| {
            if counts.frames == 700 {
                first = Some(snaps.take(
                    counts,
                    &*an,
                    &SourceStatus::default(),
                    &Default::default(),
                    SortBy::Trouble,
                ));
            }
        });
        let first = first.expect("a snapshot mid-way");
        let second = snaps.take(
            &counts,
            &an,
            &SourceStatus::default(),
            &Default::default(),
            SortBy::Trouble,
        );
        let before = |label: &str| {
            first
                .qps
                .iter()
                .find(|r| r.label == label)
                .map_or(0, |r| r.bytes)
        };
        // bps = new bytes * 8 / seconds between the snapshots: one number of seconds for all.
        let secs: Vec<f64> = second
            .qps
            .iter()
            .filter(|r| r.bytes > before(&r.label))
            .map(|r| (r.bytes - before(&r.label)) as f64 * 8.0 / r.bps)
            .collect();
        assert!(secs.len() > 10, "{} rows with new bytes", secs.len());
        let new_flows = second.qps.iter().filter(|r| before(&r.label) == 0).count();
        assert!(new_flows > 10, "{new_flows} new flows");
        assert!(
            secs.iter().all(|s| (s / secs[0] - 1.0).abs() < 1e-9),
            "{secs:?}"
        );
    }

    #[test]
    fn a_snapshot_puts_the_troubled_qp_first_and_shows_the_findings_told() {
        let (an, counts, told) = sample_told();
        let mut snaps = Snapshots::new("eth0", "the default");
        snaps.findings_told(&told);
        let kernel = Some(KernelCounters {
            received: counts.frames,
            dropped: 0,
            if_dropped: 0,
        });
        let status = SourceStatus {
            kernel,
            ..SourceStatus::default()
        };
        let s = snaps.take(&counts, &an, &status, &Default::default(), SortBy::Trouble);
        assert_eq!((s.frames, s.roce, s.flows), (14623, 13822, 8));
        assert_eq!(s.qps[0].label, "10.0.0.5 > 10.0.0.2 qp 0x000213 vlan 100");
        assert_eq!((s.qps[0].gaps, s.qps[0].retx), (1, 4));
        // Every QP's totals add up to the analysis's.
        assert_eq!(s.qps.iter().map(|q| q.ce).sum::<u64>(), s.ce);
        let codes: Vec<&str> = s.findings.iter().map(|f| f.code).collect();
        for code in [
            "psn_loss",
            "retransmissions",
            "ce_without_cnp",
            "pfc_pause_roce_priority",
        ] {
            assert!(codes.contains(&code), "{code}: {codes:?}");
        }
        assert!(
            !codes.contains(&"nak"),
            "the view's own codes are gone: {codes:?}"
        );
        assert_eq!(s.findings_raised, codes.len());
        let p3 = s.pfc.iter().find(|p| p.priority == 3).unwrap();
        assert!(p3.roce && p3.xoff == 200 && p3.paused_ns > 0, "{p3:?}");
        // Raised once: the next snapshot adds none, and rates fall to nothing.
        let again = snaps.take(&counts, &an, &status, &Default::default(), SortBy::Packets);
        assert_eq!(again.findings.len(), s.findings.len());
        assert!(again.qps.windows(2).all(|w| w[0].packets >= w[1].packets));
        assert!(again.qps.iter().all(|q| q.bps == 0.0));
    }

    #[test]
    fn a_view_left_running_keeps_the_newest_findings_and_counts_them_all() {
        let (an, counts, told) = sample_told();
        let mut snaps = Snapshots::new("eth0", "the default");
        let rounds = FINDINGS_KEPT / told.len() + 2;
        for round in 0..rounds {
            let mut these = told.clone();
            for t in &mut these {
                t.finding.message = format!("round {round}");
            }
            snaps.findings_told(&these);
        }
        let s = snaps.take(
            &counts,
            &an,
            &SourceStatus::default(),
            &Default::default(),
            SortBy::Trouble,
        );
        assert_eq!(s.findings_raised, rounds * told.len());
        assert_eq!(s.findings.len(), FINDINGS_KEPT);
        assert_eq!(s.findings[0].text, format!("round {}", rounds - 1));
        assert_eq!(snaps.findings.len(), FINDINGS_KEPT);
    }
}
