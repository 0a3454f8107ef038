//! The sink of the report mode: every frame goes to the analysis and, with `--expect-*`, to
//! the verification; at the end both produce their part of the report model.

use std::io;

use roce_parsers::capture::Record;
use roce_parsers::DecodeOptions;

use crate::analysis::report_build::CaptureMeta;
use crate::analysis::{AnalysisConfig, Analyzer};
use crate::decode::summarize;
use crate::model::{Expectations, PlotData, Report};
use crate::pipeline::{Position, Sink};
use crate::summary::PacketSummary;
use crate::verify::{CaptureContext, Verifier};

pub struct ReportSink {
    analyzer: Analyzer,
    verifier: Option<Verifier>,
    decode: DecodeOptions,
}

impl ReportSink {
    pub fn new(analysis: AnalysisConfig, expect: Expectations, decode: DecodeOptions) -> Self {
        ReportSink {
            analyzer: Analyzer::new(analysis),
            verifier: expect.any().then(|| Verifier::new(expect)),
            decode,
        }
    }

    /// The analysis so far (live status view).
    pub fn analyzer(&self) -> &Analyzer {
        &self.analyzer
    }

    /// Ends the analysis and the verification: the report, and what the plots need when
    /// timelines were collected.
    pub fn finish(self, meta: CaptureMeta, ctx: &CaptureContext) -> (Report, Option<PlotData>) {
        let (mut report, plots) = self.analyzer.finish_with_plots(meta);
        report.verify = self.verifier.map(|v| v.finish(ctx));
        (report, plots)
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
        }
        Ok(())
    }
}
