//! Writes a large realistic capture for benchmarks (see testgen/src/bulk.rs).
//! Usage: gen-capture [--frames N] [--qps N] [--seed N] OUT.pcap

use std::fs::File;
use std::io::BufWriter;
use std::process::ExitCode;

use roce_testgen::bulk::{write_bulk, BulkConfig};

fn main() -> ExitCode {
    let mut cfg = BulkConfig {
        frames: 2_000_000,
        qps: 64,
        seed: 1,
    };
    let mut out = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut num = |name: &str| -> Option<u64> {
            let v = args.next().and_then(|v| v.parse().ok());
            if v.is_none() {
                eprintln!("gen-capture: {name} takes a number");
            }
            v
        };
        match a.as_str() {
            "--frames" => match num("--frames") {
                Some(v) => cfg.frames = v,
                None => return ExitCode::from(2),
            },
            "--qps" => match num("--qps") {
                Some(v) => cfg.qps = v as u32,
                None => return ExitCode::from(2),
            },
            "--seed" => match num("--seed") {
                Some(v) => cfg.seed = v,
                None => return ExitCode::from(2),
            },
            "-h" | "--help" => {
                println!("usage: gen-capture [--frames N] [--qps N] [--seed N] OUT.pcap");
                return ExitCode::SUCCESS;
            }
            path => out = Some(path.to_string()),
        }
    }
    let Some(path) = out else {
        eprintln!("gen-capture: give the output file");
        return ExitCode::from(2);
    };
    let file = match File::create(&path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("gen-capture: {path}: {e}");
            return ExitCode::from(2);
        }
    };
    match write_bulk(BufWriter::with_capacity(1 << 20, file), cfg) {
        Ok(bytes) => {
            println!("{path}: {} frames, {bytes} bytes", cfg.frames);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gen-capture: {path}: {e}");
            ExitCode::from(2)
        }
    }
}
