//! The program, one file per mode (`file`, `live`, `correlate`), each reading straight through:
//! settings, outputs, work, finish, exit code. What the modes share is here: flags to a
//! configuration and the exit code (`main_with_args`), the checks of the outputs before any
//! work, the report's end and its rendering.

mod annotate;
mod correlate;
mod file;
mod inputs;
mod live;
mod metrics;
pub mod packets;
pub mod sink;

use std::ffi::OsString;
use std::io::{self, Write};
use std::process::ExitCode;

use crate::analysis::report_build::CaptureMeta;
use crate::analysis::verify::CaptureContext;
use crate::cli::{Config, Mode, ReportOptions, Source};
use crate::common::destination::{self, Destination};
use crate::common::error::{is_broken_pipe, Error};
use crate::common::exit;
use crate::common::paint::Paint;
use crate::common::queue::WhenFull;
use crate::model::{DroppedRecords, PlotData, Report, WarningKind};
use crate::outputs::events::{EventWriter, EventsOutput};
use crate::outputs::parquet::Exporter;
use crate::outputs::report;
use crate::pipeline::diagnostics::Diagnostics;
use crate::pipeline::Finished;
use crate::run::sink::{ReportSink, SinkEnd};
use crate::source::file::FileSource;
use crate::source::Input;
use crate::source::{consumer_failed, SourceEnd};
use std::sync::Arc;

use correlate::run_correlate;
use file::{file_run, packets_from_file, report_from_file, with_finding_selection};
use inputs::{expand_directories, open_inputs};
use live::run_live;
use metrics::{open_metrics, serve_final};

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

/// A flag error in one line, like every other error: clap's first line, without its prefix,
/// and the flag or value clap suggests for a misspelt one.
fn one_line(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let text = e.to_string();
    let first = text.lines().next().unwrap_or_default();
    let msg = first.strip_prefix("error: ").unwrap_or(first);
    let suggested = [ContextKind::SuggestedArg, ContextKind::SuggestedValue]
        .into_iter()
        .find_map(|kind| match e.get(kind) {
            Some(ContextValue::String(s)) => Some(s.clone()),
            Some(ContextValue::Strings(v)) => v.first().cloned(),
            _ => None,
        });
    let tip = suggested.map_or(String::new(), |s| format!("; did you mean `{s}`?"));
    // A value's own error says where the values are listed, a choice names them; a flag's
    // points to the options.
    let see = match (e.kind(), e.get(ContextKind::ValidValue)) {
        (_, Some(ContextValue::Strings(values))) => format!(" (one of {})", values.join(", ")),
        (clap::error::ErrorKind::ValueValidation, _) => String::new(),
        _ => " (roce-sniff --help lists the options)".into(),
    };
    format!("{msg}{tip}{see}")
}

pub fn run(config: &Config) -> Result<u8, Error> {
    match &config.source {
        Source::ListDevices => crate::source::live::list_devices(),
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
                    let writer = destination::open(Some(out))?;
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
                    let mut writer = destination::open(opts.json.as_ref())?;
                    report_from_file(source, opts, diagnostics, &file_run(config), &mut writer)
                }
                Mode::Correlate { .. } => unreachable!("handled above"),
            }
        }
    }
}

/// The exit code `--fail-on` gives `findings`, saying which finding failed the run.
fn fail_on_code(fail_on: Option<&crate::cli::FailOn>, findings: &[crate::model::Finding]) -> u8 {
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

/// Checks every output before any work: none may be an input, and the report directory
/// must be one that can be written.
fn check_outputs(config: &Config, inputs: &[&str]) -> Result<(), Error> {
    let (file, dir) = match &config.mode {
        Mode::Packets { out, .. } => (Some(out), None),
        Mode::Report(opts) => (opts.json.as_ref(), opts.report_dir.as_ref()),
        Mode::Correlate { json, .. } => (json.as_ref(), None::<&std::path::PathBuf>),
    };
    if let Some(Destination::File(path)) = file {
        destination::refuse_input(path, inputs)?;
    }
    if let Some(path) = &config.select.write {
        destination::refuse_input(path, inputs)?;
    }
    if let Mode::Report(ReportOptions {
        annotate: Some(path),
        ..
    }) = &config.mode
    {
        destination::refuse_input(path, inputs)?;
    }
    if let Some(dir) = dir {
        for name in crate::outputs::report::dir::FILES {
            destination::refuse_input(&dir.join(name), inputs)?;
        }
    }
    Ok(())
}

/// Checks the report directory before any work (before the files of a directory read are
/// even listed): see `destination::check_report_dir`.
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
    destination::check_report_dir(dir, &writes, &input_dirs)
}

fn output_error(out: Option<&Destination>) -> impl Fn(io::Error) -> Error + '_ {
    move |source| Error::Output {
        path: destination::name(out),
        source,
    }
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

/// `--events`: its output opened before any work, written line by line on a thread of its
/// own; `when_full`: what a record that finds its queue full does (live: dropped and counted
/// in `dropped`; a file: it waits).
/// Adds the outputs that take records (`--parquet`, `--events`) to `sink`; a full queue does
/// as `when_full` says (a live capture drops and counts, a file waits).
fn with_record_outputs(
    mut sink: ReportSink,
    opts: &ReportOptions,
    when_full: WhenFull,
) -> Result<ReportSink, Error> {
    if let Some(cfg) = &opts.parquet {
        let exporter = Exporter::new(cfg.clone(), when_full, sink.dropped())?;
        sink = sink.with_output(Box::new(exporter));
    }
    if let Some(out) = &opts.events {
        let events = events_output(out, when_full, sink.dropped())?;
        sink = sink.with_output(events);
    }
    Ok(sink)
}

fn events_output(
    out: &Destination,
    when_full: WhenFull,
    dropped: Arc<DroppedRecords>,
) -> Result<Box<EventsOutput>, Error> {
    let w: Box<dyn Write + Send> = match out {
        Destination::File(path) => Box::new(crate::outputs::events::create_file(path).map_err(
            |source| Error::Output {
                path: path.clone(),
                source,
            },
        )?),
        Destination::Stdout => Box::new(io::stdout()),
    };
    let output =
        EventsOutput::start(EventWriter::new(w), when_full, dropped).map_err(|source| {
            Error::Output {
                path: "--events".into(),
                source,
            }
        })?;
    Ok(Box::new(output))
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
    let mut live = end.live.take();
    if let Some(l) = live.as_mut() {
        l.records_dropped = finished.sink.dropped().by_output();
    }
    let selection = end.selection.take();
    let damaged = std::mem::take(&mut end.damaged);
    let (format, snaplen) = (end.format, end.snaplen);
    record_problems(&mut diagnostics, end);
    if let Some(w) = finished.sink.dropped().warning() {
        diagnostics.warn(WarningKind::RecordsDropped, w);
    }
    let meta = CaptureMeta {
        file,
        format,
        snaplen,
        counts: finished.counts,
        warnings: diagnostics.finish(),
        selection,
    };
    // What the capture told of itself last: a live capture's kernel counters.
    let source = crate::model::SourceStatus {
        kernel: live.as_ref().map(|l| crate::model::KernelCounters {
            received: l.received,
            dropped: l.dropped,
            if_dropped: l.if_dropped,
        }),
        ..Default::default()
    };
    let mut end = finished.sink.finish(meta, ctx, origins, &source)?;
    end.report.capture.live = live;
    if !damaged.is_empty() {
        if let Some(v) = end.report.verify.as_mut() {
            over_damage(v, &damaged);
        }
        end.report.capture.damaged = Some(damaged);
    }
    Ok(end)
}

/// A verification over a damaged capture: the frames in the damage were never checked, so
/// it is UNVERIFIABLE, never PASS; a violation among the frames read is still a FAIL.
fn over_damage(v: &mut crate::model::VerifyReport, damaged: &crate::model::CaptureDamage) {
    use crate::model::Verdict;
    if v.verdict == Verdict::Pass {
        v.verdict = Verdict::Unverifiable;
    }
    v.passed = false;
    v.damaged = Some(crate::outputs::report::verify::damage_text(damaged));
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
                note_bin(opts.analysis.bin_ns, plots);
                let mut text = report::text::render(report, Paint::PLAIN);
                if let Some(v) = &report.verify {
                    text.push('\n');
                    text.push_str(&report::verify::render(
                        v,
                        &report.capture.file,
                        Paint::PLAIN,
                    ));
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
        out.write_all(report::verify::render(v, &report.capture.file, opts.paint).as_bytes())
    } else {
        out.write_all(report::text::render(report, opts.paint).as_bytes())
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

/// Says when an explicit --bin was widened to keep the timelines within their bin limit, or
/// is longer than the traffic (every flow a dot on a long empty axis).
fn note_bin(asked_ns: Option<u64>, plots: &PlotData) {
    let Some(asked) = asked_ns else { return };
    let span = plots.end_ns.saturating_sub(plots.start_ns);
    if asked != plots.bin_ns {
        stderr_line!(
            "roce-sniff: note: --bin {} would give more than {} bins over this capture; the timelines use {} bins",
            crate::common::units::duration_ns(asked),
            crate::analysis::timeline::MAX_BINS,
            crate::common::units::duration_ns(plots.bin_ns)
        );
    } else if asked > span {
        stderr_line!(
            "roce-sniff: note: --bin {} is longer than the capture's {} of traffic, so the plots show one bin; leave --bin out for the automatic one (up to 500 bins)",
            crate::common::units::duration_ns(asked),
            crate::common::units::duration_ns(span)
        );
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
