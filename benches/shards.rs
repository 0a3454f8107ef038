//! The analysis in shards (`--shards`): how fast the shards take a churn's frames and what the
//! merge costs, by the number of flows (10k, 100k, 600k) and of shards (1, 2, 8, 16: more than
//! the cores, to show the merge stays small). The frames are decoded once beforehand, so the
//! figures are the analysis's alone. Run with `cargo bench --bench shards`; docs/performance.md
//! has the table.

use std::time::{Duration, Instant};

use roce_parsers::capture::{CaptureParser, Next};
use roce_parsers::DecodeOptions;
use roce_sniff::analysis::shards::Shards;
use roce_sniff::analysis::AnalysisConfig;
use roce_sniff::decode::summarize;
use roce_sniff::decode::summary::PacketSummary;
use roce_testgen::churn::{write_churn, ChurnConfig};

/// The pipeline's chunk: the shards are fed this many frames at a time.
const CHUNK: usize = 1024;

/// The decoded frames of a churn of `qps` QPs (two flows each).
fn churn(qps: u32) -> Vec<PacketSummary> {
    let mut data = Vec::new();
    let cfg = ChurnConfig {
        qps,
        lossy_every: 10,
        ..ChurnConfig::default()
    };
    write_churn(&mut data, cfg).expect("write to memory");
    let (mut parser, mut at) = CaptureParser::new(&data).expect("a pcap");
    let mut frames = Vec::new();
    while let Ok(Next::Record(rec, used)) = parser.next(&data[at..], at as u64) {
        frames.push(summarize(
            frames.len() as u64 + 1,
            &rec,
            DecodeOptions::default(),
        ));
        at += used;
    }
    frames
}

/// The best of three runs: the time to feed every frame, and the time to merge.
fn measure(frames: &[PacketSummary], shards: usize) -> (Duration, Duration) {
    let cfg = AnalysisConfig {
        max_flows: 1_000_000,
        flow_timeout_ns: Some(5_000_000),
        ..AnalysisConfig::default()
    };
    let mut best = (Duration::MAX, Duration::MAX);
    for _ in 0..3 {
        let mut s = Shards::new(cfg, shards);
        let start = Instant::now();
        frames.chunks(CHUNK).for_each(|c| s.feed(c));
        let fed = start.elapsed();
        let start = Instant::now();
        let merged = s.merged();
        let merge = start.elapsed();
        drop(merged);
        best = (best.0.min(fed), best.1.min(merge));
    }
    best
}

fn main() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("{cores} cores; a churn with one QP in 10 lossy, --flow-timeout 5ms");
    println!("| flows | shards | feed | frames/s | merge | merge per flow |");
    println!("|---:|---:|---:|---:|---:|---:|");
    for qps in [5_000, 50_000, 300_000] {
        let frames = churn(qps);
        for shards in [1, 2, 8, 16] {
            let (fed, merge) = measure(&frames, shards);
            println!(
                "| {} | {shards} | {:.0} ms | {:.2} M | {:.1} ms | {:.0} ns |",
                2 * qps,
                fed.as_secs_f64() * 1e3,
                frames.len() as f64 / fed.as_secs_f64() / 1e6,
                merge.as_secs_f64() * 1e3,
                merge.as_nanos() as f64 / (2 * qps) as f64,
            );
        }
    }
}
