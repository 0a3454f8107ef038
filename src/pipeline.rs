//! The work shared by files and live capture: each record is decoded, counted, and either
//! printed (`--packets`) or fed to the analysis (and verification); at the end the report is
//! rendered from the same analyzer whatever the source.

use std::io::{self, Write};

use roce_parsers::capture::Record;

use crate::analysis::report_build::CaptureMeta;
use crate::analysis::Analyzer;
use crate::cli::Config;
use crate::decode::{self, DecodeCounts, Warnings};
use crate::error::Error;
use crate::report::LiveStats;
use crate::summary::PacketSummary;
use crate::verify::{CaptureContext, Verifier};
use crate::{packets, report, verify, EXIT_OK, EXIT_VERIFY_FAILED};

pub struct Pipeline<'c> {
    config: &'c Config,
    pub analyzer: Analyzer,
    verifier: Option<Verifier>,
    pub counts: DecodeCounts,
    warnings: Warnings,
    pub frame_no: u64,
    first_ts: Option<u64>,
    line: String,
}

/// How the capture ended and what its source knows, for the report.
#[derive(Debug, Default)]
pub struct SourceInfo {
    pub name: String,
    pub format: Option<&'static str>,
    pub snaplen: u32,
    pub warnings: Vec<String>,
    pub context: CaptureContext,
    pub live: Option<LiveStats>,
}

impl<'c> Pipeline<'c> {
    pub fn new(config: &'c Config) -> Self {
        Pipeline {
            config,
            analyzer: Analyzer::new(config.analysis),
            verifier: config.expect.any().then(|| Verifier::new(config.expect)),
            counts: DecodeCounts::default(),
            warnings: Warnings::new(config.max_warnings),
            frame_no: 0,
            first_ts: None,
            line: String::with_capacity(256),
        }
    }

    /// One record, in capture order.
    pub fn record(&mut self, rec: &Record<'_>, out: &mut dyn Write) -> io::Result<()> {
        self.frame_no += 1;
        let frame = decode::decode(rec);
        self.counts.add(&frame);
        self.warnings.frame(self.frame_no, &frame);
        if !self.config.packets {
            let summary = PacketSummary::new(self.frame_no, rec.ts_ns, &frame);
            self.analyzer.feed(&summary);
            if let Some(v) = self.verifier.as_mut() {
                v.feed(&summary);
            }
            return Ok(());
        }
        if self.config.roce_only && frame.roce.is_none() && frame.mac_control.is_none() {
            return Ok(());
        }
        if self.config.json.is_some() {
            packets::write_json_line(out, self.frame_no, rec.ts_ns, &frame)
        } else {
            let start = *self.first_ts.get_or_insert(rec.ts_ns);
            packets::write_text_line(
                out,
                self.frame_no,
                rec.ts_ns.saturating_sub(start),
                &frame,
                &mut self.line,
            )
        }
    }

    /// Renders the report (or the verification) and returns the exit code.
    pub fn finish(self, src: SourceInfo, out: &mut dyn Write) -> Result<u8, Error> {
        self.warnings.finish();
        let mut exit = EXIT_OK;
        if !self.config.packets {
            let (mut report, plots) = self.analyzer.finish_with_plots(CaptureMeta {
                file: src.name.clone(),
                format: src.format,
                snaplen: src.snaplen,
                decode: self.counts,
                warnings: src.warnings,
            });
            report.capture.live = src.live;
            report.verify = self.verifier.map(|v| v.finish(&src.context));
            if report.verify.as_ref().is_some_and(|v| !v.passed) {
                exit = EXIT_VERIFY_FAILED;
            }
            if let (Some(dir), Some(plots)) = (&self.config.report_dir, plots.as_ref()) {
                let text = report::text::render(&report);
                report::dir::write_dir(dir, &report, &text, plots)?;
                eprintln!(
                    "roce-sniff: report written to {}",
                    dir.join("index.html").display()
                );
            } else if let Some(dir) = &self.config.report_dir {
                eprintln!(
                    "roce-sniff: no frames, so no report directory was written to {}",
                    dir.display()
                );
            }
            let written = if self.config.json.is_some() {
                serde_json::to_writer_pretty(&mut *out, &report)
                    .map_err(io::Error::from)
                    .and_then(|_| out.write_all(b"\n"))
            } else if let Some(v) = &report.verify {
                out.write_all(verify::render(v, &src.name).as_bytes())
            } else {
                out.write_all(report::text::render(&report).as_bytes())
            };
            written.map_err(|source| Error::Output {
                path: "<output>".into(),
                source,
            })?;
        }
        out.flush().map_err(|source| Error::Output {
            path: "<output>".into(),
            source,
        })?;
        Ok(exit)
    }
}
