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
