//! `--metrics`: the server, bound before any work, and the figures it serves.

use std::time::Instant;

use crate::cli::ReportOptions;
use crate::common::error::Error;
use crate::model::Report;
use crate::run::sink::ReportSink;

/// `--metrics`: the server, bound before any work, and the figures it serves.
pub(super) struct MetricsOutput {
    pub(super) server: crate::outputs::metrics::http::MetricsServer,
    pub(super) metrics: crate::outputs::metrics::Metrics,
    last: Option<Instant>,
}

/// How often a running capture's metrics are brought up to date.
pub(super) const METRICS_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

impl MetricsOutput {
    pub(super) fn open(opts: &ReportOptions) -> Result<Option<MetricsOutput>, Error> {
        let Some(cfg) = &opts.metrics else {
            return Ok(None);
        };
        let server =
            crate::outputs::metrics::http::MetricsServer::bind(&cfg.addr).map_err(|e| {
                Error::Usage(format!("--metrics={}: cannot listen there: {e}", cfg.addr))
            })?;
        stderr_line!("roce-sniff: metrics at http://{}/metrics", server.addr);
        Ok(Some(MetricsOutput {
            server,
            metrics: crate::outputs::metrics::Metrics::new(cfg.max_qps),
            last: None,
        }))
    }

    /// Brings the figures up to date and publishes them.
    pub(super) fn update(
        &mut self,
        counts: &crate::decode::FrameCounts,
        figures: &crate::model::Figures,
        src: &crate::source::SourceStatus,
    ) {
        self.metrics.update(counts, figures, src);
        self.server.publish(self.metrics.text());
        self.last = Some(Instant::now());
    }

    /// Takes in the flows that ended, then brings the figures up to date.
    pub(super) fn update_from(
        &mut self,
        counts: &crate::decode::FrameCounts,
        sink: &mut ReportSink,
        src: &crate::source::SourceStatus,
    ) {
        for last in sink.take_ended_for_metrics() {
            self.metrics.flow_ended(&last);
        }
        self.metrics.findings_told(&sink.take_told_findings());
        self.update(counts, &sink.analyzer().figures(), src);
    }

    pub(super) fn due(&self) -> bool {
        self.last.is_none_or(|t| t.elapsed() >= METRICS_EVERY)
    }

    /// The finished report's findings published, then the final figures served until SIGINT
    /// or SIGTERM, so that a scrape after the end gets them.
    pub(super) fn serve_final(&mut self, report: &Report) {
        self.metrics.report_findings(&report.findings);
        self.server.publish(self.metrics.text());
        let stop = crate::common::signals::flag();
        // An earlier Ctrl-C ended the read: the report is out, and so is the wait.
        if stop.swap(false, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        stderr_line!(
            "roce-sniff: the capture is analysed; serving its final metrics at http://{}/metrics until SIGINT or SIGTERM",
            self.server.addr
        );
        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}
