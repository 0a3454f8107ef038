//! The program: flags -> configuration -> a source, a pipeline with the mode's sink -> the
//! rendered outputs -> an exit code.

use std::ffi::OsString;
use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::analysis::report_build::CaptureMeta;
use crate::analysis::verify::CaptureContext;
use crate::analysis::AnalysisConfig;
use crate::cli::{Config, Mode, ReportOptions, Source};
use crate::common::destination::{self as output, Destination};
use crate::common::error::{is_broken_pipe, Error};
use crate::common::exit;
use crate::decode::select::{SelectConfig, Selection};
use crate::model::{PlotData, Report};
use crate::outputs::live::snapshot::Snapshots;
use crate::outputs::live::status::Status;
use crate::outputs::packets::{PacketPrinter, PrintSettings};
use crate::outputs::report;
use crate::pipeline::diagnostics::Diagnostics;
use crate::pipeline::{Finished, Pipeline};
use crate::report_sink::{ReportSink, SinkEnd};
use crate::source::file::{FileSource, ReadMethod};
use crate::source::live::{self, LiveConfig, LiveSource};
use crate::source::Input;
use crate::source::{consumed, consumer_failed, SourceEnd};

/// Files at least this large get a progress bar (on a terminal).
const PROGRESS_MIN_BYTES: u64 = 64 << 20;
/// Time without any RoCE in a live capture before saying why that may be.
const NO_ROCE_HINT_AFTER: Duration = Duration::from_secs(5);

/// Parses the flags, runs, and maps the outcome to an exit code.
pub fn main_with_args<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    if let Some(what) = crate::cli::generate::requested(&args) {
        return match crate::cli::generate::write(what, &mut io::stdout().lock()) {
            Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
                stderr_line!("roce-sniff: --generate: {e}");
                ExitCode::from(exit::ERROR)
            }
            _ => ExitCode::from(exit::OK),
        };
    }
    let config = match Config::from_args(args) {
        Ok(c) => c,
        Err(e) if e.use_stderr() => {
            stderr_line!("roce-sniff: {}", one_line(&e));
            return ExitCode::from(exit::ERROR);
        }
        Err(e) => {
            // --help and --version.
            let _ = e.print();
            return ExitCode::from(exit::OK);
        }
    };
    match run(&config) {
        Ok(code) => ExitCode::from(code),
        Err(Error::Output { source, .. }) if is_broken_pipe(&source) => ExitCode::from(exit::OK),
        Err(e) => {
            stderr_line!("roce-sniff: {e}");
            ExitCode::from(exit::ERROR)
        }
    }
}

/// A flag error in one line, like every other error: clap's first line, without its prefix.
fn one_line(e: &clap::Error) -> String {
    let text = e.to_string();
    let first = text.lines().next().unwrap_or_default();
    let msg = first.strip_prefix("error: ").unwrap_or(first);
    format!("{msg} (roce-sniff --help lists the options)")
}

pub fn run(config: &Config) -> Result<u8, Error> {
    match &config.source {
        Source::ListDevices => live::list_devices(),
        Source::Live(live) => run_live(config, live),
        Source::Files(paths) if matches!(config.mode, Mode::Correlate { .. }) => {
            run_correlate(config, paths)
        }
        Source::Files(paths) => {
            check_report_dir(config)?;
            let paths = expand_directories(paths)?;
            let inputs: Vec<&str> = paths.iter().map(String::as_str).collect();
            check_outputs(config, &inputs)?;
            let selected;
            let config = match &config.select.finding_codes {
                Some(codes) => {
                    selected = with_finding_selection(config, &paths, codes)?;
                    &selected
                }
                None => config,
            };
            let source = open_inputs(&paths, config.read_method)?;
            let diagnostics = Diagnostics::new(&source.name(), config.max_warnings);
            match &config.mode {
                Mode::Packets {
                    settings,
                    out,
                    export,
                } => {
                    let writer = output::open(Some(out))?;
                    let mut settings = settings.clone();
                    settings.inputs = source.names();
                    let run = file_run(config);
                    packets_from_file(source, settings, writer, diagnostics, &run, export.as_ref())
                        .map(|(_, frames)| {
                            if frames == 0 {
                                exit::VERIFY_FAILED
                            } else {
                                exit::OK
                            }
                        })
                }
                Mode::Report(opts) => {
                    let mut writer = output::open(opts.json.as_ref())?;
                    report_from_file(source, opts, diagnostics, &file_run(config), &mut writer)
                }
                Mode::Correlate { .. } => unreachable!("handled above"),
            }
        }
    }
}

/// `--finding`: a first pass analyses the capture (with the filter and --qp, nothing
/// written) and learns what the findings of `codes` concern; the run proper keeps that.
fn with_finding_selection(
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

/// `--correlate`: each -r is a capture point (a directory: its rotated set), in path order.
fn run_correlate(config: &Config, paths: &[String]) -> Result<u8, Error> {
    let Mode::Correlate {
        json,
        decode,
        report_dir,
        fail_on,
    } = &config.mode
    else {
        unreachable!("called for --correlate");
    };
    if paths.iter().any(|p| p == "-") {
        return Err(Error::Usage(
            "--correlate reads each capture twice: give files, not standard input".into(),
        ));
    }
    check_report_dir(config)?;
    let mut points = Vec::with_capacity(paths.len());
    let mut all_inputs = Vec::new();
    for path in paths {
        let files = expand_directories(std::slice::from_ref(path))?;
        all_inputs.extend(files.clone());
        points.push(crate::correlate::PointFiles {
            name: path.clone(),
            files,
            read: config.read_method,
        });
    }
    let inputs: Vec<&str> = all_inputs.iter().map(String::as_str).collect();
    if let Some(Destination::File(out)) = json {
        output::refuse_input(out, &inputs)?;
    }
    if let Some(dir) = report_dir {
        for name in crate::outputs::report::correlation_dir::FILES {
            output::refuse_input(&dir.join(name), &inputs)?;
        }
    }
    let doc = crate::correlate::correlate(&points, *decode, config.max_warnings)?;
    if let Some(dir) = report_dir {
        crate::outputs::report::correlation_dir::write_dir(dir, &doc)?;
        stderr_line!(
            "roce-sniff: report written to {}",
            crate::common::error::shown(&dir.join("index.html").to_string_lossy())
        );
    }
    let mut writer = output::open(json.as_ref())?;
    let written = if json.is_some() {
        serde_json::to_writer_pretty(&mut writer, &doc)
            .map_err(io::Error::from)
            .and_then(|_| writeln!(writer))
    } else {
        writer.write_all(crate::outputs::report::correlation::render(&doc).as_bytes())
    };
    written
        .and_then(|_| writer.flush())
        .map_err(output_error(json.as_ref()))?;
    Ok(fail_on_code(fail_on.as_ref(), &doc.findings))
}

/// The exit code `--fail-on` gives `findings`, saying which finding failed the run.
fn fail_on_code(
    fail_on: Option<&crate::common::exit::FailOn>,
    findings: &[crate::model::Finding],
) -> u8 {
    let Some(f) = fail_on.and_then(|f| f.first_failing(findings)) else {
        return exit::OK;
    };
    stderr_line!(
        "roce-sniff: --fail-on: {} {} raised (exit code 1)",
        f.severity,
        f.code
    );
    exit::VERIFY_FAILED
}

fn file_run(config: &Config) -> FileRun {
    FileRun {
        threads: config.threads,
        select: config.select.clone(),
    }
}

/// Checks every output before any work: none may be an input, and the report directory
/// must be one that can be written.
fn check_outputs(config: &Config, inputs: &[&str]) -> Result<(), Error> {
    let (file, dir) = match &config.mode {
        Mode::Packets { out, .. } => (Some(out), None),
        Mode::Report(opts) => (opts.json.as_ref(), opts.report_dir.as_ref()),
        Mode::Correlate { json, .. } => (json.as_ref(), None::<&std::path::PathBuf>),
    };
    if let Some(Destination::File(path)) = file {
        output::refuse_input(path, inputs)?;
    }
    if let Some(path) = &config.select.write {
        output::refuse_input(path, inputs)?;
    }
    if let Mode::Report(ReportOptions {
        annotate: Some(path),
        ..
    }) = &config.mode
    {
        output::refuse_input(path, inputs)?;
    }
    if let Some(dir) = dir {
        for name in crate::outputs::report::dir::FILES {
            output::refuse_input(&dir.join(name), inputs)?;
        }
    }
    Ok(())
}

/// Checks the report directory before any work (before the files of a directory read are
/// even listed): see `output::check_report_dir`.
fn check_report_dir(config: &Config) -> Result<(), Error> {
    let dir = match &config.mode {
        Mode::Report(opts) => opts.report_dir.as_ref(),
        Mode::Correlate { report_dir, .. } => report_dir.as_ref(),
        Mode::Packets { .. } => None,
    };
    let Some(dir) = dir else {
        return Ok(());
    };
    let input_dirs: Vec<std::path::PathBuf> = match &config.source {
        Source::Files(paths) => paths
            .iter()
            .map(std::path::PathBuf::from)
            .filter(|p| p.is_dir())
            .collect(),
        _ => Vec::new(),
    };
    // A directory either kind of report wrote holds the other's too.
    let mut writes = crate::outputs::report::dir::file_names();
    writes.extend(crate::outputs::report::correlation_dir::FILES.map(String::from));
    output::check_report_dir(dir, &writes, &input_dirs)
}

/// The capture files of the -r arguments: a directory stands for the files in it (sorted by
/// name, as a rotated set is numbered).
fn expand_directories(paths: &[String]) -> Result<Vec<String>, Error> {
    let mut out = Vec::new();
    for p in paths {
        let dir = std::path::Path::new(p);
        if p == "-" || !dir.is_dir() {
            out.push(p.clone());
            continue;
        }
        let entries = std::fs::read_dir(dir).map_err(|source| Error::Input {
            path: p.clone(),
            source,
        })?;
        let mut files: Vec<String> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|f| f.is_file())
            .map(|f| f.to_string_lossy().into_owned())
            .collect();
        files.sort();
        files.retain(|f| match not_a_capture(f) {
            Some(why) => {
                stderr_line!(
                    "roce-sniff: warning: {}: {why}; skipped",
                    crate::common::error::shown(f)
                );
                false
            }
            None => true,
        });
        if files.is_empty() {
            return Err(Error::Usage(format!(
                "{}: a directory with no capture files",
                crate::common::error::shown(p)
            )));
        }
        out.extend(files);
    }
    if out.iter().filter(|p| *p == "-").count() > 0 && out.len() > 1 {
        return Err(Error::Usage(
            "standard input (-r -) is read alone, not with other files".into(),
        ));
    }
    Ok(out)
}

/// Why a file found in a directory is not read as a capture: not one at all (a README, the
/// report of an earlier run), or one with no frame yet (empty, or only its header: tcpdump is
/// still writing it). None for a capture, and for a compressed file (told when read).
fn not_a_capture(path: &str) -> Option<String> {
    use roce_parsers::capture::{CaptureParser, Next};
    use std::io::Read as _;
    const HEAD: u64 = 64 << 10;
    let mut head = Vec::new();
    let file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    io::Read::take(file, HEAD).read_to_end(&mut head).ok()?;
    if head.is_empty() {
        return Some("an empty file".into());
    }
    if head.starts_with(&[0x1f, 0x8b]) || head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        return None;
    }
    let (mut parser, mut at) = match CaptureParser::new(&head) {
        Ok(p) => p,
        Err(e) => return Some(e.to_string()),
    };
    if parser.format() == roce_parsers::capture::Format::Erf {
        let whole = len <= head.len() as u64;
        if let Some(Err(e)) = roce_parsers::capture::erf_verdict(&head, whole) {
            return Some(e.to_string());
        }
    }
    loop {
        match parser.next(&head[at..], at as u64) {
            Ok(Next::Record(..)) => return None,
            Ok(Next::Skip(used)) => at += used,
            // A head cut inside a record: a frame is on its way.
            Ok(Next::Incomplete { .. }) if len > head.len() as u64 || at < head.len() => {
                return None
            }
            Ok(Next::Incomplete { .. }) => return Some("a capture with no frame yet".into()),
            Err(_) => return None,
        }
    }
}

/// One capture, or several read as one.
fn open_inputs(paths: &[String], read: ReadMethod) -> Result<Input, Error> {
    if let [one] = paths {
        return Ok(Input::One(open_file(one, read)?));
    }
    let files = paths
        .iter()
        .map(|p| Ok(FileSource::open(p, read)?.stop_on(crate::common::signals::flag())))
        .collect::<Result<Vec<_>, Error>>()?;
    Ok(Input::of_files(files))
}

/// A capture file (or `-`), with a progress bar for large files on a terminal.
fn open_file(path: &str, read: ReadMethod) -> Result<FileSource, Error> {
    let source = FileSource::open(path, read)?.stop_on(crate::common::signals::flag());
    match source.size.filter(|&s| s >= PROGRESS_MIN_BYTES) {
        Some(size) if io::stderr().is_terminal() => {
            let bar = indicatif::ProgressBar::new(size);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{bar:40} {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta}",
                )
                .expect("static template"),
            );
            Ok(source.with_progress(bar))
        }
        _ => Ok(source),
    }
}

fn output_error(out: Option<&Destination>) -> impl Fn(io::Error) -> Error + '_ {
    move |source| Error::Output {
        path: output::name(out),
        source,
    }
}

/// `--packets` on a file: returns the output, flushed, and the frames printed.
fn packets_from_file<W: Write + Send>(
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
        let exporter = crate::outputs::parquet::Exporter::new(e.parquet.clone())?;
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
            counts,
            warnings,
            selection,
        };
        let end = analyzer.finish_all(meta);
        exporter.finish(&end.report, &end.order, &end.open_ids, &end.pauses)?;
    }
    Ok((out, frames))
}

/// The report of a file, rendered to `out` (and the report directory).
fn report_from_file(
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
    if let Some(cfg) = &opts.parquet {
        sink = sink.with_export(crate::outputs::parquet::Exporter::new(cfg.clone())?);
    }
    if let Some(out) = &opts.events {
        sink = sink.with_events(events_writer(out)?);
    }
    let mut metrics = MetricsOutput::open(opts)?;
    if metrics.is_some() {
        sink = sink.with_metrics();
    }
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
    if let Some(m) = metrics.as_mut() {
        m.update_from(&finished.counts, &mut finished.sink, &Default::default());
    }
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
        let plan = crate::outputs::annotate::CopyPlan {
            inputs: &inputs,
            origins: origins.as_ref(),
            kept: &track.kept,
            frames_read: track.read,
            notes,
        };
        let stats = crate::outputs::annotate::write_copy(out_file, plan)?;
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
    if let Some(mut m) = metrics {
        let _ = out.flush();
        m.serve_final(&report);
    }
    Ok(code)
}

/// How feeding the report sink ended (`fed`): an output the sink writes that failed (kept by
/// the sink, told at its end) stops the `what` ("reading", "capture") with the report written
/// all the same, and a warning; any other failure ends the run here.
fn stopped_by_output(
    end: &mut SourceEnd,
    fed: io::Result<()>,
    sink: &ReportSink,
    what: &str,
) -> Result<(), Error> {
    match fed {
        Err(e) if sink.has_failed() => {
            end.output_failed(what, &e);
            Ok(())
        }
        fed => fed.map_err(consumer_failed),
    }
}

/// `--events`: its output opened before any work, written line by line.
fn events_writer(out: &Destination) -> Result<crate::outputs::events::EventWriter, Error> {
    let w: Box<dyn Write + Send> = match out {
        Destination::File(path) => Box::new(crate::outputs::events::create_file(path).map_err(
            |source| Error::Output {
                path: path.clone(),
                source,
            },
        )?),
        Destination::Stdout => Box::new(io::stdout()),
    };
    Ok(crate::outputs::events::EventWriter::new(w))
}

/// `--metrics`: the server, bound before any work, and the figures it serves.
struct MetricsOutput {
    server: crate::outputs::metrics::http::MetricsServer,
    metrics: crate::outputs::metrics::Metrics,
    last: Option<Instant>,
}

/// A live capture's clock on an idle link: the wall clock less this much, the most a frame
/// may wait between the kernel's timestamp and the analysis.
const IDLE_CLOCK_SLACK_NS: u64 = 200_000_000;

/// The clock of an idle link, told by an empty chunk: the wall time at which the capture
/// handed it over, less the slack. Not the time the analysis takes it: behind a queue of
/// chunks (a busy analysis; up to five of 50 ms each on a slow link, longer than the slack),
/// that is past the frames still queued, whose flows it would end before their last frames.
fn idle_clock_ns(src: &crate::source::SourceStatus) -> u64 {
    src.handed_ns
        .unwrap_or_else(crate::common::clock::now_ns)
        .saturating_sub(IDLE_CLOCK_SLACK_NS)
}

/// How often a running capture's metrics are brought up to date.
const METRICS_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

impl MetricsOutput {
    fn open(opts: &ReportOptions) -> Result<Option<MetricsOutput>, Error> {
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
    fn update(
        &mut self,
        counts: &crate::decode::FrameCounts,
        an: &crate::analysis::Analyzer,
        src: &crate::source::SourceStatus,
    ) {
        self.metrics.update(counts, an, src);
        self.server.publish(self.metrics.text());
        self.last = Some(Instant::now());
    }

    /// Takes in the flows that ended, then brings the figures up to date.
    fn update_from(
        &mut self,
        counts: &crate::decode::FrameCounts,
        sink: &mut ReportSink,
        src: &crate::source::SourceStatus,
    ) {
        for (id, last) in sink.take_ended_for_metrics() {
            self.metrics.flow_ended(id, last);
        }
        self.metrics.findings_told(&sink.take_told_findings());
        self.update(counts, sink.analyzer(), src);
    }

    fn due(&self) -> bool {
        self.last.is_none_or(|t| t.elapsed() >= METRICS_EVERY)
    }

    /// The finished report's findings published, then the final figures served until SIGINT
    /// or SIGTERM, so that a scrape after the end gets them.
    fn serve_final(&mut self, report: &Report) {
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

/// How a file is read: the decoding threads and the selection (filter, --qp, -c, -w).
struct FileRun {
    threads: usize,
    select: SelectConfig,
}

/// Which frames a read kept, for `--annotate`'s second pass.
#[derive(Default)]
struct FeedTrack {
    kept: crate::outputs::annotate::FrameSet,
    /// Frames read, kept or not.
    read: u64,
}

impl FeedTrack {
    fn read(&mut self, batch: &[roce_parsers::capture::Record<'_>]) {
        if let Some(last) = batch.last() {
            self.read = self.read.max(last.frame);
        }
    }

    fn kept(&mut self, batch: &[roce_parsers::capture::Record<'_>]) {
        batch.iter().for_each(|r| self.kept.insert(r.frame));
    }
}

/// Feeds every record of `source` (or those selected) to the pipeline; `track` learns which.
/// A failure of the pipeline ends the read: it comes back beside what the read learned.
fn feed<S: crate::pipeline::Sink>(
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
    selection.finish()?;
    Ok((end, fed))
}

/// Each problem the source met becomes a warning.
fn record_problems(diagnostics: &mut Diagnostics, end: SourceEnd) {
    for p in end.problems {
        diagnostics.warn_with_hint(p.kind, p.message, &p.hint);
    }
}

/// Ends the analysis: the report model, and what the plots need.
fn finish_report(
    finished: Finished<ReportSink>,
    mut end: SourceEnd,
    file: String,
    ctx: &CaptureContext,
    origins: Option<&crate::source::origins::FrameOrigins>,
) -> Result<SinkEnd, Error> {
    let mut diagnostics = finished.diagnostics;
    let live = end.live.take();
    let selection = end.selection.take();
    let (format, snaplen) = (end.format, end.snaplen);
    record_problems(&mut diagnostics, end);
    let meta = CaptureMeta {
        file,
        format,
        snaplen,
        counts: finished.counts,
        warnings: diagnostics.finish(),
        selection,
    };
    let mut end = finished.sink.finish(meta, ctx, origins)?;
    end.report.capture.live = live;
    Ok(end)
}

/// Writes the report directory, then the JSON report, the verification table or the text
/// report; returns the exit code.
fn render(
    report: &Report,
    plots: Option<&PlotData>,
    opts: &ReportOptions,
    out: &mut dyn Write,
) -> Result<u8, Error> {
    if let Some(dir) = &opts.report_dir {
        match plots {
            Some(plots) => {
                note_widened_bin(opts.analysis.bin_ns, plots);
                let mut text = report::text::render(report);
                if let Some(v) = &report.verify {
                    text.push('\n');
                    text.push_str(&report::verify::render(v, &report.capture.file));
                }
                report::dir::write_dir(dir, report, &text, plots)?;
                stderr_line!(
                    "roce-sniff: report written to {}",
                    dir.join("index.html").display()
                );
            }
            None => stderr_line!(
                "roce-sniff: no frames, so no report directory was written to {}",
                dir.display()
            ),
        }
    }
    let written = if opts.json.is_some() {
        report::json::write_pretty(&mut *out, report).and_then(|_| out.write_all(b"\n"))
    } else if let Some(v) = &report.verify {
        out.write_all(report::verify::render(v, &report.capture.file).as_bytes())
    } else {
        out.write_all(report::text::render(report).as_bytes())
    };
    written
        .and_then(|_| out.flush())
        .map_err(output_error(opts.json.as_ref()))?;
    if let Some(Destination::File(path)) = &opts.json {
        stderr_line!(
            "roce-sniff: report written to {}",
            crate::common::error::shown(&path.to_string_lossy())
        );
    }
    let failed = report.verify.as_ref().is_some_and(|v| !v.passed);
    // A capture without a single frame proves nothing: a script must not read it as a pass.
    let empty = report.capture.packets == 0;
    let failing = fail_on_code(opts.fail_on.as_ref(), &report.findings) != exit::OK;
    Ok(if failed || empty || failing {
        exit::VERIFY_FAILED
    } else {
        exit::OK
    })
}

/// Says when an explicit --bin was widened to keep the timelines within their bin limit.
fn note_widened_bin(asked_ns: Option<u64>, plots: &PlotData) {
    if let Some(asked) = asked_ns.filter(|&a| a != plots.bin_ns) {
        stderr_line!(
            "roce-sniff: note: --bin {} would give more than {} bins over this capture; the timelines use {} bins",
            report::plots::human_ns(asked),
            crate::analysis::timeline::MAX_BINS,
            report::plots::human_ns(plots.bin_ns)
        );
    }
}

/// Says once, after a while without RoCE, why a live capture may see none.
struct NoRoceHint {
    started: Instant,
    given: bool,
}

impl NoRoceHint {
    /// The hint, once, when no RoCE came in the first seconds: where the display shows it
    /// (above the status line, which goes on; in the live view's findings).
    fn check(&mut self, iface: &str, roce: u64) -> Option<String> {
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
enum LiveDisplay {
    View(crate::outputs::live::terminal::LiveView),
    Lines(Box<Status>),
}

impl LiveDisplay {
    fn open(
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

    fn is_view(&self) -> bool {
        matches!(self, LiveDisplay::View(_))
    }

    fn finish(self) -> Result<(), Error> {
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
const SNAPSHOT_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Captures on an interface until -c, --duration or Ctrl-C; then the report (or, with
/// --packets, every frame as it comes).
fn run_live(config: &Config, live: &LiveConfig) -> Result<u8, Error> {
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
fn live_packets(
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
fn live_report(
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
struct LiveWatch {
    iface: String,
    hint: NoRoceHint,
    snapshots: Snapshots,
    last_snapshot: Instant,
    display: LiveDisplay,
    metrics: Option<MetricsOutput>,
}

impl LiveWatch {
    fn after_chunk(
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
    fn show(
        &mut self,
        pipeline: &Pipeline<ReportSink>,
        hint: Option<&str>,
        src: &crate::source::SourceStatus,
    ) {
        let an = pipeline.sink().analyzer();
        match &mut self.display {
            LiveDisplay::View(v) => {
                if self.last_snapshot.elapsed() >= SNAPSHOT_EVERY {
                    self.last_snapshot = Instant::now();
                    v.offer(self.snapshots.take(pipeline.counts(), an, src, v.sort()));
                }
            }
            LiveDisplay::Lines(status) => {
                if let Some(h) = hint {
                    status.note(&format!("roce-sniff: {h}"));
                }
                if status.due() {
                    let shown = self
                        .snapshots
                        .take(pipeline.counts(), an, src, Default::default());
                    status.show(shown);
                }
            }
        }
    }
}

/// Runs roce-sniff with `args` (after `-r -`) on a capture held in memory and returns what it
/// would print; for benchmarks, tests and fuzzing.
pub fn run_in_memory(data: &[u8], args: &[&str], timelines: bool) -> Result<Vec<u8>, Error> {
    run_in_memory_files(&[data], args, timelines)
}

/// As `run_in_memory`, with several captures read as one (merged by time, as `-r a -r b`).
pub fn run_in_memory_files(
    files: &[&[u8]],
    args: &[&str],
    timelines: bool,
) -> Result<Vec<u8>, Error> {
    let mut argv = vec!["roce-sniff", "-r", "-"];
    argv.extend_from_slice(args);
    let config = Config::from_args(argv).map_err(|e| Error::Usage(e.to_string()))?;
    let name = "<memory>";
    let source = Input::of_files(
        files
            .iter()
            .enumerate()
            .map(|(i, data)| {
                let name = if files.len() == 1 {
                    name.to_string()
                } else {
                    format!("<memory {i}>")
                };
                FileSource::from_reader(&name, Box::new(io::Cursor::new(data.to_vec())))
            })
            .collect(),
    );
    let diagnostics = Diagnostics::new(name, config.max_warnings);
    match &config.mode {
        Mode::Packets { settings, .. } => packets_from_file(
            source,
            settings.clone(),
            Vec::new(),
            diagnostics,
            &file_run(&config),
            None,
        )
        .map(|(out, _)| out),
        Mode::Report(opts) => {
            let mut opts = opts.clone();
            opts.analysis.timelines |= timelines;
            let mut out = Vec::new();
            report_from_file(source, &opts, diagnostics, &file_run(&config), &mut out)?;
            Ok(out)
        }
        Mode::Correlate { .. } => Err(Error::Usage(
            "--correlate reads capture files (-r), one per point".into(),
        )),
    }
}

/// The whole analysis (reader, decoder, analyzer with timelines, verification) on a capture in
/// memory, as the report's JSON: the fuzz target's entry point.
pub fn analyze_bytes(data: &[u8]) -> Result<String, Error> {
    let out = run_in_memory(
        data,
        &[
            "--json",
            "--expect-pcp",
            "3",
            "--expect-dscp",
            "26",
            "--threads",
            "1",
            "--max-warnings",
            "0",
        ],
        true,
    )?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty chunk handed over long before the analysis takes it (a queue behind a busy
    /// analysis) moves an idle link's clock to when it was handed over, not to now: frames
    /// queued after it keep their flows.
    #[test]
    fn an_idle_link_clock_is_the_capture_hand_over_time_not_the_analysis_time() {
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
