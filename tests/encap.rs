//! RoCE as mirror sessions and tunnels deliver it (testdata/encap.pcap, written by
//! roce_testgen::testdata::encap): every layer decoded, flows keyed by the inner frame, mirror
//! truncation that is not loss, mirror drops that are not the network's, and malformed frames
//! that change no PSN state. The field-by-field agreement with tshark is in
//! tests/tshark_agreement.rs, which reads every capture of testdata/.

mod common;

use common::*;
use roce_testgen::encap::{self as wrap, Outer};
use roce_testgen::frames::{self, FrameSpec, Net, RoceSpec};
use roce_testgen::writer::{pcap_bytes, Frames, PcapFlavor, T0_NS};
use serde_json::Value;

fn report_of(data: &[u8]) -> Value {
    let out = roce_sniff::run_in_memory(data, &["--json", "--threads", "1"], false).unwrap();
    serde_json::from_slice(&out).unwrap()
}

fn write(qp: u32, psn: u32) -> Vec<u8> {
    let r = RoceSpec::new(0x0a, qp, psn)
        .ackreq()
        .payload(64)
        .reth(0x1000, 7, 64);
    frames::rocev2(
        &FrameSpec::new([2, 0, 0, 0, 0, 0xa], [2, 0, 0, 0, 0, 0xb]).vlan(100, 3),
        Net::v4([10, 0, 0, 1], [10, 0, 0, 2], 0x6a),
        50500,
        &r,
    )
}

fn capture(frames_: Vec<Vec<u8>>) -> Vec<u8> {
    let timed: Frames = (1..)
        .zip(frames_)
        .map(|(i, f)| (T0_NS + i * 1_000, f))
        .collect();
    pcap_bytes(&timed, PcapFlavor::NANO_LE, 1, 65535)
}

#[test]
fn every_encapsulation_is_decoded_layer_by_layer() {
    let frames_ = ndjson(&testdata("encap.pcap"));
    let types: Vec<String> = frames_
        .iter()
        .map(|f| {
            f["encap"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["type"].as_str().unwrap())
                .collect::<Vec<_>>()
                .join("+")
        })
        .collect();
    assert_eq!(
        &types[..9],
        ["erspan1", "erspan2", "erspan3", "gre", "vxlan", "geneve", "gre", "ipip", "mpls"]
    );
    for f in &frames_ {
        // The keys describe the inner RoCE frame.
        assert_eq!(f["ip"]["src"], "10.0.0.1", "{f}");
        assert_eq!(f["udp"]["dport"], 4791);
        assert_eq!(f["bth"]["op"], "RC_RDMA_WRITE_ONLY");
        assert!(f.get("error").is_none(), "{f}");
    }
    let e = |i: usize| frames_[i]["encap"][0].clone();
    assert_eq!(e(0)["src"], "192.168.50.1");
    assert_eq!(
        (
            e(1)["session"].as_u64(),
            e(1)["seq"].as_u64(),
            e(1)["index"].as_u64()
        ),
        (Some(5), Some(10), Some(0x1234))
    );
    assert_eq!(
        frames_[1]["vlan"][0]["vid"], 100,
        "the inner tag, not the outer 200"
    );
    assert_eq!(e(2)["src"], "fd50::1");
    assert_eq!(e(2)["direction"], "egress");
    assert_eq!(e(2)["granularity"], 1);
    assert_eq!(e(2)["ts_ns"], ((2u64 << 32) + 123_456) * 100);
    assert_eq!(e(3)["protocol"], 0x6558);
    assert_eq!(e(4)["vni"], 4242);
    assert_eq!(e(5)["vni"], 77);
    assert_eq!(e(6)["protocol"], 0x0800);
    assert_eq!(e(8)["labels"], serde_json::json!([16, 1000]));
    for f in &frames_[..9] {
        assert_eq!(f["icrc"]["status"], "ok", "{f}");
        assert!(f.get("truncated").is_none());
    }
    for (i, f) in frames_[9..].iter().enumerate() {
        let reason = if i % 2 == 0 {
            "mirror"
        } else {
            "length_mismatch"
        };
        assert_eq!(f["truncated"], reason, "{f}");
        assert_eq!(f["icrc"]["status"], "unchecked", "never bad: {f}");
    }
    let text = stdout(&run_path(&testdata("encap.pcap"), &["--packets"]));
    assert!(text
        .lines()
        .nth(1)
        .unwrap()
        .contains("erspan2 session 5 seq 10 | vlan 100"));
}

#[test]
fn a_mirror_truncated_clean_flow_shows_no_loss() {
    let r: Value =
        serde_json::from_slice(&run_path(&testdata("encap.pcap"), &["--json"]).stdout).unwrap();
    let c = &r["capture"];
    assert_eq!(c["malformed"], 0);
    assert_eq!(c["icrc_bad"], 0);
    assert_eq!(c["icrc_unchecked"], 8);
    assert_eq!(c["truncated_by"]["mirror"], 4);
    assert_eq!(c["truncated_by"]["length_mismatch"], 4);
    assert_eq!(c["truncated_by"]["snaplen"], 0);
    // `truncated` is every cut, not only the snap length's (report/2).
    assert_eq!(c["truncated"], 8);
    let text = stdout(&run_path(&testdata("encap.pcap"), &[])).replace("\n    ", " ");
    assert!(
        text.contains(
            "8 cut: 0 by snap length, 4 by the mirror, 4 with IP/UDP lengths beyond the frame"
        ),
        "{text}"
    );
    // Flows are keyed by the inner addresses: one flow per inner QP, whatever the wrapping.
    assert_eq!(r["flows"].as_array().unwrap().len(), 4);
    for f in r["flows"].as_array().unwrap() {
        assert_eq!(f["psn"]["gaps"], 0, "{f}");
        assert_eq!(f["psn"]["missing"], 0);
        assert_eq!(f["icrc_bad"], 0);
    }
    let codes = finding_codes(&r);
    for code in ["psn_loss", "icrc_bad", "malformed_frames"] {
        assert!(!codes.iter().any(|c| c == code), "{codes:?}");
    }
}

#[test]
fn holes_in_an_erspan_sequence_are_the_mirror_s_drops() {
    let outer = Outer {
        vlan: None,
        v6: false,
    };
    // Session 7: sequence 1, 2, 5, 6 (3 and 4 lost by the mirror), carrying PSNs 0..3, so the
    // flow itself is whole.
    let frames_: Vec<Vec<u8>> = [(1, 0), (2, 1), (5, 2), (6, 3)]
        .into_iter()
        .map(|(seq, psn)| wrap::erspan2(outer, seq, 7, psn, false, &write(0x100, psn)))
        .collect();
    let r = report_of(&capture(frames_));
    assert_eq!(r["capture"]["mirror_sessions"]["7"]["mirror_drops"], 2);
    assert_eq!(r["capture"]["mirror_sessions"]["7"]["frames"], 4);
    let drops: Vec<&Value> = findings_of(&r, "mirror_drops");
    assert_eq!(drops.len(), 1);
    assert_eq!(drops[0]["count"], 2);
    assert!(drops[0]["cause"]
        .as_str()
        .unwrap()
        .contains("may be the mirror's"));
}

#[test]
fn a_malformed_frame_changes_no_psn_state() {
    let mut frames_: Vec<Vec<u8>> = (0..10).map(|psn| write(0x100, psn)).collect();
    // Between PSN 4 and 5: the same flow's frame with a UDP length shorter than UDP + BTH and
    // a PSN far ahead. It used to count 114 missing PSNs and 20 out-of-order arrivals.
    let mut bad = write(0x100, 120);
    let udp_len_at = 14 + 4 + 20 + 4;
    bad[udp_len_at..udp_len_at + 2].copy_from_slice(&16u16.to_be_bytes());
    frames_.insert(5, bad);
    let r = report_of(&capture(frames_));
    assert_eq!(r["capture"]["malformed"], 1);
    let f = &r["flows"][0];
    for k in [
        "gaps",
        "missing",
        "out_of_order",
        "duplicates",
        "retransmitted",
    ] {
        assert_eq!(f["psn"][k], 0, "{k}: {f}");
    }
}

#[test]
fn vxlan_on_another_port_with_vxlan_port() {
    let outer = Outer {
        vlan: None,
        v6: false,
    };
    let mut vx = vec![0x08, 0, 0, 0, 0, 0, 42, 0];
    vx.extend_from_slice(&write(0x100, 1));
    let data = capture(vec![outer.udp(8472, &vx)]);
    let path = std::env::temp_dir().join(format!("vxlan8472-{}.pcap", std::process::id()));
    std::fs::write(&path, data).unwrap();
    let plain = ndjson(&path);
    assert!(
        plain[0].get("bth").is_none(),
        "UDP 8472 is not VXLAN unless told"
    );
    let out = run_path(&path, &["--packets", "--json", "--vxlan-port", "8472"]);
    let told: Value = serde_json::from_str(stdout(&out).lines().next().unwrap()).unwrap();
    assert_eq!(told["encap"][0]["type"], "vxlan");
    assert_eq!(told["encap"][0]["vni"], 42);
    assert_eq!(told["bth"]["dqpn"], 0x100);
    let report = run_path(&path, &["--json", "--vxlan-port", "8472"]);
    let r: Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(r["capture"]["roce_packets"], 1);
    std::fs::remove_file(&path).ok();
}

#[test]
fn erspan_iii_timestamps_can_be_the_frame_times() {
    let path = testdata("encap.pcap");
    let out = run_path(&path, &["--packets", "--json", "--time", "erspan"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let frames_: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Frame 3 is ERSPAN III at 100 ns granularity: upper word 2, lower 123456.
    assert_eq!(frames_[2]["ts_ns"], ((2u64 << 32) + 123_456) * 100);
    // The others have no ERSPAN III timestamp: they keep the capture's time.
    let capture_times = ndjson(&path);
    assert_eq!(frames_[0]["ts_ns"], capture_times[0]["ts_ns"]);
    assert_eq!(frames_[3]["ts_ns"], capture_times[3]["ts_ns"]);
    let err = stderr(&run(&["-i", "lo", "--time", "erspan"]));
    assert!(
        err.contains("--time erspan applies to capture files"),
        "{err}"
    );
}

#[test]
fn every_gre_layer_names_the_protocol_it_carries() {
    let out = run_path(&testdata("encap.pcap"), &["--packets", "--json"]);
    let mut seen = std::collections::BTreeMap::new();
    for line in stdout(&out).lines() {
        let f: Value = serde_json::from_str(line).unwrap();
        for e in f["encap"].as_array().into_iter().flatten() {
            let kind = e["type"].as_str().unwrap().to_string();
            if kind == "gre" || kind.starts_with("erspan") {
                let proto = e["protocol"].as_u64().unwrap_or_else(|| panic!("{e}"));
                seen.entry(kind)
                    .or_insert_with(std::collections::BTreeSet::new)
                    .insert(proto);
            }
        }
    }
    let want = |k: &str, p: &[u64]| (k.to_string(), p.iter().copied().collect());
    assert_eq!(
        seen,
        [
            want("erspan1", &[0x88be]),
            want("erspan2", &[0x88be]),
            want("erspan3", &[0x22eb]),
            // Plain GRE carrying IPv4, and bridged Ethernet (0x6558).
            want("gre", &[0x0800, 0x6558]),
        ]
        .into_iter()
        .collect()
    );
}

#[test]
fn erspan3_low_bits_are_placed_nearest_the_record_time() {
    let path = testdata("erspan3_low_bits.pcap");
    let out = run_path(&path, &["--packets", "--json"]);
    let frames: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(frames.len(), 6);
    let transit = roce_testgen::testdata::ERSPAN_TRANSIT_NS;
    for f in &frames {
        let e = &f["encap"][0];
        assert!(e["timestamp"].is_u64(), "the raw value is kept: {e}");
        if e["session"] == 6 {
            // On the epoch: the record's time less the transit, not 1970.
            assert_eq!(
                e["ts_ns"].as_u64(),
                Some(f["ts_ns"].as_u64().unwrap() - transit)
            );
        } else {
            assert!(
                e.get("ts_ns").is_none(),
                "a clock off the epoch has no ts_ns: {e}"
            );
        }
    }
    let warned = stderr(&out);
    assert_eq!(
        warned.matches("not on the Unix epoch").count(),
        1,
        "{warned}"
    );
    // --time erspan: the switch's times where they mean something, the capture's elsewhere.
    let timed = run_path(&path, &["--packets", "--json", "--time", "erspan"]);
    for (line, before) in stdout(&timed).lines().zip(&frames) {
        let f: Value = serde_json::from_str(line).unwrap();
        let expected = if before["encap"][0]["session"] == 6 {
            before["ts_ns"].as_u64().unwrap() - transit
        } else {
            before["ts_ns"].as_u64().unwrap()
        };
        assert_eq!(f["ts_ns"].as_u64(), Some(expected), "{f}");
    }
    // The report names the clock once among its warnings.
    let r: Value = serde_json::from_slice(&run_path(&path, &["--json"]).stdout).unwrap();
    let notes = r["capture"]["warnings"].to_string();
    assert_eq!(notes.matches("not on the Unix epoch").count(), 1, "{notes}");
}
