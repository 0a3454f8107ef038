//! The live monitor's work on a churning cluster (short-lived QPs and their ACKs, a 5 ms flow
//! timeout, ended flows freed as a live capture frees them), output by output: decoding and
//! the analysis alone; with `--events` (each ended flow a `flow_end` line, to a sink); with a
//! rolling Parquet dataset too (`--parquet DIR --rotate 100ms`, every frame a row, encoded on
//! a thread of its own). Timed as the process's CPU time, every thread's, as
//! benches/scale.sh's live replay measures the whole process; that replay varies by a fifth
//! from run to run (the veth, the replay, the scheduler), this is steady enough to compare a
//! change before and after. Run with `cargo bench --bench monitor`.

use std::io;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use roce_parsers::capture::{CaptureParser, Next};
use roce_parsers::DecodeOptions;
use roce_sniff::analysis::report_build::CaptureMeta;
use roce_sniff::analysis::verify::CaptureContext;
use roce_sniff::analysis::AnalysisConfig;
use roce_sniff::common::queue::WhenFull;
use roce_sniff::decode::summarize;
use roce_sniff::decode::summary::PacketSummary;
use roce_sniff::outputs::events::{EventWriter, EventsOutput};
use roce_sniff::outputs::parquet::{ExportConfig, Exporter, DEFAULT_BIN_NS};
use roce_sniff::outputs::{Output, Wants};
use roce_sniff::pipeline::Sink;
use roce_sniff::run::sink::ReportSink;
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

/// What the live screen takes of a capture while the bench runs: the findings as they hold.
struct FindingsTaken;

impl Output for FindingsTaken {
    fn wants(&self) -> Wants {
        Wants {
            findings: true,
            ..Wants::default()
        }
    }
}

/// A live capture's sink: its findings watched (for the view, the metrics, the events).
fn new_sink() -> ReportSink {
    ReportSink::new(live_analysis(), Default::default(), Default::default())
        .with_output(Box::new(FindingsTaken))
}

/// The events written on their thread; the bench waits for them (nothing dropped), as it
/// times every thread's work.
fn with_events(sink: ReportSink) -> ReportSink {
    let writer = EventWriter::new(Box::new(io::sink()));
    let events = EventsOutput::start(writer, WhenFull::Wait, sink.dropped()).expect("a thread");
    sink.with_output(Box::new(events))
}

fn with_parquet(sink: ReportSink, dir: &Path) -> ReportSink {
    let export = Exporter::new(
        ExportConfig {
            dir: dir.to_path_buf(),
            capture: "bench".into(),
            bin_ns: DEFAULT_BIN_NS,
            rotate_ns: Some(100_000_000),
            append: true,
        },
        WhenFull::Wait,
        sink.dropped(),
    )
    .expect("a dataset directory");
    sink.with_output(Box::new(export))
}

/// Decodes every frame of `capture`, feeds it to `sink` in batches and ends the run (the
/// outputs' last lines and parts written).
fn run(capture: &[u8], mut sink: ReportSink) {
    let (mut parser, mut at) = CaptureParser::new(capture).expect("a pcap");
    let mut batch = Vec::with_capacity(BATCH);
    let mut meta = CaptureMeta::default();
    loop {
        match parser.next(&capture[at..], at as u64).expect("whole") {
            Next::Record(rec, used) => {
                let frame_no = meta.counts.frames + batch.len() as u64 + 1;
                batch.push(summarize(frame_no, &rec, DecodeOptions::default()));
                at += used;
            }
            Next::Skip(used) => at += used,
            Next::Incomplete { .. } => break,
        }
        if batch.len() == BATCH {
            consume(&mut sink, &mut batch, &mut meta);
        }
    }
    consume(&mut sink, &mut batch, &mut meta);
    sink.finish(meta, &CaptureContext::default(), None, &Default::default())
        .expect("the outputs written");
}

/// Hands `batch` to `sink` with the frames counted before it, then counts it.
fn consume(sink: &mut ReportSink, batch: &mut Vec<PacketSummary>, meta: &mut CaptureMeta) {
    sink.consume(batch, &meta.counts).expect("to a sink");
    for s in batch.iter() {
        meta.counts.add(s);
    }
    batch.clear();
}

/// The CPU time of the whole process so far: every thread's, the Parquet writer's too.
fn cpu_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn bench_monitor(c: &mut Criterion) {
    let mut capture = Vec::new();
    // `cargo test` (the CI's debug build) runs each bench once, only to see it work: a tenth
    // of the churn there.
    let benching = std::env::args().any(|a| a == "--bench");
    let churn = ChurnConfig {
        qps: if benching { 25_000 } else { 2_500 },
        ..ChurnConfig::default()
    };
    let frames = write_churn(&mut capture, churn).expect("write to memory");
    let dataset = std::env::temp_dir().join(format!("roce-sniff-bench-{}", std::process::id()));
    let mut g = c.benchmark_group("monitor_churn");
    g.sample_size(10);
    g.throughput(Throughput::Elements(frames));
    let outputs: [(&str, &dyn Fn() -> ReportSink); 3] = [
        ("analysis", &new_sink),
        ("events", &|| with_events(new_sink())),
        ("events_parquet", &|| {
            with_parquet(with_events(new_sink()), &dataset)
        }),
    ];
    for (name, sink) in outputs {
        g.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                let mut spent = Duration::ZERO;
                for _ in 0..iterations {
                    let sink = sink();
                    let start = cpu_time();
                    run(&capture, sink);
                    spent += cpu_time() - start;
                }
                spent
            })
        });
    }
    g.finish();
    let _ = std::fs::remove_dir_all(&dataset);
}

criterion_group!(benches, bench_monitor);
criterion_main!(benches);
