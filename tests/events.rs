//! `--events`: the NDJSON stream of findings as they first hold and flows as they end, on
//! captures of testdata/: the same findings and flows as the report, told in capture time, the
//! same at any --threads.

mod common;

use std::collections::BTreeSet;

use common::*;
use serde_json::Value;

fn events(capture: &str, extra: &[&str]) -> Vec<Value> {
    events_of(&testdata(capture), extra)
}

fn events_of(capture: &std::path::Path, extra: &[&str]) -> Vec<Value> {
    let file = Scratch::file("events", "events.ndjson");
    let mut args = vec![
        format!("--events={}", file.display()),
        "--json=/dev/null".to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_path(capture, &argv);
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{}",
        stderr(&out)
    );
    let lines: Vec<Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    lines
}

fn report(capture: &str) -> Value {
    report_of(&testdata(capture), &[])
}

fn report_of(capture: &std::path::Path, extra: &[&str]) -> Value {
    let args = [&["--json"], extra].concat();
    serde_json::from_slice(&run_path(capture, &args).stdout).unwrap()
}

/// A capture shorter than a second is evaluated once, at its end: its events tell the
/// report's findings, the same objects in the same order. (They once came in another order;
/// of a QP used again, the lesser flow's finding; of a file cut short, without the cause's
/// caveat that the capture is incomplete.)
#[test]
fn a_capture_evaluated_only_at_its_end_tells_the_reports_findings() {
    for capture in ["sample.pcap", "damaged.pcap", "decode_all.pcap"] {
        for extra in [&[][..], &["--flow-timeout", "5ms"]] {
            let told: Vec<Value> = events(capture, extra)
                .into_iter()
                .filter(|x| x["event"] == "finding")
                .map(|x| x["finding"].clone())
                .collect();
            let r = report_of(&testdata(capture), extra);
            // Each (code, flow) told once: of a QP that ended and came back (two flows of
            // one label, with a short timeout), the report's first.
            let mut seen = BTreeSet::new();
            let reported: Vec<Value> = r["findings"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| {
                    f["flow"].is_null()
                        || seen.insert((f["code"].to_string(), f["flow"].to_string()))
                })
                .cloned()
                .collect();
            assert!(!told.is_empty(), "{capture}");
            assert_eq!(told, reported, "{capture} {extra:?}");
        }
    }
}

/// How many flows each `finding` event of `code` tells of: its group's, or 1.
fn flows_told(events: &[Value], code: &str) -> Vec<u64> {
    events
        .iter()
        .filter(|x| x["event"] == "finding" && x["finding"]["code"] == code)
        .map(|x| x["finding"]["group"]["flows"].as_u64().unwrap_or(1))
        .collect()
}

/// A churn of lossy QPs over 16 seconds, about 25 new ones each second: each second's are
/// told that second, as a group of them, and every one is told once. Before, the first
/// group was told and every later one taken for it: one event for the whole run.
#[test]
fn a_churn_of_lossy_qps_is_told_every_second_it_brings_new_ones() {
    use roce_testgen::churn::{write_churn, ChurnConfig};
    let cfg = ChurnConfig {
        qps: 4_000,
        gap_ns: 1_000_000,
        lossy_every: 10,
        ..ChurnConfig::default()
    };
    let capture = Scratch::file("events-churn", "lossy-churn.pcap");
    write_churn(std::fs::File::create(&capture).unwrap(), cfg).unwrap();
    // The default timeout keeps the QPs open; a short one ends them between evaluations.
    for timeout in [&[][..], &["--flow-timeout", "50ms"]] {
        let r = report_of(&capture, timeout);
        let loss: Vec<&Value> = findings_of(&r, "psn_loss");
        assert_eq!(loss.len(), 1, "{timeout:?}");
        assert_eq!(loss[0]["group"]["flows"], cfg.lossy_qps(), "{timeout:?}");
        let told = flows_told(&events_of(&capture, timeout), "psn_loss");
        assert!(told.len() >= 15, "{timeout:?}: {told:?}");
        assert_eq!(
            told.iter().sum::<u64>(),
            u64::from(cfg.lossy_qps()),
            "{told:?}"
        );
    }
}

#[test]
fn a_finding_is_told_when_it_first_holds_not_at_the_end() {
    let e = events("diagnose/loss_early_in_a_long_capture.pcap", &[]);
    let r = report("diagnose/loss_early_in_a_long_capture.pcap");
    let start = r["capture"]["first_ts_ns"].as_u64().unwrap();
    let loss = e
        .iter()
        .find(|x| x["event"] == "finding" && x["finding"]["code"] == "psn_loss")
        .expect("a psn_loss event");
    // Told at the first evaluation, within the capture's first second (of 3).
    let at = loss["ts_ns"].as_u64().unwrap() - start;
    assert!(at < 1_000_000_000, "told {at} ns into the capture");
    assert_eq!(
        loss["finding"]["flow"],
        "10.0.0.1 > 10.0.0.2 qp 0x000100 vlan 100"
    );
    // Told once, and the flows end after it, at the capture's end.
    let codes: Vec<&str> = e
        .iter()
        .filter(|x| x["event"] == "finding")
        .map(|x| x["finding"]["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, vec!["psn_loss", "retransmissions"]);
    let ends: Vec<&Value> = e.iter().filter(|x| x["event"] == "flow_end").collect();
    assert_eq!(ends.len(), 2);
    assert!(ends
        .iter()
        .all(|x| x["ts_ns"].as_u64().unwrap() - start > 2_000_000_000));
}

/// An incast of four senders, none marked at first; 1.5 s later one of them is CE-marked
/// (diagnose/incast_turns_troubled.pcap). Evaluated every second of capture time, the incast
/// is told as information, then its rise to a warning as a `finding_escalated` event, counted
/// once in `roce_sniff_finding_escalations_total` while `roce_sniff_findings_total` keeps it at
/// the severity first told; the report's incast is the last event's. Before, the rise was never
/// told: the events and the metrics said information, the report a warning.
#[test]
fn a_finding_whose_severity_rises_is_told_again_and_counted_at_its_first_severity() {
    let capture = testdata("diagnose/incast_turns_troubled.pcap");
    let file = Scratch::file("events-rise", "events.ndjson");
    let port = free_port();
    let sniff = Running(
        std::process::Command::new(bin())
            .args(["-r", capture.to_str().unwrap(), "--json=/dev/null"])
            .arg(format!("--events={}", file.display()))
            .arg(format!("--metrics=127.0.0.1:{port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    // A file's metrics are published once, at its end, after its events are written.
    let started = std::time::Instant::now();
    let metrics = loop {
        match http_get(port, "/metrics") {
            Some(text) if text.contains("roce_sniff_finding_escalations_total") => break text,
            _ => assert!(started.elapsed().as_secs() < 30, "no metrics served"),
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    drop(sniff);
    let told: Vec<Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"] != "flow_end")
        .collect();
    assert_eq!(told.len(), 2, "{told:?}");
    assert_eq!(told[0]["event"], "finding");
    assert_eq!(told[0]["finding"]["code"], "incast");
    assert_eq!(told[0]["finding"]["severity"], "info");
    let rise = &told[1];
    assert_eq!(rise["event"], "finding_escalated");
    assert_eq!(
        (&rise["from"], &rise["to"]),
        (&"info".into(), &"warning".into())
    );
    assert_eq!(rise["finding"]["severity"], "warning");
    assert!(rise["ts_ns"].as_u64() > told[0]["ts_ns"].as_u64());
    // Told first within the capture's first 1.5 s, before the marks came.
    let r = report("diagnose/incast_turns_troubled.pcap");
    let start = r["capture"]["first_ts_ns"].as_u64().unwrap();
    assert!(told[0]["ts_ns"].as_u64().unwrap() - start < 1_500_000_000);
    assert_eq!(&rise["finding"], finding(&r, "incast"));
    let value = |labels: &str| {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(labels)?.strip_prefix(' '))
            .and_then(|v| v.parse::<f64>().ok())
    };
    for (series, n) in [
        (
            "roce_sniff_findings_total{code=\"incast\",severity=\"info\"}",
            1.0,
        ),
        (
            "roce_sniff_findings_total{code=\"incast\",severity=\"warning\"}",
            0.0,
        ),
        (
            "roce_sniff_finding_escalations_total{code=\"incast\",from=\"info\",to=\"warning\"}",
            1.0,
        ),
        (
            "roce_sniff_finding_escalations_total{code=\"incast\",from=\"info\",to=\"critical\"}",
            0.0,
        ),
    ] {
        assert_eq!(value(series), Some(n), "{series}");
    }
}

/// A churn read with a 1 ms flow timeout, its link silent for 3 ms every 997 frames (as a
/// replay at top speed stalls, which once showed one QP written twice as a `flow_end`): each
/// flow ends once, in the events, the dataset's flows table and the metrics (ended by the
/// timeout, or open at the end); a QP with frames on both sides of a silence is two flows
/// with ids of their own, the first ended before the second began.
#[test]
fn every_flow_ends_once_per_lifetime_in_the_events_the_dataset_and_the_metrics() {
    use roce_testgen::churn::{write_churn, ChurnConfig};
    let cfg = ChurnConfig {
        qps: 1_500,
        concurrent: 8,
        silence_every: 997,
        silence_ns: 3_000_000,
        ..ChurnConfig::default()
    };
    let dir = Scratch::dir("events-lifetimes");
    let capture = dir.join("churn.pcap");
    write_churn(std::fs::File::create(&capture).unwrap(), cfg).unwrap();
    let (events, dataset, json) = (dir.join("e.ndjson"), dir.join("ds"), dir.join("r.json"));
    let port = free_port();
    let sniff = Running(
        std::process::Command::new(bin())
            .args(["-r", capture.to_str().unwrap(), "--flow-timeout", "1ms"])
            .arg(format!("--events={}", events.display()))
            .arg(format!("--json={}", json.display()))
            .arg(format!("--metrics=127.0.0.1:{port}"))
            .args(["--parquet", dataset.to_str().unwrap(), "--rotate", "10ms"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let started = std::time::Instant::now();
    let metrics = loop {
        match http_get(port, "/metrics") {
            Some(text) if text.contains("roce_sniff_flows_ended_total") => break text,
            _ => assert!(started.elapsed().as_secs() < 30, "no metrics served"),
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    drop(sniff);
    let value = |name: &str| {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no {name}"))
    };
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let flows = r["capture"]["flows"].as_u64().unwrap();
    assert!(flows > cfg.flows(), "the silences split QPs in flight");
    let ends: Vec<Value> = std::fs::read_to_string(&events)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"] == "flow_end")
        .map(|e| e["flow"].clone())
        .collect();
    let ids: BTreeSet<u64> = ends.iter().map(|f| f["id"].as_u64().unwrap()).collect();
    assert_eq!((ends.len() as u64, ids.len() as u64), (flows, flows));
    // Ended by the timeout while the file was read, or open when it ended.
    let ended = value("roce_sniff_flows_ended_total");
    let open = value("roce_sniff_flows_active");
    assert_eq!(ended + open, flows as f64, "{ended} ended, {open} open");
    assert_eq!(r["capture"]["flows_ended"].as_f64(), Some(ended));
    // A key's lifetimes, one after the other, each past the timeout after the last.
    let life = |f: &Value| {
        let key = format!("{} {} {} {}", f["src"], f["dst"], f["dqpn"], f["vlan"]);
        (
            key,
            f["first_ts"].as_f64().unwrap(),
            f["last_ts"].as_f64().unwrap(),
        )
    };
    let mut lives: Vec<(String, f64, f64)> = ends.iter().map(life).collect();
    lives.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let split = lives.windows(2).filter(|w| w[0].0 == w[1].0).count() as u64;
    for w in lives.windows(2).filter(|w| w[0].0 == w[1].0) {
        assert!(w[1].1 - w[0].2 > 1e-3, "{w:?}");
    }
    assert_eq!(flows, cfg.flows() + split);
    // The dataset: the events' flows, each once.
    let rows = duckdb_rows(&format!(
        "select flow_id, src, dst, dqpn, packets from read_parquet('{}/flows/*/*.parquet') \
         order by flow_id",
        dataset.display()
    ));
    let told: Vec<Vec<Value>> = {
        let mut v: Vec<Vec<Value>> = ends
            .iter()
            .map(|f| {
                ["id", "src", "dst", "dqpn", "packets"]
                    .map(|k| f[k].clone())
                    .to_vec()
            })
            .collect();
        v.sort_by_key(|r| r[0].as_u64());
        v
    };
    assert_eq!(rows, told);
}

/// Long-lived QPs whose ACKs take tens of milliseconds (coalesced over several WRITEs, at
/// 5,000 frames a second: a paused path, or a replay that stretched the capture), evaluated
/// every second: a request still waiting for its ACK is pending, not unanswered. Each second
/// told `unacknowledged_requests` for requests whose ACKs came a moment later, a finding the
/// report never held (its flows' allowance was capped at 1 ms, below their own ACK RTT).
#[test]
fn requests_still_waiting_for_a_slow_ack_are_not_told_unanswered_while_the_capture_runs() {
    use roce_testgen::bulk::{write_bulk, BulkConfig};
    let capture = Scratch::file("events-slow", "slow-acks.pcap");
    let cfg = BulkConfig {
        frames: 20_000,
        gap_ns: 200_000,
        ..BulkConfig::default()
    };
    write_bulk(std::fs::File::create(&capture).unwrap(), cfg).unwrap();
    let r = report_of(&capture, &[]);
    let e = events_of(&capture, &[]);
    let start = r["capture"]["first_ts_ns"].as_u64().unwrap();
    let codes = |findings: Vec<&Value>| -> BTreeSet<String> {
        findings
            .iter()
            .map(|f| f["code"].as_str().unwrap().to_string())
            .collect()
    };
    let in_report = codes(r["findings"].as_array().unwrap().iter().collect());
    let told: Vec<&Value> = e.iter().filter(|x| x["event"] == "finding").collect();
    // Evaluated while the capture ran (4 s of it), not only at its end.
    assert!(told
        .iter()
        .any(|x| x["ts_ns"].as_u64().unwrap() - start < 2_000_000_000));
    let told_codes = codes(told.iter().map(|x| &x["finding"]).collect());
    assert!(
        told_codes.is_subset(&in_report),
        "told {told_codes:?}, the report holds {in_report:?}"
    );
    assert!(
        !in_report.contains("unacknowledged_requests"),
        "{in_report:?}"
    );
}

/// An RDMA-CM request accepted 200 ms after it was sent (its REQ said its sender would wait
/// 4.3 s), in a capture evaluated while it ran: at the evaluation the request was 50 ms old,
/// and was told unanswered; the report never held it.
#[test]
fn a_connection_request_accepted_slowly_is_not_told_unanswered_while_the_capture_runs() {
    let e = events("diagnose/cm_slow_accept.pcap", &[]);
    let told: Vec<&Value> = e.iter().filter(|x| x["event"] == "finding").collect();
    assert!(told.is_empty(), "{told:?}");
    let r = report("diagnose/cm_slow_accept.pcap");
    assert_eq!(r["findings"], serde_json::json!([]));
    assert_eq!(e.iter().filter(|x| x["event"] == "flow_end").count(), 6);
}

/// An RDMA-CM request sent once 300 ms before the capture ends, its sender waiting 4.3 s: not
/// told while the capture runs; at the end, information that the capture stopped first (it
/// was a warning that the passive side never answered).
#[test]
fn a_connection_request_the_capture_ended_on_is_information_not_a_warning() {
    let e = events("diagnose/cm_pending_at_the_end.pcap", &[]);
    let told: Vec<&Value> = e.iter().filter(|x| x["event"] == "finding").collect();
    assert_eq!(told.len(), 1, "{told:?}");
    let r = report("diagnose/cm_pending_at_the_end.pcap");
    assert_eq!(told[0]["finding"], r["findings"][0]);
    let f = &r["findings"][0];
    assert_eq!(
        (f["code"].as_str(), f["severity"].as_str()),
        (Some("cm_unanswered"), Some("info"))
    );
    assert_eq!(
        f["message"],
        "1 RDMA-CM connection request from 10.0.0.1 to 10.0.0.2 got no reply before the capture ended, 300 ms after it; its sender waits 4.29 s for the answer before sending again"
    );
    assert_eq!(r["findings"].as_array().unwrap().len(), 1);
}

#[test]
fn events_tell_the_reports_findings_and_flows_at_any_thread_count() {
    for capture in [
        "sample.pcap",
        "diagnose/loss_on_lossless_priority.pcap",
        "encap.pcap",
    ] {
        let e = events(capture, &["--threads", "1"]);
        assert_eq!(e, events(capture, &["--threads", "2"]), "{capture}");
        let r = report(capture);
        let told: BTreeSet<(String, String)> = e
            .iter()
            .filter(|x| x["event"] == "finding")
            .map(|x| {
                (
                    x["finding"]["code"].to_string(),
                    x["finding"]["flow"].to_string(),
                )
            })
            .collect();
        for f in r["findings"].as_array().unwrap() {
            let key = (f["code"].to_string(), f["flow"].to_string());
            assert!(told.contains(&key), "{capture}: {key:?} not told");
        }
        // Every flow ends once, with the report's keys; its id is its own (order of
        // appearance), not its place in the sorted report.
        let key = |f: &Value| {
            format!(
                "{} {} {} {} {}",
                f["src"], f["dst"], f["dqpn"], f["vlan"], f["packets"]
            )
        };
        let ended: Vec<&Value> = e
            .iter()
            .filter(|x| x["event"] == "flow_end")
            .map(|x| &x["flow"])
            .collect();
        let mut a: Vec<String> = ended.iter().map(|f| key(f)).collect();
        let mut b: Vec<String> = r["flows"].as_array().unwrap().iter().map(key).collect();
        a.sort();
        b.sort();
        assert_eq!(a, b, "{capture}");
        let ids: Vec<u64> = ended.iter().map(|f| f["id"].as_u64().unwrap()).collect();
        assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>(), "{capture}");
        let first: Vec<u64> = ended
            .iter()
            .map(|f| f["first_frame"].as_u64().unwrap())
            .collect();
        assert!(
            first.windows(2).all(|w| w[0] < w[1]),
            "{capture}: {first:?}"
        );
        let keys = ended[0]
            .as_object()
            .unwrap()
            .keys()
            .collect::<BTreeSet<_>>();
        let report_keys = r["flows"][0]
            .as_object()
            .unwrap()
            .keys()
            .collect::<BTreeSet<_>>();
        assert_eq!(keys, report_keys);
    }
}

/// Two findings of one code and no flow (two sources pausing the RoCE priority) are both
/// told: before, the second was taken for the first.
#[test]
fn findings_of_no_flow_are_told_each() {
    for capture in [
        "diagnose/pfc_mutual.pcap",
        "diagnose/pfc_not_honoured.pcap",
        "sample.pcap",
    ] {
        let count = |findings: Vec<&Value>| {
            let mut n = std::collections::BTreeMap::<String, usize>::new();
            for f in findings.into_iter().filter(|f| f["flow"].is_null()) {
                *n.entry(f["code"].to_string()).or_default() += 1;
            }
            n
        };
        let e = events(capture, &[]);
        let told = count(
            e.iter()
                .filter(|x| x["event"] == "finding")
                .map(|x| &x["finding"])
                .collect(),
        );
        let r = report(capture);
        let reported = count(r["findings"].as_array().unwrap().iter().collect());
        assert_eq!(told, reported, "{capture}");
    }
    let r = report("diagnose/pfc_mutual.pcap");
    let paused = findings_of(&r, "pfc_pause_roce_priority").len();
    assert_eq!(paused, 2, "pfc_mutual.pcap: two sources pause priority 3");
}

#[test]
fn only_one_output_may_have_standard_output() {
    let out = run_path(&testdata("sample.pcap"), &["--events"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--events and the text report would both write to standard output"),
        "{}",
        stderr(&out)
    );
    let out = run_path(&testdata("sample.pcap"), &["--events", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    // Events on standard output with the report in a file: one JSON object per line.
    let out = run_path(&testdata("sample.pcap"), &["--events", "--json=/dev/null"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for line in stdout(&out).lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert!(v["ts_ns"].is_u64(), "{v}");
    }
    let out = run_path(&testdata("sample.pcap"), &["--packets", "--events=x"]);
    assert_eq!(out.status.code(), Some(2));
}

/// An events output that fails (a full disk: `/dev/full`) fails the run naming it, with the
/// report written all the same. It once left an empty report file.
#[test]
fn a_full_disk_under_the_events_fails_the_run_with_the_report_written() {
    let json = Scratch::file("full", "report.json");
    let json_arg = format!("--json={}", json.display());
    let capture = testdata("sample.pcap");
    let out = run_path(&capture, &["--events=/dev/full", &json_arg]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        stderr(&out).lines().last(),
        Some("roce-sniff: --events: no space left on the device"),
        "{}",
        stderr(&out)
    );
    let written: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let whole = report("sample.pcap");
    assert_eq!(written["flows"], whole["flows"]);
    assert_eq!(written["findings"], whole["findings"]);
}

/// A churn of 20,000 QPs (80,000 frames, 22 MB) in a directory of its own: its flows'
/// `flow_end` lines, under `--flow-timeout 5ms`, fill a disk or a pipe long before it is read.
fn long_churn(
    name: &str,
) -> (
    Scratch,
    std::path::PathBuf,
    roce_testgen::churn::ChurnConfig,
) {
    use roce_testgen::churn::{write_churn, ChurnConfig};
    let cfg = ChurnConfig {
        qps: 20_000,
        ..ChurnConfig::default()
    };
    let dir = Scratch::dir(name);
    let capture = dir.join("churn.pcap");
    write_churn(std::fs::File::create(&capture).unwrap(), cfg).unwrap();
    (dir, capture, cfg)
}

/// A full disk under the events while a long capture is read (flows end under
/// `--flow-timeout` from its first frames): the read stops there, and the report is that of
/// the frames read, whole, as `-c` of them reads them; the run fails naming the output. The
/// read once ended with no report at all, then with frames counted but not analysed.
#[test]
fn a_full_disk_while_the_file_is_read_stops_the_read_with_its_report_written() {
    let (dir, capture, cfg) = long_churn("full-read");
    let capture_arg = capture.to_string_lossy().to_string();
    let inputs: [&[&str]; 2] = [&[], &["-r", &capture_arg]];
    for (threads, more_inputs) in [("1", inputs[0]), ("2", inputs[0]), ("2", inputs[1])] {
        let json = dir.join(format!("full-{threads}-{}.json", more_inputs.len()));
        let json_arg = format!("--json={}", json.display());
        let args = [
            &["--flow-timeout", "5ms", "--threads", threads],
            more_inputs,
            &["--events=/dev/full", &json_arg],
        ]
        .concat();
        let out = run_path(&capture, &args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(
            err.lines().last(),
            Some("roce-sniff: --events: no space left on the device"),
            "{err}"
        );
        let written: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        let c = &written["capture"];
        assert_eq!(
            c["warnings"],
            serde_json::json!(["reading stopped: --events: no space left on the device"]),
            "{err}"
        );
        let read = c["packets"].as_u64().unwrap();
        let all = 4 * u64::from(cfg.qps) * (1 + more_inputs.len() as u64 / 2);
        assert!(read > 0 && read < all, "{read} of {all} frames read");
        assert!(!written["findings"].to_string().contains("capture_damaged"));
        if more_inputs.is_empty() {
            // Every frame read is analysed: the report of the first `read` frames.
            let count = read.to_string();
            let first = report_of(&capture, &["--flow-timeout", "5ms", "-c", &count]);
            assert_eq!(written["flows"], first["flows"], "threads {threads}");
            assert_eq!(c["flows_ended"], first["capture"]["flows_ended"]);
        }
    }
}

/// `--events | head`: once the reader goes away, the read stops with the report written, and
/// the run succeeds (a broken pipe is not an error).
#[test]
fn events_piped_into_head_stop_the_read_with_the_report_written() {
    use std::io::Read;
    let (dir, capture, _) = long_churn("events-head");
    let json = dir.join("report.json");
    let mut child = std::process::Command::new(bin())
        .args([
            "-r",
            capture.to_str().unwrap(),
            "--flow-timeout",
            "5ms",
            "--events",
        ])
        .arg(format!("--json={}", json.display()))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut head = [0u8; 4096];
    child.stdout.take().unwrap().read_exact(&mut head).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let written: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(
        written["capture"]["warnings"],
        serde_json::json!(["reading stopped: --events: its reader went away (broken pipe)"]),
        "{err}"
    );
    assert!(written["capture"]["packets"].as_u64().unwrap() < 80_000);
}
