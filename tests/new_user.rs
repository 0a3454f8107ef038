//! What a new user trips over (issue #26): directories holding other files, options after
//! the filter.

mod common;

use common::*;

fn dir(tag: &str) -> Scratch {
    Scratch::dir(&format!("new-user-{tag}"))
}

#[test]
fn a_directory_skips_what_is_not_a_capture_yet_with_a_warning_each() {
    let d = dir("skips");
    std::fs::copy(testdata("sample.pcap"), d.join("a.pcap")).unwrap();
    std::fs::write(d.join("README.txt"), "captures of the test bed\n").unwrap();
    std::fs::write(d.join("empty.pcap"), "").unwrap();
    let sample = std::fs::read(testdata("sample.pcap")).unwrap();
    std::fs::write(d.join("writing.pcap"), &sample[..24]).unwrap();
    let json = d.join("r.json");
    let json_flag = format!("--json={}", json.display());
    let dir_arg = d.to_str().unwrap();
    // Twice: the second run meets the first run's report in the directory.
    for _ in 0..2 {
        let out = run(&["-r", dir_arg, &json_flag]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let err = stderr(&out);
        for (file, why) in [
            ("README.txt", "not a pcap or pcapng capture"),
            ("empty.pcap", "an empty file"),
            ("writing.pcap", "a capture with no frame yet"),
        ] {
            assert!(
                err.lines()
                    .any(|l| l.contains(file) && l.contains(why) && l.ends_with("skipped")),
                "{file}: {err}"
            );
        }
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert_eq!(report["capture"]["packets"], 14623);
    }
    // A report directory inside the directory being read is refused: its files would be read
    // as captures the next time.
    let out = run(&[
        "-r",
        dir_arg,
        &format!("--report={}", d.join("rep").display()),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("a directory being read"));
    assert!(!d.join("rep").exists());
    // With no capture left it is an error; a file named on its own is never skipped.
    std::fs::remove_file(d.join("a.pcap")).unwrap();
    let out = run(&["-r", dir_arg]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("a directory with no capture files"));
    let out = run(&["-r", d.join("README.txt").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn options_after_the_filter_are_taken_as_options() {
    let sample = testdata("sample.pcap");
    let out = run_path(&sample, &["vlan", "and", "host", "10.0.0.5", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["capture"]["packets"], 2987);
    let out = run_path(
        &sample,
        &["vlan", "and", "host", "10.0.0.5", "-c", "3", "--packets"],
    );
    assert_eq!(stdout(&out).lines().count(), 3);
    // After `--`, every word is the filter's.
    let out = run_path(&sample, &["--", "vlan", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("bad capture filter `vlan --json`"));
}

#[test]
fn a_filter_that_matches_nothing_says_so_and_exits_1_in_both_modes() {
    let sample = testdata("sample.pcap");
    let out = run_path(&sample, &["host", "10.0.0.5"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("0 frames kept of 14623 read"), "{text}");
    assert!(text.contains("matched none of the 14623 frames"), "{text}");
    assert!(text.contains("try `vlan and host 10.0.0.5`"), "{text}");
    let out = run_path(&sample, &["host", "10.0.0.5", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["capture"]["selection"]["frames_read"], 14623);
    assert_eq!(report["capture"]["selection"]["tagged_read"], 13822);
    assert_eq!(report["capture"]["selection"]["filter"], "host 10.0.0.5");
    let out = run_path(&sample, &["--packets", "host", "10.0.0.5"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).is_empty());
    assert!(
        stderr(&out).contains("try `vlan and host 10.0.0.5`"),
        "{}",
        stderr(&out)
    );
    // Tagged frames and a filter that starts with `vlan`: no hint to add it.
    let out = run_path(&sample, &["--packets", "vlan", "and", "host", "10.9.9.9"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!stderr(&out).contains("try `vlan"), "{}", stderr(&out));
    // One frame is one frame.
    let out = run_path(&sample, &["-c", "1"]);
    assert!(
        stdout(&out).contains(", 1 frame kept of 1 read ("),
        "{}",
        stdout(&out)
    );
}

#[test]
fn options_without_what_they_apply_to_are_refused_alike() {
    let sample = testdata("sample.pcap");
    let sample = sample.to_str().unwrap();
    for (args, says) in [
        (vec!["-r", sample, "--json="], "--json= needs a file name"),
        (
            vec!["-r", sample, "--bin", "1ms"],
            "--bin applies to --report",
        ),
        (
            vec!["-r", sample, "--capture-name", "x"],
            "--capture-name applies to --parquet",
        ),
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // With what they apply to, they are taken.
    let report = Scratch::file("bin", "report");
    let flag = format!("--report={}", report.display());
    let out = run(&["-r", sample, "--bin", "1ms", &flag]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn the_text_says_what_it_can_tell_in_units_that_read() {
    let sample = testdata("sample.pcap");
    let text = stdout(&run_path(&sample, &[]));
    // 4096-byte WRITE ONLY payloads: the MTU is 4096, the largest; rates in Mb/s and kb/s.
    assert!(
        text.contains("qp 0x000213 vlan 100  RC data  MTU 4096\n       2714 packets  239 Mb/s  RTT p50 7 us p99 39 us"),
        "{text}"
    );
    assert!(
        text.contains("RC responses  MTU -\n       474 packets  706 kb/s"),
        "{text}"
    );
    assert!(
        !text
            .lines()
            .any(|l| l.contains(" packets  ") && l.contains("Gb/s")),
        "{text}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&run_path(&sample, &["--json"]).stdout).unwrap();
    let f = &json["flows"][0];
    assert_eq!(f["path_mtu"], serde_json::Value::Null);
    assert_eq!(f["path_mtu_at_least"], 4096);
    // --parquet says where the tables went.
    let dir = Scratch::file("pq", "dataset");
    let out = run_path(&sample, &["--parquet", dir.to_str().unwrap()]);
    assert!(
        stderr(&out).contains("tables packets, flows, findings, timeline, pfc written to"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_native_infiniband_capture_is_not_called_roce_and_shows_no_ethernet_qos() {
    let capture = real_capture("srinivas_infiniband.pcap");
    let out = run_path(&capture, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("  native InfiniBand 43 (no RoCE) in 3 flows;"),
        "{text}"
    );
    assert!(!text.contains("RoCE 43"), "{text}");
    assert_eq!(
        text.matches("native InfiniBand (no PCP/DSCP/ECN)\n")
            .count(),
        3,
        "{text}"
    );
    assert!(!text.contains("PCP untagged"), "{text}");

    let json = run_path(&capture, &["--json"]);
    let r: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    for f in r["flows"].as_array().unwrap() {
        assert_eq!(f["native_ib"], true);
        for k in ["pcp", "dscp", "ecn"] {
            assert_eq!(f[k], serde_json::json!({}), "{k}");
        }
    }
    // A RoCE capture's flows carry no such key.
    let sample = run_path(&testdata("sample.pcap"), &["--json"]);
    let r: serde_json::Value = serde_json::from_slice(&sample.stdout).unwrap();
    assert!(r["flows"][0].get("native_ib").is_none());

    let d = dir("ib-report");
    let report = d.join("r");
    let out = run_path(&capture, &[&format!("--report={}", report.display())]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let html = std::fs::read_to_string(report.join("index.html")).unwrap();
    assert_eq!(
        html.matches("native InfiniBand: no PCP, DSCP or ECN")
            .count(),
        3
    );
    assert!(html.contains("<b>43</b>native InfiniBand frames"));
    assert!(!html.contains("RoCE frames"));
}
