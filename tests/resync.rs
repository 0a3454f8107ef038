//! Reading on past damage: a corrupt record header in a capture (made here from a copy of a
//! testdata capture) is skipped to the next place records can be trusted, every frame after it
//! is read, the region is told (JSON `capture.damaged`, the text and HTML headers, a warning),
//! and a verification over it is never a PASS.

mod common;

use std::io::Write;

use common::*;
use serde_json::Value;

/// Where each record of a little-endian pcap starts and how long it is, header included.
fn pcap_records(data: &[u8]) -> Vec<(usize, usize)> {
    let mut records = Vec::new();
    let mut at = 24;
    while at + 16 <= data.len() {
        let caplen = u32::from_le_bytes(data[at + 8..at + 12].try_into().unwrap()) as usize;
        records.push((at, 16 + caplen));
        at += 16 + caplen;
    }
    records
}

/// A damaged copy of a testdata capture, and where the damage is.
struct Damaged {
    path: Scratch,
    /// The damaged record: its offset and length (header included).
    at: usize,
    len: usize,
    /// Records in the undamaged file.
    records: usize,
}

/// A copy of testdata `name` whose record `index` (from 0) claims `caplen` captured bytes,
/// changed further by `also` (given the file and its records).
fn claiming(
    name: &str,
    index: usize,
    caplen: u32,
    also: impl FnOnce(&mut Vec<u8>, &[(usize, usize)]),
) -> Damaged {
    let mut data = std::fs::read(testdata(name)).unwrap();
    let records = pcap_records(&data);
    let (at, len) = records[index];
    data[at + 8..at + 12].copy_from_slice(&caplen.to_le_bytes());
    also(&mut data, &records);
    let path = Scratch::file("resync", name);
    std::fs::write(&path, &data).unwrap();
    Damaged {
        path,
        at,
        len,
        records: records.len(),
    }
}

fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
}

fn report(path: &std::path::Path, extra: &[&str]) -> Value {
    let mut args = vec!["--json"];
    args.extend_from_slice(extra);
    let out = run_path(path, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    json_of(&out)
}

/// The report of `bytes` fed on standard input.
fn report_of_stdin(bytes: &[u8]) -> Value {
    json_of(&run_stdin(&["-r", "-", "--json"], bytes))
}

#[test]
fn a_report_reads_every_frame_after_a_corrupt_record_header() {
    // sample.pcap with frame 11's header claiming 0x7fffffff bytes: reading stopped at
    // frame 10 of 14,623.
    let d = claiming("sample.pcap", 10, 0x7fff_ffff, |_, _| {});
    let r = report(&d.path, &[]);
    let c = &r["capture"];
    assert_eq!(c["packets"], (d.records - 1) as u64);
    let damaged = &c["damaged"];
    let mut keys: Vec<&str> = damaged
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "bytes_skipped",
            "packets_skipped",
            "region_count",
            "regions"
        ]
    );
    assert_eq!(damaged["bytes_skipped"], d.len as u64);
    assert_eq!(damaged["region_count"], 1);
    let region = &damaged["regions"][0];
    let file = d.path.to_str().unwrap();
    assert_eq!(region["file"], file);
    assert_eq!(region["offset"], d.at as u64);
    assert_eq!(region["bytes_skipped"], d.len as u64);
    assert_eq!(region["resynced_at"], (d.at + d.len) as u64);
    assert_eq!(region["packets_skipped"], 0);
    let why = format!(
        "record header at byte {} claims 2147483647 captured bytes",
        d.at
    );
    assert!(
        region["why"].as_str().unwrap().starts_with(&why),
        "{region}"
    );
    let warning = c["warnings"][0].as_str().unwrap();
    assert!(
        warning.starts_with(&why) && warning.contains(&format!("read on at byte {}", d.at + d.len)),
        "{warning}"
    );
    assert!(!findings_of(&r, "capture_damaged").is_empty());
    // Read, not mapped, and on standard input: the same frames and region.
    let read = report(&d.path, &["--no-mmap"]);
    assert_eq!(read["capture"]["damaged"], *damaged);
    let piped = report_of_stdin(&std::fs::read(&*d.path).unwrap());
    assert_eq!(piped["capture"]["packets"], c["packets"]);
    assert_eq!(piped["capture"]["damaged"]["regions"][0]["file"], "<stdin>");
    assert_eq!(
        piped["capture"]["damaged"]["regions"][0]["resynced_at"],
        region["resynced_at"]
    );
}

#[test]
fn frames_after_a_damaged_region_are_numbered_on() {
    let d = claiming("sample.pcap", 10, 0x7fff_ffff, |_, _| {});
    let frames = |path: &std::path::Path| -> Vec<Value> {
        stdout(&run_path(path, &["--packets", "--json"]))
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let whole = frames(&testdata("sample.pcap"));
    let damaged = frames(&d.path);
    assert_eq!(damaged.len(), whole.len() - 1);
    // The frame that was 12 is frame 11: numbers go on as frames are read.
    assert_eq!(damaged[10]["frame"], 11);
    assert_eq!(damaged[10]["ts_ns"], whole[11]["ts_ns"]);
    assert_eq!(damaged[9]["ts_ns"], whole[9]["ts_ns"]);
}

#[test]
fn the_text_and_html_reports_say_so_at_the_top() {
    let d = claiming("sample.pcap", 10, 0x7fff_ffff, |_, _| {});
    let dir = Scratch::dir("resync-html");
    let out = run_path(&d.path, &[&format!("--report={}", dir.to_str().unwrap())]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let second = text.lines().nth(1).unwrap();
    let region = format!(
        "{} bytes from byte {}, read on at byte {}",
        d.len,
        d.at,
        d.at + d.len
    );
    assert!(second.starts_with("  DAMAGED: 1 region unread ("), "{text}");
    assert!(text.replace("\n    ", " ").contains(&region), "{text}");
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    let damaged = html
        .find("<span class=\"sev\">damaged</span>")
        .expect("damage in the page");
    // In the head, before the cards and the findings.
    assert!(damaged < html.find("class=\"cards\"").unwrap());
    assert!(html[damaged..].contains(&region));
}

#[test]
fn a_caplen_above_the_snap_length_no_longer_swallows_the_records_after_it() {
    // sample.pcap's snap length is 128: a header claiming 5,000 bytes took the 5,000 bytes
    // after it (35 records) as its frame.
    let d = claiming("sample.pcap", 20, 5000, |_, _| {});
    let r = report(&d.path, &[]);
    assert_eq!(r["capture"]["snaplen"], 128);
    assert_eq!(r["capture"]["packets"], (d.records - 1) as u64);
    let region = &r["capture"]["damaged"]["regions"][0];
    assert_eq!(region["bytes_skipped"], d.len as u64);
    assert!(
        region["why"]
            .as_str()
            .unwrap()
            .contains("claims 5000 captured bytes, above the snap length 128"),
        "{region}"
    );
}

const EXPECT: [&str; 4] = ["--expect-tos", "0x68", "--expect-pcp", "3"];

#[test]
fn a_verification_over_damage_is_unverifiable_and_names_the_region() {
    let d = claiming("verify_pass.pcap", 10, 0x7fff_ffff, |_, _| {});
    let out = run_path(&d.path, &EXPECT);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out).replace("\n  ", " ");
    let verdict = text.lines().last().unwrap();
    assert!(
        verdict.starts_with("UNVERIFIABLE: 26 RoCE frames checked, no mismatch, but the capture is damaged: 1 region unread ("),
        "{verdict}"
    );
    assert!(
        verdict.contains(&format!(
            "{} bytes from byte {}, read on at byte {}",
            d.len,
            d.at,
            d.at + d.len
        )),
        "{verdict}"
    );
    let mut args = EXPECT.to_vec();
    args.push("--json");
    let out = run_path(&d.path, &args);
    assert_eq!(out.status.code(), Some(1));
    let v = &json_of(&out)["verify"];
    assert_eq!(v["verdict"], "UNVERIFIABLE");
    assert_eq!(v["passed"], false);
    assert_eq!(v["checked"], 26);
    assert!(v["damaged"]
        .as_str()
        .unwrap()
        .contains(d.path.to_str().unwrap()));
    // The same capture undamaged passes.
    let whole = run_path(&testdata("verify_pass.pcap"), &EXPECT);
    assert_eq!(whole.status.code(), Some(0));
}

#[test]
fn a_violation_among_the_frames_read_after_damage_fails() {
    // Every frame after the damage has PCP 5: before, reading stopped at the damage and
    // the frames before it passed.
    let d = claiming("verify_pass.pcap", 10, 0x7fff_ffff, |data, records| {
        for &(at, _) in &records[11..] {
            // The 802.1Q tag's priority, after the two MAC addresses and the TPID.
            let tci = at + 16 + 14;
            data[tci] = (data[tci] & 0x1f) | 5 << 5;
        }
    });
    let mut args = EXPECT.to_vec();
    args.push("--json");
    let out = run_path(&d.path, &args);
    assert_eq!(out.status.code(), Some(1));
    let v = &json_of(&out)["verify"];
    assert_eq!(v["verdict"], "FAIL");
    let violating = v["violating"].as_u64().unwrap();
    assert!(violating >= 15, "{v}");
    let first: Vec<u64> = v["flows"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["first_violating_frames"].as_array().unwrap().clone())
        .map(|f| f.as_u64().unwrap())
        .collect();
    // The frame that was 12 is frame 11 (numbers go on past the damage).
    assert!(
        !first.is_empty() && first.iter().all(|&f| f >= 11),
        "{first:?}"
    );
    // The damage is still said beside the failure.
    assert!(v["damaged"].as_str().is_some());
    let text = stdout(&run_path(&d.path, &EXPECT)).replace("\n    ", " ");
    assert!(
        text.contains("cannot verify every frame: the capture is damaged: 1 region unread"),
        "{text}"
    );
    assert!(text.lines().last().unwrap().starts_with("FAIL: "), "{text}");
}

/// Offset and length of each block of a little-endian pcapng.
fn pcapng_blocks(data: &[u8]) -> Vec<(usize, usize)> {
    let mut blocks = Vec::new();
    let mut at = 0;
    while at + 8 <= data.len() {
        let len = u32::from_le_bytes(data[at + 4..at + 8].try_into().unwrap()) as usize;
        blocks.push((at, len));
        at += len;
    }
    blocks
}

#[test]
fn pcapng_reads_on_at_the_next_block_whose_lengths_agree() {
    // formats/multi_interface.pcapng: section, two interfaces, a custom block, ten packet
    // blocks alternating between the interfaces.
    let original = std::fs::read(testdata("formats/multi_interface.pcapng")).unwrap();
    let blocks = pcapng_blocks(&original);
    assert_eq!(blocks.len(), 14);
    // A packet block's trailing length damaged: that block alone is lost.
    let mut data = original.clone();
    let (at, len) = blocks[6];
    data[at + len - 4] ^= 0x10;
    let path = Scratch::file("resync-ng", "packet.pcapng");
    std::fs::write(&path, &data).unwrap();
    let r = report(&path, &[]);
    assert_eq!(r["capture"]["packets"], 9);
    let region = &r["capture"]["damaged"]["regions"][0];
    assert_eq!(region["offset"], at as u64);
    assert_eq!(region["resynced_at"], (at + len) as u64);
    assert_eq!(region["bytes_skipped"], len as u64);
    // The second interface's description damaged: its packets are skipped and counted, the
    // first interface's read.
    let mut data = original.clone();
    let (at, len) = blocks[2];
    data[at + 4] ^= 0x01;
    std::fs::write(&path, &data).unwrap();
    let r = report(&path, &[]);
    let c = &r["capture"];
    assert_eq!(c["packets"], 5);
    assert_eq!(c["damaged"]["packets_skipped"], 5);
    assert_eq!(c["damaged"]["region_count"], 1);
    let region = &c["damaged"]["regions"][0];
    assert_eq!(region["offset"], at as u64);
    assert_eq!(region["resynced_at"], (at + len) as u64);
    let skipped: usize = blocks[5..].iter().step_by(2).map(|b| b.1).sum();
    assert_eq!(c["damaged"]["bytes_skipped"], (len + skipped) as u64);
    let warnings = c["warnings"].to_string();
    assert!(
        warnings.contains("5 packet blocks skipped: the interface they name was never described"),
        "{warnings}"
    );
}

#[test]
fn erf_reads_on_at_the_next_plausible_record() {
    let path = native_erf("resync-erf", "ib.erf");
    let whole = report(&path, &[]);
    let n = whole["capture"]["packets"].as_u64().unwrap();
    let mut data = std::fs::read(&*path).unwrap();
    // The tenth record (the first ones tell ERF from other files): an unknown type, and a
    // length that ends inside its frame.
    let mut at = 0;
    for _ in 0..9 {
        at += usize::from(u16::from_be_bytes([data[at + 10], data[at + 11]]));
    }
    let len = usize::from(u16::from_be_bytes([data[at + 10], data[at + 11]]));
    data[at + 8] = 0x7e;
    data[at + 10..at + 12].copy_from_slice(&20u16.to_be_bytes());
    std::fs::write(&path, &data).unwrap();
    let r = report(&path, &[]);
    assert_eq!(r["capture"]["packets"], n - 1);
    let region = &r["capture"]["damaged"]["regions"][0];
    assert_eq!(region["offset"], at as u64);
    assert_eq!(region["resynced_at"], (at + len) as u64);
    assert!(
        region["why"]
            .as_str()
            .unwrap()
            .contains("an unknown record type"),
        "{region}"
    );
}

#[test]
fn a_compressed_stream_cut_short_is_told_as_damage() {
    // verify_pass.pcap 20 times over (`cat`), so that the cut leaves whole blocks of each
    // stream before it.
    let data = std::fs::read(testdata("verify_pass.pcap"))
        .unwrap()
        .repeat(20);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&data).unwrap();
    let gz = gz.finish().unwrap();
    let zst =
        ruzstd::encoding::compress_to_vec(&data[..], ruzstd::encoding::CompressionLevel::Fastest);
    for (name, bytes) in [("cut.pcap.gz", &gz), ("cut.pcap.zst", &zst)] {
        let path = Scratch::file("resync-cut", name);
        std::fs::write(&path, &bytes[..bytes.len() * 2 / 3]).unwrap();
        let mut args = EXPECT.to_vec();
        args.push("--json");
        let out = run_path(&path, &args);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", stderr(&out));
        let r = json_of(&out);
        let c = &r["capture"];
        // What came before the cut is read; nothing after it can be.
        let read = c["packets"].as_u64().unwrap();
        assert!((1..560).contains(&read), "{name}: {read}");
        let region = &c["damaged"]["regions"][0];
        assert_eq!(region["resynced_at"], Value::Null, "{name}");
        assert!(
            region["why"]
                .as_str()
                .unwrap()
                .starts_with("reading failed after"),
            "{name}: {region}"
        );
        assert_eq!(r["verify"]["verdict"], "UNVERIFIABLE", "{name}");
    }
}

#[test]
fn damage_in_one_of_several_files_read_as_one_is_named_by_its_file() {
    let d = claiming("sample.pcap", 10, 0x7fff_ffff, |_, _| {});
    let other = testdata("analysis_psn.pcap");
    let alone = report(&other, &[]);
    let out = run(&[
        "-r",
        other.to_str().unwrap(),
        "-r",
        d.path.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = json_of(&out);
    let c = &r["capture"];
    assert_eq!(
        c["packets"].as_u64().unwrap(),
        alone["capture"]["packets"].as_u64().unwrap() + (d.records - 1) as u64
    );
    let region = &c["damaged"]["regions"][0];
    assert_eq!(region["file"], d.path.to_str().unwrap());
    assert_eq!(region["offset"], d.at as u64);
}

#[test]
fn an_annotated_copy_of_a_damaged_capture_holds_every_frame_read() {
    // --annotate reads the file again to copy its frames by number: it must skip the damage
    // as the first reading did.
    let d = claiming("sample.pcap", 10, 0x7fff_ffff, |_, _| {});
    let copy = Scratch::file("resync-annotate", "copy.pcapng");
    let out = run_path(
        &d.path,
        &[&format!("--annotate={}", copy.to_str().unwrap()), "--json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = report(&copy, &[]);
    assert_eq!(r["capture"]["packets"], (d.records - 1) as u64);
    assert!(r["capture"].get("damaged").is_none());
}
