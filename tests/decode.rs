//! End-to-end decode tests: the real binary on the crafted captures of testdata/ (whose
//! contents are defined in testgen/src/testdata.rs) and on the real captures of testdata/real.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::*;
use serde_json::{json, Value};

fn frame(frames: &[Value], n: usize) -> &Value {
    &frames[n - 1]
}

#[test]
fn decode_all_names_every_opcode_and_header() {
    let f = ndjson(&testdata("decode_all.pcap"));
    assert_eq!(f.len(), 58);
    // Frame 1: every BTH field, VLAN, IP.
    let f1 = frame(&f, 1);
    assert_eq!(f1["frame"], 1);
    assert_eq!(f1["kind"], "rocev2");
    assert_eq!(
        f1["bth"],
        json!({"opcode": 0, "op": "RC_SEND_FIRST", "se": false, "m": false, "pad": 0, "tver": 0,
               "pkey": 65535, "fecn": false, "becn": false, "dqpn": 18, "ackreq": true, "psn": 100})
    );
    assert_eq!(
        f1["vlan"],
        json!([{"tpid": 0x8100, "vid": 100, "pcp": 3, "dei": false}])
    );
    assert_eq!(
        f1["ip"],
        json!({"version": 4, "src": "10.0.0.1", "dst": "10.0.0.2", "dscp": 26, "ecn": "ect0", "ttl": 64})
    );
    assert_eq!(f1["udp"], json!({"sport": 49152, "dport": 4791}));
    assert_eq!(f1["icrc"]["status"], "ok");
    assert_eq!(f1["payload_len"], 16);

    let names: Vec<&str> = f[..23]
        .iter()
        .map(|v| v["bth"]["op"].as_str().unwrap())
        .collect();
    assert_eq!(names[6], "RC_RDMA_WRITE_FIRST");
    assert_eq!(names[12], "RC_RDMA_READ_REQUEST");
    assert_eq!(names[17], "RC_ACKNOWLEDGE");
    assert_eq!(names[22], "RC_SEND_ONLY_WITH_INVALIDATE");
    assert!(f[..23].iter().all(|v| v["bth"]["op"] != "UNKNOWN"));
    assert_eq!(frame(&f, 5)["bth"]["se"], true);

    // Extension headers.
    assert_eq!(
        frame(&f, 7)["reth"],
        json!({"va": 0x7f00_0000_1006u64, "rkey": 0x1006, "dlen": 28672})
    );
    assert!(
        frame(&f, 8).get("reth").is_none(),
        "WRITE Middle has no RETH"
    );
    assert_eq!(frame(&f, 12)["imm"], 0xdead_000bu32);
    assert_eq!(frame(&f, 12)["reth"]["dlen"], 49152);
    assert_eq!(frame(&f, 14)["aeth"]["kind"], "ack");
    assert_eq!(frame(&f, 14)["aeth"]["msn"], 20);
    assert!(
        frame(&f, 15).get("aeth").is_none(),
        "READ Response Middle has no AETH"
    );
    assert_eq!(
        frame(&f, 18)["aeth"],
        json!({"kind": "ack", "value": 31, "syndrome": 31, "msn": 24})
    );
    assert_eq!(
        frame(&f, 19)["atomic_ack"],
        json!({"orig": 0x1122_3344_5566_7788u64})
    );
    assert_eq!(
        frame(&f, 20)["atomic"],
        json!({"va": 0x7f00_0000_2000u64, "rkey": 0x55, "swap_add": 3, "compare": 4})
    );
    assert_eq!(frame(&f, 22)["ieth"], 0xbeef_0015u32);
    assert_eq!(frame(&f, 24)["aeth"]["kind"], "rnr_nak");
    assert_eq!(frame(&f, 24)["aeth"]["value"], 14);
    assert_eq!(frame(&f, 25)["aeth"]["kind"], "nak");
    assert_eq!(frame(&f, 25)["aeth"]["code"], "psn_sequence_error");
    assert_eq!(frame(&f, 26)["aeth"]["code"], "remote_access_error");

    // UC with PSN wrap, UD with DETH, XRC.
    assert_eq!(frame(&f, 27)["bth"]["op"], "UC_SEND_FIRST");
    assert_eq!(frame(&f, 28)["bth"]["psn"], 0xffffff);
    assert_eq!(frame(&f, 29)["bth"]["psn"], 0);
    assert_eq!(
        frame(&f, 38)["bth"]["op"],
        "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE"
    );
    assert_eq!(frame(&f, 39)["bth"]["op"], "UD_SEND_ONLY");
    assert_eq!(
        frame(&f, 39)["deth"],
        json!({"qkey": 0x8001_0000u32, "sqpn": 0x99})
    );
    assert!(frame(&f, 39).get("imm").is_none());
    assert_eq!(frame(&f, 40)["imm"], 0x42);
    assert_eq!(frame(&f, 41)["bth"]["op"], "XRC_SEND_ONLY");
    assert_eq!(frame(&f, 41)["xrceth"]["srqn"], 0xabc);
    assert_eq!(frame(&f, 42)["bth"]["op"], "XRC_ACKNOWLEDGE");

    // CNP: named, FECN and BECN shown, its own PCP and DSCP.
    let cnp = frame(&f, 43);
    assert_eq!(cnp["bth"]["op"], "CNP");
    assert_eq!(cnp["bth"]["opcode"], 0x81);
    assert_eq!(
        (cnp["bth"]["becn"].clone(), cnp["bth"]["fecn"].clone()),
        (json!(true), json!(true))
    );
    assert_eq!(cnp["udp"]["sport"], 0);
    assert_eq!(cnp["ip"]["dscp"], 48);
    assert_eq!(cnp["vlan"][0]["pcp"], 6);

    // Unknown opcodes are kept.
    for (n, raw) in [(44, 0x15), (45, 0x1f), (46, 0xe5)] {
        assert_eq!(frame(&f, n)["bth"]["op"], "UNKNOWN");
        assert_eq!(frame(&f, n)["bth"]["opcode"], raw);
        assert_eq!(frame(&f, n)["payload_len"], 8);
        assert_eq!(frame(&f, n)["icrc"]["status"], "ok");
    }
    // Well-known source ports are still RoCE.
    for (n, sport) in [(47, 69), (48, 53), (49, 123)] {
        assert_eq!(frame(&f, n)["udp"]["sport"], sport);
        assert_eq!(frame(&f, n)["bth"]["op"], "RC_SEND_ONLY");
    }
    // IPv6.
    let v6 = frame(&f, 50);
    assert_eq!(
        v6["ip"],
        json!({"version": 6, "src": "fd00::1", "dst": "fd00::2", "dscp": 26, "ecn": "ce", "ttl": 63, "flow_label": 0x12345})
    );
    assert!(v6.get("vlan").is_none(), "untagged frame has no vlan key");
    assert_eq!(v6["icrc"]["status"], "ok");
    // RoCEv1.
    let v1 = frame(&f, 51);
    assert_eq!(v1["kind"], "rocev1");
    assert_eq!(v1["grh"]["sgid"], "fe80::a");
    assert_eq!(v1["grh"]["dscp"], 26);
    assert_eq!(v1["bth"]["op"], "RC_RDMA_WRITE_ONLY");
    assert_eq!(v1["icrc"]["status"], "ok");
    assert!(v1.get("ip").is_none());
    // 802.1ad + 802.1Q, outermost first.
    assert_eq!(
        frame(&f, 53)["vlan"],
        json!([{"tpid": 0x88a8, "vid": 10, "pcp": 5, "dei": false},
               {"tpid": 0x8100, "vid": 100, "pcp": 3, "dei": true}])
    );
    // PFC XOFF, XON and PAUSE.
    assert_eq!(
        frame(&f, 54)["pfc"],
        json!({"cev": 8, "quanta": [0, 0, 0, 65535, 0, 0, 0, 0]})
    );
    assert_eq!(frame(&f, 54)["kind"], "pfc");
    assert_eq!(frame(&f, 55)["pfc"]["quanta"][3], 0);
    assert_eq!(frame(&f, 56)["pause"], json!({"quanta": 0x1234}));
    // Not RoCE: no bth, even with UDP *source* port 4791.
    for n in [57, 58] {
        assert!(frame(&f, n).get("bth").is_none(), "frame {n}");
        assert_eq!(frame(&f, n)["kind"], "ip");
    }
    // No errors anywhere, ICRC ok on every RoCE frame.
    for v in &f {
        assert!(v.get("error").is_none(), "{v}");
        if v.get("bth").is_some() {
            assert_eq!(v["icrc"]["status"], "ok", "{v}");
        }
    }
}

#[test]
fn text_lines_show_the_key_fields() {
    let out = run_path(&testdata("decode_all.pcap"), &["--packets"]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 58);
    assert!(
        lines[6].contains("vlan 100 p3 10.0.0.1 > 10.0.0.2 dscp 26 ect0"),
        "{}",
        lines[6]
    );
    assert!(
        lines[6].contains("RC_RDMA_WRITE_FIRST qp 0x000012 psn 106 A reth"),
        "{}",
        lines[6]
    );
    assert!(lines[6].contains("len 28672"), "{}", lines[6]);
    assert!(
        lines[24].contains("aeth NAK psn_sequence_error msn 9"),
        "{}",
        lines[24]
    );
    assert!(
        lines[42].contains("CNP qp 0x000012 psn 0 FECN BECN"),
        "{}",
        lines[42]
    );
    // Unknown opcodes are spelled as in the report: UNKNOWN_0x15.
    assert!(lines[43].contains("UNKNOWN_0x15"), "{}", lines[43]);
    assert!(
        lines[53].contains("PFC from 02:00:00:00:00:5e cev 0x08 p3:65535"),
        "{}",
        lines[53]
    );
    assert!(lines[54].contains("p3:XON"), "{}", lines[54]);
    assert!(lines[55].contains("PAUSE"), "{}", lines[55]);
    // --roce-only keeps RoCE and MAC Control frames.
    let out = run_path(&testdata("decode_all.pcap"), &["--packets", "--roce-only"]);
    assert_eq!(stdout(&out).lines().count(), 56);
}

/// (opcode, dqpn, psn, ts_ns) of every frame that has a BTH.
fn bth_rows(frames: &[Value]) -> Vec<(u64, u64, u64, u64)> {
    frames
        .iter()
        .filter(|v| v.get("bth").is_some())
        .map(|v| {
            (
                v["bth"]["opcode"].as_u64().unwrap(),
                v["bth"]["dqpn"].as_u64().unwrap(),
                v["bth"]["psn"].as_u64().unwrap(),
                v["ts_ns"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn every_container_format_decodes_the_same_frames() {
    let ns = bth_rows(&ndjson(&testdata("formats/pcap_ns_le.pcap")));
    assert_eq!(ns.len(), 4);
    // Nanosecond timestamps are exact.
    assert_eq!(ns[0].3, 1_700_000_000_000_000_000 + 1_000_123);
    let us: Vec<_> = ns
        .iter()
        .map(|r| (r.0, r.1, r.2, r.3 / 1000 * 1000))
        .collect();
    assert_eq!(bth_rows(&ndjson(&testdata("formats/pcap_ns_be.pcap"))), ns);
    assert_eq!(bth_rows(&ndjson(&testdata("formats/pcap_us_le.pcap"))), us);
    assert_eq!(bth_rows(&ndjson(&testdata("formats/pcap_us_be.pcap"))), us);
    assert_eq!(bth_rows(&ndjson(&testdata("formats/linux_sll.pcap"))), ns);

    // pcapng: interface 0 Ethernet in microseconds, interface 1 SLL2 in nanoseconds.
    let ng = ndjson(&testdata("formats/multi_interface.pcapng"));
    assert_eq!(ng.len(), 10);
    let rows = bth_rows(&ng);
    let eth: Vec<_> = rows.iter().step_by(2).copied().collect();
    let sll2: Vec<_> = rows.iter().skip(1).step_by(2).copied().collect();
    assert_eq!(eth, us);
    assert_eq!(sll2, ns);
    assert_eq!(ng[1]["link"], "Linux cooked (SLL2)");
    assert!(
        ng[1].get("vlan").is_some(),
        "tags inside the cooked payload are kept"
    );
    assert_eq!(ng[9]["pfc"]["quanta"][3], 100);
    // The PFC source MAC comes from the cooked header.
    let sll = ndjson(&testdata("formats/linux_sll.pcap"));
    assert_eq!(sll[4]["pfc"]["cev"], 8);
}

#[test]
fn snap_length_keeps_original_length_and_leaves_icrc_unchecked() {
    let f = ndjson(&testdata("snaplen128.pcap"));
    assert_eq!(f.len(), 5);
    for v in &f[..4] {
        assert_eq!(v["caplen"], 128);
        assert_eq!(
            v["payload_len"], 1024,
            "payload length comes from the UDP header"
        );
        assert_eq!(v["icrc"], json!({"status": "unchecked"}));
        assert!(
            v.get("error").is_none(),
            "a snap-length cut is not malformed: {v}"
        );
    }
    assert_eq!(f[0]["len"], 1102);
    assert_eq!(f[0]["reth"]["dlen"], 4096);
    assert_eq!(f[4]["icrc"]["status"], "ok", "the ACK fits in 128 bytes");
    let out = run_path(&testdata("snaplen128.pcap"), &["--packets"]);
    assert!(stdout(&out).contains("icrc unchecked [128 of 1102 bytes]"));
}

#[test]
fn damaged_frames_are_reported_and_the_rest_kept() {
    let out = run_path(&testdata("damaged.pcap"), &["--packets", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("frame 2: bth header cut short: needs 12 bytes, 5 present"),
        "{err}"
    );
    assert!(err.contains("frame 3: invalid bth"), "{err}");
    assert!(err.contains("frame 5: invalid udp"), "{err}");
    assert!(
        err.contains("capture ends inside a record at byte 746"),
        "{err}"
    );
    let f: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(f.len(), 6, "every complete record before the cut");
    assert_eq!(f[0]["icrc"]["status"], "ok");
    assert!(f[1].get("bth").is_none());
    assert!(f[1]["error"].as_str().unwrap().contains("bth"));
    assert_eq!(f[2]["bth"]["op"], "RC_RDMA_WRITE_FIRST");
    assert!(f[2].get("reth").is_none());
    assert_eq!(f[2]["icrc"]["status"], "unchecked");
    assert_eq!(f[3]["icrc"]["status"], "bad");
    assert_ne!(f[3]["icrc"]["value"], f[3]["icrc"]["computed"]);
    assert!(f[4]["error"].as_str().unwrap().contains("UDP length"));
    assert_eq!(f[5]["bth"]["psn"], 5);
    assert_eq!(f[5]["icrc"]["status"], "ok");
}

#[test]
fn unknown_link_type_is_counted_and_named_once() {
    let out = run_path(
        &testdata("unknown_linktype.pcapng"),
        &["--packets", "--json"],
    );
    assert_eq!(out.status.code(), Some(0));
    let err = stderr(&out);
    assert_eq!(err.matches("link type 147").count(), 1, "{err}");
    let f: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(f.len(), 4);
    assert_eq!(f[0]["bth"]["psn"], 0);
    assert_eq!(f[2]["bth"]["psn"], 2);
    assert!(f[1]["error"]
        .as_str()
        .unwrap()
        .contains("unsupported link type 147"));
}

/// ERF files have no magic number: a report's own JSON once read as "ERF (197), 6 frames"
/// (exit 0), and `-r DIR` mixed it into the capture ("28 years from the previous frame").
/// A file is ERF only when its first records tile it.
#[test]
fn a_report_is_never_read_as_an_erf_capture() {
    let dir = Scratch::dir("erf-guess");
    let report = dir.join("report");
    let out = run_path(
        &testdata("sample.pcap"),
        &[&format!("--report={}", report.display())],
    );
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    for name in ["timeline.json", "report.json", "timeline.csv", "index.html"] {
        let out = run_path(&report.join(name), &[]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("not a pcap or pcapng capture"), "{err}");
    }
    // In a directory of captures, the report's files are skipped with one warning each.
    let set = dir.join("set");
    std::fs::create_dir_all(&set).unwrap();
    std::fs::copy(testdata("sample.pcap"), set.join("a.pcap")).unwrap();
    std::fs::copy(report.join("timeline.json"), set.join("b.json")).unwrap();
    let out = run_path(&set, &["--json"]);
    let err = stderr(&out);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{err}");
    let warnings: Vec<&str> = err.lines().collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains("b.json: not a pcap or pcapng capture")
            && warnings[0].ends_with("skipped"),
        "{err}"
    );
    let r: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let alone: Value =
        serde_json::from_str(&stdout(&run_path(&testdata("sample.pcap"), &["--json"]))).unwrap();
    assert_eq!(r["capture"]["packets"], alone["capture"]["packets"]);
    assert_eq!(r["capture"]["duration_s"], alone["capture"]["duration_s"]);
}

#[test]
fn unreadable_inputs_give_one_line_and_exit_2() {
    let dir = std::env::temp_dir().join(format!("roce-sniff-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let empty = dir.join("empty.pcap");
    std::fs::write(&empty, b"").unwrap();
    let text = dir.join("notes.txt");
    std::fs::write(&text, b"this is not a capture file at all\n").unwrap();
    let cases = [
        (dir.join("missing.pcap"), "no such file"),
        (empty.clone(), "too short for a capture file header"),
        (text.clone(), "not a pcap or pcapng capture"),
    ];
    // A directory is read as a set of captures (a rotated set): what is not one is skipped
    // with a warning each, and with no capture left that is the error.
    let out = run_path(&dir, &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(
        lines[0].contains("empty.pcap: an empty file; skipped"),
        "{err}"
    );
    assert!(lines[1].contains("notes.txt: not a pcap"), "{err}");
    assert!(
        lines[2].ends_with("a directory with no capture files"),
        "{err}"
    );
    for (path, expect) in cases {
        let out = run_path(&path, &[]);
        assert_eq!(out.status.code(), Some(2), "{}", path.display());
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(expect), "{}: {err}", path.display());
        assert!(
            err.contains(path.to_str().unwrap()),
            "names the file: {err}"
        );
        assert!(stdout(&out).is_empty());
    }
    let none = dir.join("no-captures");
    std::fs::create_dir_all(&none).unwrap();
    let err = stderr(&run_path(&none, &[]));
    assert!(err.contains("a directory with no capture files"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn standard_input_streams_like_a_file() {
    let path = testdata("decode_all.pcap");
    let bytes = std::fs::read(&path).unwrap();
    let mut child = Command::new(bin())
        .args(["-r", "-", "--packets", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Dribble the bytes in small writes so records straddle reads.
    let writer = std::thread::spawn(move || {
        for chunk in bytes.chunks(97) {
            stdin.write_all(chunk).unwrap();
        }
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stdout(&out),
        stdout(&run_path(&path, &["--packets", "--json"]))
    );
}

#[test]
fn real_captures_decode_with_valid_icrc() {
    for path in real_captures() {
        let f = ndjson(&path);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let roce: Vec<&Value> = f.iter().filter(|v| v.get("bth").is_some()).collect();
        for v in &roce {
            assert_eq!(v["icrc"]["status"], "ok", "{name}: {v}");
            assert!(v.get("error").is_none(), "{name}: {v}");
        }
        match name.as_str() {
            "oferby_roce.pcap" => {
                assert_eq!(f.len(), 123);
                assert_eq!(roce.len(), 105);
                assert_eq!(roce.iter().filter(|v| v["udp"]["sport"] == 69).count(), 37);
                assert!(roce.iter().all(|v| v["ip"]["ecn"] == "ect0"));
            }
            "montybeatnik_roce_capture_read-write-ecn.pcap" => {
                assert_eq!(roce.len(), 12);
                assert_eq!(roce[5]["bth"]["op"], "RC_RDMA_READ_REQUEST");
                assert_eq!(roce[5]["reth"]["dlen"], 4096);
                assert_eq!(roce[9]["bth"]["op"], "RC_RDMA_READ_RESPONSE_LAST");
                assert_eq!(
                    roce[9]["bth"]["psn"].as_u64().unwrap(),
                    roce[5]["bth"]["psn"].as_u64().unwrap() + 3
                );
            }
            "pcapplusplus_InfiniBandPacket.pcap" => {
                assert_eq!(roce.len(), 1);
                assert_eq!(roce[0]["bth"]["op"], "RC_RDMA_READ_REQUEST");
            }
            "scapy_uts_vectors.pcap" => {
                assert_eq!(roce.len(), 3);
                assert_eq!(roce[0]["bth"]["op"], "CNP");
                assert_eq!(roce[0]["icrc"]["value"], "0x82fd002a");
                assert_eq!(roce[1]["kind"], "rocev1");
                assert_eq!(roce[1]["icrc"]["value"], "0xe3d856bb");
                assert_eq!(roce[2]["icrc"]["value"], "0x25f0c038");
            }
            "srinivas_infiniband.pcap" => {
                // Native InfiniBand in ERF: LRH, GRH on 6 frames, ICRC checked on all.
                assert_eq!(roce.len(), 43);
                assert!(roce.iter().all(|v| v["kind"] == "ib"));
                assert_eq!(roce[0]["lrh"]["lnh"], 2);
                assert_eq!(roce[0]["bth"]["op"], "UD_SEND_ONLY");
                assert_eq!(roce[2]["lrh"]["lnh"], 3);
                assert_eq!(roce[2]["grh"]["sgid"], "fe80::2:c903:0:1f2d");
                assert_eq!(
                    roce[2]["icrc"]["value"], "0x0566d54d",
                    "as tshark's invariant CRC"
                );
                assert_eq!(roce[10]["bth"]["op"], "RC_ACKNOWLEDGE");
                assert!(stderr(&run_path(&path, &[])).is_empty());
            }
            other => panic!("new real capture {other}: add its expectations here"),
        }
    }
}

/// libpcap's RDMA sniffer writes InfiniBand ports as link type 247: the same frames as the
/// InfiniBand records of an ERF capture, without the ERF header. Both decode the same.
#[test]
fn link_type_247_decodes_like_erf_infiniband() {
    use roce_parsers::capture::{CaptureParser, Next};
    let erf = std::fs::read(real_capture("srinivas_infiniband.pcap")).unwrap();
    let (mut parser, mut at) = CaptureParser::new(&erf).unwrap();
    let mut frames = Vec::new();
    while let Ok(Next::Record(r, used)) = parser.next(&erf[at..], at as u64) {
        at += used;
        // ERF: 16-byte header (type at byte 8, extension headers when its top bit is set).
        if r.data[8] & 0x7f == 21 && r.data[8] & 0x80 == 0 {
            frames.push((r.ts_ns, r.data[16..].to_vec()));
        }
    }
    assert!(frames.len() > 20);
    let pcap = roce_testgen::writer::pcap_bytes(
        &frames,
        roce_testgen::writer::PcapFlavor::NANO_LE,
        247,
        65535,
    );
    let path = std::env::temp_dir().join(format!("ib247-{}.pcap", std::process::id()));
    std::fs::write(&path, pcap).unwrap();
    let ib = ndjson(&path);
    let from_erf: Vec<Value> = ndjson(&real_capture("srinivas_infiniband.pcap"))
        .into_iter()
        .filter(|f| f.get("lrh").is_some())
        .collect();
    assert_eq!(ib.len(), frames.len());
    for (a, b) in ib.iter().zip(&from_erf) {
        for key in ["lrh", "grh", "bth", "aeth", "deth", "icrc", "payload_len"] {
            assert_eq!(a.get(key), b.get(key), "{key}: {a} vs {b}");
        }
    }
    std::fs::remove_file(&path).ok();
}
