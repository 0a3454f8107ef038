//! The sink of the report mode: every frame goes to the analysis and, with `--expect-*`, to
//! the verification; at the end both produce their part of the report model.

use std::io;

use roce_parsers::capture::Record;
use roce_parsers::DecodeOptions;

use crate::analysis::report_build::CaptureMeta;
use crate::analysis::{AnalysisConfig, Analyzer};
use crate::decode::summarize;
use crate::error::Error;
use crate::export::Exporter;
use crate::model::{Expectations, PlotData, Report};
use crate::pipeline::{Position, Sink};
use crate::summary::PacketSummary;
use crate::verify::{CaptureContext, Verifier};

pub struct ReportSink {
    analyzer: Analyzer,
    verifier: Option<Verifier>,
    decode: DecodeOptions,
    /// `--parquet`: every frame and the report's tables.
    exporter: Option<Exporter>,
}

impl ReportSink {
    pub fn new(analysis: AnalysisConfig, expect: Expectations, decode: DecodeOptions) -> Self {
        ReportSink {
            analyzer: Analyzer::new(analysis),
            verifier: expect.any().then(|| Verifier::new(expect)),
            decode,
            exporter: None,
        }
    }

    /// Exports the capture as Parquet tables too.
    pub fn with_export(mut self, exporter: Exporter) -> Self {
        self.exporter = Some(exporter);
        self
    }

    /// The analysis so far (live status view).
    pub fn analyzer(&self) -> &Analyzer {
        &self.analyzer
    }

    /// Ends the analysis and the verification: the report, and what the plots need when
    /// timelines were collected.
    pub fn finish(
        self,
        meta: CaptureMeta,
        ctx: &CaptureContext,
    ) -> Result<(Report, Option<PlotData>), Error> {
        let end = self.analyzer.finish_all(meta);
        let mut report = end.report;
        report.verify = self.verifier.map(|v| v.finish(ctx));
        if let Some(e) = self.exporter {
            e.finish(&report, &end.order, &end.pauses)?;
        }
        Ok((report, end.plots))
    }
}

impl Sink for ReportSink {
    type Chunk = Vec<PacketSummary>;
    type Decoder = DecodeOptions;

    fn decoder(&self) -> DecodeOptions {
        self.decode
    }

    fn decode(options: &DecodeOptions, at: Position, records: &[Record<'_>]) -> Vec<PacketSummary> {
        records
            .iter()
            .enumerate()
            .map(|(i, rec)| summarize(at.first_frame + i as u64, rec, *options))
            .collect()
    }

    fn summaries(chunk: &Vec<PacketSummary>) -> &[PacketSummary] {
        chunk
    }

    fn consume(&mut self, chunk: Vec<PacketSummary>) -> io::Result<()> {
        for s in &chunk {
            self.analyzer.feed(s);
            if let Some(v) = self.verifier.as_mut() {
                v.feed(s);
            }
            if let Some(e) = self.exporter.as_mut() {
                e.frame(s, self.analyzer.last_outcome())
                    .map_err(|e| io::Error::other(e.to_string()))?;
            }
        }
        Ok(())
    }
}
