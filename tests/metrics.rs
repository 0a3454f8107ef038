//! `--metrics` scraped by a real Prometheus server (Debian's `prometheus`, which `make test`
//! installs): the test starts roce-sniff on a capture of testdata/ and Prometheus with a scrape
//! config for it, both on free loopback ports, then asks Prometheus's HTTP API with PromQL:
//! the answers must be the offline report's counters.

mod common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

#[test]
fn prometheus_scrapes_the_offline_reports_counters() {
    if !prometheus_installed() {
        return;
    }
    let capture = testdata("sample.pcap");
    let report: Value = serde_json::from_slice(&run_path(&capture, &["--json"]).stdout).unwrap();
    let (metrics_port, prom_port) = (free_port(), free_port());
    let sniff = Running(
        Command::new(bin())
            .args(["-r", capture.to_str().unwrap()])
            .arg(format!("--metrics=127.0.0.1:{metrics_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let dir = Scratch::dir("prom");
    let _prometheus = start_prometheus(&dir, metrics_port, prom_port);
    // Wait for the first scrape to be queryable.
    let started = Instant::now();
    let roce = loop {
        if let Some(v) = promql(prom_port, "roce_sniff_frames_total{kind=\"roce\"}") {
            break v;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "Prometheus never scraped roce-sniff"
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    let c = &report["capture"];
    assert_eq!(roce as u64, c["roce_packets"].as_u64().unwrap());
    let flows = report["flows"].as_array().unwrap();
    let mut expect = promql_of_report(&report);
    expect.extend([
        (
            "sum(roce_sniff_qp_bytes_total)",
            flows
                .iter()
                .map(|f| f["bytes"].as_u64().unwrap())
                .sum::<u64>() as f64,
        ),
        (
            "roce_sniff_qp_psn_gaps_total{src=\"10.0.0.5\",qp=\"0x000213\"}",
            1.0,
        ),
        // The gap's 3 PSNs were NAKed and resent: lost, not missed by the capture.
        (
            "roce_sniff_qp_psns_lost_total{src=\"10.0.0.5\",qp=\"0x000213\"}",
            3.0,
        ),
        ("roce_sniff_capture_missed_psns_total", 0.0),
        (
            "sum(roce_sniff_pfc_pause_frames_total{priority=\"3\"})",
            report["pfc"]["priorities"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| p["priority"] == 3)
                .map(|p| p["xoff"].as_u64().unwrap())
                .sum::<u64>() as f64,
        ),
        (
            "count(roce_sniff_findings_total{code=\"psn_loss\",severity=\"critical\"})",
            1.0,
        ),
        (
            "sum(roce_sniff_pfc_storms_total)",
            report["pfc"]["priorities"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["storms_total"].as_u64().unwrap())
                .sum::<u64>() as f64,
        ),
    ]);
    let wrong = promql_wrong(prom_port, &expect);
    // Paused time: the report's microseconds, in seconds.
    let paused_us: f64 = report["pfc"]["priorities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["pause_us"].as_f64().unwrap())
        .sum();
    let paused = promql(prom_port, "sum(roce_sniff_pfc_paused_seconds_total)").unwrap();
    assert!(
        (paused - paused_us / 1e6).abs() < 1e-6,
        "{paused} vs {paused_us} us"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    grafana_dashboard_queries_what_is_served(metrics_port, prom_port);
    alerting_rules_are_valid_and_query_what_is_served(metrics_port);
    exposition_passes_promtool(metrics_port);
    // The file's counters are the monitor's from its first scrape: the rules on them fire
    // for a series new and already above 0.
    let started = Instant::now();
    loop {
        let firing = firing_alerts(prom_port);
        let storm = firing.iter().any(|(name, l)| {
            name == "RocePfcStorm" && l["priority"] == "4" && l["source"] == "02:00:00:00:00:5f"
        });
        let loss = firing
            .iter()
            .any(|(name, l)| name == "RoceQpLosingPackets" && l["qp"] == "0x000213");
        if storm && loss {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "alerts firing: {firing:?}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    // SIGTERM ends the server with exit 0.
    let mut sniff = sniff;
    let child = &mut sniff.0;
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(err.contains("serving its final metrics"), "{err}");
}

/// The exposition as served passes `promtool check metrics` (format and Prometheus's naming
/// conventions).
fn exposition_passes_promtool(metrics_port: u16) {
    let text = http_get(metrics_port, "/metrics").expect("the metrics served");
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs");
    std::io::Write::write_all(&mut promtool.stdin.take().unwrap(), text.as_bytes()).unwrap();
    let out = promtool.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// docs/prometheus/roce-sniff-alerts.yml: promtool (Debian's prometheus package) accepts the
/// rules, and every metric they query is one the monitor serves.
fn alerting_rules_are_valid_and_query_what_is_served(metrics_port: u16) {
    let path = repo().join("docs/prometheus/roce-sniff-alerts.yml");
    let out = Command::new("promtool")
        .args(["check", "rules", path.to_str().unwrap()])
        .output()
        .expect("promtool runs");
    assert!(
        out.status.success(),
        "promtool: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&path).unwrap();
    // The expressions: every line of a rule's `expr` (one line, or a block after `|`).
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut exprs = Vec::new();
    // The indentation of the `expr: |` whose block is being read.
    let mut block: Option<usize> = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some(e) = t.strip_prefix("expr:") {
            block = (e.trim() == "|").then(|| indent(line));
            if block.is_none() {
                exprs.push(e.trim());
            }
        } else if block.is_some_and(|b| indent(line) > b && !t.is_empty()) {
            exprs.push(t);
        } else {
            block = None;
        }
    }
    assert!(exprs.len() >= 9, "{exprs:?}");
    let served = http_get(metrics_port, "/metrics").unwrap();
    let missing = unserved_metrics(&exprs, &served);
    assert!(
        missing.is_empty(),
        "the alerting rules query unserved metrics: {missing:?}"
    );
}

/// docs/grafana/roce-sniff.json: every metric its panels query is one the monitor serves, and
/// Prometheus accepts every query.
fn grafana_dashboard_queries_what_is_served(metrics_port: u16, prom_port: u16) {
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("docs/grafana/roce-sniff.json")).unwrap(),
    )
    .unwrap();
    let served = http_get(metrics_port, "/metrics").unwrap();
    let exprs: Vec<&str> = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap())
        .map(|t| t["expr"].as_str().unwrap())
        .collect();
    assert!(exprs.len() >= 10, "{exprs:?}");
    let missing = unserved_metrics(&exprs, &served);
    for e in &exprs {
        let body = http_get(prom_port, &format!("/api/v1/query?query={}", encode(e))).unwrap();
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["status"], "success", "{e}: {body}");
    }
    assert!(
        missing.is_empty(),
        "the dashboard queries unserved metrics: {missing:?}"
    );
}

/// A capture that missed PSNs the other end acknowledged: the alerting rules tell the capture's
/// misses (RoceSniffMissingPackets) apart from the QPs that lost packets (RoceQpLosingPackets
/// fires for the three lossy QPs, never for the one whose gaps were acknowledged).
#[test]
fn the_alerts_tell_the_captures_misses_apart_from_loss() {
    if !prometheus_installed() {
        return;
    }
    let (metrics_port, prom_port) = (free_port(), free_port());
    let _sniff = Running(
        Command::new(bin())
            .args([
                "-r",
                testdata("diagnose/capture_missed.pcap").to_str().unwrap(),
            ])
            .arg(format!("--metrics=127.0.0.1:{metrics_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let dir = Scratch::dir("prom-missed");
    let _prometheus = start_prometheus(&dir, metrics_port, prom_port);
    let started = Instant::now();
    loop {
        let firing = firing_alerts(prom_port);
        let losing: std::collections::BTreeSet<String> = firing
            .iter()
            .filter(|(name, _)| name == "RoceQpLosingPackets")
            .map(|(_, l)| l["qp"].as_str().unwrap_or("").to_string())
            .collect();
        let missing = firing
            .iter()
            .any(|(name, _)| name == "RoceSniffMissingPackets");
        if missing && losing.len() == 3 {
            assert!(!losing.contains("0x000100"), "{losing:?}");
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "alerts firing: {firing:?}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}
