//! Every failure mode of testgen/src/diagnose.rs, crafted as the field shows it: the report of
//! the real binary on its committed capture gives exactly the findings (code and count) the
//! generator expects, and the clean capture gives none.

mod common;

use common::*;
use serde_json::Value;

fn findings(path: &std::path::Path, args: &[&str]) -> Vec<(String, u64)> {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = run_path(path, &all);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}: {}",
        path.display(),
        stderr(&out)
    );
    let r: Value = serde_json::from_str(&stdout(&out)).expect("one JSON document");
    let mut got = finding_counts(&r);
    got.sort();
    got
}

#[test]
fn each_failure_mode_gives_exactly_its_findings() {
    let mut wrong = Vec::new();
    for s in roce_testgen::diagnose::scenarios() {
        let path = testdata(&format!("diagnose/{}.pcap", s.name));
        let got = findings(&path, s.args);
        let mut expected: Vec<(String, u64)> = s
            .expected
            .iter()
            .map(|&(c, n)| (c.to_string(), n))
            .collect();
        expected.sort();
        if got != expected {
            wrong.push(format!(
                "{}:\n  got      {got:?}\n  expected {expected:?}",
                s.name
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn host_limited_needs_a_link_speed_that_was_given() {
    // The default 100 Gb/s is an assumption: a slow flow is no finding against it.
    assert_eq!(
        findings(&testdata("diagnose/host_limited.pcap"), &[]),
        vec![]
    );
}

#[test]
fn flows_have_packet_and_message_rates() {
    let out = run_path(&testdata("diagnose/clean.pcap"), &["--json"]);
    let r: Value = serde_json::from_str(&stdout(&out)).unwrap();
    for f in r["flows"].as_array().unwrap() {
        let secs = f["duration_us"].as_f64().unwrap() / 1e6;
        let pps = f["pps"].as_f64().unwrap();
        let mps = f["messages_per_s"].as_f64().unwrap();
        assert!(
            (pps * secs - f["packets"].as_f64().unwrap()).abs() < 1e-6,
            "{f}"
        );
        assert!(
            (mps * secs - f["messages"].as_f64().unwrap()).abs() < 1e-6,
            "{f}"
        );
    }
}

#[test]
fn loss_on_a_paused_priority_is_not_blamed_on_a_lossy_one() {
    let out = run_path(
        &testdata("diagnose/loss_on_lossless_priority.pcap"),
        &["--json"],
    );
    let r: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let psn_loss = finding(&r, "psn_loss");
    let cause = psn_loss["cause"].as_str().unwrap();
    assert!(cause.contains("PFC protects this priority"), "{cause}");
    assert!(!cause.contains("lossy priority"), "{cause}");
}

/// Flows that name a peer no flow of that label names back.
fn peers_not_mutual(r: &Value) -> Vec<String> {
    let flows = r["flows"].as_array().unwrap();
    let label = |f: &Value| {
        format!(
            "{} > {} qp 0x{:06x}{}",
            f["src"].as_str().unwrap(),
            f["dst"].as_str().unwrap(),
            f["dqpn"].as_u64().unwrap(),
            f["vlan"]
                .as_u64()
                .map(|v| format!(" vlan {v}"))
                .unwrap_or_default()
        )
    };
    flows
        .iter()
        .filter_map(|f| {
            let peer = f["peer"].as_str()?;
            let named_back = flows
                .iter()
                .any(|g| label(g) == peer && g["peer"].as_str() == Some(label(f).as_str()));
            (!named_back)
                .then(|| format!("flow {} names {peer}, which does not name it back", f["id"]))
        })
        .collect()
}

/// A QP that RDMA-CM connects to a second peer after a first: at any flow timeout, every
/// flow's peer names it back (the first connection's data flow kept naming the ACK flow the
/// second one took over; a flow that ended with it then left the survivors pointing at flows
/// that had moved: a bystander was named as a peer, or the analysis panicked).
#[test]
fn peers_stay_mutual_when_a_qp_is_connected_anew_to_another() {
    let path = testdata("diagnose/qp_reused_by_another_peer.pcap");
    for timeout in ["60s", "300us", "1ms"] {
        let out = run_path(&path, &["--json", "--flow-timeout", timeout]);
        assert_eq!(out.status.code(), Some(0), "{timeout}: {}", stderr(&out));
        let r: Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(peers_not_mutual(&r), Vec::<String>::new(), "{timeout}");
        let paired = r["flows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["peer"].is_string())
            .count();
        assert_eq!(
            paired, 4,
            "{timeout}: the second connection and the bystander are pairs"
        );
    }
}

/// Reordering is not loss: message 10 came after 11, 12 and 13, 3 us after its gap. The
/// flow's figures are what the generator made, and nothing is missing or resent.
#[test]
fn a_reordered_flow_says_how_deep_and_how_late() {
    let out = run_path(&testdata("diagnose/reordered.pcap"), &["--json"]);
    let r: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let data = r["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["role"] == "data")
        .expect("the data flow");
    let psn = &data["psn"];
    assert_eq!(psn["out_of_order"], 1, "{psn}");
    assert_eq!(psn["out_of_order_depth_max"], 3, "{psn}");
    let delay = psn["out_of_order_delay_max_us"].as_f64().unwrap();
    assert!((delay - 3.0).abs() <= 0.15, "{psn}");
    assert_eq!(
        (psn["missing"].clone(), psn["retransmitted"].clone()),
        (0.into(), 0.into())
    );
    let finding = &r["findings"][0];
    assert_eq!(finding["severity"], "info", "{finding}");
    assert!(
        finding["message"]
            .as_str()
            .unwrap()
            .contains("up to 3 PSNs behind the highest seen, up to 3 us after their gap"),
        "{finding}"
    );
}

/// Retries run out at the Retry Count the connection's RDMA-CM request set (3 here), not only
/// at the largest there is (7): the finding is critical and says where the count came from.
#[test]
fn retries_run_out_at_the_count_rdma_cm_set() {
    let out = run_path(&testdata("diagnose/retries_exhausted_cm.pcap"), &["--json"]);
    let r: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let f = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "unacknowledged_requests")
        .expect("unacknowledged_requests");
    assert_eq!(f["severity"], "critical", "{f}");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("PSN 1010 was resent 3 times, 500 us apart (the Local ACK Timeout its RDMA-CM request set: 262 us), before"),
        "{f}"
    );
    assert!(
        f["cause"]
            .as_str()
            .unwrap()
            .contains("3 resends without an ACK, the retry count its RDMA-CM request set"),
        "{f}"
    );
}

#[test]
fn rnr_retries_run_out_at_the_rnr_retry_count_rdma_cm_set() {
    // Three RNR NAKs for one SEND, the connection's RNR Retry Count 2: the RNR retries ran
    // out, not the transport retries (its Retry Count is 7).
    let out = run_path(
        &testdata("diagnose/rnr_retries_exhausted_cm.pcap"),
        &["--json"],
    );
    let r: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let f = finding(&r, "unacknowledged_requests");
    assert_eq!(f["severity"], "critical", "{f}");
    let message = f["message"].as_str().unwrap();
    assert!(
        message.contains("refused it with an RNR NAK 3 times"),
        "{f}"
    );
    let cause = f["cause"].as_str().unwrap();
    assert!(
        cause.contains("RNR retries ran out (2 resends after RNR NAKs, the RNR Retry Count"),
        "{f}"
    );
    assert!(!cause.contains("transport retries"), "{f}");
    let cm = &r["hosts"][0]["as_sender"]["cm"];
    assert_eq!(
        (cm["retry_count"].as_u64(), cm["rnr_retry_count"].as_u64()),
        (Some(7), Some(2))
    );
}
