//! roce-sniff: a RoCEv2 capture analyzer. `main_with_args` is the whole program; the modules
//! are the stages of the pipeline: capture (blocks and records), decode and summary (frames),
//! pipeline (parallel decode, in-order analysis), analysis (flows, PSN, QoS, PFC, findings),
//! report (text, JSON, report directory), verify (`--expect-*`), live (libpcap), packets
//! (per-frame output), synth (crafted captures).
//!
//! There is no `unsafe` code: files are read in blocks rather than memory-mapped, so a file that
//! shrinks or grows under us is an early end, never a crash.
#![forbid(unsafe_code)]

pub mod analysis;
pub mod capture;
pub mod cli;
pub mod decode;
pub mod error;
pub mod live;
pub mod model;
pub mod packets;
pub mod pipeline;
pub mod report;
pub mod summary;
pub mod synth;
pub mod verify;

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::process::ExitCode;

use crate::capture::CaptureInput;
use crate::cli::{Config, Output, Source};
use crate::error::{is_broken_pipe, Error};
use crate::pipeline::{Pipeline, SourceInfo};

/// Exit codes (documented in --help and README).
pub const EXIT_OK: u8 = 0;
pub const EXIT_VERIFY_FAILED: u8 = 1;
pub const EXIT_ERROR: u8 = 2;

/// Parses the flags, runs, and maps the outcome to an exit code.
pub fn main_with_args<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let config = match Config::from_args(args) {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_ERROR } else { EXIT_OK };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match run(&config) {
        Ok(code) => ExitCode::from(code),
        Err(Error::Output { source, .. }) if is_broken_pipe(&source) => ExitCode::from(EXIT_OK),
        Err(e) => {
            eprintln!("roce-sniff: {e}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

/// Files at least this large get a progress bar (on a terminal).
const PROGRESS_MIN_BYTES: u64 = 64 << 20;

/// Opens where the output goes before the long work starts, so a bad path fails early.
fn open_output(out: &Option<Output>) -> Result<Box<dyn Write>, Error> {
    match out {
        Some(Output::File(path)) => {
            let f = File::create(path).map_err(|source| Error::Output {
                path: path.clone(),
                source,
            })?;
            Ok(Box::new(BufWriter::with_capacity(1 << 20, f)))
        }
        _ => Ok(Box::new(BufWriter::with_capacity(
            1 << 20,
            io::stdout().lock(),
        ))),
    }
}

pub fn run(config: &Config) -> Result<u8, Error> {
    match &config.source {
        Source::ListDevices => live::list_devices(),
        Source::Live(live) => {
            let mut out = open_output(&config.json)?;
            live::run(config, live, &mut out)
        }
        Source::File(path) => run_file(config, path),
    }
}

fn run_file(config: &Config, path: &str) -> Result<u8, Error> {
    let mut input = CaptureInput::open(path)?;
    if let Some(size) = input.size.filter(|&s| s >= PROGRESS_MIN_BYTES) {
        if std::io::stderr().is_terminal() {
            let bar = indicatif::ProgressBar::new(size);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{bar:40} {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta}",
                )
                .expect("static template"),
            );
            input = input.with_progress(bar);
        }
    }
    let name = input.name.clone();
    let mut out = open_output(&config.json)?;
    let mut pipeline = Pipeline::new(config, &name);
    let outcome = input.for_each_batch(|batch| pipeline.records(batch, &mut out));
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            let _ = out.flush();
            return Err(e);
        }
    };
    let mut warnings = Vec::new();
    if let Some(msg) = &outcome.truncated_tail {
        eprintln!("roce-sniff: warning: {name}: {msg}; every complete frame before it was read");
        warnings.push(msg.clone());
    }
    if let Some(msg) = &outcome.corrupt {
        eprintln!(
            "roce-sniff: warning: {name}: {msg}; reading stopped there, {} frames read before it",
            pipeline.frame_no
        );
        warnings.push(format!("{msg}; reading stopped there"));
    }
    pipeline.finish(
        SourceInfo {
            name,
            format: outcome.format,
            snaplen: outcome.snaplen,
            warnings,
            ..SourceInfo::default()
        },
        &mut out,
    )
}

/// Runs roce-sniff with `args` (after `-r -`) on a capture held in memory and returns what it
/// would print; for benchmarks, tests and fuzzing.
pub fn run_in_memory(data: &[u8], args: &[&str], timelines: bool) -> Result<Vec<u8>, Error> {
    let mut argv = vec!["roce-sniff", "-r", "-"];
    argv.extend_from_slice(args);
    let mut config = Config::from_args(argv).map_err(|e| Error::Usage(e.to_string()))?;
    config.analysis.timelines |= timelines;
    let input = CaptureInput::from_reader("<memory>", Box::new(io::Cursor::new(data.to_vec())));
    let mut out = Vec::new();
    let mut pipeline = Pipeline::new(&config, "<memory>");
    let outcome = input.for_each_batch(|batch| pipeline.records(batch, &mut out))?;
    pipeline.finish(
        SourceInfo {
            name: "<memory>".into(),
            format: outcome.format,
            snaplen: outcome.snaplen,
            warnings: outcome
                .truncated_tail
                .into_iter()
                .chain(outcome.corrupt)
                .collect(),
            ..SourceInfo::default()
        },
        &mut out,
    )?;
    Ok(out)
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
