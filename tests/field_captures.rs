//! Captures as they come from the field: rotated sets (several -r, or a directory) and
//! compressed files (gzip, zstd; from files and standard input) give the report of the single
//! plain file.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::*;
use serde_json::Value;

fn tmp(name: &str) -> Scratch {
    Scratch::file("field", name)
}

/// The report without what names the input.
fn report(args: &[&str]) -> Value {
    let out = run(args);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    let mut r: Value = serde_json::from_slice(&out.stdout).unwrap();
    r["capture"]["file"] = Value::Null;
    // Several files also name each finding's frames in its file (tests/evidence.rs).
    for f in r["findings"].as_array_mut().into_iter().flatten() {
        f.as_object_mut().unwrap().remove("frame_refs");
    }
    r
}

/// Splits a little-endian pcap into files of `parts` records each group, like tcpdump -C.
fn rotate(data: &[u8], per_file: usize) -> Vec<Vec<u8>> {
    let header = &data[..24];
    let mut files = vec![header.to_vec()];
    let mut at = 24;
    let mut n = 0;
    while at + 16 <= data.len() {
        let caplen = u32::from_le_bytes(data[at + 8..at + 12].try_into().unwrap()) as usize;
        if n == per_file {
            files.push(header.to_vec());
            n = 0;
        }
        files
            .last_mut()
            .unwrap()
            .extend_from_slice(&data[at..at + 16 + caplen]);
        at += 16 + caplen;
        n += 1;
    }
    files
}

#[test]
fn a_rotated_set_gives_the_report_of_the_whole_capture() {
    let whole = testdata("sample.pcap");
    let data = std::fs::read(&whole).unwrap();
    let dir = tmp("rotated");
    std::fs::create_dir_all(&dir).unwrap();
    let parts = rotate(&data, 4000);
    assert!(parts.len() >= 3);
    let mut paths = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let path = dir.join(format!("cap.pcap{i}"));
        std::fs::write(&path, p).unwrap();
        paths.push(path.to_str().unwrap().to_string());
    }
    let expected = report(&["-r", whole.to_str().unwrap(), "--json"]);
    // Given in any order: merged by time.
    let mut args = vec!["--json".to_string()];
    for p in paths.iter().rev() {
        args.push("-r".into());
        args.push(p.clone());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(report(&args), expected, "-r each file");
    assert_eq!(
        report(&["-r", dir.to_str().unwrap(), "--json"]),
        expected,
        "a directory"
    );
    // Per-frame output says which file each frame came from; frames are numbered across.
    let out = run(&["-r", dir.to_str().unwrap(), "--packets", "--json"]);
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["file"], paths[0].as_str());
    assert_eq!(lines[4000]["file"], paths[1].as_str());
    assert_eq!(lines[4000]["frame"], 4001);
}

#[test]
fn compressed_captures_are_read_by_their_content() {
    let whole = testdata("sample.pcap");
    let data = std::fs::read(&whole).unwrap();
    let expected = report(&["-r", whole.to_str().unwrap(), "--json"]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&data).unwrap();
    let gz = gz.finish().unwrap();
    let zst =
        ruzstd::encoding::compress_to_vec(&data[..], ruzstd::encoding::CompressionLevel::Fastest);
    // The file names say nothing: the content does.
    for (name, bytes) in [("cap.gz.bin", &gz), ("cap.zst.bin", &zst)] {
        let path = tmp(name);
        std::fs::write(&path, bytes).unwrap();
        assert_eq!(
            report(&["-r", path.to_str().unwrap(), "--json"]),
            expected,
            "{name}"
        );
        let mut child = Command::new(bin())
            .args(["-r", "-", "--json"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(bytes).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let mut r: Value = serde_json::from_slice(&out.stdout).unwrap();
        r["capture"]["file"] = Value::Null;
        assert_eq!(r, expected, "{name} on standard input");
    }
    // A damaged compressed stream keeps what came before the damage.
    let cut = tmp("cut.gz");
    std::fs::write(&cut, &gz[..gz.len() / 2]).unwrap();
    let out = run(&["-r", cut.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(r["capture"]["packets"].as_u64().unwrap() > 1000);
    assert!(r["capture"]["warnings"][0]
        .as_str()
        .unwrap()
        .contains("reading failed after"));
    assert!(r["findings"].to_string().contains("capture_damaged"));
}

/// Frame times tcpdump prints for `filter` on `path` (seconds.microseconds).
fn tcpdump_times(path: &std::path::Path, filter: &[&str]) -> Vec<String> {
    let out = Command::new("tcpdump")
        .args(["-n", "-tt", "-r"])
        .arg(path)
        .args(filter)
        .output()
        .expect("tcpdump (make test installs it)");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect()
}

#[test]
fn the_filter_keeps_what_tcpdump_keeps_and_w_writes_it() {
    let path = testdata("sample.pcap");
    for filter in [
        &["vlan", "and", "udp", "dst", "port", "4791"][..],
        &["vlan", "and", "host", "10.0.0.5"][..],
        &["ether", "proto", "0x8808"][..],
    ] {
        let mut args = vec!["--packets", "--json"];
        args.extend_from_slice(filter);
        let ours: Vec<String> = stdout(&run_path(&path, &args))
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                let ns = v["ts_ns"].as_u64().unwrap();
                format!("{}.{:06}", ns / 1_000_000_000, ns % 1_000_000_000 / 1000)
            })
            .collect();
        let theirs = tcpdump_times(&path, filter);
        assert!(!ours.is_empty(), "{filter:?}");
        assert_eq!(ours, theirs, "{filter:?}");
    }
    // -c stops after N frames kept; -w writes them, and they read back the same.
    let written = tmp("kept.pcap");
    let out = run_path(
        &path,
        &[
            "-c",
            "7",
            "-w",
            written.to_str().unwrap(),
            "--packets",
            "--json",
            "ether",
            "proto",
            "0x8808",
        ],
    );
    assert_eq!(stdout(&out).lines().count(), 7, "{}", stderr(&out));
    let again = stdout(&run_path(&written, &["--packets", "--json"]));
    let strip = |s: &str| -> Vec<Value> {
        s.lines()
            .map(|l| {
                let mut v: Value = serde_json::from_str(l).unwrap();
                // The -w file numbers its own frames; the filtered read keeps the input's.
                v.as_object_mut().unwrap().remove("file");
                v.as_object_mut().unwrap().remove("frame");
                v
            })
            .collect()
    };
    assert_eq!(strip(&again), strip(&stdout(&out)));
}

#[test]
fn qp_keeps_one_connection() {
    let path = testdata("sample.pcap");
    let r: Value =
        serde_json::from_slice(&run_path(&path, &["--qp", "0x213", "--json"]).stdout).unwrap();
    let flows = r["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 2, "the QP and its responses: {flows:?}");
    assert_eq!(flows[0]["dqpn"], 0x213);
    assert_eq!(flows[1]["role"], "responses");
    assert_eq!(
        flows[0]["psn"]["retransmitted"], 4,
        "the same PSN history as in the whole"
    );
}

#[test]
fn pcapng_interface_statistics_report_capture_drops() {
    let mut data = std::fs::read(testdata("formats/multi_interface.pcapng")).unwrap();
    // An Interface Statistics Block for interface 0: 3 dropped by the interface, 4 by the OS.
    let mut body = Vec::new();
    body.extend_from_slice(&0u32.to_le_bytes());
    body.extend_from_slice(&[0; 8]);
    for (code, value) in [(5u16, 3u64), (7, 4)] {
        body.extend_from_slice(&code.to_le_bytes());
        body.extend_from_slice(&8u16.to_le_bytes());
        body.extend_from_slice(&value.to_le_bytes());
    }
    body.extend_from_slice(&[0; 4]);
    let total = (12 + body.len()) as u32;
    data.extend_from_slice(&5u32.to_le_bytes());
    data.extend_from_slice(&total.to_le_bytes());
    data.extend_from_slice(&body);
    data.extend_from_slice(&total.to_le_bytes());
    let path = tmp("isb.pcapng");
    std::fs::write(&path, &data).unwrap();
    let out = run(&["-r", path.to_str().unwrap(), "--json"]);
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let warnings = r["capture"]["warnings"].to_string();
    assert!(warnings.contains("recorded 7 dropped frames"), "{warnings}");
    let damaged: Vec<&Value> = findings_of(&r, "capture_damaged");
    assert_eq!(damaged.len(), 1);
    assert!(damaged[0]["cause"]
        .as_str()
        .unwrap()
        .contains("dropped frames before"));
}

#[test]
fn native_erf_files_are_read() {
    let path = native_erf("field-captures", "capture.erf");
    let native = report(&["-r", path.to_str().unwrap(), "--json"]);
    let in_pcap = report(&[
        "-r",
        real_capture("srinivas_infiniband.pcap").to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(native["capture"]["format"], "erf");
    for key in [
        "packets",
        "ib_packets",
        "icrc_ok",
        "icrc_bad",
        "flows",
        "malformed",
        "warnings",
    ] {
        assert_eq!(native["capture"][key], in_pcap["capture"][key], "{key}");
    }
    assert_eq!(native["capture"]["ib_packets"], 43);
    let flows = |r: &Value| -> Vec<(Value, Value, Value)> {
        r["flows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| (f["src"].clone(), f["dqpn"].clone(), f["opcodes"].clone()))
            .collect()
    };
    assert_eq!(flows(&native), flows(&in_pcap));
}

/// The records of a little-endian pcap: (time, captured bytes, original length).
type Records = Vec<(u64, Vec<u8>, u32)>;

fn records_of(path: &std::path::Path) -> (Vec<u8>, Records) {
    use roce_parsers::capture::{CaptureParser, Next};
    let data = std::fs::read(path).unwrap();
    let (mut parser, mut at) = CaptureParser::new(&data).unwrap();
    let mut records = Vec::new();
    while let Ok(Next::Record(r, used)) = parser.next(&data[at..], at as u64) {
        records.push((r.ts_ns, r.data.to_vec(), r.len));
        at += used;
    }
    (data[..24].to_vec(), records)
}

/// A nanosecond pcap with the file header `header` (microseconds are written as given: the
/// sample's header says nanoseconds).
fn write_pcap(name: &str, header: &[u8], records: &[(u64, Vec<u8>, u32)]) -> Scratch {
    let mut out = header.to_vec();
    for (t, bytes, len) in records {
        out.extend_from_slice(&((t / 1_000_000_000) as u32).to_le_bytes());
        out.extend_from_slice(&((t % 1_000_000_000) as u32).to_le_bytes());
        out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(bytes);
    }
    let path = tmp(name);
    std::fs::write(&path, &out).unwrap();
    path
}

fn cnps(r: &Value) -> u64 {
    r["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["cnps"].as_u64().unwrap())
        .sum()
}

/// Per data flow: its QP and PSN counters.
fn psn_of(r: &Value) -> Vec<(Value, Value)> {
    r["flows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["role"] == "data")
        .map(|f| (f["dqpn"].clone(), f["psn"].clone()))
        .collect()
}

#[test]
fn frames_captured_twice_are_counted_once() {
    // A mirror that copies both directions of a port: every frame of the sample twice, the
    // copy 1 us later. The analysis must be the sample's, not resends and duplicate PSNs.
    let whole = testdata("sample.pcap");
    let (header, records) = records_of(&whole);
    assert_eq!(
        &header[..4],
        &0xa1b23c4du32.to_le_bytes(),
        "a nanosecond pcap"
    );
    let doubled: Records = records
        .iter()
        .flat_map(|(t, b, l)| [(*t, b.clone(), *l), (t + 1_000, b.clone(), *l)])
        .collect();
    let path = write_pcap("doubled.pcap", &header, &doubled);
    let once = report(&["-r", whole.to_str().unwrap(), "--json"]);
    let twice = report(&["-r", path.to_str().unwrap(), "--json"]);
    // Every RoCE copy is recognised except CNPs, which repeat byte for byte by design.
    let roce = once["capture"]["roce_packets"].as_u64().unwrap();
    assert!(cnps(&once) > 0, "the sample has CNPs");
    assert_eq!(twice["capture"]["capture_duplicates"], roce - cnps(&once));
    assert_eq!(psn_of(&twice), psn_of(&once));
    assert!(twice["findings"].to_string().contains("capture_duplicates"));
}

#[test]
fn captures_of_two_points_with_clocks_apart_are_counted_once() {
    // The sample taken at a second point whose clock is 3 ms ahead and which missed every
    // seventh frame; then at a point whose clock is 2 ms behind. Read together, the frames of
    // the second point are copies: no resends or duplicate PSNs that never happened.
    let whole = testdata("sample.pcap");
    let (header, records) = records_of(&whole);
    let once = report(&["-r", whole.to_str().unwrap(), "--json"]);
    let ahead: Records = records
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 7 != 3)
        .map(|(_, (t, b, l))| (t + 3_000_000, b.clone(), *l))
        .collect();
    let behind: Records = records
        .iter()
        .map(|(t, b, l)| (t - 2_000_000, b.clone(), *l))
        .collect();
    for (name, other) in [("ahead.pcap", ahead), ("behind.pcap", behind)] {
        let path = write_pcap(name, &header, &other);
        let alone = report(&["-r", path.to_str().unwrap(), "--json"]);
        let both = report(&[
            "-r",
            whole.to_str().unwrap(),
            "-r",
            path.to_str().unwrap(),
            "--json",
        ]);
        let copies = alone["capture"]["roce_packets"].as_u64().unwrap() - cnps(&alone);
        assert_eq!(both["capture"]["capture_duplicates"], copies, "{name}");
        assert_eq!(psn_of(&both), psn_of(&once), "{name}");
    }
}

#[test]
fn a_resend_in_the_next_file_of_a_rotated_set_is_a_resend() {
    // The last data frame of the first file sent again, byte for byte, at the start of the
    // second: one capture point, so a resend, exactly as in the single file.
    let whole = testdata("sample.pcap");
    let (header, records) = records_of(&whole);
    let cut = records.len() / 2;
    let (first, rest) = records.split_at(cut);
    let again = first
        .iter()
        .rev()
        .find(|(_, b, _)| b.len() > 100)
        .map(|(_, b, l)| (first[cut - 1].0 + 1_000_000, b.clone(), *l))
        .unwrap();
    let resent_at = again.0;
    let mut second = vec![again];
    second.extend(rest.iter().filter(|r| r.0 > resent_at).cloned());
    let single: Records = first.iter().chain(&second).cloned().collect();
    let one = write_pcap("resent-whole.pcap", &header, &single);
    let a = write_pcap("resent.pcap0", &header, first);
    let b = write_pcap("resent.pcap1", &header, &second);
    let expected = report(&["-r", one.to_str().unwrap(), "--json"]);
    let rotated = report(&[
        "-r",
        a.to_str().unwrap(),
        "-r",
        b.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(rotated["capture"]["capture_duplicates"], 0);
    assert_eq!(psn_of(&rotated), psn_of(&expected));
    let resent = |r: &Value| -> u64 {
        psn_of(r)
            .iter()
            .map(|(_, psn)| psn["retransmitted"].as_u64().unwrap())
            .sum()
    };
    let sample = report(&["-r", whole.to_str().unwrap(), "--json"]);
    assert_eq!(resent(&rotated), resent(&sample) + 1);
}
