//! Evidence a user hands on (issue #25): findings as exit codes (`--fail-on`).

mod common;

use common::*;

/// The exit code and standard error of `roce-sniff -r FILE ARGS`.
fn exit_of(file: &str, args: &[&str]) -> (i32, String) {
    let out = run_path(&testdata(file), args);
    (out.status.code().unwrap(), stderr(&out))
}

#[test]
fn fail_on_a_level_fails_on_it_and_on_what_is_above_it() {
    // Crafted captures whose most severe finding is known (testgen's diagnose scenarios).
    let captures = [
        ("diagnose/clean.pcap", None),
        ("diagnose/small_path_mtu.pcap", Some("info")),
        ("diagnose/cnp_marking.pcap", Some("warning")),
        ("diagnose/damaged_bad_icrc.pcap", Some("critical")),
    ];
    let rank = |l: &str| ["critical", "warning", "info"].iter().position(|x| *x == l);
    for (file, worst) in captures {
        let (code, err) = exit_of(file, &[]);
        assert_eq!(code, 0, "{file} without --fail-on: {err}");
        for level in ["critical", "warning", "info"] {
            let (code, err) = exit_of(file, &["--fail-on", level]);
            let fails = worst.is_some_and(|w| rank(w) <= rank(level));
            assert_eq!(code, i32::from(fails), "{file} --fail-on {level}: {err}");
            assert_eq!(err.contains("--fail-on:"), fails, "{file} {level}: {err}");
        }
    }
}

#[test]
fn fail_on_codes_fails_only_on_those_codes() {
    let (code, err) = exit_of(
        "diagnose/cnp_marking.pcap",
        &["--fail-on", "psn_loss,icrc_bad"],
    );
    assert_eq!(code, 0, "{err}");
    let (code, err) = exit_of(
        "diagnose/cnp_marking.pcap",
        &["--fail-on", "icrc_bad,cnp_marking"],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("warning cnp_marking raised"), "{err}");
    let (code, err) = exit_of("diagnose/cnp_marking.pcap", &["--fail-on", "cnp-marking"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("`cnp-marking` is neither a level"), "{err}");
}

#[test]
fn fail_on_combines_with_expectations_and_is_refused_with_packets() {
    // The marking passes, the findings fail: 1. The marking fails, the findings pass: 1.
    let (code, err) = exit_of(
        "verify_pass.pcap",
        &["--expect-pcp", "3", "--fail-on", "info"],
    );
    assert_eq!(code, 0, "{err}");
    let (code, err) = exit_of("sample.pcap", &["--expect-pcp", "3"]);
    assert_eq!(code, 0, "{err}");
    let (code, err) = exit_of(
        "sample.pcap",
        &["--expect-pcp", "3", "--fail-on", "critical"],
    );
    assert_eq!(code, 1, "{err}");
    let (code, err) = exit_of(
        "verify_pass.pcap",
        &["--expect-pcp", "5", "--fail-on", "critical"],
    );
    assert_eq!(code, 1, "{err}");
    let (code, err) = exit_of("sample.pcap", &["--packets", "--fail-on", "info"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--fail-on applies to the analysis"), "{err}");
}

/// The JSON report of `roce-sniff -r FILE ARGS --json`.
fn report_of(path: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let mut a = vec!["--json"];
    a.extend_from_slice(args);
    let out = run_path(path, &a);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)))
}

/// Each finding's code and frames.
fn finding_frames(report: &serde_json::Value) -> Vec<(String, Vec<u64>)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let frames = f["frames"].as_array().unwrap().iter();
            let frames = frames.map(|n| n.as_u64().unwrap()).collect();
            (f["code"].as_str().unwrap().to_string(), frames)
        })
        .collect()
}

fn frames_of(report: &serde_json::Value, code: &str) -> Vec<u64> {
    finding_frames(report)
        .into_iter()
        .find(|(c, _)| c == code)
        .unwrap_or_else(|| panic!("no {code}"))
        .1
}

#[test]
fn a_filter_and_qp_keep_the_files_frame_numbers() {
    let path = testdata("sample.pcap");
    let whole = report_of(&path, &[]);
    assert_eq!(whole["schema"], "roce-sniff.report/4");
    let psn_loss = frames_of(&whole, "psn_loss");
    assert_eq!(psn_loss, [4881]);
    let filtered = report_of(&path, &["vlan", "and", "host", "10.0.0.5"]);
    let qp = report_of(&path, &["--qp", "0x213"]);
    for kept in [&filtered, &qp] {
        assert_eq!(frames_of(kept, "psn_loss"), psn_loss);
        assert_eq!(
            frames_of(kept, "retransmissions"),
            frames_of(&whole, "retransmissions")
        );
        assert_eq!(
            kept["flows"][0]["first_frame"],
            whole["flows"][0]["first_frame"]
        );
    }
    if !tshark_available() {
        return;
    }
    // Frame N of the filtered --packets is frame N in Wireshark, at the same time since the
    // capture's first frame.
    let out = run_path(&path, &["--packets", "vlan", "and", "host", "10.0.0.5"]);
    let ours: Vec<(u64, String)> = stdout(&out)
        .lines()
        .map(|l| {
            let mut w = l.split_whitespace();
            (
                w.next().unwrap().parse().unwrap(),
                w.next().unwrap().to_string(),
            )
        })
        .collect();
    let theirs: Vec<(u64, String)> = tshark(&[
        "-r",
        path.to_str().unwrap(),
        "-Y",
        "vlan and ip.addr == 10.0.0.5",
        "-T",
        "fields",
        "-e",
        "frame.number",
        "-e",
        "frame.time_relative",
    ])
    .lines()
    .map(|l| {
        let (n, t) = l.split_once('\t').unwrap();
        (
            n.parse().unwrap(),
            t.parse::<f64>().map(|t| format!("{t:.9}")).unwrap(),
        )
    })
    .collect();
    assert_eq!(ours.len(), 2987);
    assert_eq!(ours, theirs);
}

/// sample.pcap cut into files of 5,000 frames (a rotated set), in a directory of its own.
fn rotated_sample(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let data = std::fs::read(testdata("sample.pcap")).unwrap();
    let (head, mut at) = (&data[..24], 24);
    let mut parts: Vec<Vec<u8>> = Vec::new();
    let mut n = 0;
    while at + 16 <= data.len() {
        let caplen = u32::from_le_bytes(data[at + 8..at + 12].try_into().unwrap()) as usize;
        if n % 5000 == 0 {
            parts.push(head.to_vec());
        }
        parts
            .last_mut()
            .unwrap()
            .extend_from_slice(&data[at..at + 16 + caplen]);
        at += 16 + caplen;
        n += 1;
    }
    parts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let path = dir.join(format!("part{i}.pcap"));
            std::fs::write(&path, p).unwrap();
            path
        })
        .collect()
}

#[test]
fn several_files_name_each_finding_frame_in_its_own_file() {
    let dir = Scratch::dir("evidence-refs");
    let parts = rotated_sample(&dir);
    assert_eq!(parts.len(), 3);
    let mut args: Vec<&str> = Vec::new();
    for p in &parts {
        args.extend(["-r", p.to_str().unwrap()]);
    }
    args.push("--json");
    let out = run(&args);
    let merged: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let whole = report_of(&testdata("sample.pcap"), &[]);
    // Merged numbers are the set's order: here, the order of the file cut.
    assert_eq!(finding_frames(&merged), finding_frames(&whole));
    let mut checked = 0;
    for f in merged["findings"].as_array().unwrap() {
        let frames = f["frames"].as_array().unwrap();
        // A finding without frames has no frame_refs.
        let refs = f["frame_refs"].as_array().map_or(&[][..], Vec::as_slice);
        assert_eq!(refs.len(), frames.len(), "{f}");
        for (frame, r) in frames.iter().zip(refs) {
            let frame = frame.as_u64().unwrap();
            let part = (frame - 1) / 5000;
            assert_eq!(r["file"], parts[part as usize].to_str().unwrap(), "{f}");
            assert_eq!(r["frame"], frame - part * 5000, "{f}");
            checked += 1;
        }
    }
    assert!(checked > 20, "{checked}");
    let psn = finding(&merged, "psn_loss");
    assert_eq!(psn["frame_refs"][0]["frame"], 4881);
    let pfc = finding(&merged, "pfc_storm");
    assert_eq!(pfc["frame_refs"][0]["file"], parts[1].to_str().unwrap());
    // The text report names them file:frame; one file's report has no frame_refs.
    args.pop();
    let text = stdout(&run(&args));
    assert!(
        text.contains(&format!("frames: {}:4881", parts[0].display())),
        "{text}"
    );
    assert!(whole["findings"][0].get("frame_refs").is_none());
}

/// A bulk capture of 16 QPs (testgen) with one request of each of 8 QPs taken out: PSN loss
/// on 8 connections, more than the findings show one by one (a group of 8, its worst 5 shown).
fn lossy_bulk() -> Scratch {
    use roce_parsers::capture::{CaptureParser, Next};
    let mut data = Vec::new();
    let cfg = roce_testgen::bulk::BulkConfig {
        frames: 20_000,
        qps: 16,
        seed: 7,
        ..Default::default()
    };
    roce_testgen::bulk::write_bulk(&mut data, cfg).unwrap();
    let (mut parser, mut at) = CaptureParser::new(&data).unwrap();
    let mut out = data[..at].to_vec();
    let mut seen: std::collections::BTreeMap<u32, u32> = Default::default();
    let mut requesters: Vec<u32> = Vec::new();
    // The PSN each lossy QP lost, by the QP its responses go to (bulk's requester QPN is its
    // responder's less 0x1000): its responder acknowledges nothing from there on, as a
    // receiver that lost it would not (an ACK past it would say the capture missed it). No
    // PSN wraps in this capture.
    let mut lost_at: std::collections::BTreeMap<u32, u32> = Default::default();
    while let Ok(Next::Record(r, used)) = parser.next(&data[at..], at as u64) {
        let f = roce_parsers::decode_frame(r.linktype, r.data, r.len);
        let lossy_request = f.roce.as_ref().is_some_and(|roce| {
            let qp = roce.bth.dqpn;
            if !roce.bth.opcode.is_request() {
                return lost_at.get(&qp).is_some_and(|&p| roce.bth.psn >= p);
            }
            if !requesters.contains(&qp) {
                requesters.push(qp);
            }
            let n = seen.entry(qp).or_default();
            *n += 1;
            let lost = *n == 40 && requesters.iter().position(|&q| q == qp) < Some(8);
            if lost {
                lost_at.insert(qp - 0x1000, roce.bth.psn);
            }
            lost
        });
        if !lossy_request {
            out.extend_from_slice(&data[at..at + used]);
        }
        at += used;
    }
    let path = Scratch::file("lossy-bulk", "lossy-bulk.pcap");
    std::fs::write(&path, out).unwrap();
    path
}

/// src > dst qp vlan of each flow of a report.
fn flow_labels(report: &serde_json::Value) -> std::collections::BTreeSet<String> {
    report["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{} > {} qp {} vlan {}",
                f["src"], f["dst"], f["dqpn"], f["vlan"]
            )
        })
        .collect()
}

#[test]
fn finding_keeps_exactly_the_connections_of_its_findings() {
    let path = lossy_bulk();
    let whole = report_of(&path, &[]);
    let psn_loss: Vec<&serde_json::Value> = findings_of(&whole, "psn_loss");
    assert_eq!(psn_loss.len(), 1);
    assert_eq!(psn_loss[0]["group"]["flows"], 8);
    assert_eq!(psn_loss[0]["group"]["worst"].as_array().unwrap().len(), 5);
    // The troubled connections: the 8 lossy data flows and the responses coming back.
    let flows = whole["flows"].as_array().unwrap();
    let lossy: Vec<&serde_json::Value> = flows.iter().filter(|f| f["psn"]["gaps"] != 0).collect();
    assert_eq!(lossy.len(), 8);
    let label = |f: &serde_json::Value| {
        format!(
            "{} > {} qp {} vlan {}",
            f["src"], f["dst"], f["dqpn"], f["vlan"]
        )
    };
    let mut troubled: std::collections::BTreeSet<String> = lossy.iter().map(|f| label(f)).collect();
    let mut packets: u64 = 0;
    for f in flows {
        let peer_is_lossy = lossy.iter().any(|l| l["peer"] == label_plain(f));
        if f["psn"]["gaps"] != 0 || peer_is_lossy {
            troubled.insert(label(f));
            packets += f["packets"].as_u64().unwrap();
        }
    }
    assert_eq!(troubled.len(), 16, "{troubled:?}");
    let kept = report_of(&path, &["--finding", "psn_loss"]);
    assert_eq!(flow_labels(&kept), troubled);
    assert_eq!(kept["capture"]["roce_packets"].as_u64().unwrap(), packets);
    // The same frames, in the same flows, as -w writes them.
    let w = Scratch::file("finding", "psn_loss.pcap");
    let out = run_path(&path, &["--finding", "psn_loss", "-w", w.to_str().unwrap()]);
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{}",
        stderr(&out)
    );
    let rewritten = report_of(&w, &[]);
    assert_eq!(flow_labels(&rewritten), troubled);
    assert_eq!(rewritten["capture"]["packets"], kept["capture"]["packets"]);
}

/// A flow's label as the report's `peer` names it.
fn label_plain(f: &serde_json::Value) -> String {
    let mut s = format!(
        "{} > {} qp {:#08x}",
        f["src"].as_str().unwrap(),
        f["dst"].as_str().unwrap(),
        f["dqpn"].as_u64().unwrap()
    );
    if let Some(v) = f["vlan"].as_u64() {
        s.push_str(&format!(" vlan {v}"));
    }
    s
}

#[test]
fn finding_of_a_capture_wide_code_keeps_the_frames_it_cites() {
    let sample = testdata("sample.pcap");
    let whole = report_of(&sample, &[]);
    // A PFC storm keeps every pause frame of it (#58 item 8: it kept the 1 frame it cites of
    // 601), and they are the same storm again.
    let storm = &whole["pfc"]["priorities"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["storms_total"].as_u64() == Some(1))
        .expect("the sample's storm")["storms"][0];
    let kept = report_of(&sample, &["--finding", "pfc_storm"]);
    assert_eq!(kept["capture"]["packets"], storm["frames"]);
    assert_eq!(kept["capture"]["pfc_frames"], storm["frames"]);
    let again = &kept["pfc"]["priorities"][0]["storms"][0];
    assert_eq!(again["frames"], storm["frames"]);
    assert_eq!(again["first_frame"], storm["first_frame"]);
    // A code that no finding has keeps nothing, and says so.
    let out = run_path(&sample, &["--json", "--finding", "icrc_bad"]);
    assert!(stderr(&out).contains("no such finding"), "{}", stderr(&out));
    // Refused where there cannot be a first pass, and a code that is none.
    for (args, says) in [
        (vec!["-r", "-", "--finding", "psn_loss"], "standard input"),
        (vec!["-i", "lo", "--finding", "psn_loss"], "live capture"),
        (
            vec!["-r", "x", "--finding", "psn_lost"],
            "not a finding code",
        ),
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
}
