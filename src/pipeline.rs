//! The work shared by files and live capture: each record is decoded, counted, and either
//! printed (`--packets`) or fed to the analysis (and verification); at the end the report is
//! rendered from the same analyzer whatever the source.

use std::io::{self, Write};

use rayon::prelude::*;
use roce_parsers::capture::Record;
use roce_parsers::DecodeError;

use crate::analysis::report_build::CaptureMeta;
use crate::analysis::Analyzer;
use crate::cli::Config;
use crate::decode::{self, DecodeCounts, Warnings};
use crate::error::Error;
use crate::model::LiveStats;
use crate::summary::PacketSummary;
use crate::verify::{CaptureContext, Verifier};
use crate::{packets, report, EXIT_OK, EXIT_VERIFY_FAILED};

/// Frames formatted per parallel task in `--packets` mode.
const PRINT_CHUNK: usize = 1024;

/// A chunk of `--packets` output, and the decode errors of its frames (frame number, error,
/// whether it counts as malformed) for the warnings.
type PrintedChunk = (Vec<u8>, Vec<(u64, DecodeError, bool)>);

/// Where decoded frames go, in capture order: counts, warnings, analysis, verification.
struct Sink {
    analyzer: Analyzer,
    verifier: Option<Verifier>,
    counts: DecodeCounts,
    warnings: Warnings,
}

impl Sink {
    fn take(&mut self, s: &PacketSummary) {
        self.counts.add_summary(s);
        self.warnings.error(s.frame_no, s.error, s.malformed);
        self.analyzer.feed(s);
        if let Some(v) = self.verifier.as_mut() {
            v.feed(s);
        }
    }
}

pub struct Pipeline<'c> {
    config: &'c Config,
    /// Decoding threads when more than one (results are identical either way).
    pool: Option<rayon::ThreadPool>,
    sink: Sink,
    /// Summaries decoded but not yet analysed: with threads, batch N is analysed while batch
    /// N+1 is decoded.
    pending: Vec<PacketSummary>,
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
    /// `source` names the input in warnings.
    pub fn new(config: &'c Config, source: &str) -> Self {
        let threads = if config.threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            config.threads
        };
        let pool = (threads > 1)
            .then(|| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .ok()
            })
            .flatten();
        Pipeline {
            config,
            pool,
            sink: Sink {
                analyzer: Analyzer::new(config.analysis),
                verifier: config.expect.any().then(|| Verifier::new(config.expect)),
                counts: DecodeCounts::default(),
                warnings: Warnings::new(config.max_warnings, source),
            },
            pending: Vec::new(),
            frame_no: 0,
            first_ts: None,
            line: String::with_capacity(256),
        }
    }

    /// A batch of records in capture order: decoded in parallel when there are threads,
    /// then counted and analysed (or printed) in order.
    pub fn records(&mut self, batch: &[Record<'_>], out: &mut dyn Write) -> io::Result<()> {
        let Some(pool) = self.pool.as_ref() else {
            for rec in batch {
                self.record(rec, out)?;
            }
            return Ok(());
        };
        let base = self.frame_no;
        if !self.config.packets {
            self.frame_no += batch.len() as u64;
            let previous = std::mem::take(&mut self.pending);
            let sink = &mut self.sink;
            let (decoded, ()) = pool.install(|| {
                rayon::join(
                    || {
                        batch
                            .par_iter()
                            .enumerate()
                            .map(|(i, rec)| {
                                PacketSummary::new(
                                    base + i as u64 + 1,
                                    rec.ts_ns,
                                    &decode::decode(rec),
                                )
                            })
                            .collect::<Vec<_>>()
                    },
                    || previous.iter().for_each(|s| sink.take(s)),
                )
            });
            self.pending = decoded;
            return Ok(());
        }
        let Some(first) = batch.first() else {
            return Ok(());
        };
        let start = *self.first_ts.get_or_insert(first.ts_ns);
        let config = self.config;
        let chunks: Vec<io::Result<PrintedChunk>> = pool.install(|| {
            batch
                .par_chunks(PRINT_CHUNK)
                .enumerate()
                .map(|(ci, chunk)| {
                    let mut buf = Vec::with_capacity(chunk.len() * 512);
                    let mut errors = Vec::new();
                    let mut line = String::with_capacity(256);
                    for (j, rec) in chunk.iter().enumerate() {
                        let frame_no = base + (ci * PRINT_CHUNK + j) as u64 + 1;
                        let frame = decode::decode(rec);
                        if let Some(e) = frame.error {
                            errors.push((frame_no, e, frame.is_malformed()));
                        }
                        if config.roce_only && frame.roce.is_none() && frame.mac_control.is_none() {
                            continue;
                        }
                        if config.json.is_some() {
                            packets::write_json_line(&mut buf, frame_no, rec.ts_ns, &frame)?;
                        } else {
                            packets::write_text_line(
                                &mut buf,
                                frame_no,
                                rec.ts_ns.saturating_sub(start),
                                &frame,
                                &mut line,
                            )?;
                        }
                    }
                    Ok((buf, errors))
                })
                .collect()
        });
        self.frame_no += batch.len() as u64;
        for chunk in chunks {
            let (buf, errors) = chunk?;
            for (frame_no, e, malformed) in errors {
                self.sink.warnings.error(frame_no, Some(e), malformed);
            }
            out.write_all(&buf)?;
        }
        Ok(())
    }

    /// Analyses what was decoded ahead.
    fn flush_pending(&mut self) {
        for s in std::mem::take(&mut self.pending) {
            self.sink.take(&s);
        }
    }

    /// The analyzer, for live status views.
    pub fn analyzer(&self) -> &Analyzer {
        &self.sink.analyzer
    }

    /// One record, in capture order.
    pub fn record(&mut self, rec: &Record<'_>, out: &mut dyn Write) -> io::Result<()> {
        self.flush_pending();
        self.frame_no += 1;
        let frame = decode::decode(rec);
        if !self.config.packets {
            let summary = PacketSummary::new(self.frame_no, rec.ts_ns, &frame);
            self.sink.take(&summary);
            return Ok(());
        }
        self.sink.counts.add(&frame);
        self.sink.warnings.frame(self.frame_no, &frame);
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
    pub fn finish(mut self, src: SourceInfo, out: &mut dyn Write) -> Result<u8, Error> {
        self.flush_pending();
        let sink = self.sink;
        sink.warnings.finish();
        let mut exit = EXIT_OK;
        if !self.config.packets {
            let (mut report, plots) = sink.analyzer.finish_with_plots(CaptureMeta {
                file: src.name.clone(),
                format: src.format,
                snaplen: src.snaplen,
                decode: sink.counts,
                warnings: src.warnings,
            });
            report.capture.live = src.live;
            report.verify = sink.verifier.map(|v| v.finish(&src.context));
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
                out.write_all(report::verify::render(v, &src.name).as_bytes())
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
