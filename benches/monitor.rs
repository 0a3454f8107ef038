//! The live monitor's work on a churning cluster (short-lived QPs and their ACKs, a 5 ms flow
//! timeout, ended flows freed as a live capture frees them): decoding and the analysis alone,
//! then with `--events` (each ended flow a `flow_end` line, written to a sink). A live replay
//! (benches/scale.sh, benches/live_compare.sh) measures the whole process but varies by a fifth
//! from run to run (the veth, the replay, the scheduler); this one is steady enough to compare a
//! change before and after. Run with `cargo bench --bench monitor`.

use std::io;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use roce_parsers::capture::{CaptureParser, Next};
use roce_parsers::DecodeOptions;
use roce_sniff::analysis::AnalysisConfig;
use roce_sniff::decode::summarize;
use roce_sniff::monitor::events::EventWriter;
use roce_sniff::pipeline::Sink;
use roce_sniff::report_sink::ReportSink;
use roce_testgen::churn::{write_churn, ChurnConfig};

/// Frames handed to the sink at once, as a live capture's batches.
const BATCH: usize = 1024;

/// The monitor's analysis, as `roce-sniff -i IFACE --flow-timeout 5ms` configures it.
fn live_analysis() -> AnalysisConfig {
    AnalysisConfig {
        flow_timeout_ns: Some(5_000_000),
        keep_ended: false,
        ..AnalysisConfig::default()
    }
}

/// Decodes every frame of `capture` and feeds it to `sink` in batches.
fn run(capture: &[u8], mut sink: ReportSink) -> ReportSink {
    let (mut parser, mut at) = CaptureParser::new(capture).expect("a pcap");
    let mut batch = Vec::with_capacity(BATCH);
    let mut frame = 0;
    loop {
        match parser.next(&capture[at..], at as u64).expect("whole") {
            Next::Record(rec, used) => {
                frame += 1;
                batch.push(summarize(frame, &rec, DecodeOptions::default()));
                at += used;
            }
            Next::Skip(used) => at += used,
            Next::Incomplete { .. } => break,
        }
        if batch.len() == BATCH {
            sink.consume(std::mem::replace(&mut batch, Vec::with_capacity(BATCH)))
                .expect("to a sink");
        }
    }
    sink.consume(batch).expect("to a sink");
    sink
}

fn bench_monitor(c: &mut Criterion) {
    let mut capture = Vec::new();
    let churn = ChurnConfig {
        qps: 25_000,
        ..ChurnConfig::default()
    };
    let frames = write_churn(&mut capture, churn).expect("write to memory");
    let mut g = c.benchmark_group("monitor_churn");
    g.sample_size(10);
    g.throughput(Throughput::Elements(frames));
    let new_sink = || ReportSink::new(live_analysis(), Default::default(), Default::default());
    g.bench_function("analysis", |b| b.iter(|| run(&capture, new_sink())));
    g.bench_function("events", |b| {
        b.iter(|| {
            let events = EventWriter::new(Box::new(io::sink()));
            run(&capture, new_sink().with_events(events))
        })
    });
    g.finish();
}

criterion_group!(benches, bench_monitor);
criterion_main!(benches);
