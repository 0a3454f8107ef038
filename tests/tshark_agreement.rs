//! Agreement with tshark's decode, field by field, on every crafted and real capture:
//! opcode, dest QP, PSN, AckReq, RETH DMA length, AETH syndrome and MSN, DETH source QP,
//! VLAN PCP, DSCP and ECN. Where tshark is wrong by design (RoCE from a well-known UDP source
//! port, UDP *from* 4791), the test sets tshark up or skips the frame, and says so.
//!
//! tshark comes with `make test` (Debian's package). Without it the test is skipped with a
//! message, except under CI, where that is a failure.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use common::*;

const FIELDS: [&str; 15] = [
    "frame.number",
    "udp.dstport",
    "infiniband.bth.opcode",
    "infiniband.bth.destqp",
    "infiniband.bth.psn",
    "infiniband.bth.a",
    "infiniband.reth.dmalen",
    "infiniband.aeth.syndrome",
    "infiniband.aeth.msn",
    "infiniband.deth.srcqp",
    "vlan.priority",
    "ieee8021ad.priority",
    "ip.dsfield.dscp",
    "ip.dsfield.ecn",
    "ipv6.tclass.dscp",
];

fn tshark_rows(path: &Path) -> Vec<HashMap<&'static str, String>> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(path);
    // RoCEv2 is UDP destination port 4791 whatever the source port; stop tshark from giving
    // frames with source port 69/53/123 to TFTP/DNS/NTP.
    cmd.args(["-d", "udp.port==4791,infiniband"]);
    for proto in ["tftp", "dns", "ntp"] {
        cmd.args(["--disable-protocol", proto]);
    }
    cmd.args([
        "-T",
        "fields",
        "-E",
        "separator=;",
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=/",
    ]);
    for f in FIELDS {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("run tshark");
    // tshark exits non-zero on a capture cut short, after printing every frame it read.
    assert!(
        out.status.success() || !out.stdout.is_empty(),
        "tshark failed on {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| {
            FIELDS
                .iter()
                .copied()
                .zip(line.split(';').map(str::to_string))
                .collect()
        })
        .collect()
}

/// A field's value: the last occurrence, which is the innermost one in a mirrored or tunnelled
/// frame (the outer IP and UDP come first).
fn num(s: &str) -> Option<u64> {
    let s = occurrences(s).pop()?;
    if s.is_empty() {
        return None;
    }
    if let Some(hex) = s.strip_prefix("0x") {
        return u64::from_str_radix(hex, 16).ok();
    }
    match s {
        "True" => Some(1),
        "False" => Some(0),
        _ => s.parse().ok(),
    }
}

/// The occurrences of a field in one tshark row (its aggregator varies between versions).
fn occurrences(s: &str) -> Vec<&str> {
    s.split(['/', '\\', ','])
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .collect()
}

fn ecn_code(name: &str) -> u64 {
    match name {
        "not_ect" => 0,
        "ect1" => 1,
        "ect0" => 2,
        _ => 3,
    }
}

/// Compares one capture; returns (frames compared, notes on frames tshark got wrong or skipped).
fn compare(path: &Path) -> (usize, Vec<String>) {
    let ours = ndjson(path);
    let theirs = tshark_rows(path);
    assert_eq!(
        ours.len(),
        theirs.len(),
        "{}: frame counts differ",
        path.display()
    );
    let mut compared = 0;
    let mut notes = Vec::new();
    let mut mismatches = Vec::new();
    for (o, t) in ours.iter().zip(&theirs) {
        let n = o["frame"].as_u64().unwrap();
        let t_opcode = num(&t["infiniband.bth.opcode"]);
        let dport = num(&t["udp.dstport"]);
        let Some(bth) = o.get("bth") else {
            if t_opcode.is_some() {
                if let Some(quoted) = o.get("icmp").map(|i| &i["quoted"]) {
                    // An ICMP error quoting a RoCE packet: tshark decodes the quoted BTH.
                    let theirs = (
                        num(&t["infiniband.bth.destqp"]),
                        num(&t["infiniband.bth.psn"]),
                    );
                    if theirs == (quoted["dqpn"].as_u64(), quoted["psn"].as_u64()) {
                        compared += 1;
                    } else {
                        mismatches.push(format!(
                            "frame {n}: quoted BTH {theirs:?} in tshark, {quoted} in ours"
                        ));
                    }
                } else if dport.is_some_and(|p| p != 4791) {
                    notes.push(format!("frame {n}: tshark decodes UDP to port {} as InfiniBand (source port 4791); not RoCEv2", dport.unwrap()));
                } else if o["error"]
                    .as_str()
                    .is_some_and(|e| e.contains("unsupported link type"))
                {
                    notes.push(format!(
                        "frame {n}: link type not supported by roce-sniff; tshark decodes it"
                    ));
                } else if o.get("error").is_some() {
                    notes.push(format!(
                        "frame {n}: malformed, tshark decodes a BTH from it anyway"
                    ));
                } else {
                    mismatches.push(format!("frame {n}: tshark decodes a BTH, we do not"));
                }
            }
            continue;
        };
        let Some(t_opcode) = t_opcode else {
            notes.push(format!(
                "frame {n}: tshark shows no BTH for our {}",
                bth["op"]
            ));
            continue;
        };
        compared += 1;
        let mut check = |what: &str, ours: Option<u64>, theirs: Option<u64>| {
            if ours != theirs {
                mismatches.push(format!(
                    "frame {n} {what}: ours {ours:?}, tshark {theirs:?}"
                ));
            }
        };
        check("opcode", bth["opcode"].as_u64(), Some(t_opcode));
        check(
            "dqpn",
            bth["dqpn"].as_u64(),
            num(&t["infiniband.bth.destqp"]),
        );
        check("psn", bth["psn"].as_u64(), num(&t["infiniband.bth.psn"]));
        check(
            "ackreq",
            bth["ackreq"].as_bool().map(u64::from),
            num(&t["infiniband.bth.a"]),
        );
        // Extension headers only where we decoded the frame completely. tshark decodes no
        // extension header of XRC packets (not even the AETH of an XRC ACK).
        let xrc = t_opcode >> 5 == 5;
        if xrc && o.get("aeth").is_some() {
            notes.push(format!(
                "frame {n}: tshark does not decode the AETH of {}",
                bth["op"]
            ));
        }
        if o.get("error").is_none() && !xrc {
            check(
                "reth.dlen",
                o["reth"]["dlen"].as_u64(),
                num(&t["infiniband.reth.dmalen"]),
            );
            check(
                "aeth.syndrome",
                o["aeth"]["syndrome"].as_u64(),
                num(&t["infiniband.aeth.syndrome"]),
            );
            check(
                "aeth.msn",
                o["aeth"]["msn"].as_u64(),
                num(&t["infiniband.aeth.msn"]),
            );
            check(
                "deth.sqpn",
                o["deth"]["sqpn"].as_u64(),
                num(&t["infiniband.deth.srcqp"]),
            );
        }
        if let Some(ip) = o.get("ip") {
            let t_dscp = if ip["version"] == 4 {
                num(&t["ip.dsfield.dscp"])
            } else {
                num(&t["ipv6.tclass.dscp"])
            };
            check("dscp", ip["dscp"].as_u64(), t_dscp);
            if ip["version"] == 4 {
                check(
                    "ecn",
                    Some(ecn_code(ip["ecn"].as_str().unwrap())),
                    num(&t["ip.dsfield.ecn"]),
                );
            }
        }
        // tshark files 802.1Q tags under vlan.*, 802.1ad tags under ieee8021ad.*.
        for (tpid, field) in [(0x8100, "vlan.priority"), (0x88a8, "ieee8021ad.priority")] {
            let pcps: Vec<String> = o["vlan"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter(|v| v["tpid"] == tpid)
                        .map(|v| v["pcp"].to_string())
                        .collect()
                })
                .unwrap_or_default();
            // A mirrored or tunnelled frame: tshark lists the outer tags first; ours are the
            // inner frame's.
            let theirs = occurrences(&t[field]);
            let theirs = if o.get("encap").is_some() {
                &theirs[theirs.len().saturating_sub(pcps.len())..]
            } else {
                &theirs[..]
            };
            if pcps != theirs {
                mismatches.push(format!(
                    "frame {n} {field}: ours {pcps:?}, tshark {}",
                    t[field]
                ));
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{}: disagreement with tshark:\n{}",
        path.display(),
        mismatches.join("\n")
    );
    (compared, notes)
}

#[test]
fn decode_agrees_with_tshark_on_every_capture() {
    if !tshark_available() {
        return;
    }
    let mut total = 0;
    for path in testdata_captures().into_iter().chain(real_captures()) {
        let (compared, notes) = compare(&path);
        for note in notes {
            eprintln!("{}: {note}", path.display());
        }
        total += compared;
    }
    // decode_all alone has 53 RoCE frames tshark decodes; the real captures add 121.
    assert!(total > 200, "only {total} frames compared");
}
