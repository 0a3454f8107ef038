//! What a new (or careless) user trips over: each rough edge of issue 12 and the test that
//! would have caught it.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use roce_testgen::frames::{self, FrameSpec, Net, RoceSpec};
use roce_testgen::writer::{pcap_bytes, Frames, PcapFlavor, T0_NS};
use serde_json::Value;

fn tmp(name: &str) -> Scratch {
    Scratch::file("rough", name)
}

fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(out)))
}

/// `flows` RC flows of `per_flow` WRITE Only packets each, every ICRC corrupted.
fn bad_icrc_flows(flows: u32, per_flow: u32) -> Vec<u8> {
    let mut out = Frames::new();
    let mut t = T0_NS;
    for q in 0..flows {
        let net = Net::v4(
            [10, 0, (q / 250) as u8, (q % 250) as u8 + 1],
            [10, 9, 0, 1],
            0x6a,
        );
        for psn in 0..per_flow {
            let mut f = frames::rocev2(
                &FrameSpec::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]).vlan(100, 3),
                net,
                50000,
                &RoceSpec::new(0x0a, 0x100 + q, psn)
                    .payload(64)
                    .reth(0x1000, 1, 64),
            );
            let at = f.len() - 5;
            f[at] ^= 0xff;
            t += 1_000;
            out.push((t, f));
        }
    }
    pcap_bytes(&out, PcapFlavor::NANO_LE, 1, 65535)
}

#[test]
fn absurd_thread_counts_are_bounded_by_the_cores() {
    let path = testdata("decode_all.pcap");
    let one = run_path(&path, &["--json", "--threads", "1"]);
    let started = Instant::now();
    let many = run_path(&path, &["--json", "--threads", "100000"]);
    assert_eq!(many.status.code(), Some(0), "{}", stderr(&many));
    assert_eq!(one.stdout, many.stdout);
    // 100,000 threads took over 20 minutes; bounded, it takes what one thread takes.
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn ctrl_c_on_standard_input_ends_with_the_report_of_what_was_read() {
    let data = std::fs::read(testdata("sample.pcap")).unwrap();
    let mut child = Command::new(bin())
        .args(["-r", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Part of the capture, then the pipe stays open: a tcpdump still running. The pipe holds
    // 64 KiB: once the write returns, roce-sniff is reading, so its Ctrl-C handler (set as
    // the input opens) is in place.
    stdin.write_all(&data[..300_000]).unwrap();
    stdin.flush().unwrap();
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(text.starts_with("roce-sniff report: <stdin>"), "{text}");
    assert!(text.contains("interrupted (Ctrl-C) after"), "{text}");
    assert!(!text.contains("capture_damaged"), "{text}");
}

#[test]
fn an_output_that_is_an_input_is_refused_before_it_is_touched() {
    let victim = tmp("victim.pcap");
    std::fs::copy(testdata("decode_all.pcap"), &victim).unwrap();
    let before = std::fs::read(&victim).unwrap();
    let v = victim.to_str().unwrap();
    let link = tmp("link.pcap");
    let _ = std::fs::remove_file(&link);
    std::fs::hard_link(&victim, &link).unwrap();
    for args in [
        vec!["-r", v, &format!("--json={v}")[..]],
        vec![
            "-r",
            v,
            "--packets",
            &format!("--json={}", link.display())[..],
        ],
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&out).contains("the capture being read"),
            "{}",
            stderr(&out)
        );
        assert_eq!(std::fs::read(&victim).unwrap(), before, "{args:?}");
    }
}

#[test]
fn a_filter_after_an_optional_value_is_never_a_file_name() {
    let cwd = tmp("cwd-filter");
    std::fs::create_dir_all(&cwd).unwrap();
    let capture = testdata("decode_all.pcap");
    // `--json` takes no value unless `=` follows: the words after it are the filter.
    let out = Command::new(bin())
        .current_dir(&cwd)
        .args([
            "-r",
            capture.to_str().unwrap(),
            "--packets",
            "--json",
            "ether",
            "proto",
            "0x8808",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let kinds: Vec<String> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["kind"].to_string())
        .collect();
    assert_eq!(kinds, ["\"pfc\"", "\"pfc\"", "\"pause\""]);
    assert!(!cwd.join("ether").exists());
    // A file name where a filter is read: the error says how to give a value.
    let out = run_path(&capture, &["--json", "out.json"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("--json=FILE"), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    // The value goes after `=`.
    let file = cwd.join("r.json");
    let out = run_path(&capture, &[&format!("--json={}", file.display())]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("report written to"));
    let r: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert!(r["capture"]["packets"].as_u64().unwrap() > 0);
}

#[test]
fn durations_take_every_unit_and_a_widened_bin_says_so() {
    let dir = tmp("bins");
    let out = run_path(
        &testdata("sample.pcap"),
        &[&format!("--report={}", dir.display()), "--bin", "100us"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("--bin 100 us would give more than 1000 bins"),
        "{err}"
    );
    let t: Value =
        serde_json::from_slice(&std::fs::read(dir.join("timeline.json")).unwrap()).unwrap();
    assert!(t["bins"].as_u64().unwrap() <= 1000);
    let out = run(&["-i", "lo", "--duration", "250ns", "-c", "0"]);
    assert!(
        stderr(&out).contains("-c needs at least 1 frame"),
        "{}",
        stderr(&out)
    );
}

/// Soft-RoCE (rxe) traffic goes through the kernel and shows on its netdev: the cause of a
/// capture without RoCE must not tell its user that tcpdump cannot see it, and it says that
/// the traffic may simply not have run.
#[test]
fn no_roce_says_soft_roce_shows_on_the_netdev_and_the_traffic_may_not_have_run() {
    let r = json_of(&run_path(&testdata("no_roce.pcap"), &["--json"]));
    let f = finding(&r, "no_roce");
    let cause = f["cause"].as_str().unwrap();
    assert!(cause.contains("may not have run"), "{cause}");
    assert!(cause.contains("hardware RDMA NIC"), "{cause}");
    assert!(cause.contains("Soft-RoCE (rxe)"), "{cause}");
    assert!(cause.contains("does show on the netdev"), "{cause}");
}

#[test]
fn an_empty_capture_is_not_a_clean_one() {
    let header_only = tmp("header.pcap");
    let data = std::fs::read(testdata("decode_all.pcap")).unwrap();
    std::fs::write(&header_only, &data[..24]).unwrap();
    let out = run_path(&header_only, &[]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(!text.contains("nothing looks wrong"), "{text}");
    assert!(text.contains("no_roce"), "{text}");
    let r = json_of(&run_path(&header_only, &["--json"]));
    assert_eq!(r["findings"][0]["code"], "no_roce");
    assert_eq!(r["findings"][0]["severity"], "warning");
}

#[test]
fn concatenated_captures_are_read_as_one() {
    let a = std::fs::read(testdata("analysis_psn.pcap")).unwrap();
    let b = std::fs::read(testdata("formats/pcap_us_be.pcap")).unwrap();
    let both = tmp("both.pcap");
    std::fs::write(&both, [a.clone(), b.clone()].concat()).unwrap();
    let count = |p: &Path| json_of(&run_path(p, &["--json"]))["capture"]["packets"].clone();
    let one = tmp("a.pcap");
    std::fs::write(&one, &a).unwrap();
    let other = tmp("b.pcap");
    std::fs::write(&other, &b).unwrap();
    let expected = count(&one).as_u64().unwrap() + count(&other).as_u64().unwrap();
    let out = run_path(&both, &["--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = json_of(&out);
    assert_eq!(r["capture"]["packets"], expected);
    assert_eq!(r["capture"]["malformed"], 0);
    let warnings = r["capture"]["warnings"].to_string();
    assert!(
        warnings.contains("2 pcap files one after the other"),
        "{warnings}"
    );
    assert!(!warnings.contains("reading stopped"), "{warnings}");
}

#[test]
fn timestamps_decades_apart_are_warned_about() {
    let mut frames_ = Frames::new();
    let f = frames::rocev2(
        &FrameSpec::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]),
        Net::v4([10, 0, 0, 1], [10, 0, 0, 2], 0x6a),
        50000,
        &RoceSpec::new(0x04, 0x11, 1).payload(8),
    );
    frames_.push((T0_NS, f.clone()));
    frames_.push((T0_NS + 40 * 365 * 86_400 * 1_000_000_000, f));
    let path = tmp("decades.pcap");
    std::fs::write(&path, pcap_bytes(&frames_, PcapFlavor::NANO_LE, 1, 65535)).unwrap();
    let err = stderr(&run_path(&path, &[]));
    assert!(err.contains("frame 2: its timestamp is 40 years"), "{err}");
}

#[test]
fn report_directory_is_checked_before_the_work_and_carries_the_verdict() {
    let file = tmp("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let out = run_path(
        &testdata("sample.pcap"),
        &[&format!("--report={}", file.display())],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not a directory"), "{}", stderr(&out));
    let dir = tmp("verdict");
    let arg = format!("--report={}", dir.display());
    let args = [arg.as_str(), "--expect-pcp", "3"];
    let first = run_path(&testdata("verify_pass.pcap"), &args);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let again = run_path(&testdata("verify_pass.pcap"), &args);
    assert!(
        stderr(&again).contains("replacing the report"),
        "{}",
        stderr(&again)
    );
    let txt = std::fs::read_to_string(dir.join("report.txt")).unwrap();
    assert!(txt.contains("PASS: "), "{txt}");
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(html.contains("<h2>Verification</h2>") && html.contains("PASS: "));
}

/// A report never replaces what a user put in a directory: a user's index.html, report.txt
/// or timeline.csv were replaced (some with no message), and `-r DIR --report=DIR` was taken.
#[test]
fn a_report_directory_never_replaces_a_users_files() {
    let sample = testdata("sample.pcap");
    let report = |dir: &std::path::Path, extra: &[&str]| {
        let arg = format!("--report={}", dir.display());
        let mut args = vec![arg.as_str()];
        args.extend_from_slice(extra);
        run_path(&sample, &args)
    };
    let refused = |out: &std::process::Output, why: &str| {
        let err = stderr(out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(why), "{err}");
    };
    let root = tmp("user-dirs");
    std::fs::create_dir_all(&*root).unwrap();
    for (name, text) in [
        ("index.html", "<html><title>my notes</title></html>\n"),
        ("report.txt", "what I saw on Tuesday\n"),
        ("timeline.csv", "time,value\n1,2\n"),
        ("notes.md", "# notes\n"),
    ] {
        let dir = root.join(name.replace('.', "-"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), text).unwrap();
        refused(&report(&dir, &[]), "holds files roce-sniff did not write");
        assert_eq!(
            std::fs::read_to_string(dir.join(name)).unwrap(),
            text,
            "{name}"
        );
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "nothing written"
        );
    }
    // A report's directory takes a new report; a file the user added there stays.
    let dir = root.join("ours");
    let first = report(&dir, &[]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert!(dir.join(".roce-sniff-report").is_file());
    std::fs::write(dir.join("my-notes.txt"), "mine\n").unwrap();
    let again = report(&dir, &[]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert!(stderr(&again).contains("replacing the report"));
    assert_eq!(
        std::fs::read_to_string(dir.join("my-notes.txt")).unwrap(),
        "mine\n"
    );
    // A report of an earlier version (no marker, only its own files) is replaced too.
    std::fs::remove_file(dir.join(".roce-sniff-report")).unwrap();
    std::fs::remove_file(dir.join("my-notes.txt")).unwrap();
    let earlier = report(&dir, &[]);
    assert_eq!(earlier.status.code(), Some(0), "{}", stderr(&earlier));
    // Inside or equal to a directory being read; a missing parent; the same for --correlate.
    let set = root.join("set");
    std::fs::create_dir_all(&set).unwrap();
    std::fs::copy(&sample, set.join("a.pcap")).unwrap();
    for inside in [set.join("report"), set.to_path_buf()] {
        let arg = format!("--report={}", inside.display());
        let out = run(&["-r", set.to_str().unwrap(), &arg]);
        refused(&out, "a directory being read");
        assert!(!set.join("report").exists());
        let out = run(&[
            "--correlate",
            "-r",
            set.to_str().unwrap(),
            "-r",
            sample.to_str().unwrap(),
            &arg,
        ]);
        refused(&out, "a directory being read");
    }
    let missing = root.join("missing/parent/dir");
    refused(&report(&missing, &[]), "no such file or directory");
    // A run that fails after the check leaves no directory behind.
    let failed = root.join("failed");
    let out = report(&failed, &["--json=/nonexistent-dir/r.json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!failed.exists(), "a failed run made the report directory");
}

#[test]
fn html_has_no_negative_zero_and_keeps_every_column() {
    let dir = tmp("html");
    let out = run_path(
        &testdata("real/oferby_roce.pcap"),
        &[&format!("--report={}", dir.display())],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(!html.contains("-0.0"), "a -0.0 card");
    assert!(html.contains("<div class=\"wide\"><table>"));
    // The sample: storms are amber (red is a paused RoCE priority); one ECN series per flow;
    // timeline.csv labels flows as everywhere else.
    let dir = tmp("html-sample");
    let out = run_path(
        &testdata("sample.pcap"),
        &[&format!("--report={}", dir.display())],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let pfc = std::fs::read_to_string(dir.join("pfc.svg")).unwrap();
    assert!(
        pfc.contains("amber band = storm") && pfc.contains("#FFD66E"),
        "storm color"
    );
    let ecn = std::fs::read_to_string(dir.join("ecn_cnp.svg")).unwrap();
    // One lane per flow, labelled with its CE and CNP totals.
    for flow in ["qp 0x000210", "qp 0x000211", "qp 0x000212"] {
        assert!(ecn.contains(&format!("{flow} vlan 100: CE ")), "{flow}");
    }
    let csv = std::fs::read_to_string(dir.join("timeline.csv")).unwrap();
    assert!(csv.contains("qp 0x000213 vlan 100") && !csv.contains("qp 0x213 "));
}

#[test]
fn findings_of_many_flows_are_grouped_and_outputs_stay_proportionate() {
    let path = tmp("bad-icrc.pcap");
    std::fs::write(&path, bad_icrc_flows(300, 3)).unwrap();
    let out = run_path(&path, &["--json"]);
    let r = json_of(&out);
    assert_eq!(r["flows"].as_array().unwrap().len(), 300);
    let icrc: Vec<&Value> = findings_of(&r, "icrc_bad");
    assert_eq!(icrc.len(), 1, "one grouped finding");
    assert_eq!(icrc[0]["count"], 900);
    assert_eq!(icrc[0]["group"]["flows"], 300);
    assert_eq!(icrc[0]["group"]["worst"].as_array().unwrap().len(), 5);
    let text = stdout(&run_path(&path, &[]));
    assert!(text.lines().count() < 200, "{} lines", text.lines().count());
    assert!(text.contains("... and 250 more flows"), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 120), "{text}");
}

#[test]
fn json_to_a_file_says_where_and_text_fits_a_terminal() {
    let text = stdout(&run_path(&testdata("sample.pcap"), &[]));
    assert!(text.contains("in 8 flows"));
    assert!(
        !text.contains("gap(s)") && !text.contains("storm(s)"),
        "{text}"
    );
}

#[test]
fn smaller_rough_edges() {
    // Nanosecond captures show nanoseconds.
    let lines = stdout(&run_path(&testdata("sample.pcap"), &["--packets"]));
    assert!(
        lines.lines().nth(1).unwrap().contains(" 0.000025000 "),
        "{lines}"
    );
    // Report-only options are refused with --packets, like other conflicts.
    let out = run_path(&testdata("sample.pcap"), &["--packets", "--max-flows", "3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--max-flows applies to the analysis"));
    let out = run_path(
        &testdata("sample.pcap"),
        &["--packets", "--flow-timeout", "1s"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--flow-timeout applies to the analysis"));
    // Errors are one line, without "(os error N)".
    for args in [&["--bogus"][..], &["-r", "/nonexistent/x.pcap"][..]] {
        let err = stderr(&run(args));
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!err.contains("os error"), "{err}");
    }
    // Control characters in a file name cannot forge a line of output.
    let odd = tmp("odd\nPASS: all good.pcap");
    std::fs::copy(testdata("verify_pass.pcap"), &odd).unwrap();
    let out = run_path(&odd, &["--expect-pcp", "3"]);
    let shown = stdout(&out);
    assert!(
        shown.lines().next().unwrap().contains("odd\\nPASS"),
        "{shown}"
    );
    assert_eq!(shown.lines().filter(|l| l.starts_with("PASS")).count(), 1);
    // ACK-only flows are responses, as in the analysis.
    let v = json_of(&run_path(
        &testdata("verify_pass.pcap"),
        &["--json", "--expect-pcp", "3"],
    ));
    let kinds: Vec<&str> = v["verify"]["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"responses") && kinds.contains(&"data"),
        "{kinds:?}"
    );
    // A flow of a few packets has no extrapolated rate.
    let r = json_of(&run_path(
        &testdata("real/pcapplusplus_InfiniBandPacket.pcap"),
        &["--json"],
    ));
    assert!(r["flows"][0]["gbps"].is_null(), "{}", r["flows"][0]);
}

/// Issue #58, items 5 and 6: a misspelt flag, finding code or level gets a "did you mean" in
/// its one line; a flag whose value is required takes it after a space.
#[test]
fn a_misspelling_gets_a_suggestion_and_a_required_value_a_space() {
    let sample = testdata("sample.pcap");
    let sample = sample.to_str().unwrap();
    for (args, says) in [
        (vec!["-r", sample, "--jsn"], "did you mean `--json`?"),
        (vec!["-r", sample, "--pakets"], "did you mean `--packets`?"),
        (
            vec!["-r", sample, "--finding", "psn_los"],
            "did you mean `psn_loss`?",
        ),
        (
            vec!["-r", sample, "--fail-on", "critical,warnin"],
            "did you mean `warning`?",
        ),
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = stderr(&o);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // Nothing close: no guess.
    let err = stderr(&run(&["-r", sample, "--finding", "xyzzy"]));
    assert!(!err.contains("did you mean"), "{err}");
    // `--annotate FILE` as `-w FILE` takes it.
    let out = tmp("spaced.pcapng");
    let o = run(&["-r", sample, "--annotate", out.to_str().unwrap()]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert!(std::fs::metadata(&*out).unwrap().len() > 0);
}

/// Issue #58, item 12: counts agree with their nouns, and a message does not repeat its code.
#[test]
fn messages_agree_in_number_and_do_not_repeat_their_code() {
    let r = json_of(&run_path(
        &testdata("diagnose/timeout_resend.pcap"),
        &["--json"],
    ));
    let m = finding(&r, "retransmissions")["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(m.starts_with("1 retransmitted packet on "), "{m}");
    assert!(m.ends_with("(1 timeout)"), "{m}");
    let r = json_of(&run_path(
        &testdata("diagnose/incast_of_two.pcap"),
        &["--json"],
    ));
    let m = finding(&r, "incast")["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(m.starts_with("2 senders sent RoCE data to"), "{m}");
}

/// Issue #58, item 9: a bin longer than the traffic is said, with the way out.
#[test]
fn a_bin_longer_than_the_capture_is_told() {
    let dir = Scratch::dir("rough-long-bin");
    let report = format!("--report={}", dir.display());
    let o = run_path(&testdata("sample.pcap"), &["--bin", "1h", &report]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("is longer than the capture's"), "{err}");
    assert!(err.contains("leave --bin out"), "{err}");
    let o = run_path(&testdata("sample.pcap"), &["--bin", "1ms", &report]);
    assert!(
        !stderr(&o).contains("longer than the capture"),
        "{}",
        stderr(&o)
    );
}

/// Issue #58, item 7: `-w` keeps the input's snap length and says what it wrote; frames of a
/// second link type, which a pcap cannot hold, are refused in one line.
#[test]
fn a_written_capture_keeps_the_inputs_snap_length() {
    let out = tmp("kept-snaplen.pcap");
    let o = run_path(
        &testdata("sample.pcap"),
        &["--qp", "0x213", "-w", out.to_str().unwrap()],
    );
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let header = std::fs::read(&*out).unwrap();
    // sample.pcap was captured with a snap length of 128.
    assert_eq!(u32::from_le_bytes(header[16..20].try_into().unwrap()), 128);
    let frames = json_of(&run_path(&out, &["--json"]))["capture"]["packets"].clone();
    assert!(
        stderr(&o).contains(&format!("wrote {frames} frames to ")),
        "{}",
        stderr(&o)
    );
    let mixed = tmp("mixed.pcap");
    let sample = testdata("sample.pcap");
    let cooked = testdata("verify_cooked.pcap");
    let o = run(&[
        "-r",
        sample.to_str().unwrap(),
        "-r",
        cooked.to_str().unwrap(),
        "-w",
        mixed.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("a pcap holds one"), "{err}");
}

/// Issue #58, items 1 and 2: the help is grouped as a user looks for options, shows every
/// default, and wraps to the terminal (COLUMNS when it is not one).
#[test]
fn the_help_is_grouped_shows_defaults_and_fits_80_columns() {
    for flag in ["-h", "--help"] {
        let out = Command::new(bin())
            .arg(flag)
            .env("COLUMNS", "80")
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&out.stdout).to_string();
        let wide: Vec<&str> = help.lines().filter(|l| l.chars().count() > 80).collect();
        assert!(wide.is_empty(), "{flag}: wider than 80 columns: {wide:#?}");
        let headings: Vec<&str> = help
            .lines()
            .filter(|l| !l.starts_with(' ') && l.ends_with(':'))
            .collect();
        let order = [
            "Input:",
            "Selection:",
            "What to print:",
            "Outputs:",
            "Analysis settings:",
            "Live capture:",
            "Monitoring:",
        ];
        let at: Vec<usize> = order
            .iter()
            .map(|h| headings.iter().position(|x| x == h).unwrap_or(usize::MAX))
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{headings:?}");
    }
    let help = stdout(&run(&["-h"]));
    // -h is the summaries and a few examples; the notes and exit codes are --help's.
    assert!(
        help.contains("--help gives each option's details"),
        "{help}"
    );
    assert!(!help.contains("Exit codes:"), "{help}");
    assert!(stdout(&run(&["--help"])).contains("Exit codes:"));
    for default in [
        "[default: 100]",
        "[default: 1000]",
        "[default: 100000]",
        "[default: 60s]",
    ] {
        assert!(help.contains(default), "{default} not shown");
    }
    // -w, -c and the filter are not live-only; --finding and --annotate not report-only.
    let section = |name: &str| {
        let from = help.find(&format!("\n{name}:\n")).unwrap();
        let rest = &help[from + 1..];
        rest[..rest[1..].find("\n\n").map_or(rest.len(), |e| e + 1)].to_string()
    };
    assert!(section("Selection").contains("--count"));
    assert!(section("Selection").contains("--finding"));
    assert!(section("Outputs").contains("--write"));
    assert!(section("Outputs").contains("--annotate"));
}

/// Issue #58, item 12: a cause is told once per code in the text report.
#[test]
fn a_cause_is_told_once_per_code() {
    let text = stdout(&run_path(&testdata("sample.pcap"), &[]));
    let cause = "the RoCE traffic class is set for layer 2 only";
    assert_eq!(text.matches(cause).count(), 1, "{text}");
    assert!(
        text.contains("cause: as for the dscp0_with_pcp above"),
        "{text}"
    );
}

/// The lines of `text` wider than 80 columns that words would have let wrap: a line of one
/// word (a long path) cannot.
fn too_wide(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.chars().count() > 80)
        .filter(|l| {
            let words = l.trim_start().split(' ').count();
            let path_line = l.starts_with("roce-sniff report: ") && words == 3;
            words > 1 && !path_line
        })
        .collect()
}

#[test]
fn every_text_fits_80_columns_on_a_terminal_and_in_report_txt() {
    let mut captures = testdata_captures();
    captures.extend(real_captures());
    let mut wide = Vec::new();
    for c in &captures {
        let text = stdout(&run_path(c, &[]));
        wide.extend(
            too_wide(&text)
                .into_iter()
                .map(|l| format!("{}: {l}", c.display())),
        );
    }
    let verify = [
        (
            "analysis_marking.pcap",
            &["--expect-tos", "0x68", "--expect-pcp", "3"][..],
        ),
        (
            "verify_pass.pcap",
            &[
                "--expect-tos",
                "0x68",
                "--expect-pcp",
                "3",
                "--expect-ecn",
                "ect",
            ][..],
        ),
        (
            "sample.pcap",
            &["--expect-tos", "0x68", "--expect-vlan", "100"][..],
        ),
    ];
    for (name, args) in verify {
        let text = stdout(&run_path(&testdata(name), args));
        assert!(text.contains("roce-sniff verify:"), "{text}");
        wide.extend(
            too_wide(&text)
                .into_iter()
                .map(|l| format!("verify {name}: {l}")),
        );
    }
    let correlation = Command::new(bin())
        .args(["--correlate", "-r"])
        .arg(testdata("correlate/leaf.pcap"))
        .arg("-r")
        .arg(testdata("correlate/spine.pcap"))
        .arg("-r")
        .arg(testdata("correlate/receiver.pcap"))
        .output()
        .unwrap();
    let text = stdout(&correlation);
    assert!(text.contains("Findings"), "{text}");
    wide.extend(
        too_wide(&text)
            .into_iter()
            .map(|l| format!("correlation: {l}")),
    );
    assert!(
        wide.is_empty(),
        "{} lines wider than 80:\n{}",
        wide.len(),
        wide.join("\n")
    );

    // report.txt is the very text of the terminal, without colour.
    let dir = Scratch::dir("fits80");
    let out = run_path(
        &testdata("sample.pcap"),
        &[&format!("--report={}", dir.display()), "--color", "always"],
    );
    let txt = std::fs::read_to_string(dir.join("report.txt")).unwrap();
    assert!(!txt.contains('\x1b'), "{txt}");
    let plain = stdout(&run_path(&testdata("sample.pcap"), &["--color", "never"]));
    assert!(txt.starts_with(&plain), "{txt}");
    assert!(stdout(&out).contains('\x1b'));
}

/// Runs `command` on a pseudo-terminal (util-linux's `script`), with `env` set.
fn on_a_terminal(command: &str, env: &[(&str, &str)]) -> String {
    let out = Command::new("script")
        .args(["-qec", command, "/dev/null"])
        .env_remove("NO_COLOR")
        .env("TERM", "xterm")
        .envs(env.iter().copied())
        .output()
        .expect("script (util-linux) runs");
    String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n")
}

#[test]
fn severities_are_coloured_on_a_terminal_as_color_and_no_color_say() {
    const RED_CRITICAL: &str = "\x1b[1m\x1b[31mCRITICAL\x1b[0m psn_loss";
    let sample = testdata("sample.pcap");
    let run = |extra: &str| format!("{} -r {} {extra}", bin(), sample.display());
    // A terminal gets colour; a pipe, NO_COLOR, TERM=dumb or --color never do not.
    let tty = on_a_terminal(&run(""), &[]);
    assert!(tty.contains(RED_CRITICAL), "{tty}");
    assert!(
        tty.contains("\x1b[33mWARNING\x1b[0m  dscp0_with_pcp"),
        "{tty}"
    );
    assert!(tty.contains("\x1b[36mINFO\x1b[0m"), "{tty}");
    for (extra, env) in [
        ("", &[("NO_COLOR", "1")][..]),
        ("", &[("TERM", "dumb")][..]),
        ("--color never", &[][..]),
    ] {
        let text = on_a_terminal(&run(extra), env);
        assert!(text.contains("  CRITICAL psn_loss"), "{text}");
        assert!(!text.contains('\x1b'), "{extra} {env:?}: {text}");
    }
    let piped = stdout(&run_path(&sample, &[]));
    assert!(!piped.contains('\x1b') && piped.contains("  CRITICAL psn_loss"));
    // --color always wins over a pipe and NO_COLOR, as ripgrep's does.
    let forced = Command::new(bin())
        .args(["--color", "always", "-r"])
        .arg(&sample)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(stdout(&forced).contains(RED_CRITICAL));
    // The verification's verdict too.
    let failed = Command::new(bin())
        .args(["--color", "always", "--expect-tos", "0x68", "-r"])
        .arg(testdata("analysis_marking.pcap"))
        .output()
        .unwrap();
    assert!(
        stdout(&failed).contains("\x1b[1m\x1b[31mFAIL\x1b[0m: "),
        "{}",
        stdout(&failed)
    );
    let bad = run_path(&sample, &["--color", "sometimes"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("never, auto, always"),
        "{}",
        stderr(&bad)
    );
}
