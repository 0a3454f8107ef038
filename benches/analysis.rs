//! Whole-capture analysis (read, frame, decode with ICRC, flows, PSN, QoS, PFC, findings, the
//! JSON report) of a generated capture held in memory, with one thread and with all cores.
//! A flow's rate history alone, per packet. Run with `cargo bench --bench analysis`; benches/compare.sh measures files side by side
//! with cat, tcpdump and tshark.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use roce_testgen::bulk::{write_bulk, BulkConfig};

fn bench_analysis(c: &mut Criterion) {
    let mut capture = Vec::new();
    write_bulk(
        &mut capture,
        BulkConfig {
            frames: 100_000,
            qps: 64,
            seed: 1,
            ..BulkConfig::default()
        },
    )
    .expect("write to memory");
    let mut g = c.benchmark_group("analysis");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(capture.len() as u64));
    for threads in ["1", "0"] {
        let name = if threads == "1" {
            "one_thread"
        } else {
            "all_cores"
        };
        g.bench_function(name, |b| {
            b.iter(|| {
                roce_sniff::run_in_memory(&capture, &["--json", "--threads", threads], false)
                    .expect("analysis")
            })
        });
    }
    g.bench_function("ndjson_all_cores", |b| {
        b.iter(|| {
            roce_sniff::run_in_memory(&capture, &["--packets", "--json"], false).expect("ndjson")
        })
    });
    g.finish();
}

/// A flow's rate history (`analysis::nic::RateRing`), kept for every packet of every flow:
/// the cost a packet pays for it, on 64 flows' interleaved packets 100 ns apart.
fn bench_rate_ring(c: &mut Criterion) {
    use roce_sniff::analysis::nic::RateRing;
    const PACKETS: u64 = 1_000_000;
    let mut rings = vec![RateRing::default(); 64];
    let mut g = c.benchmark_group("rate_ring");
    g.throughput(Throughput::Elements(PACKETS));
    g.bench_function("add", |b| {
        b.iter(|| {
            for k in 0..PACKETS {
                let ring = &mut rings[(k % 64) as usize];
                ring.add(
                    std::hint::black_box(1_700_000_000_000_000_000 + k * 100),
                    1100,
                );
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench_analysis, bench_rate_ring);
criterion_main!(benches);
