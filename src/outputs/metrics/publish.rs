//! `--metrics` as an output of a running capture: the figures brought up to date about once
//! a second and published to the server, the flows that end and the findings as they come
//! taken in between.

use std::time::{Duration, Instant};

use super::http::Publisher;
use super::Metrics;
use crate::common::error::Error;
use crate::model::{FlowEnded, NewFindings};
use crate::outputs::{CaptureEnd, Output, Tick, Wants};

/// How often a running capture's metrics are brought up to date.
pub const METRICS_EVERY: Duration = Duration::from_secs(1);

pub struct MetricsOutput {
    metrics: Metrics,
    publisher: Publisher,
    last: Option<Instant>,
    /// The report covers the whole capture (a file): its findings are the final ones. Live,
    /// it covers the open flows only, and the findings told over the run stay.
    report_is_whole: bool,
}

impl MetricsOutput {
    pub fn new(max_qps: usize, publisher: Publisher, report_is_whole: bool) -> Self {
        MetricsOutput {
            metrics: Metrics::new(max_qps),
            publisher,
            last: None,
            report_is_whole,
        }
    }

    fn due(&self) -> bool {
        self.last.is_none_or(|t| t.elapsed() >= METRICS_EVERY)
    }

    fn publish(&mut self) {
        self.publisher.publish(self.metrics.text());
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
        if let Some(c) = &ended.counters {
            self.metrics.flow_ended(c);
        }
        Ok(())
    }

    fn findings(&mut self, new: &NewFindings) -> Result<(), Error> {
        let told: Vec<_> = new.told().collect();
        self.metrics.findings_told(&told);
        Ok(())
    }

    fn tick(&mut self, tick: &Tick<'_>) -> Result<(), Error> {
        if self.due() {
            let figures = tick.analysis.figures();
            self.metrics.records_dropped(tick.dropped);
            self.metrics.update(tick.counts, &figures, tick.source);
            self.publish();
            self.last = Some(Instant::now());
        }
        Ok(())
    }

    /// The last figures, and the findings: the report's when it covers the whole capture.
    fn finish(mut self: Box<Self>, end: &CaptureEnd<'_>) -> Result<(), Error> {
        self.metrics.records_dropped(end.dropped);
        if let Some(figures) = end.figures {
            self.metrics.update(end.counts, figures, end.source);
        }
        if self.report_is_whole {
            self.metrics.report_findings(&end.report.findings);
        }
        self.publish();
        Ok(())
    }
}
