//! Damaged and hostile captures: never a panic or a hang, every complete record before the
//! damage is reported, the damage is named (file, byte offset or frame), and hostile lengths
//! allocate nothing of their size.

mod common;

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use roce_testgen::testdata::format_frames;
use roce_testgen::writer::{pcap_bytes, T0_NS};
use roce_testgen::writer::{PcapFlavor, PcapngWriter};
use serde_json::Value;

fn analyze(data: &[u8]) -> Value {
    let out = roce_sniff::run_in_memory(
        data,
        &["--json", "--threads", "1", "--max-warnings", "0"],
        false,
    )
    .expect("a capture with a valid header is analysed");
    serde_json::from_slice(&out).unwrap()
}

/// Byte offsets where each record of a little-endian microsecond pcap ends.
fn pcap_record_ends(data: &[u8]) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut off = 24;
    while off + 16 <= data.len() {
        let caplen = u32::from_le_bytes(data[off + 8..off + 12].try_into().unwrap()) as usize;
        off += 16 + caplen;
        ends.push(off);
    }
    ends
}

#[test]
fn cut_at_every_byte_offset() {
    let data = pcap_bytes(&format_frames(), PcapFlavor::MICRO_LE, 1, 65535);
    let ends = pcap_record_ends(&data);
    assert_eq!(ends.len(), 5);
    for cut in 0..=data.len() {
        let part = &data[..cut];
        if cut < 24 {
            // Not even a file header: an error, never a panic.
            assert!(
                roce_sniff::run_in_memory(part, &["--json"], false).is_err(),
                "cut {cut}"
            );
            continue;
        }
        let r = analyze(part);
        let complete = ends.iter().filter(|&&e| e <= cut).count() as u64;
        assert_eq!(r["capture"]["packets"], complete, "cut {cut}");
        let at_boundary = cut == 24 || ends.contains(&cut);
        let warned = r["capture"]["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("capture ends inside a record"));
        assert_eq!(
            warned, !at_boundary,
            "cut {cut}: {}",
            r["capture"]["warnings"]
        );
    }
}

#[test]
fn cut_pcapng_at_every_byte_offset() {
    let data = std::fs::read(testdata("formats/multi_interface.pcapng")).unwrap();
    let mut last = 0;
    for cut in 28..=data.len() {
        let r = analyze(&data[..cut]);
        let n = r["capture"]["packets"].as_u64().unwrap();
        assert!(n >= last, "cut {cut}: fewer frames than a shorter cut");
        last = n;
    }
    assert_eq!(last, 10);
}

fn pcapng_with(modify: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut w = PcapngWriter::new(Vec::new()).unwrap();
    w.add_interface(1, 65535, 6).unwrap();
    for (t, f) in format_frames().iter().take(3) {
        w.write(0, *t, f).unwrap();
    }
    let mut bytes = w.into_inner();
    modify(&mut bytes);
    bytes
}

/// Offset of the n-th block (0 = section header) of a pcapng.
fn block_offset(data: &[u8], n: usize) -> usize {
    let mut off = 0;
    for _ in 0..n {
        off += u32::from_le_bytes(data[off + 4..off + 8].try_into().unwrap()) as usize;
    }
    off
}

#[test]
fn pcapng_damage_is_reported_with_its_offset() {
    // A bad block length in the third packet block (block 4: SHB, IDB, EPB, EPB, EPB).
    let data = pcapng_with(|b| {
        let off = block_offset(b, 4);
        b[off + 4..off + 8].copy_from_slice(&7u32.to_le_bytes());
    });
    let r = analyze(&data);
    assert_eq!(
        r["capture"]["packets"], 2,
        "the frames before the bad block"
    );
    let w = r["capture"]["warnings"][0].as_str().unwrap();
    assert!(
        w.contains("impossible length 7") && w.contains("at byte"),
        "{w}"
    );
    // Trailing length differs from the leading one: reading goes on at the next block.
    let data = pcapng_with(|b| {
        let off = block_offset(b, 3);
        let len = u32::from_le_bytes(b[off + 4..off + 8].try_into().unwrap()) as usize;
        b[off + len - 4] ^= 0x40;
    });
    let r = analyze(&data);
    assert_eq!(r["capture"]["packets"], 2);
    assert!(r["capture"]["warnings"][0]
        .as_str()
        .unwrap()
        .contains("trailing length"));
    let region = &r["capture"]["damaged"]["regions"][0];
    assert_eq!(region["offset"], block_offset(&data, 3));
    assert_eq!(region["resynced_at"], block_offset(&data, 4));
    // A packet block naming an interface that was never described: skipped and counted.
    let data = pcapng_with(|b| {
        let off = block_offset(b, 3);
        b[off + 8..off + 12].copy_from_slice(&5u32.to_le_bytes());
    });
    let r = analyze(&data);
    assert_eq!(r["capture"]["packets"], 2);
    assert_eq!(r["capture"]["damaged"]["packets_skipped"], 1);
    assert!(r["capture"]["warnings"][0]
        .as_str()
        .unwrap()
        .contains("interface 5, which has no description"));
    // A block claiming gigabytes: an error at its offset, nothing allocated for it.
    let data = pcapng_with(|b| {
        let off = block_offset(b, 4);
        b[off + 4..off + 8].copy_from_slice(&0xfffff000u32.to_le_bytes());
    });
    let r = analyze(&data);
    assert_eq!(r["capture"]["packets"], 2);
    assert!(r["capture"]["warnings"][0]
        .as_str()
        .unwrap()
        .contains("impossible length 4294963200"));
    // Unknown blocks are skipped (formats/multi_interface.pcapng has one); a block before any
    // section header is an error.
    assert_eq!(
        analyze(&std::fs::read(testdata("formats/multi_interface.pcapng")).unwrap())["capture"]
            ["packets"],
        10
    );
}

fn pcap_record(ts: u32, caplen: u32, len: u32, data: &[u8]) -> Vec<u8> {
    let mut r = Vec::new();
    for v in [ts, 0, caplen, len] {
        r.extend_from_slice(&v.to_le_bytes());
    }
    r.extend_from_slice(data);
    r
}

#[test]
fn pcap_record_lengths_that_lie() {
    let frames = format_frames();
    let good = pcap_bytes(&frames[..2].to_vec(), PcapFlavor::MICRO_LE, 1, 65535);
    // caplen larger than the snap length (some writers do it): accepted and decoded.
    let mut small_snap = pcap_bytes(&frames[..2].to_vec(), PcapFlavor::MICRO_LE, 1, 100);
    small_snap.extend(pcap_record(
        1_700_000_001,
        frames[3].1.len() as u32,
        frames[3].1.len() as u32,
        &frames[3].1,
    ));
    let r = analyze(&small_snap);
    assert_eq!(r["capture"]["packets"], 3);
    // caplen larger than what is left of the file: the tail is reported, the rest kept.
    let mut cut = good.clone();
    cut.extend(pcap_record(1_700_000_001, 5000, 5000, &[0u8; 100]));
    let r = analyze(&cut);
    assert_eq!(r["capture"]["packets"], 2);
    assert!(r["capture"]["warnings"][0]
        .as_str()
        .unwrap()
        .contains("116 of 5016 bytes present"));
    // A record header claiming gigabytes: damage, reported with its byte offset, and the
    // record after it read.
    let mut huge = good.clone();
    let at = huge.len();
    huge.extend(pcap_record(
        1_700_000_001,
        0xffff_fff0,
        0xffff_fff0,
        &[0u8; 64],
    ));
    huge.extend(pcap_record(
        1_700_000_002,
        frames[3].1.len() as u32,
        frames[3].1.len() as u32,
        &frames[3].1,
    ));
    let r = analyze(&huge);
    assert_eq!(r["capture"]["packets"], 3);
    let w = r["capture"]["warnings"][0].as_str().unwrap();
    assert!(
        w.contains(&format!(
            "record header at byte {at} claims 4294967280 captured bytes"
        )),
        "{w}"
    );
    assert!(!findings_of(&r, "capture_damaged").is_empty());
}

#[test]
fn garbage_after_a_valid_header_and_random_files() {
    // A valid header followed by noise: the noise is framed as records or named as corrupt.
    let mut data = pcap_bytes(&vec![], PcapFlavor::MICRO_LE, 1, 65535);
    let mut x: u32 = 12345;
    for _ in 0..5000 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        data.push(x as u8);
    }
    let r = analyze(&data);
    assert!(r["capture"]["warnings"].as_array().unwrap().len() == 1);
    // Random bytes as a file: one line, exit code 2.
    let dir = std::env::temp_dir().join(format!("roce-sniff-random-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let random = dir.join("random.bin");
    std::fs::write(&random, &data[24..]).unwrap();
    let out = run_path(&random, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out).lines().count(), 1);
    assert!(stderr(&out).contains("random.bin: not a pcap or pcapng capture"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_file_still_being_written_is_read_to_its_current_end() {
    let dir = std::env::temp_dir().join(format!("roce-sniff-growing-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("growing.pcap");
    let full = std::fs::read(testdata("analysis_psn.pcap")).unwrap();
    // The writer (a running tcpdump) has written part of the file, mid-record.
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(&full[..full.len() / 2 + 7]).unwrap();
    f.flush().unwrap();
    let writer = std::thread::spawn(move || {
        for chunk in full[full.len() / 2 + 7..].chunks(500) {
            f.write_all(chunk).unwrap();
            std::thread::sleep(Duration::from_millis(2));
        }
    });
    let out = run_path(&path, &["--json"]);
    writer.join().unwrap();
    assert!(out.status.code() == Some(0), "{}", stderr(&out));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let n = r["capture"]["packets"].as_u64().unwrap();
    assert!((1..=76).contains(&n), "{n}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn flows_are_bounded_by_max_flows() {
    let out = run_path(&testdata("sample.pcap"), &["--json", "--max-flows", "3"]);
    assert_eq!(out.status.code(), Some(0));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["capture"]["flows"], 3);
    assert!(r["capture"]["flows_untracked_packets"].as_u64().unwrap() > 0);
    assert!(!findings_of(&r, "flows_untracked").is_empty());
}

#[test]
fn a_closed_pipe_ends_quietly() {
    let mut child = Command::new(bin())
        .args(["-r", testdata("sample.pcap").to_str().unwrap(), "--packets"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 64];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout); // like `| head -1`
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn timestamps_before_and_after_are_kept_in_order() {
    // Records out of time order (a merged capture) still decode; time goes backwards in the
    // report's flows without a panic.
    let mut frames = format_frames();
    frames[1].0 = T0_NS - 5_000_000_000;
    let data = pcap_bytes(&frames, PcapFlavor::MICRO_LE, 1, 65535);
    let r = analyze(&data);
    assert_eq!(r["capture"]["packets"], 5);
}

mod mutated_files {
    //! The stable-toolchain counterpart of the capture_file fuzz target: whole files, mutated.
    use super::*;
    use proptest::prelude::*;

    /// Mutates a test capture as the property below does.
    fn mutated(name: &str, flips: &[(usize, u8)], cut: usize) -> Vec<u8> {
        let mut data = std::fs::read(testdata(name)).unwrap();
        for &(i, b) in flips {
            let n = data.len();
            // Leave the magic alone half of the time, so the reader gets past the header.
            let at = if b & 1 == 0 { 4 + i % (n - 4) } else { i % n };
            data[at] ^= b;
        }
        let n = data.len() + 1;
        data.truncate(cut % n);
        data
    }

    /// Found by the property below: a frame earlier than the capture's first one put the
    /// latest traffic time before the first bin, and the plots' bin count underflowed.
    #[test]
    fn a_frame_before_the_first_one_leaves_the_timelines_whole() {
        let flips = [(8258707201533020288, 187), (9166807224526147767, 17)];
        let data = mutated("formats/pcap_us_le.pcap", &flips, 15502910067086453954);
        let _ = roce_sniff::analyze_bytes(&data);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn mutated_capture_files_never_panic(
            which in 0usize..3,
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..16),
            cut in any::<usize>(),
        ) {
            let name = ["formats/pcap_us_le.pcap", "formats/multi_interface.pcapng", "decode_all.pcap"][which];
            let _ = roce_sniff::analyze_bytes(&mutated(name, &flips, cut));
        }
    }
}
