//! roce-sniff: a RoCEv2 capture analyzer. `main_with_args` is the whole program; the modules
//! are the stages of ARCHITECTURE.md: capture (records), decode (frames), packets (per-frame
//! output).

pub mod analysis;
pub mod capture;
pub mod cli;
pub mod decode;
pub mod error;
pub mod live;
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
    let mut pipeline = Pipeline::new(config);
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

/// Runs the whole analysis (reader, decoder, analyzer with timelines, verification) on a capture
/// held in memory and returns the report's JSON; used by the fuzz target and tests.
pub fn analyze_bytes(data: &[u8]) -> Result<String, Error> {
    let config = Config::from_args([
        "roce-sniff",
        "-r",
        "-",
        "--json",
        "--expect-pcp",
        "3",
        "--expect-dscp",
        "26",
    ])
    .map_err(|e| Error::Usage(e.to_string()))?;
    let mut config = config;
    config.analysis.timelines = true;
    let input = CaptureInput::from_reader("<memory>", Box::new(io::Cursor::new(data.to_vec())));
    let mut out = Vec::new();
    let mut pipeline = Pipeline::new(&config);
    let outcome = input.for_each_batch(|batch| {
        for rec in batch {
            pipeline.record(rec, &mut out)?;
        }
        Ok(())
    })?;
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
    Ok(String::from_utf8_lossy(&out).into_owned())
}
