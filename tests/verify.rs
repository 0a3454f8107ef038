//! `--expect-*`: exit codes, the per-flow table and the JSON `verify` section, on crafted
//! captures that pass and fail each expectation.

mod common;

use common::*;
use serde_json::Value;

const ALL_GOOD: [&str; 12] = [
    "--expect-tos",
    "0x68",
    "--expect-pcp",
    "3",
    "--expect-vlan",
    "100",
    "--expect-ecn",
    "ect",
    "--expect-cnp-dscp",
    "48",
    "--expect-cnp-pcp",
    "6",
];

fn verify(file: &str, args: &[&str]) -> (i32, String) {
    let out = run_path(&testdata(file), args);
    (out.status.code().unwrap(), stdout(&out))
}

fn verify_json(file: &str, args: &[&str]) -> (i32, Value) {
    let mut a = args.to_vec();
    a.push("--json");
    let out = run_path(&testdata(file), &a);
    let v: Value = serde_json::from_str(&stdout(&out)).expect("JSON report");
    (out.status.code().unwrap(), v["verify"].clone())
}

#[test]
fn correctly_marked_capture_passes_every_expectation() {
    let (code, text) = verify("verify_pass.pcap", &ALL_GOOD);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.trim_end()
            .ends_with("PASS: 28 RoCE frames checked, all match"),
        "{text}"
    );
    let (code, v) = verify_json("verify_pass.pcap", &ALL_GOOD);
    assert_eq!(code, 0);
    assert_eq!(v["passed"], true);
    assert_eq!(v["verdict"], "PASS");
    assert_eq!(v["checked"], 28);
    assert_eq!(v["violating"], 0);
}

#[test]
fn each_expectation_fails_when_the_wire_differs() {
    let cases: [(&[&str], &str, u64); 7] = [
        (&["--expect-dscp", "24"], "dscp", 27),
        (&["--expect-tos", "0x00"], "dscp", 27),
        (&["--expect-pcp", "4"], "pcp", 27),
        (&["--expect-vlan", "200"], "vlan", 27),
        (&["--expect-ecn", "not-ect"], "ecn", 27),
        (&["--expect-cnp-dscp", "26"], "dscp", 1),
        (&["--expect-cnp-pcp", "3"], "pcp", 1),
    ];
    for (args, field, violating) in cases {
        let (code, v) = verify_json("verify_pass.pcap", args);
        assert_eq!(code, 1, "{args:?}");
        assert_eq!(v["verdict"], "FAIL", "{args:?}");
        assert_eq!(v["violating"], violating, "{args:?}");
        let flows = v["flows"].as_array().unwrap();
        let bad: Vec<&Value> = flows
            .iter()
            .filter(|f| f["violating"].as_u64().unwrap() > 0)
            .collect();
        assert!(!bad.is_empty());
        for f in bad {
            assert_eq!(f["violations"][0]["field"], field, "{args:?}");
            assert!(!f["first_violating_frames"].as_array().unwrap().is_empty());
        }
    }
}

#[test]
fn classic_failures_are_named_per_flow() {
    // PCP 3 with TOS 0x00, and one flow untagged while the others are tagged.
    let (code, text) = verify(
        "analysis_marking.pcap",
        &["--expect-tos", "0x68", "--expect-pcp", "3"],
    );
    assert_eq!(code, 1);
    assert!(text.contains("10 frames with DSCP other than 26"), "{text}");
    assert!(text.contains("10 frames with PCP other than 3"), "{text}");
    assert!(
        text.trim_end()
            .ends_with("FAIL: 20 of 35 RoCE frames do not match"),
        "{text}"
    );
    let (_, v) = verify_json(
        "analysis_marking.pcap",
        &["--expect-tos", "0x68", "--expect-pcp", "3"],
    );
    let flow = |qp: u64| {
        v["flows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["dqpn"] == qp && f["kind"] == "data")
            .unwrap()
            .clone()
    };
    let tos0 = flow(0x120);
    assert_eq!(tos0["violations"][0]["field"], "dscp");
    assert_eq!(tos0["violations"][0]["expected"], "26");
    assert_eq!(tos0["seen"]["dscp"]["0"], 10);
    assert_eq!(
        tos0["first_violating_frames"],
        serde_json::json!([1, 5, 9, 13, 17])
    );
    let untagged = flow(0x121);
    assert_eq!(untagged["violations"][0]["field"], "pcp");
    assert_eq!(untagged["seen"]["pcp"]["untagged"], 10);
    assert_eq!(flow(0x122)["violating"], 0);
    // CNPs are reported apart unless asked for; with another DSCP they fail.
    let cnp = v["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "cnp")
        .unwrap();
    assert_eq!(cnp["checked_against"], false);
    assert!(text.contains("CNPs are not checked against the data expectations"));
    let (code, v) = verify_json("analysis_marking.pcap", &["--expect-cnp-dscp", "26"]);
    assert_eq!(code, 1);
    assert_eq!(v["violating"], 1);
    assert_eq!(v["checked"], 1, "only the CNP is checked");
}

#[test]
fn what_the_capture_cannot_show_is_never_a_pass() {
    // No VLAN tag anywhere: PCP cannot be verified, DSCP can.
    let (code, v) = verify_json(
        "verify_cooked.pcap",
        &["--expect-tos", "0x68", "--expect-pcp", "3"],
    );
    assert_eq!(code, 1);
    assert_eq!(v["verdict"], "UNVERIFIABLE");
    assert_eq!(v["passed"], false);
    assert_eq!(v["violating"], 0);
    assert_eq!(v["unverifiable"][0]["field"], "pcp");
    assert!(v["unverifiable"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("cooked"));
    // DSCP alone is verifiable on the same capture.
    let (code, _) = verify_json("verify_cooked.pcap", &["--expect-tos", "0x68"]);
    assert_eq!(code, 0);
    // A real untagged capture.
    let out = run_path(&real_capture("oferby_roce.pcap"), &["--expect-pcp", "3"]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(
        text.contains("cannot verify PCP: no RoCE frame in this capture carries a VLAN tag"),
        "{text}"
    );
    assert!(text.contains("UNVERIFIABLE"));
    // No RoCE at all.
    let (code, text) = verify("no_roce.pcap", &["--expect-pcp", "3"]);
    assert_eq!(code, 1);
    assert!(
        text.contains("FAIL: no RoCE frames in this capture"),
        "{text}"
    );
    // An unreadable capture is an error, not a verdict.
    let out = run(&["-r", "/nonexistent.pcap", "--expect-pcp", "3"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn help_shows_the_verification() {
    let out = run(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = stdout(&out);
    for s in [
        "Verification",
        "--expect-tos",
        "--expect-pcp",
        "--expect-dscp",
        "--expect-vlan",
        "--expect-ecn",
        "--expect-cnp-dscp",
        "--expect-cnp-pcp",
        "Exit codes",
        "UNVERIFIABLE",
    ] {
        assert!(help.contains(s), "--help lacks {s}");
    }
    let bad = run(&[
        "-r",
        "x.pcap",
        "--expect-dscp",
        "10",
        "--expect-tos",
        "0x68",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("disagree"));
}
