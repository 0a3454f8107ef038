//! Per-frame decode cost (ns/frame) of the frames that make up RoCE traffic: WRITE Middle
//! (1 KB payload, ICRC checked), ACK, READ response First, CNP, PFC; and the summary the
//! analysis keeps. Run with `cargo bench --bench decode`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use roce_parsers::capture::Record;
use roce_parsers::decode_frame;
use roce_sniff::decode::summary::PacketSummary;
use roce_testgen::frames::{self, FrameSpec, Net, RoceSpec};

fn frames() -> Vec<(&'static str, Vec<u8>)> {
    let link = FrameSpec::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]).vlan(100, 3);
    let net = Net::v4([10, 0, 0, 1], [10, 0, 0, 2], 0x6a);
    vec![
        (
            "write_middle_1k",
            frames::rocev2(
                &link,
                net,
                49152,
                &RoceSpec::new(0x07, 0x11, 100).payload(1024),
            ),
        ),
        (
            "ack",
            frames::rocev2(
                &link,
                net.reversed(),
                49152,
                &RoceSpec::new(0x11, 0x12, 100).aeth(0x1f, 3),
            ),
        ),
        (
            "read_response_first_1k",
            frames::rocev2(
                &link,
                net.reversed(),
                49152,
                &RoceSpec::new(0x0d, 0x12, 7).aeth(0x1f, 1).payload(1024),
            ),
        ),
        (
            "cnp",
            frames::rocev2(
                &link,
                net.reversed().with_tos(0xc2),
                0,
                &RoceSpec::new(0x81, 0x12, 0),
            ),
        ),
        (
            "pfc",
            frames::pfc([2, 0, 0, 0, 0, 0x5e], 8, [0, 0, 0, 0xffff, 0, 0, 0, 0]),
        ),
    ]
}

fn bench_decode(c: &mut Criterion) {
    let mut g = c.benchmark_group("decode_frame");
    g.throughput(Throughput::Elements(1));
    for (name, f) in frames() {
        g.bench_function(name, |b| {
            b.iter(|| {
                let rec = Record {
                    ts_ns: 0,
                    caplen: f.len() as u32,
                    len: f.len() as u32,
                    linktype: 1,
                    interface: 0,
                    input: 0,
                    point: 0,
                    frame: 1,
                    input_frame: 1,
                    file: 0,
                    data: std::hint::black_box(&f),
                };
                let frame = decode_frame(1, rec.data, rec.len);
                std::hint::black_box(PacketSummary::new(1, &rec, &frame))
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_decode);
criterion_main!(benches);
