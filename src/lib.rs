//! roce-sniff: a RoCEv2 capture analyzer. `main_with_args` is the whole program; the modules
//! are the stages of ARCHITECTURE.md: capture (records), decode (frames), packets (per-frame
//! output).

pub mod analysis;
pub mod capture;
pub mod cli;
pub mod decode;
pub mod error;
pub mod packets;
pub mod report;
pub mod summary;
pub mod synth;
pub mod verify;

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use crate::analysis::report_build::CaptureMeta;
use crate::analysis::Analyzer;
use crate::capture::CaptureInput;
use crate::cli::{Config, Output};
use crate::decode::{DecodeCounts, Warnings};
use crate::error::{is_broken_pipe, Error};
use crate::summary::PacketSummary;
use crate::verify::{CaptureContext, Verifier};

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
    let input = CaptureInput::open(&config.input)?;
    let name = input.name.clone();
    let mut out = open_output(&config.json)?;
    let mut counts = DecodeCounts::default();
    let mut warnings = Warnings::new(config.max_warnings);
    let mut frame_no = 0u64;
    let mut first_ts: Option<u64> = None;
    let mut line = String::with_capacity(256);
    let mut analyzer = Analyzer::new(config.analysis);
    let mut verifier = config.expect.any().then(|| Verifier::new(config.expect));

    let outcome = input.for_each_batch(|batch| {
        for rec in batch {
            frame_no += 1;
            let frame = decode::decode(rec);
            counts.add(&frame);
            warnings.frame(frame_no, &frame);
            if !config.packets {
                let summary = PacketSummary::new(frame_no, rec.ts_ns, &frame);
                analyzer.feed(&summary);
                if let Some(v) = verifier.as_mut() {
                    v.feed(&summary);
                }
                continue;
            }
            if config.roce_only && frame.roce.is_none() && frame.mac_control.is_none() {
                continue;
            }
            if config.json.is_some() {
                packets::write_json_line(&mut out, frame_no, rec.ts_ns, &frame)?;
            } else {
                let start = *first_ts.get_or_insert(rec.ts_ns);
                packets::write_text_line(
                    &mut out,
                    frame_no,
                    rec.ts_ns.saturating_sub(start),
                    &frame,
                    &mut line,
                )?;
            }
        }
        Ok(())
    });
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            let _ = out.flush();
            return Err(e);
        }
    };
    warnings.finish();
    let mut file_warnings = Vec::new();
    if let Some(msg) = &outcome.truncated_tail {
        eprintln!("roce-sniff: warning: {name}: {msg}; every complete frame before it was read");
        file_warnings.push(msg.clone());
    }
    if let Some(msg) = &outcome.corrupt {
        eprintln!("roce-sniff: warning: {name}: {msg}; reading stopped there, {frame_no} frames read before it");
        file_warnings.push(format!("{msg}; reading stopped there"));
    }
    let mut exit = EXIT_OK;
    if !config.packets {
        let mut report = analyzer.finish(CaptureMeta {
            file: name.clone(),
            format: outcome.format,
            snaplen: outcome.snaplen,
            decode: counts,
            warnings: file_warnings,
        });
        report.verify = verifier.map(|v| v.finish(&CaptureContext::default()));
        if report.verify.as_ref().is_some_and(|v| !v.passed) {
            exit = EXIT_VERIFY_FAILED;
        }
        let written = if config.json.is_some() {
            serde_json::to_writer_pretty(&mut out, &report)
                .map_err(io::Error::from)
                .and_then(|_| out.write_all(b"\n"))
        } else if let Some(v) = &report.verify {
            out.write_all(verify::render(v, &name).as_bytes())
        } else {
            out.write_all(report::text::render(&report).as_bytes())
        };
        written.map_err(|source| Error::Output {
            path: "<output>".into(),
            source,
        })?;
    }
    out.flush().map_err(|source| Error::Output {
        path: "<stdout>".into(),
        source,
    })?;
    Ok(exit)
}
