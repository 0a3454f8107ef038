//! `--annotate=FILE` (issue #25): the pcapng copy keeps every frame byte for byte, at its
//! time, on its interface, with the input's own comments, and adds ours; read back by
//! tshark, the decoding oracle.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use serde_json::Value;

fn tmp(name: &str) -> Scratch {
    Scratch::file("annotate", name)
}

/// Runs `roce-sniff ARGS --annotate=OUT` and returns OUT; the run must succeed (exit 0 or
/// 1: findings and verification do not stop the copy).
fn annotate(args: &[&str], tag: &str) -> Scratch {
    let out = tmp(&format!("{tag}.pcapng"));
    let flag = format!("--annotate={}", out.display());
    // Before the arguments: words after a filter are the filter's.
    let mut all: Vec<&str> = vec![&flag];
    all.extend(args);
    let o = run(&all);
    assert!(
        o.status.code().is_some_and(|c| c <= 1),
        "{args:?}: {}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("written to"), "{}", stderr(&o));
    out
}

/// Each frame as tshark sees it: time since the epoch in ns, length on the wire, length
/// captured, MD5 of its bytes, encapsulation.
fn frames(path: &Path) -> Vec<(i128, String)> {
    lenient_tshark(&[
        "-r",
        path.to_str().unwrap(),
        "-o",
        "frame.generate_md5_hash:TRUE",
        "-T",
        "fields",
        "-e",
        "frame.time_epoch",
        "-e",
        "frame.len",
        "-e",
        "frame.cap_len",
        "-e",
        "frame.md5_hash",
        "-e",
        "frame.encap_type",
    ])
    .lines()
    .map(|l| {
        let (time, rest) = l.split_once('\t').unwrap();
        let (s, ns) = time.split_once('.').unwrap_or((time, "0"));
        let ns = format!("{ns:0<9}");
        let t = s.parse::<i128>().unwrap() * 1_000_000_000 + ns.parse::<i128>().unwrap();
        (t, rest.to_string())
    })
    .collect()
}

/// tshark's output, also when it ends on a damaged file (cut inside a record) with an error
/// after the frames it read.
fn lenient_tshark(args: &[&str]) -> String {
    let out = Command::new("tshark").args(args).output().expect("tshark");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// (frame number, comments) of every frame with a comment.
fn comments(path: &Path) -> Vec<(u64, Vec<String>)> {
    tshark(&[
        "-r",
        path.to_str().unwrap(),
        "-Y",
        "frame.comment",
        "-T",
        "fields",
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=\u{1f}",
        "-e",
        "frame.number",
        "-e",
        "frame.comment",
    ])
    .lines()
    .map(|l| {
        let (n, c) = l.split_once('\t').unwrap();
        let list = c.split('\u{1f}').map(str::to_string).collect();
        (n.parse().unwrap(), list)
    })
    .collect()
}

fn comments_of(all: &[(u64, Vec<String>)], frame: u64) -> Vec<String> {
    all.iter()
        .find(|(n, _)| *n == frame)
        .map(|(_, c)| c.clone())
        .unwrap_or_default()
}

/// The frames of `input` and of its copy agree: bytes, lengths, encapsulation exactly, and
/// times to the nanosecond (ERF's 2^-32 s units are the same in both; Wireshark rounds them
/// to ns one way reading ERF and the other reading pcapng).
fn assert_same_frames(input: &Path, copy: &Path) {
    let (a, b) = (frames(input), frames(copy));
    assert_eq!(a.len(), b.len(), "{}", input.display());
    for (k, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(x.1, y.1, "{} frame {}", input.display(), k + 1);
        assert!(
            (x.0 - y.0).abs() <= 1,
            "{} frame {}",
            input.display(),
            k + 1
        );
    }
}

#[test]
fn every_frame_of_crafted_and_real_captures_survives_byte_for_byte() {
    if !tshark_available() {
        return;
    }
    let gz = tmp("sample.pcap.gz");
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "gzip -c {} > {}",
            testdata("sample.pcap").display(),
            gz.display()
        ))
        .status()
        .unwrap();
    assert!(status.success());
    let mut inputs = testdata_captures();
    inputs.extend(real_captures());
    let erf = native_erf("annotate", "native.erf");
    inputs.push(erf.to_path_buf());
    // Two at a time: tshark takes most of the time, and the machine has two cores.
    let (even, odd): (Vec<_>, Vec<_>) = inputs.iter().enumerate().partition(|(k, _)| k % 2 == 0);
    std::thread::scope(|s| {
        for half in [even, odd] {
            s.spawn(move || {
                half.into_iter()
                    .for_each(|(k, input)| annotated_like_input(k, input))
            });
        }
    });
    // Compressed: the copy holds the frames, not the compression.
    let copy = annotate(&["-r", gz.to_str().unwrap()], "gz");
    assert_same_frames(&testdata("sample.pcap"), &copy);
}

/// The copy of `input` holds its frames, and a comment on every frame a finding cites.
fn annotated_like_input(k: usize, input: &Path) {
    {
        let json = tmp(&format!("every{k}.json"));
        let json_flag = format!("--json={}", json.display());
        let copy = annotate(
            &["-r", input.to_str().unwrap(), &json_flag],
            &format!("every{k}"),
        );
        assert_same_frames(input, &copy);
        // Every frame a finding cites carries the finding's comment.
        let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        let all = comments(&copy);
        for f in report["findings"].as_array().unwrap() {
            let head = format!("roce-sniff: {} (", f["code"].as_str().unwrap());
            for frame in f["frames"].as_array().unwrap() {
                let frame = frame.as_u64().unwrap();
                let here = comments_of(&all, frame);
                assert!(
                    here.iter().any(|c| c.starts_with(&head)),
                    "{} frame {frame} lacks {head}: {here:?}",
                    input.display()
                );
            }
        }
    }
}

#[test]
fn interfaces_resolution_and_the_inputs_own_comments_are_kept() {
    if !tshark_available() {
        return;
    }
    // A two-interface pcapng with a comment of its own on frame 3 (editcap writes it).
    let commented = tmp("commented.pcapng");
    let status = Command::new("editcap")
        .args(["-a", "3:a comment of the input"])
        .arg(testdata("formats/multi_interface.pcapng"))
        .arg(&commented)
        .status()
        .expect("editcap comes with tshark");
    assert!(status.success());
    let copy = annotate(&["-r", commented.to_str().unwrap()], "commented-copy");
    assert_same_frames(&commented, &copy);
    let ids = |p: &Path| {
        tshark(&[
            "-r",
            p.to_str().unwrap(),
            "-T",
            "fields",
            "-e",
            "frame.interface_id",
        ])
    };
    assert_eq!(ids(&commented), ids(&copy));
    assert!(comments_of(&comments(&copy), 3).contains(&"a comment of the input".to_string()));
    // The section names roce-sniff; each interface keeps link type, snap length, resolution.
    let info = |p: &Path| {
        let out = Command::new("capinfos").arg(p).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let (theirs, ours) = (info(&commented), info(&copy));
    assert!(
        ours.contains(&format!(
            "Capture application: roce-sniff {}",
            env!("CARGO_PKG_VERSION")
        )),
        "{ours}"
    );
    let interface_lines = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| {
                [
                    "Encapsulation =",
                    "Capture length =",
                    "Time precision =",
                    "Time ticks",
                ]
                .iter()
                .any(|k| l.contains(k))
            })
            .map(|l| l.trim().to_string())
            .collect()
    };
    assert!(!interface_lines(&theirs).is_empty());
    assert_eq!(interface_lines(&theirs), interface_lines(&ours));
}

#[test]
fn each_finding_frame_and_event_carries_its_comment() {
    if !tshark_available() {
        return;
    }
    let sample = testdata("sample.pcap");
    let report: Value = serde_json::from_str(&stdout(&run_path(&sample, &["--json"]))).unwrap();
    let copy = annotate(&["-r", sample.to_str().unwrap()], "sample");
    let all = comments(&copy);
    for f in report["findings"].as_array().unwrap() {
        let code = f["code"].as_str().unwrap();
        for frame in f["frames"].as_array().unwrap() {
            let frame = frame.as_u64().unwrap();
            let here = comments_of(&all, frame);
            assert!(
                here.iter()
                    .any(|c| c.starts_with(&format!("roce-sniff: {code} ("))),
                "frame {frame} lacks {code}: {here:?}"
            );
        }
    }
    assert!(all
        .iter()
        .flat_map(|(_, c)| c)
        .all(|c| c.starts_with("roce-sniff: ")));
    // The events: the gap, the NAK that asks for the resend, the resends, the storm.
    let psn_loss = tshark(&[
        "-r",
        copy.to_str().unwrap(),
        "-Y",
        "frame.comment contains \"psn_loss\"",
        "-T",
        "fields",
        "-e",
        "frame.number",
    ]);
    assert_eq!(psn_loss.lines().collect::<Vec<_>>(), ["4881", "4882"]);
    let gap = comments_of(&all, 4881);
    assert!(
        gap.iter().any(
            |c| c.starts_with("roce-sniff: psn_loss: first frame after a PSN gap")
                && c.contains("expected PSN 1960, saw 1963, 3 skipped")
        ),
        "{gap:?}"
    );
    assert!(comments_of(&all, 4882)
        .iter()
        .any(|c| c.contains("NAK (PSN sequence error)") && c.contains("resend from PSN 1960")));
    for (frame, psn) in [(4887, 1960), (4892, 1961), (4896, 1962), (4901, 1963)] {
        let here = comments_of(&all, frame);
        assert!(
            here.iter().any(|c| c.contains(&format!(
                "retransmissions: resend of PSN {psn} on 10.0.0.5 > 10.0.0.2 qp 0x000213 vlan 100, after a NAK asking from PSN 1960"
            ))),
            "{frame}: {here:?}"
        );
    }
    let storm = |frame| comments_of(&all, frame).join("|");
    assert!(
        storm(7300).contains("pfc_storm: PFC storm on priority 4 from 02:00:00:00:00:5f starts")
    );
    assert!(storm(14204).contains("pfc_storm: PFC storm on priority 4 from 02:00:00:00:00:5f ends"));
    // Every CNP (tshark's dissection is the oracle of which frames are CNPs) names the flow
    // it slows; CE marks never answered say so.
    let count = |filter: &str| {
        tshark(&["-r", copy.to_str().unwrap(), "-Y", filter])
            .lines()
            .count()
    };
    let cnps = count("infiniband.bth.opcode == 129");
    assert!(cnps > 0);
    assert_eq!(
        count("frame.comment contains \"roce-sniff: cnp: CNP slowing\""),
        cnps
    );
    assert_eq!(
        count("infiniband.bth.opcode == 129 and frame.comment contains \"roce-sniff: cnp:\""),
        cnps
    );
    let ce_without = all
        .iter()
        .filter(|(_, c)| {
            c.iter()
                .any(|c| c.starts_with("roce-sniff: ce_without_cnp: CE mark"))
        })
        .count() as u64;
    let finding = finding(&report, "ce_without_cnp");
    assert_eq!(ce_without, finding["count"].as_u64().unwrap());
}

#[test]
fn a_filter_keeps_its_frames_and_the_comments_name_their_input_frame() {
    if !tshark_available() {
        return;
    }
    let sample = testdata("sample.pcap");
    let filter = ["vlan", "and", "host", "10.0.0.5"];
    let mut args = vec!["-r", sample.to_str().unwrap()];
    args.extend(filter);
    let copy = annotate(&args, "filtered");
    // tcpdump's copy of the same filter is the oracle of which frames are kept.
    let by_tcpdump = tmp("tcpdump.pcap");
    let status = Command::new("tcpdump")
        .args(["-r", sample.to_str().unwrap(), "-w"])
        .arg(&by_tcpdump)
        .args(filter)
        .stderr(std::process::Stdio::null())
        .status()
        .expect("tcpdump (make test installs it)");
    assert!(status.success());
    assert_same_frames(&by_tcpdump, &copy);
    let all = comments(&copy);
    let named: Vec<&String> = all
        .iter()
        .flat_map(|(_, c)| c)
        .filter(|c| c.contains("psn_loss: first frame after a PSN gap"))
        .collect();
    assert_eq!(named.len(), 1);
    assert!(
        named[0].ends_with("(frame 4881 of the input)"),
        "{}",
        named[0]
    );
    assert!(all
        .iter()
        .flat_map(|(_, c)| c)
        .all(|c| c.contains("of the input)")));
}

#[test]
fn several_inputs_keep_an_interface_each_and_name_each_frames_file() {
    if !tshark_available() {
        return;
    }
    let dir = tmp("rotated");
    std::fs::create_dir_all(&dir).unwrap();
    let data = std::fs::read(testdata("sample.pcap")).unwrap();
    let (head, mut at, mut n) = (&data[..24], 24, 0);
    let mut parts: Vec<Vec<u8>> = Vec::new();
    while at + 16 <= data.len() {
        let caplen = u32::from_le_bytes(data[at + 8..at + 12].try_into().unwrap()) as usize;
        if n % 5000 == 0 {
            parts.push(head.to_vec());
        }
        let part = parts.last_mut().unwrap();
        part.extend_from_slice(&data[at..at + 16 + caplen]);
        at += 16 + caplen;
        n += 1;
    }
    let mut args = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let path = dir.join(format!("part{i}.pcap"));
        std::fs::write(&path, p).unwrap();
        args.push("-r".to_string());
        args.push(path.to_string_lossy().into_owned());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let copy = annotate(&args, "several");
    assert_same_frames(&testdata("sample.pcap"), &copy);
    let ids = tshark(&[
        "-r",
        copy.to_str().unwrap(),
        "-T",
        "fields",
        "-e",
        "frame.interface_id",
    ]);
    let mut distinct: Vec<&str> = ids.lines().collect();
    distinct.dedup();
    assert_eq!(distinct, ["0", "1", "2"]);
    let all = comments(&copy);
    let gap = comments_of(&all, 4881);
    assert!(
        gap.iter().any(|c| c.contains("PSN gap")
            && c.contains("(frame 4881 of ")
            && c.ends_with("part0.pcap)")),
        "{gap:?}"
    );
    let storm_end = comments_of(&all, 14204);
    assert!(
        storm_end.iter().any(|c| c.contains("storm")
            && c.contains("(frame 4204 of ")
            && c.ends_with("part2.pcap)")),
        "{storm_end:?}"
    );
}

#[test]
fn a_second_pass_is_refused_where_there_cannot_be_one() {
    let sample = testdata("sample.pcap");
    let sample = sample.to_str().unwrap();
    let out = tmp("refused.pcapng");
    let flag = format!("--annotate={}", out.display());
    for (args, says) in [
        (vec!["-r", "-", &flag], "standard input"),
        (vec!["-i", "lo", &flag], "live capture"),
        (vec!["-r", sample, "--packets", &flag], "--annotate"),
        (
            vec!["-r", sample, "-r", sample, "--correlate", &flag],
            "--annotate",
        ),
        (vec!["-r", sample, "--annotate="], "--annotate"),
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = stderr(&o);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // The copy may not overwrite the capture read.
    let copy = tmp("self.pcap");
    std::fs::copy(sample, &copy).unwrap();
    let flag = format!("--annotate={}", copy.display());
    let o = run(&["-r", copy.to_str().unwrap(), &flag]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("capture being read"));
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        std::fs::read(sample).unwrap()
    );
}

/// The gaps of a capture that missed frames are noted as the capture's misses, the others as
/// loss (diagnose/capture_missed.pcap: QP 0x100's three gaps were acknowledged; 0x102-0x104
/// lost theirs).
#[test]
fn a_gap_the_other_end_acknowledged_is_noted_as_the_captures_miss() {
    if !tshark_available() {
        return;
    }
    let copy = annotate(
        &[
            "-r",
            testdata("diagnose/capture_missed.pcap").to_str().unwrap(),
        ],
        "capture-missed",
    );
    let notes: Vec<String> = comments(&copy).into_iter().flat_map(|(_, c)| c).collect();
    let gaps = |code: &str| -> Vec<&String> {
        notes
            .iter()
            .filter(|c| c.contains(&format!("{code}: first frame after a PSN gap")))
            .collect()
    };
    let missed = gaps("capture_missed");
    assert_eq!(missed.len(), 3, "{notes:#?}");
    assert!(
        missed.iter().all(|c| c.contains("qp 0x000100")),
        "{missed:?}"
    );
    let lost = gaps("psn_loss");
    assert_eq!(lost.len(), 3, "{notes:#?}");
    assert!(lost.iter().all(|c| !c.contains("qp 0x000100")), "{lost:?}");
    // The replay whose NAK the capture missed: its first resend is noted as one.
    assert!(
        notes
            .iter()
            .any(|c| c.contains("resend of PSN 1008 on 10.0.0.7")
                && c.contains("a NAK the capture did not see")),
        "{notes:#?}"
    );
}
