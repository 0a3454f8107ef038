//! Reading capture files: the report of the frames read, or each frame printed (`--packets`).

use std::io::{self, Write};

use crate::analysis::report_build::CaptureMeta;
use crate::analysis::verify::CaptureContext;
use crate::analysis::AnalysisConfig;
use crate::cli::{Config, Mode, ReportOptions};
use crate::common::error::Error;
use crate::decode::select::{SelectConfig, Selection};
use crate::outputs::packets::PrintSettings;
use crate::outputs::parquet::Exporter;
use crate::outputs::{CaptureEnd, Output};
use crate::pipeline::diagnostics::Diagnostics;
use crate::pipeline::Pipeline;
use crate::run::packets::PacketPrinter;
use crate::run::sink::{ReportSink, SinkEnd};
use crate::source::Input;
use crate::source::{consumed, SourceEnd};

use super::*;

/// `--finding`: a first pass analyses the capture (with the filter and --qp, nothing
/// written) and learns what the findings of `codes` concern; the run proper keeps that.
pub(super) fn with_finding_selection(
    config: &Config,
    paths: &[String],
    codes: &[crate::model::FindingCode],
) -> Result<Config, Error> {
    let source = open_inputs(paths, config.read_method)?;
    let name = source.name();
    let (analysis, decode) = match &config.mode {
        Mode::Report(opts) => (opts.analysis, opts.decode),
        Mode::Packets {
            settings, export, ..
        } => (
            export
                .as_ref()
                .map_or_else(AnalysisConfig::default, |e| e.analysis),
            settings.decode,
        ),
        Mode::Correlate { .. } => unreachable!("--finding is refused with --correlate"),
    };
    let analysis = AnalysisConfig {
        several_points: matches!(source, Input::Merged(_)),
        timelines: false,
        notes: false,
        ..analysis
    };
    let sink = ReportSink::new(analysis, Default::default(), decode);
    let diagnostics = Diagnostics::new(&name, 0).silent();
    let mut pipeline = Pipeline::new(sink, diagnostics, config.threads);
    let first_pass = SelectConfig {
        count: None,
        write: None,
        finding_codes: None,
        finding: None,
        ..config.select.clone()
    };
    let mut end = feed(source, &mut pipeline, &first_pass, None).and_then(consumed)?;
    let finished = pipeline.finish().map_err(output_error(None))?;
    let origins = end.origins.take();
    let ctx = CaptureContext::default();
    let report = finish_report(finished, end, name, &ctx, origins.as_ref())?.report;
    let selection = crate::decode::select::FindingSelection::of(&report, codes);
    let names: Vec<&str> = codes.iter().map(|c| c.name()).collect();
    if selection.is_empty() {
        stderr_line!(
            "roce-sniff: --finding {}: no such finding in this capture, so no frame is kept",
            names.join(",")
        );
    } else {
        let mut kept = Vec::new();
        if !selection.flows.is_empty() {
            kept.push(format!(
                "{} flows (both directions of each connection)",
                selection.flows.len()
            ));
        }
        if !selection.frames.is_empty() {
            kept.push(format!("{} frames cited", selection.frames.len()));
        }
        if !selection.storms.is_empty() {
            kept.push(format!(
                "the pause frames of {}",
                crate::common::words::plural(selection.storms.len() as u64, "PFC storm")
            ));
        }
        stderr_line!(
            "roce-sniff: --finding {}: keeping {}",
            names.join(","),
            kept.join(" and ")
        );
    }
    let mut config = config.clone();
    config.select.finding = Some(selection);
    Ok(config)
}

pub(super) fn file_run(config: &Config) -> FileRun {
    FileRun {
        threads: config.threads,
        shards: config.shards,
        select: config.select.clone(),
    }
}

/// `--packets` on a file: returns the output, flushed, and the frames printed.
pub(super) fn packets_from_file<W: Write + Send>(
    source: Input,
    settings: PrintSettings,
    out: W,
    diagnostics: Diagnostics,
    run: &FileRun,
    export: Option<&crate::cli::PacketsExport>,
) -> Result<(W, u64), Error> {
    let name = source.name();
    let mut printer = PacketPrinter::new(settings, out);
    if let Some(e) = export {
        let analysis = AnalysisConfig {
            several_points: matches!(source, Input::Merged(_)),
            ..e.analysis
        };
        let exporter = Exporter::new(e.parquet.clone(), WhenFull::Wait, Default::default())?;
        printer = printer.with_export(crate::analysis::Analyzer::new(analysis), exporter);
    }
    let mut pipeline = Pipeline::new(printer, diagnostics, run.threads);
    let end = feed(source, &mut pipeline, &run.select, None).and_then(consumed)?;
    let finished = pipeline.finish().map_err(output_error(None))?;
    let (counts, mut diagnostics) = (finished.counts, finished.diagnostics);
    let (format, snaplen) = (end.format, end.snaplen);
    let frames = counts.frames;
    if frames == 0 {
        if let Some(s) = &end.selection {
            stderr_line!("roce-sniff: {}", s.nothing_kept());
        }
    }
    let selection = end.selection.clone();
    record_problems(&mut diagnostics, end);
    let warnings = diagnostics.finish();
    let (out, export) = finished.sink.into_parts().map_err(output_error(None))?;
    if let Some((analyzer, exporter)) = export {
        let meta = CaptureMeta {
            file: name,
            format,
            snaplen,
            counts: counts.clone(),
            warnings,
            selection,
        };
        let end = analyzer.finish_all(meta);
        Box::new(exporter).finish(&CaptureEnd {
            report: &end.report,
            order: &end.order,
            open_ids: &end.open_ids,
            pauses: &end.pauses,
            last_ts: counts.last_ts,
            counts: &counts,
            source: &Default::default(),
            figures: None,
            dropped: &Default::default(),
        })?;
    }
    Ok((out, frames))
}

/// The report of a file, rendered to `out` (and the report directory).
pub(super) fn report_from_file(
    source: Input,
    opts: &ReportOptions,
    diagnostics: Diagnostics,
    run: &FileRun,
    out: &mut dyn Write,
) -> Result<u8, Error> {
    let name = source.name();
    let analysis = AnalysisConfig {
        several_points: matches!(source, Input::Merged(_)),
        ..opts.analysis
    };
    let mut sink = ReportSink::new(analysis, opts.expect, opts.decode);
    sink = with_record_outputs(sink, opts, WhenFull::Wait)?;
    let metrics_server = match open_metrics(opts, true)? {
        Some((server, output)) => {
            sink = sink.with_output(output);
            Some(server)
        }
        None => None,
    };
    sink = sink.in_shards(run.shards);
    let inputs = source.paths();
    let annotate = match &opts.annotate {
        Some(path) => Some(crate::outputs::annotate::AnnotateOutput::create(path)?),
        None => None,
    };
    let mut track = annotate.as_ref().map(|_| FeedTrack::default());
    let mut pipeline = Pipeline::new(sink, diagnostics, run.threads);
    let (mut end, fed) = feed(source, &mut pipeline, &run.select, track.as_mut())?;
    stopped_by_output(
        &mut end,
        fed.and(pipeline.drain()),
        pipeline.sink(),
        "reading",
    )?;
    let mut finished = pipeline
        .finish()
        .map_err(output_error(opts.json.as_ref()))?;
    let notes = finished.sink.take_notes();
    let origins = end.origins.take();
    let ctx = CaptureContext::default();
    let SinkEnd {
        report,
        plots,
        failed,
        ..
    } = finish_report(finished, end, name, &ctx, origins.as_ref())?;
    let code = render(&report, plots.as_ref(), opts, out)?;
    if let (Some(out_file), Some(track), Some(mut notes)) = (annotate, track, notes) {
        let _ = out.flush();
        notes.add_findings(&report.findings);
        let plan = super::annotate::CopyPlan {
            inputs: &inputs,
            origins: origins.as_ref(),
            kept: &track.kept,
            frames_read: track.read,
            notes,
        };
        let stats = super::annotate::write_copy(out_file, plan)?;
        if let Some(path) = &opts.annotate {
            stderr_line!(
                "roce-sniff: {} frames, {} comments, written to {}",
                stats.frames,
                stats.comments,
                crate::common::error::shown(&path.to_string_lossy())
            );
        }
    }
    if let Some(failed) = failed {
        // The report is written; the output that failed fails the run.
        let _ = out.flush();
        return Err(failed);
    }
    if let Some(server) = metrics_server {
        let _ = out.flush();
        serve_final(&server);
    }
    Ok(code)
}

/// How a file is read: the decoding threads and the selection (filter, --qp, -c, -w).
pub(super) struct FileRun {
    threads: usize,
    /// Shards of the analysis (`--shards`).
    shards: usize,
    select: SelectConfig,
}

/// Which frames a read kept, for `--annotate`'s second pass.
#[derive(Default)]
pub(super) struct FeedTrack {
    kept: super::annotate::FrameSet,
    /// Frames read, kept or not.
    read: u64,
}

impl FeedTrack {
    pub(super) fn read(&mut self, batch: &[roce_parsers::capture::Record<'_>]) {
        if let Some(last) = batch.last() {
            self.read = self.read.max(last.frame);
        }
    }

    pub(super) fn kept(&mut self, batch: &[roce_parsers::capture::Record<'_>]) {
        batch.iter().for_each(|r| self.kept.insert(r.frame));
    }
}

/// Feeds every record of `source` (or those selected) to the pipeline; `track` learns which.
/// A failure of the pipeline ends the read: it comes back beside what the read learned.
pub(super) fn feed<S: crate::pipeline::Sink>(
    source: Input,
    pipeline: &mut Pipeline<S>,
    select: &SelectConfig,
    mut track: Option<&mut FeedTrack>,
) -> Result<(SourceEnd, io::Result<()>), Error> {
    if !select.any() {
        return source.read(|batch, status| {
            if let Some(t) = track.as_deref_mut() {
                t.read(batch);
                t.kept(batch);
            }
            pipeline.records(batch, status)
        });
    }
    let mut selection = Selection::new(select.clone())?;
    let mut failure = None;
    let read = source.read(|batch, status| {
        if let Some(first) = batch.first() {
            pipeline.capture_starts_at(first.ts_ns);
        }
        match selection.keep(batch) {
            Ok(kept) => {
                if let Some(t) = track.as_deref_mut() {
                    t.read(batch);
                    t.kept(&kept);
                }
                pipeline.records(&kept, status)
            }
            Err(e) => {
                failure = Some(e);
                Err(io::Error::other("selection failed"))
            }
        }
    });
    if let Some(e) = failure {
        return Err(e);
    }
    let (mut end, fed) = read?;
    end.selection = Some(selection.stats());
    if let Some(w) = selection.finish(end.snaplen)? {
        stderr_line!(
            "roce-sniff: wrote {} to {}",
            crate::common::words::plural(w.frames, "frame"),
            crate::common::error::shown(&w.path.to_string_lossy())
        );
    }
    Ok((end, fed))
}
