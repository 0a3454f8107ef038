//! Writes a large capture for benchmarks: the realistic bulk traffic of a few long-lived QPs
//! (testgen/src/bulk.rs), or with `--churn` a cluster's many short-lived QPs
//! (testgen/src/churn.rs).
//!
//! Usage: gen-capture [--frames N] [--qps N] [--seed N] [--gap-ns N] OUT.pcap
//!        gen-capture --churn QPS [--requests N] [--no-acks] [--concurrent N] [--gap-ns N] [--lossy-every N] OUT.pcap

use std::fs::File;
use std::io::BufWriter;
use std::process::ExitCode;

use roce_testgen::bulk::{write_bulk, BulkConfig};
use roce_testgen::churn::{write_churn, ChurnConfig};

const USAGE: &str = "usage: gen-capture [--frames N] [--qps N] [--seed N] [--gap-ns N] OUT.pcap\n       \
gen-capture --churn QPS [--requests N] [--no-acks] [--concurrent N] [--gap-ns N] [--lossy-every N] OUT.pcap";

fn main() -> ExitCode {
    let mut bulk = BulkConfig::default();
    let mut gap_ns = None;
    let mut churn: Option<ChurnConfig> = None;
    let mut out = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "-h" || a == "--help" {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        if a == "--no-acks" {
            churn.get_or_insert_with(ChurnConfig::default).acks = false;
            continue;
        }
        if !a.starts_with("--") {
            out = Some(a);
            continue;
        }
        let Some(v) = args.next().and_then(|v| v.parse::<u64>().ok()) else {
            eprintln!("gen-capture: {a} takes a number\n{USAGE}");
            return ExitCode::from(2);
        };
        let c = || ChurnConfig::default();
        match a.as_str() {
            "--frames" => bulk.frames = v,
            "--qps" => bulk.qps = v as u32,
            "--seed" => bulk.seed = v,
            "--churn" => churn.get_or_insert_with(c).qps = v as u32,
            "--requests" => churn.get_or_insert_with(c).requests = v as u32,
            "--concurrent" => churn.get_or_insert_with(c).concurrent = v as u32,
            "--gap-ns" => gap_ns = Some(v),
            "--lossy-every" => churn.get_or_insert_with(c).lossy_every = v as u32,
            _ => {
                eprintln!("gen-capture: unknown option {a}\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    if let Some(gap) = gap_ns {
        match churn.as_mut() {
            Some(c) => c.gap_ns = gap,
            None => bulk.gap_ns = gap,
        }
    }
    let Some(path) = out else {
        eprintln!("gen-capture: give the output file\n{USAGE}");
        return ExitCode::from(2);
    };
    let file = match File::create(&path) {
        Ok(f) => BufWriter::with_capacity(1 << 20, f),
        Err(e) => {
            eprintln!("gen-capture: {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let written = match churn {
        Some(cfg) => write_churn(file, cfg).map(|frames| {
            format!(
                "{frames} frames of {} QPs ({} lossy), {} flows",
                cfg.qps,
                cfg.lossy_qps(),
                cfg.flows()
            )
        }),
        None => {
            write_bulk(file, bulk).map(|bytes| format!("{} frames, {bytes} bytes", bulk.frames))
        }
    };
    match written {
        Ok(what) => {
            println!("{path}: {what}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gen-capture: {path}: {e}");
            ExitCode::from(2)
        }
    }
}
