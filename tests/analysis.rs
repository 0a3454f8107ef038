//! End-to-end analysis tests: the report of the real binary on the crafted captures equals what
//! the generator put in (testgen/src/testdata.rs documents each), and the real captures show no
//! false loss.

mod common;

use common::*;
use serde_json::{json, Value};

fn report(path: &std::path::Path, extra: &[&str]) -> Value {
    let mut args = vec!["--json"];
    args.extend_from_slice(extra);
    let out = run_path(path, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).expect("one JSON document")
}

fn flow<'a>(r: &'a Value, src: &str, dqpn: u32) -> &'a Value {
    r["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["src"] == src && f["dqpn"] == dqpn)
        .unwrap_or_else(|| panic!("no flow {src} qp {dqpn:#x}"))
}

fn psn(f: &Value) -> (u64, u64, u64, u64, u64) {
    let p = &f["psn"];
    (
        p["gaps"].as_u64().unwrap(),
        p["missing"].as_u64().unwrap(),
        p["duplicates"].as_u64().unwrap(),
        p["out_of_order"].as_u64().unwrap(),
        p["retransmitted"].as_u64().unwrap(),
    )
}

#[test]
fn report_has_the_documented_top_level() {
    let r = report(&testdata("analysis_psn.pcap"), &[]);
    assert_eq!(r["schema"], "roce-sniff.report/4");
    for k in [
        "packets",
        "bytes",
        "roce_packets",
        "pfc_frames",
        "malformed",
        "truncated",
        "icrc_bad",
        "first_ts",
        "last_ts",
    ] {
        assert!(r["capture"].get(k).is_some(), "capture.{k}");
    }
    let f = &r["flows"][0];
    for k in [
        "src",
        "dst",
        "dqpn",
        "vlan",
        "packets",
        "bytes",
        "pcp",
        "dscp",
        "ecn",
        "opcodes",
        "psn",
        "naks",
        "cnps",
        "ack_rtt_us",
        "path_mtu",
        "gbps",
    ] {
        assert!(f.get(k).is_some(), "flows[].{k}");
    }
    for k in [
        "gaps",
        "missing",
        "duplicates",
        "out_of_order",
        "retransmitted",
    ] {
        assert!(f["psn"].get(k).is_some(), "psn.{k}");
    }
    assert!(r["pfc"].get("priorities").is_some() && r["pfc"].get("pause_8023x").is_some());
    let finding = &r["findings"][0];
    for k in ["severity", "code", "message", "flow", "frames"] {
        assert!(finding.get(k).is_some(), "findings[].{k}");
    }
}

#[test]
fn psn_scenarios_count_exactly() {
    let r = report(&testdata("analysis_psn.pcap"), &[]);
    assert_eq!(r["capture"]["roce_packets"], 76);
    // Loss of PSN 1 across the wrap, NAK, go-back-N from 1 to 5.
    let l = flow(&r, "10.0.0.1", 0x100);
    assert_eq!(psn(l), (1, 0, 0, 0, 5));
    assert_eq!(l["psn"]["recovered"], 1);
    assert_eq!(l["naks"]["psn_sequence_error"], 1);
    assert_eq!(l["acks"], 3);
    assert_eq!(
        l["ack_rtt_us"],
        json!({"count": 3, "p50": 0.5, "p99": 0.5, "p999": 0.5, "max": 0.5})
    );
    // The go-back came 9.5 us after the NAK.
    assert_eq!(l["recovery"]["nak_to_retransmit_us"]["max"], 9.5);
    assert_eq!(l["recovery"]["rnr_wait_us"]["count"], 0);
    assert_eq!(l["recovery"]["timeout_resends"], 0);
    assert_eq!(l["path_mtu"], 1024);
    assert_eq!(l["paired_by"], "psn");
    assert_eq!(l["peer"], "10.0.0.2 > 10.0.0.1 qp 0x000200 vlan 100");
    assert_eq!(l["opcodes"]["RC_RDMA_WRITE_FIRST"], 5);
    // Reordering: a gap that is filled, not loss.
    assert_eq!(psn(flow(&r, "10.0.0.3", 0x101)), (1, 0, 0, 1, 0));
    // PSN 302 resent with no NAK: a timeout, after 4.598 ms of silence on the QP.
    let timeout = &flow(&r, "10.0.0.1", 0x104)["recovery"];
    assert_eq!(timeout["timeout_resends"], 1);
    assert_eq!(timeout["timeout_interval_us"]["p50"], 4598.0);
    assert_eq!(timeout["nak_to_retransmit_us"]["count"], 0);
    // A frame captured twice, 100 ns apart: a copy of the capture, not a duplicate PSN.
    assert_eq!(psn(flow(&r, "10.0.0.4", 0x102)), (0, 0, 0, 0, 0));
    assert_eq!(r["capture"]["capture_duplicates"], 1);
    // UC loss is never repaired.
    let uc = flow(&r, "10.0.0.5", 0x103);
    assert_eq!(psn(uc), (1, 3, 0, 0, 0));
    assert_eq!(uc["psn"]["missing_ranges"], json!([[203, 205]]));
    assert_eq!(uc["transport"], "UC");
    // Timeout retransmission; Karn: no RTT sample from the resent request.
    let to = flow(&r, "10.0.0.1", 0x104);
    assert_eq!(psn(to), (0, 0, 0, 0, 1));
    assert_eq!(to["ack_rtt_us"]["count"], 2);
    // READs advance the PSN by their responses: no gap.
    let rd = flow(&r, "10.0.0.1", 0x105);
    assert_eq!(psn(rd), (0, 0, 0, 0, 0));
    assert_eq!(rd["read_responses"], 15);
    assert_eq!(
        rd["read_latency_us"],
        json!({"count": 3, "p50": 3.0, "p99": 3.0, "p999": 3.0, "max": 3.0})
    );
    assert_eq!(flow(&r, "10.0.0.2", 0x205)["read_response_gaps"], 0);
    // RNR NAK and its resend, a remote access error.
    let n = flow(&r, "10.0.0.3", 0x106);
    assert_eq!(psn(n), (0, 0, 0, 0, 1));
    assert_eq!(n["naks"]["rnr"], 1);
    assert_eq!(n["naks"]["remote_access_error"], 1);
    // The resend came 99 us after the RNR NAK (801 us, 900 us): an RNR wait, not a sequence
    // NAK's resend.
    assert_eq!(n["recovery"]["rnr_wait_us"]["max"], 99.0);
    assert_eq!(n["recovery"]["nak_to_retransmit_us"]["count"], 0);
    let c = finding_codes(&r);
    for code in [
        "psn_loss",
        "retransmissions",
        "out_of_order",
        "capture_duplicates",
        "nak_error",
        "rnr_nak",
    ] {
        assert!(c.contains(&code.to_string()), "{code} in {c:?}");
    }
    // Exactly the two lossy flows get a loss finding (the reordered one does not).
    assert_eq!(c.iter().filter(|x| *x == "psn_loss").count(), 2);
    // Findings are ranked: critical first.
    let sev: Vec<&str> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["severity"].as_str().unwrap())
        .collect();
    let rank = |s: &str| {
        ["critical", "warning", "info"]
            .iter()
            .position(|x| *x == s)
            .unwrap()
    };
    assert!(sev.windows(2).all(|w| rank(w[0]) <= rank(w[1])), "{sev:?}");
    // The troubled flows come first.
    assert!(
        r["flows"][0]["psn"]["gaps"].as_u64().unwrap() > 0
            || r["flows"][0]["naks"]["remote_access_error"] == 1
    );
}

#[test]
fn congestion_scenario_counts_ce_cnp_and_pfc() {
    let r = report(&testdata("analysis_congestion.pcap"), &[]);
    let x = flow(&r, "10.0.0.1", 0x110);
    assert_eq!((x["ce"].clone(), x["cnps"].clone()), (json!(20), json!(2)));
    assert_eq!(x["ce_to_cnp_us"], 10.0);
    assert_eq!(x["ce_without_cnp"], 0);
    assert_eq!(x["ecn"], json!({"ce": 20, "ect0": 80}));
    let y = flow(&r, "10.0.0.3", 0x111);
    assert_eq!(
        (
            y["ce"].clone(),
            y["cnps"].clone(),
            y["ce_without_cnp"].clone()
        ),
        (json!(10), json!(0), json!(10))
    );
    let pfc = &r["pfc"];
    assert_eq!(pfc["roce_priorities"], json!([3, 6]));
    let p3 = pfc["priorities"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["priority"] == 3)
        .unwrap();
    assert_eq!(p3["roce"], true);
    assert_eq!(
        (p3["xoff"].clone(), p3["xon"].clone()),
        (json!(3), json!(1))
    );
    assert_eq!(p3["pause_quanta"], 132_070);
    assert!((p3["pause_us"].as_f64().unwrap() - 205.12).abs() < 1e-6);
    assert_eq!(p3["longest_pause_us"], 200.0);
    assert_eq!(p3["storms"], json!([]));
    let p4 = pfc["priorities"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["priority"] == 4)
        .unwrap();
    assert_eq!(p4["roce"], false);
    assert_eq!(p4["xoff"], 601);
    assert_eq!(p4["storms_total"], 1);
    let storm = &p4["storms"][0];
    assert_eq!(storm["frames"], 601);
    assert_eq!(storm["kind"], "paused+rate");
    assert!((storm["duration_ms"].as_f64().unwrap() - 150.3355).abs() < 0.001);
    let pause = &pfc["pause_8023x"][0];
    assert_eq!(pause["frames"], 2);
    assert!((pause["pause_us"].as_f64().unwrap() - 2.62).abs() < 0.01);
    let c = finding_codes(&r);
    for code in [
        "pfc_storm",
        "ce_without_cnp",
        "pfc_pause_roce_priority",
        "pause_8023x",
    ] {
        assert!(c.contains(&code.to_string()), "{code} in {c:?}");
    }
}

#[test]
fn link_speed_and_storm_options_change_the_pfc_math() {
    // At 25G a quantum is 4x longer; a 200 ms storm threshold leaves no storm.
    let r = report(
        &testdata("analysis_congestion.pcap"),
        &["--link-speed", "25G", "--storm-ms", "200"],
    );
    let prios = r["pfc"]["priorities"].as_array().unwrap();
    let p3 = prios.iter().find(|p| p["priority"] == 3).unwrap();
    // 200 us cut by XON, then 1000 quanta at 25G = 20.48 us.
    assert!((p3["pause_us"].as_f64().unwrap() - 220.48).abs() < 1e-6);
    let p4 = prios.iter().find(|p| p["priority"] == 4).unwrap();
    assert_eq!(p4["storms_total"], 0);
    assert_eq!(r["pfc"]["link_gbps"], 25.0);
    // A low --storm-fps alone does not make a storm of the short pauses on priority 3.
    let bad = run_path(
        &testdata("analysis_congestion.pcap"),
        &["--link-speed", "1G"],
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("outside 10G..800G"));
}

#[test]
fn marking_scenario_finds_each_mistake() {
    let r = report(&testdata("analysis_marking.pcap"), &[]);
    let c = finding_codes(&r);
    for code in [
        "dscp0_with_pcp",
        "not_ect",
        "untagged_roce",
        "exceeds_path_mtu",
        "icrc_bad",
        "incast",
    ] {
        assert!(c.contains(&code.to_string()), "{code} in {c:?}");
    }
    let m1 = flow(&r, "10.0.0.1", 0x120);
    assert_eq!(m1["dscp"], json!({"0": 10}));
    assert_eq!(m1["pcp"], json!({"3": 10}));
    assert_eq!(flow(&r, "10.0.0.3", 0x121)["pcp"], json!({"untagged": 10}));
    let m4 = flow(&r, "10.0.0.5", 0x123);
    assert_eq!(
        (
            m4["oversize"].clone(),
            m4["icrc_bad"].clone(),
            m4["cnps"].clone()
        ),
        (json!(1), json!(1), json!(1))
    );
    assert_eq!(psn(m4), (0, 0, 0, 0, 0));
    let untagged: Vec<&Value> = findings_of(&r, "untagged_roce");
    assert_eq!(untagged.len(), 1);
    assert_eq!(untagged[0]["flow"], "10.0.0.3 > 10.0.0.2 qp 0x000121");
    let incast = finding(&r, "incast");
    assert_eq!(incast["count"], 4);
    assert_eq!(r["capture"]["icrc_bad"], 1);
}

/// A pcapng with analysis_marking.pcap on an Ethernet interface, and every frame again, a second
/// later, without its link header on a raw-IP interface (link type 101): the raw-IP flows show
/// no tag because none can show there, so only the one untagged Ethernet flow is raised.
#[test]
fn untagged_roce_compares_only_flows_whose_tags_could_show() {
    use roce_parsers::capture::{CaptureParser, Next};
    use roce_testgen::writer::PcapngWriter;
    let data = std::fs::read(testdata("analysis_marking.pcap")).unwrap();
    let (mut parser, mut at) = CaptureParser::new(&data).unwrap();
    let mut frames = Vec::new();
    loop {
        match parser.next(&data[at..], at as u64).unwrap() {
            Next::Record(r, used) => {
                frames.push((r.ts_ns, r.data.to_vec()));
                at += used;
            }
            Next::Skip(used) => at += used,
            Next::Incomplete { .. } => break,
        }
    }
    let mut w = PcapngWriter::new(Vec::new()).unwrap();
    let ethernet = w.add_interface(1, 65535, 9).unwrap();
    let raw_ip = w.add_interface(101, 65535, 9).unwrap();
    for (ts, f) in &frames {
        w.write(ethernet, *ts, f).unwrap();
    }
    for (ts, f) in &frames {
        // Past the MAC addresses, any 802.1Q tags, and the ethertype.
        let mut l3 = 12;
        while f[l3..l3 + 2] == [0x81, 0x00] {
            l3 += 4;
        }
        w.write(raw_ip, ts + 1_000_000_000, &f[l3 + 2..]).unwrap();
    }
    let path = Scratch::file("untagged-raw-ip", "ethernet_and_raw_ip.pcapng");
    std::fs::write(&path, w.into_inner()).unwrap();
    let r = report(&path, &[]);
    assert_eq!(
        r["capture"]["link_types"].as_object().unwrap().len(),
        2,
        "{}",
        r["capture"]["link_types"]
    );
    let untagged: Vec<&Value> = findings_of(&r, "untagged_roce");
    assert_eq!(untagged.len(), 1, "{untagged:?}");
    assert_eq!(untagged[0]["flow"], "10.0.0.3 > 10.0.0.2 qp 0x000121");
}

#[test]
fn sample_tells_its_story() {
    // See sample() in testgen/src/testdata.rs.
    let r = report(&testdata("sample.pcap"), &[]);
    let lossy = flow(&r, "10.0.0.5", 0x213);
    assert_eq!(psn(lossy), (1, 0, 0, 0, 4));
    assert_eq!(lossy["psn"]["recovered"], 3);
    assert_eq!(lossy["naks"]["psn_sequence_error"], 1);
    assert_eq!(
        lossy["dscp"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["0"]
    );
    let deaf = flow(&r, "10.0.0.4", 0x212);
    assert!(deaf["ce"].as_u64().unwrap() > 0);
    assert_eq!(deaf["cnps"], 0);
    for (src, qp) in [("10.0.0.1", 0x210), ("10.0.0.3", 0x211)] {
        let f = flow(&r, src, qp);
        assert!(f["ce"].as_u64().unwrap() > 0);
        assert_eq!(f["cnps"], f["ce"], "one CNP per CE mark");
        assert_eq!(f["ce_without_cnp"], 0);
        assert_eq!(f["ce_to_cnp_us"], 5.0);
        assert_eq!(psn(f), (0, 0, 0, 0, 0));
    }
    assert_eq!(r["pfc"]["roce_priorities"], json!([3, 6]));
    let prios = r["pfc"]["priorities"].as_array().unwrap();
    let p3 = prios.iter().find(|p| p["priority"] == 3).unwrap();
    assert_eq!(
        (p3["xoff"].clone(), p3["storms_total"].clone()),
        (json!(200), json!(0))
    );
    assert!((p3["pause_us"].as_f64().unwrap() - 40_135.539).abs() < 0.01);
    let p4 = prios.iter().find(|p| p["priority"] == 4).unwrap();
    assert_eq!(
        (p4["xoff"].clone(), p4["storms_total"].clone()),
        (json!(601), json!(1))
    );
    let c = finding_codes(&r);
    for code in [
        "psn_loss",
        "retransmissions",
        "ce_without_cnp",
        "pfc_pause_roce_priority",
        "pfc_storm",
        "dscp0_with_pcp",
        "incast",
        "snaplen_hides_icrc",
    ] {
        assert!(c.contains(&code.to_string()), "{code} in {c:?}");
    }
    // The lossy flow is listed first.
    assert_eq!(r["flows"][0]["dqpn"], 0x213);
    let text = stdout(&run_path(&testdata("sample.pcap"), &[]));
    assert!(text.starts_with("roce-sniff report: "));
    for section in [
        "Findings:",
        "Flows (troubled first)",
        "PFC at 100 Gb/s, assumed: set --link-speed (RoCE on priorities 3, 6)",
    ] {
        assert!(text.contains(section), "{section}");
    }
    // Told, the speed is no longer an assumption.
    let told = stdout(&run_path(
        &testdata("sample.pcap"),
        &["--link-speed", "100G"],
    ));
    assert!(
        told.contains("PFC at 100 Gb/s (RoCE on priorities 3, 6)"),
        "{told}"
    );
    assert!(text.contains("CRITICAL psn_loss"));
}

#[test]
fn real_captures_show_no_false_loss() {
    for path in real_captures() {
        let r = report(&path, &[]);
        for f in r["flows"].as_array().unwrap() {
            assert_eq!(psn(f), (0, 0, 0, 0, 0), "{}: {f}", path.display());
            assert_eq!(f["read_response_gaps"], 0);
        }
        let c = finding_codes(&r);
        assert!(!c.contains(&"psn_loss".to_string()), "{}", path.display());
    }
    // montybeatnik: RDMA-CM pairs the RC QPs; the READ of 4096 bytes at MTU 1024 is no gap.
    let r = report(
        &real_capture("montybeatnik_roce_capture_read-write-ecn.pcap"),
        &[],
    );
    let w = flow(&r, "192.168.65.5", 0x11);
    assert_eq!(w["paired_by"], "rdma_cm");
    assert_eq!(w["path_mtu"], 1024);
    assert_eq!(w["read_responses"], 4);
    assert_eq!(w["read_latency_us"]["count"], 1);
    assert_eq!(
        w["opcodes"],
        json!({"RC_RDMA_WRITE_ONLY": 1, "RC_RDMA_READ_REQUEST": 1})
    );
    // oferby: two SEND flows paired by their ACK PSNs, ECT(0).
    let r = report(&real_capture("oferby_roce.pcap"), &[]);
    let data: Vec<&Value> = r["flows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["role"] == "data")
        .collect();
    assert_eq!(data.len(), 2);
    for f in data {
        assert_eq!(f["ecn"], json!({"ect0": f["packets"]}));
        assert!(f["ack_rtt_us"]["count"].as_u64().unwrap() > 0);
    }
}

#[test]
fn a_ud_sender_shares_one_psn_sequence_across_destinations() {
    use roce_testgen::frames::{self, FrameSpec, Net, RoceSpec};
    use roce_testgen::writer::PcapFlavor;
    use roce_testgen::writer::{pcap_bytes, T0_NS};
    // One UD QP (0x99 on 10.0.0.1) sends to two peers in turn: PSNs 10..19 alternate between
    // the two flows, which is no loss; then PSN 25 to the first peer skips 20..24, which is.
    let link = FrameSpec::new([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
    let mut frames_ = Vec::new();
    let ud = |psn: u32, dst: [u8; 4]| {
        let mut s = RoceSpec::new(0x64, 0x200, psn).payload(64);
        s.deth = Some(roce_parsers::Deth {
            qkey: 0x1111,
            sqpn: 0x99,
        });
        frames::rocev2(&link, Net::v4([10, 0, 0, 1], dst, 0x6a), 50000, &s)
    };
    for psn in 10..20u32 {
        let dst = if psn % 2 == 0 {
            [10, 0, 0, 2]
        } else {
            [10, 0, 0, 3]
        };
        frames_.push((T0_NS + u64::from(psn) * 1000, ud(psn, dst)));
    }
    frames_.push((T0_NS + 100_000, ud(25, [10, 0, 0, 2])));
    let data = pcap_bytes(&frames_, PcapFlavor::MICRO_LE, 1, 65535);
    let out = roce_sniff::run_in_memory(&data, &["--json"], false).unwrap();
    let r: Value = serde_json::from_slice(&out).unwrap();
    let to2 = flow(&r, "10.0.0.1", 0x200);
    let flows: Vec<&Value> = r["flows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["dqpn"] == 0x200)
        .collect();
    assert_eq!(flows.len(), 2);
    let to3 = flows.iter().find(|f| f["dst"] == "10.0.0.3").unwrap();
    assert_eq!(psn(to3), (0, 0, 0, 0, 0));
    let to2 = if to2["dst"] == "10.0.0.2" {
        to2
    } else {
        flows.iter().find(|f| f["dst"] == "10.0.0.2").unwrap()
    };
    assert_eq!(psn(to2), (1, 5, 0, 0, 0));
    assert_eq!(to2["transport"], "UD");
}

/// A capture that missed frames is not a network that lost them (testgen's
/// diagnose::capture_missed): PSNs the other end acknowledged are counted as missed by the
/// capture, told first in the text report, and left out of every loss finding; the real loss
/// of the same file (a NAK and its resend, the same with the NAK not captured, a gap nobody
/// acknowledges) is still loss.
#[test]
fn psns_the_other_end_acknowledged_were_missed_by_the_capture_not_lost() {
    let path = testdata("diagnose/capture_missed.pcap");
    let r = report(&path, &[]);
    assert_eq!(r["schema"], "roce-sniff.report/4");
    let m = &r["capture"]["missed"];
    assert_eq!(
        (m["psns"].as_u64(), m["flows"].as_u64()),
        (Some(5), Some(2))
    );
    let share = 5.0 / (r["capture"]["roce_packets"].as_f64().unwrap() + 5.0);
    assert!((m["share"].as_f64().unwrap() - share).abs() < 1e-12, "{m}");
    // .1 > .2: 4 data frames unseen, acknowledged: missed, not missing; no loss.
    let a = flow(&r, "10.0.0.1", 0x100);
    assert_eq!(a["psn"]["capture_missed"], 4);
    assert_eq!(psn(a), (3, 0, 0, 0, 0));
    assert_eq!(a["psn"]["missing_ranges"], json!([]));
    // .3 > .4: a READ response unseen, no re-issue: missed on the response flow.
    let responses = flow(&r, "10.0.0.4", 0x401);
    assert_eq!(responses["read_response_gaps"], 0);
    assert_eq!(responses["psn"]["capture_missed"], 1);
    // .5 > .6 (NAK captured) and .7 > .8 (NAK not captured): the same go-back replay.
    for src in ["10.0.0.5", "10.0.0.7"] {
        let f = flow(&r, src, if src == "10.0.0.5" { 0x102 } else { 0x103 });
        assert_eq!(psn(f), (1, 0, 0, 0, 2), "{src}");
        assert_eq!(f["psn"]["recovered"], 1, "{src}");
    }
    // .9 > .10: a gap nobody acknowledges is missing.
    let e = flow(&r, "10.0.0.9", 0x104);
    assert_eq!(e["psn"]["missing_ranges"], json!([[1010, 1010]]));
    let loss: Vec<&str> = findings_of(&r, "psn_loss")
        .iter()
        .map(|f| f["flow"].as_str().unwrap())
        .collect();
    assert_eq!(
        loss,
        [
            "10.0.0.5 > 10.0.0.6 qp 0x000102 vlan 100",
            "10.0.0.7 > 10.0.0.8 qp 0x000103 vlan 100",
            "10.0.0.9 > 10.0.0.10 qp 0x000104 vlan 100"
        ]
    );
    for code in ["read_response_loss", "out_of_order", "duplicates", "incast"] {
        assert!(findings_of(&r, code).is_empty(), "{code}");
    }
    let missed = findings_of(&r, "capture_missed");
    assert_eq!(missed.len(), 1);
    let f = missed[0];
    assert_eq!(
        (f["severity"].as_str(), f["count"].as_u64()),
        (Some("warning"), Some(5))
    );
    assert_eq!(f["group"]["flows"], 2);
    assert_eq!(
        f["group"]["worst"][0]["flow"],
        "10.0.0.1 > 10.0.0.2 qp 0x000100 vlan 100"
    );
    assert_eq!(f["group"]["worst"][0]["count"], 4);
    // Its frames: the first after each gap of the flow (its loss_frames), every one missed.
    assert_eq!(f["frames"], a["loss_frames"]);
    assert_eq!(f["frames"].as_array().unwrap().len(), 3);
    let message = f["message"].as_str().unwrap();
    // The share is of the data PSNs of the two flows: 16 requests and 4 missed on one, 11
    // READ responses and 1 missed on the other (not of every RoCE frame, ACKs included).
    assert!(
        message.contains("the capture missed 5 of the 32 data PSNs (15.62%) of 2 flows"),
        "{message}"
    );
    assert_eq!(r["capture"]["missed"]["data_psns"], 32);
    assert!(message.contains("lower bound"), "{message}");
    let cause = f["cause"].as_str().unwrap();
    for want in ["-B", "--capture-thread", "mirror session", "sprayed"] {
        assert!(cause.contains(want), "{want}: {cause}");
    }
    // The loss the same capture shows is told with its caveat, the capture is incomplete,
    // where PSNs were never seen again; a gap a resend proves never carries it.
    for loss in findings_of(&r, "psn_loss") {
        let cause = loss["cause"].as_str().unwrap();
        let hedged = cause.contains("the capture itself is incomplete");
        let never_seen = loss["message"]
            .as_str()
            .unwrap()
            .contains(", 1 never seen)");
        assert_eq!(hedged, never_seen, "{loss}");
    }
    assert_eq!(findings_of(&r, "psn_loss").len(), 3);
    // The text report says it before anything else.
    let text = stdout(&run_path(&path, &[]));
    let head: Vec<&str> = text.lines().take(6).collect();
    assert!(
        head.iter()
            .any(|l| l.contains("the capture missed 5 of the 32 data PSNs of 2 flows")),
        "{text}"
    );
    // --finding capture_missed keeps the connections of the flows it names.
    let kept = report(&path, &["--finding", "capture_missed"]);
    let mut labels: Vec<String> = kept["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{} {}",
                f["src"].as_str().unwrap(),
                f["dst"].as_str().unwrap()
            )
        })
        .collect();
    labels.sort();
    assert_eq!(
        labels,
        [
            "10.0.0.1 10.0.0.2",
            "10.0.0.2 10.0.0.1",
            "10.0.0.3 10.0.0.4",
            "10.0.0.4 10.0.0.3"
        ]
    );
}

/// analysis_psn.pcap without frame 13, the NAK of QP 0x100's loss: the go-back that follows is
/// still a replay of retransmissions (it was out of order and duplicates), and still loss.
#[test]
fn a_nak_the_capture_missed_still_makes_the_go_back_a_replay() {
    let path = capture_without(&testdata("analysis_psn.pcap"), &[13], "nak-missed");
    let r = report(&path, &[]);
    let l = flow(&r, "10.0.0.1", 0x100);
    assert_eq!(psn(l), (1, 0, 0, 0, 5));
    assert_eq!(l["psn"]["recovered"], 1);
    assert_eq!(l["naks"]["psn_sequence_error"], 0);
    let label = "10.0.0.1 > 10.0.0.2 qp 0x000100 vlan 100";
    let of_flow = |code| findings_of(&r, code).iter().any(|f| f["flow"] == label);
    assert!(of_flow("psn_loss") && of_flow("retransmissions"));
    assert!(!of_flow("out_of_order") && !of_flow("duplicates"));
}

/// sample.pcap without frame 4881, the first copy of PSN 1963 on qp 0x000213 that made the
/// responder NAK: the NAK names 1960 before the capture saw it. 1960 is lost (and recovered),
/// the trigger was missed by the capture, and 1960 and 1961 come again as retransmissions.
#[test]
fn a_nak_whose_trigger_the_capture_missed_proves_its_loss() {
    let path = capture_without(&testdata("sample.pcap"), &[4881], "nak-trigger-missed");
    let r = report(&path, &[]);
    let f = flow(&r, "10.0.0.5", 0x213);
    assert_eq!(psn(f), (1, 0, 0, 0, 2));
    assert_eq!(f["psn"]["recovered"], 1);
    assert_eq!(f["psn"]["capture_missed"], 1);
    assert_eq!(f["naks"]["psn_sequence_error"], 1);
    let label = "10.0.0.5 > 10.0.0.2 qp 0x000213 vlan 100";
    for code in ["psn_loss", "retransmissions", "capture_missed"] {
        let names = |x: &&Value| {
            let worst = x["group"]["worst"].as_array();
            x["flow"] == label || worst.is_some_and(|w| w.iter().any(|g| g["flow"] == label))
        };
        assert!(
            findings_of(&r, code).iter().any(names),
            "no {code} on {label}"
        );
    }
    // The NAK (frame 4882, now 4881) is the loss's evidence; the resends of 1960 and 1961
    // (frames 4887 and 4892, now one less) are the retransmissions.
    assert_eq!(f["loss_frames"], serde_json::json!([4881]));
    assert_eq!(f["retransmit_frames"], serde_json::json!([4886, 4891]));
    assert_eq!(r["capture"]["missed"]["psns"], 1);
    // The NAK proves the loss: no "may be capture drops" although the capture missed a PSN.
    let cause = finding(&r, "psn_loss")["cause"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!cause.contains("capture itself is incomplete"), "{cause}");
    assert!(cause.contains("going back (go-back-N)"), "{cause}");
    // The text's flow line shows what the capture missed beside the gaps.
    let text = stdout(&run_path(&path, &[]));
    assert!(
        text.contains("gaps 1  missing 0  missed 1  retx 2  dup 0  ooo 0  NAK 1"),
        "{text}"
    );
}

/// A capture that ends right after a gap cannot tell the fate of its PSNs: sample.pcap up to
/// frame 4881, where PSNs 1960 to 1962 of qp 0x000213 were skipped, before any ACK or NAK was
/// due. They are unsettled (an info), never a critical psn_loss.
#[test]
fn a_gap_the_capture_ended_on_is_unsettled_not_lost() {
    let path = capture_keeping(&testdata("sample.pcap"), |n| n <= 4881, "ends-on-a-gap");
    let r = report(&path, &[]);
    let f = flow(&r, "10.0.0.5", 0x213);
    assert_eq!(psn(f), (1, 0, 0, 0, 0));
    assert_eq!(
        (
            f["psn"]["unsettled"].as_u64(),
            f["psn"]["recovered"].as_u64()
        ),
        (Some(3), Some(0))
    );
    assert_eq!(r["capture"]["unsettled"], 3);
    assert!(findings_of(&r, "psn_loss").is_empty(), "{}", r["findings"]);
    let u = finding(&r, "psn_unsettled");
    assert_eq!(
        (u["severity"].as_str(), u["count"].as_u64()),
        (Some("info"), Some(3))
    );
    assert_eq!(u["flow"], "10.0.0.5 > 10.0.0.2 qp 0x000213 vlan 100");
    let message = u["message"].as_str().unwrap();
    assert!(
        message.contains("before its acknowledgement was due"),
        "{message}"
    );
    assert!(findings_of(&r, "psn_unsettled")
        .iter()
        .all(|x| x["severity"] == "info"));
}

/// analysis_psn.pcap without five READ RESPONSE MIDDLE frames (56 to 60) and cut 14 us after
/// them: the requester had no time to re-issue the READ, so the gap is unsettled, not a
/// read_response_loss. Read on to the end, the same gap is missed by the capture.
#[test]
fn a_read_response_gap_the_capture_ended_on_is_unsettled() {
    let cut = capture_keeping(
        &testdata("analysis_psn.pcap"),
        |n| !(56..=60).contains(&n) && n <= 66,
        "read-gap-at-the-end",
    );
    let r = report(&cut, &[]);
    let responses = flow(&r, "10.0.0.2", 0x205);
    assert_eq!(responses["psn"]["unsettled"], 5);
    assert_eq!(responses["psn"]["capture_missed"], 0);
    assert!(
        findings_of(&r, "read_response_loss").is_empty(),
        "{}",
        r["findings"]
    );
    let u = findings_of(&r, "psn_unsettled");
    assert!(
        u.iter()
            .any(|f| f["flow"] == "10.0.0.2 > 10.0.0.1 qp 0x000205 vlan 100"),
        "{u:?}"
    );
    // UC never resends: its gap at the end stays missing, as before.
    assert_eq!(flow(&r, "10.0.0.5", 0x103)["psn"]["unsettled"], 0);
    let whole = capture_without(
        &testdata("analysis_psn.pcap"),
        &[56, 57, 58, 59, 60],
        "read-gap",
    );
    let r = report(&whole, &[]);
    let responses = flow(&r, "10.0.0.2", 0x205);
    assert_eq!(
        (
            responses["psn"]["unsettled"].as_u64(),
            responses["psn"]["capture_missed"].as_u64()
        ),
        (Some(0), Some(5))
    );
    assert_eq!(r["capture"]["unsettled"], 0);
}

/// The report of `bytes` read from stdin (`-r -`).
fn report_of_stdin(bytes: &[u8]) -> Value {
    let out = run_stdin(&["-r", "-", "--json"], bytes);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).expect("one JSON document")
}

/// `cat sample.pcap sample.pcap | roce-sniff -r -`: the second copy's time goes back to the
/// first's start, a new segment. Its PSNs start flows of their own: each copy of qp 0x000213
/// has its 4 resends, none of the 2,714 replayed PSNs is a retransmission.
#[test]
fn captures_run_together_are_segments_whose_flows_are_their_own() {
    let one = std::fs::read(testdata("sample.pcap")).unwrap();
    let r = report_of_stdin(&[one.as_slice(), one.as_slice()].concat());
    let single = report(&testdata("sample.pcap"), &[]);
    let c = &r["capture"];
    assert_eq!(c["segments"], 2);
    assert_eq!(c["time_jumps"][0]["frame"], 14_624);
    assert_eq!(c["flows"], 2 * single["capture"]["flows"].as_u64().unwrap());
    let copies: Vec<&Value> = r["flows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["src"] == "10.0.0.5" && f["dqpn"] == 0x213)
        .collect();
    assert_eq!(copies.len(), 2);
    for f in copies {
        assert_eq!(psn(f), (1, 0, 0, 0, 4), "{}", f["psn"]);
    }
    let t = finding(&r, "time_backwards");
    assert_eq!(
        (t["severity"].as_str(), t["frames"].clone()),
        (Some("warning"), json!([14_624]))
    );
    assert!(
        t["message"].as_str().unwrap().contains("at frame 14624"),
        "{t}"
    );
    // Nothing of the sort in one copy.
    assert_eq!(single["capture"]["segments"], 1);
    assert!(findings_of(&single, "time_backwards").is_empty());
}

/// `cat a.pcap b.pcap` where b was taken later: its time goes forward, but its file header
/// begins a new segment all the same. b is sample.pcap 100 s later: its PSNs, the same as
/// a's, are flows of their own, not 2,714 resends of qp 0x000213.
#[test]
fn a_second_file_header_begins_a_segment_though_its_time_goes_forward() {
    use roce_parsers::capture::{CaptureParser, Next};
    let one = std::fs::read(testdata("sample.pcap")).unwrap();
    assert_eq!(
        one[..4],
        [0x4d, 0x3c, 0xb2, 0xa1],
        "a little-endian nanosecond pcap"
    );
    let (mut parser, mut at) = CaptureParser::new(&one).unwrap();
    let mut later = one[..at].to_vec();
    while let Next::Record(_, used) = parser.next(&one[at..], at as u64).unwrap() {
        let mut record = one[at..at + used].to_vec();
        let secs = u32::from_le_bytes(record[..4].try_into().unwrap()) + 100;
        record[..4].copy_from_slice(&secs.to_le_bytes());
        later.extend_from_slice(&record);
        at += used;
    }
    let r = report_of_stdin(&[one.as_slice(), later.as_slice()].concat());
    let single = report(&testdata("sample.pcap"), &[]);
    let c = &r["capture"];
    assert_eq!(c["segments"], 2);
    assert_eq!(c["time_jumps"], json!([]));
    assert!(findings_of(&r, "time_backwards").is_empty());
    assert_eq!(c["flows"], 2 * single["capture"]["flows"].as_u64().unwrap());
    for f in r["flows"].as_array().unwrap() {
        if f["src"] == "10.0.0.5" && f["dqpn"] == 0x213 {
            assert_eq!(psn(f), (1, 0, 0, 0, 4), "{}", f["psn"]);
        }
    }
}

/// A mirror's reordering within microseconds is no new segment: two records of
/// analysis_psn.pcap swapped (the later frame first) read as one segment, and so do the same
/// file read twice and merged by time (`-r a -r a`: capture copies).
#[test]
fn small_jitters_and_merged_copies_stay_one_segment() {
    use roce_parsers::capture::{CaptureParser, Next};
    let data = std::fs::read(testdata("analysis_psn.pcap")).unwrap();
    let (mut parser, mut at) = CaptureParser::new(&data).unwrap();
    let mut records = Vec::new();
    let head = data[..at].to_vec();
    while let Next::Record(_, used) = parser.next(&data[at..], at as u64).unwrap() {
        records.push(data[at..at + used].to_vec());
        at += used;
    }
    records.swap(30, 31);
    let swapped = Scratch::file("jitter", "swapped.pcap");
    std::fs::write(&swapped, [head, records.concat()].concat()).unwrap();
    let r = report(&swapped, &[]);
    assert_eq!(r["capture"]["segments"], 1);
    assert!(findings_of(&r, "time_backwards").is_empty());
    let a = testdata("analysis_psn.pcap");
    let a = a.to_str().unwrap();
    let out = run(&["-r", a, "-r", a, "--json"]);
    let twice: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(twice["capture"]["segments"], 1);
    assert!(twice["capture"]["capture_duplicates"].as_u64().unwrap() > 0);
}

/// A one-way mirror proves nothing either way: the gap stays loss, and the message says no
/// ACKs were seen.
#[test]
fn a_one_way_capture_keeps_its_loss_and_says_no_acks_were_seen() {
    let r = report(&testdata("diagnose/one_way_loss.pcap"), &[]);
    let loss = findings_of(&r, "psn_loss");
    assert_eq!(loss.len(), 1);
    let message = loss[0]["message"].as_str().unwrap();
    assert!(message.contains("no ACKs were seen"), "{message}");
    assert_eq!(r["capture"]["missed"]["psns"], 0);
    // Where ACKs were seen, the message does not say so.
    let r = report(&testdata("diagnose/capture_missed.pcap"), &[]);
    for f in findings_of(&r, "psn_loss") {
        assert!(!f["message"].as_str().unwrap().contains("no ACKs"), "{f}");
    }
}

/// Five frames of one QP with a bad ICRC, each the next expected PSN: damaged in their place,
/// no gap, nothing missing (they made five false gaps); a damaged frame resent after its NAK
/// is a retransmission, and its NAK no "NAK without gap".
#[test]
fn bad_icrc_frames_in_sequence_are_damaged_not_lost() {
    let r = report(&testdata("diagnose/bad_icrc_in_sequence.pcap"), &[]);
    let a = flow(&r, "10.0.0.1", 0x100);
    assert_eq!(psn(a), (0, 0, 0, 0, 0));
    assert_eq!(a["psn"]["damaged"], 5);
    let b = flow(&r, "10.0.0.3", 0x101);
    assert_eq!(psn(b), (0, 0, 0, 0, 1));
    assert_eq!(b["psn"]["damaged"], 1);
    for code in ["psn_loss", "nak_without_gap"] {
        assert!(findings_of(&r, code).is_empty(), "{code}");
    }
}
