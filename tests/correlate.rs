//! `--correlate` on captures of one path taken at three points (testgen/src/correlate.rs tells
//! what happened on each hop): every count, delay and clock offset as crafted; a capture
//! correlated with itself loses nothing in no time.

mod common;

use common::*;
use serde_json::{json, Value};

/// `roce-sniff --correlate -r POINT... EXTRA...` on captures of testdata/.
fn correlate_run(points: &[&str], extra: &[&str]) -> std::process::Output {
    let paths: Vec<String> = points
        .iter()
        .map(|p| testdata(p).to_str().unwrap().to_string())
        .collect();
    let mut args = vec!["--correlate"];
    for p in &paths {
        args.push("-r");
        args.push(p);
    }
    args.extend_from_slice(extra);
    run(&args)
}

fn correlate(points: &[&str]) -> Value {
    let out = correlate_run(points, &["--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

const PATH: [&str; 3] = [
    "correlate/leaf.pcap",
    "correlate/spine.pcap",
    "correlate/receiver.pcap",
];

#[test]
fn three_points_locate_loss_marking_and_delay() {
    let r = correlate(&PATH);
    assert_eq!(r["schema"], "roce-sniff.correlation/2");
    let c = &r["correlation"];
    let points: Vec<(u64, f64)> = c["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let n = p["roce_packets"].as_u64().unwrap();
            (n, p["clock_offset_us"].as_f64().unwrap())
        })
        .collect();
    assert_eq!(points, vec![(110, 0.0), (109, 300.0), (108, -200.0)]);
    let hop = |list: &str, i: usize| c[list][i].clone();
    let counts = |h: &Value| {
        [
            "matched",
            "lost",
            "appeared",
            "ce_marked",
            "dscp_changed",
            "pcp_changed",
        ]
        .map(|k| h[k].as_u64().unwrap())
    };
    let (first, second) = (hop("hops", 0), hop("hops", 1));
    assert_eq!(counts(&first), [53, 1, 0, 0, 0, 0]);
    assert_eq!(counts(&second), [52, 1, 0, 4, 10, 0]);
    assert_eq!(
        first["delay_us"],
        json!({"min": 2.0, "p50": 2.0, "p99": 2.0, "max": 2.0})
    );
    assert_eq!(
        second["delay_us"],
        json!({"min": 3.0, "p50": 3.0, "p99": 13.0, "max": 13.0})
    );
    assert_eq!(
        second["queueing_us"],
        json!({"p50": 0.0, "p99": 10.0, "max": 10.0})
    );
    assert_eq!(first["clock_method"], "two_way");
    for i in 0..2 {
        assert_eq!(counts(&hop("reverse_hops", i)), [56, 0, 0, 0, 0, 0]);
    }
    // The original of PSN 1005, lost before the spine: its frame at the leaf.
    assert_eq!(first["lost_frames"], json!([21]));
    let leaf = run(&[
        "-r",
        testdata(PATH[0]).to_str().unwrap(),
        "--packets",
        "--json",
    ]);
    let frame21: Value = serde_json::from_str(stdout(&leaf).lines().nth(20).unwrap()).unwrap();
    assert_eq!(frame21["bth"]["psn"], 1005);
    // Per flow, and the findings.
    let flow = |dqpn: u64| {
        c["flows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["dqpn"] == dqpn)
            .unwrap()["hops"]
            .clone()
    };
    let f1 = flow(0x100);
    assert_eq!(
        (f1[0]["matched"].as_u64(), f1[0]["lost"].as_u64()),
        (Some(43), Some(1))
    );
    assert_eq!(
        (f1[1]["lost"].as_u64(), f1[1]["ce_marked"].as_u64()),
        (Some(1), Some(4))
    );
    assert_eq!(flow(0x101)[1]["dscp_changed"], 10);
    let mut codes: Vec<(String, u64)> = finding_counts(&r);
    codes.sort();
    let expected = [
        ("ce_marked_at", 4),
        ("loss_located", 1),
        ("loss_located", 1),
        ("remarked", 10),
    ];
    assert_eq!(codes, expected.map(|(c, n)| (c.to_string(), n)));
}

#[test]
fn a_capture_correlated_with_itself_loses_nothing_in_no_time() {
    let r = correlate(&["sample.pcap", "sample.pcap"]);
    let c = &r["correlation"];
    for list in ["hops", "reverse_hops"] {
        let h = &c[list][0];
        assert_eq!(h["lost"], 0);
        assert_eq!(h["appeared"], 0);
        assert!(h["matched"].as_u64().unwrap() > 1000);
        assert_eq!(h["delay_us"]["max"], 0.0);
    }
    assert_eq!(c["points"][1]["clock_offset_us"], 0.0);
    assert_eq!(r["findings"], json!([]));
}

#[test]
fn the_text_view_has_a_hop_table_and_bad_uses_are_refused() {
    let out = correlate_run(&PATH, &[]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(text.contains("Hops, data direction"), "{text}");
    assert!(text.contains("loss_located"), "{text}");
    let one = correlate_run(&PATH[..1], &[]);
    assert_eq!(one.status.code(), Some(2));
    assert!(
        stderr(&one).contains("--correlate needs"),
        "{}",
        stderr(&one)
    );
    let with_packets = correlate_run(&PATH[..2], &["--packets"]);
    assert_eq!(with_packets.status.code(), Some(2));
}

#[test]
fn report_adds_the_hop_delay_plot_and_the_loss_location_chart() {
    let dir = std::env::temp_dir().join(format!("roce-sniff-corr-{}", std::process::id()));
    let report = format!("--report={}", dir.display());
    let out = correlate_run(&PATH, &[&report]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for name in [
        "hop_delay.png",
        "hop_delay.svg",
        "loss_location.png",
        "loss_location.svg",
    ] {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        assert!(bytes.len() > 1000, "{name}");
        if name.ends_with(".png") {
            assert!(sides_are_blank(&dir.join(name)), "{name}");
        }
    }
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    correlation_page_shows_the_path(&html);
    if let Some(browser) = chromium() {
        // The page fits 1400 px: the path picture and every table, as the browser lays them out.
        let fit = measure_in_browser(
            browser,
            &dir.join("index.html"),
            "document.documentElement.scrollWidth + '/' + document.documentElement.clientWidth",
        );
        let (scroll, client) = fit.split_once('/').unwrap();
        assert!(
            scroll.parse::<u32>().unwrap() <= client.parse::<u32>().unwrap(),
            "the page is {scroll} px wide in {client} px"
        );
        // Its plots' labels read at 11 px in a 900-pixel window, as the main report's.
        let smallest = smallest_plot_text_at(browser, &dir.join("index.html"), 900);
        assert!(smallest >= 10.9, "{smallest} px");
    } else {
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium missing under CI"
        );
    }
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("correlation.json")).unwrap())
            .unwrap();
    assert_eq!(saved, correlate(&PATH));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn points_given_in_reverse_order_are_told() {
    let r = correlate(&[PATH[2], PATH[1], PATH[0]]);
    let codes = finding_codes(&r);
    assert_eq!(
        codes.iter().filter(|&c| c == "points_out_of_order").count(),
        2,
        "{codes:?}"
    );
}

#[test]
fn reverse_flows_are_listed_with_their_hops_in_travel_order() {
    let r = correlate(&PATH);
    let flows = r["correlation"]["flows"].as_array().unwrap();
    let dirs: Vec<(&str, u64)> = flows
        .iter()
        .map(|f| {
            (
                f["direction"].as_str().unwrap(),
                f["dqpn"].as_u64().unwrap(),
            )
        })
        .collect();
    // The data flows to .2's QPs, then the ACK flows back to the requesters' QPs.
    assert_eq!(
        dirs,
        vec![
            ("forward", 0x100),
            ("forward", 0x101),
            ("reverse", 0x400),
            ("reverse", 0x401)
        ]
    );
    let back = &flows[2];
    assert_eq!(back["src"], "10.0.0.2");
    let hops: Vec<(String, String, u64, u64)> = back["hops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            let name = |k: &str| {
                h[k].as_str()
                    .unwrap()
                    .rsplit('/')
                    .next()
                    .unwrap()
                    .to_string()
            };
            (
                name("from"),
                name("to"),
                h["matched"].as_u64().unwrap(),
                h["lost"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        hops,
        vec![
            ("receiver.pcap".into(), "spine.pcap".into(), 46, 0),
            ("spine.pcap".into(), "leaf.pcap".into(), 46, 0)
        ]
    );
    // The reverse flows add up to the reverse hops.
    let matched: u64 = flows[2..]
        .iter()
        .map(|f| f["hops"][1]["matched"].as_u64().unwrap())
        .sum();
    assert_eq!(
        matched,
        r["correlation"]["reverse_hops"][0]["matched"]
            .as_u64()
            .unwrap()
    );
}

#[test]
fn marking_findings_name_the_flows_they_hit() {
    let r = correlate(&PATH);
    let find = |code: &str| finding(&r, code).clone();
    let ce = find("ce_marked_at");
    assert_eq!(ce["group"]["flows"], 1);
    assert_eq!(
        ce["group"]["worst"][0]["flow"],
        "10.0.0.1 > 10.0.0.2 qp 0x000100"
    );
    assert_eq!(ce["group"]["worst"][0]["count"], 4);
    assert_eq!(ce["flow"], "10.0.0.1 > 10.0.0.2 qp 0x000100");
    assert!(
        ce["message"].as_str().unwrap().contains("qp 0x000100 (4)"),
        "{ce}"
    );
    let remarked = find("remarked");
    assert_eq!(
        remarked["group"]["worst"][0]["flow"],
        "10.0.0.3 > 10.0.0.2 qp 0x000101"
    );
    assert_eq!(remarked["group"]["worst"][0]["count"], 10);
}

#[test]
fn long_point_paths_keep_the_hop_table_aligned() {
    let root = std::env::temp_dir().join(format!("roce-sniff-corr-names-{}", std::process::id()));
    let mut args = vec!["--correlate".to_string()];
    for (i, p) in PATH.iter().enumerate() {
        // The same file name at every point, deep in directories named alike.
        let dir = root.join(format!("site-{i}/collector/captures/2026-12-01"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(testdata(p), dir.join("cap.pcap")).unwrap();
        args.push("-r".into());
        args.push(dir.join("cap.pcap").to_str().unwrap().into());
    }
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let text = stdout(&run(&argv));
    let _ = std::fs::remove_dir_all(&root);
    let tables: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Hops, data direction"))
        .skip(1)
        .take(6)
        .collect();
    let short = "site-0/collector/captures/2026-12-01/cap.pcap > site-1/collector/captures/2026-12-01/cap.pcap";
    assert!(tables[1].contains(short), "{text}");
    // Every column ends where its header does in the counts' table (right-aligned), and the
    // clocks start where theirs does in the delays'.
    assert!(
        tables[..3].iter().all(|l| l.len() == tables[0].len()),
        "{text}"
    );
    let clocks = tables[3].find("clocks");
    assert!(
        clocks.is_some() && tables[4..].iter().all(|l| l.find("two_way") == clocks),
        "{text}"
    );
    // The full paths are listed once, above the tables.
    assert!(text.contains(&args[2]), "{text}");
}

/// The correlation page of the three crafted points: the main report's style, the path as a
/// picture (points in order, each hop's loss, CE, re-marking and delay, red on loss), the
/// findings as blocks, the tables as HTML tables.
fn correlation_page_shows_the_path(html: &str) {
    assert!(html.contains(".finding.crit {"), "no style sheet");
    assert!(!html.contains("<pre>"), "the text dump is gone");
    assert!(html.contains("<b>2</b>packets lost on the path"));
    assert!(html.contains("<b>10</b>re-marked on the path"));
    // One colour rule: every count of trouble above zero is red, CE marks as re-marking.
    assert!(html.contains("<div class=\"card bad\"><b>4</b>CE-marked on the path</div>"));
    assert!(html.contains("<div class=\"card bad\"><b>10</b>re-marked on the path</div>"));
    // Where packets were lost: a row per hop, not a screen-tall chart of two small bars.
    let loss = &html[html.find("id=\"loss_location\"").unwrap()..];
    let loss = &loss[..loss.find("</table>").unwrap()];
    assert!(!loss.contains("<svg"), "{loss}");
    assert_eq!(loss.matches("<tr class=\"trouble\">").count(), 2, "{loss}");
    assert!(
        loss.contains("<td class=\"l\">leaf.pcap → spine.pcap</td><td>1</td><td>0</td><td>0</td>"),
        "{loss}"
    );
    let path = &html[html.find("id=\"path\"").unwrap()..html.find("<h2>What looks wrong").unwrap()];
    let at = |s: &str| path.find(s).unwrap_or_else(|| panic!("{s} not in {path}"));
    assert!(at(">leaf.pcap<") < at(">spine.pcap<") && at(">spine.pcap<") < at(">receiver.pcap<"));
    // Both request hops lost a packet (red); nothing travelling back was lost or marked.
    assert_eq!(path.matches("<g class=\"hop lossy\">").count(), 2, "{path}");
    assert_eq!(path.matches("<g class=\"hop clean\">").count(), 2, "{path}");
    assert!(path.contains("stroke=\"#c62828\""));
    assert!(path.contains(">CE 4 · DSCP re-marked 10<"), "{path}");
    assert!(path.contains(">delay p50 3 us, p99 13 us<"), "{path}");
    assert!(path.contains(">→ requests: 52 matched<"), "{path}");
    assert!(path.contains(">clock +300 us<"), "{path}");
    // The findings are the main report's blocks, after the picture and before the plots.
    assert_eq!(html.matches("<div class=\"finding crit\">").count(), 2);
    assert!(html.contains("<code>loss_located</code>"));
    assert!(html.find("<code>remarked</code>").unwrap() < html.find("id=\"hop_delay\"").unwrap());
    // The hops as table rows, red where they lost packets.
    assert!(html.contains("<tr class=\"trouble\"><td class=\"l\">spine.pcap → receiver.pcap</td><td>52</td><td>1</td><td>0</td><td>0</td><td>4</td><td>10</td><td>0</td><td>3.0</td><td>3.0</td><td>13.0</td><td>13.0</td><td>10.0</td><td>two_way</td></tr>"), "{html}");
    assert!(
        html.contains("<tr><td class=\"l\">receiver.pcap → spine.pcap</td><td>56</td><td>0</td>")
    );
    // A flow's hops share its row; its lost frames are named; a re-marked hop is amber.
    assert!(html.contains("<td class=\"l\" rowspan=\"2\">10.0.0.1 &gt; 10.0.0.2 qp 0x000100</td>"));
    assert!(
        html.contains("<td>3 us</td><td class=\"l\">63</td></tr>"),
        "{html}"
    );
    assert!(html.contains("<tr class=\"marked\"><td class=\"l\">spine.pcap → receiver.pcap</td><td>10</td><td>0</td><td>0</td><td>10</td>"), "{html}");
    assert!(html.contains("(back)</td>"));
    // Plot keys sit below the data, not in a box over it.
    assert!(
        !html.contains("fill-opacity=\"0.85\""),
        "a legend box is drawn over a plot"
    );
}

/// The spine's capture misses PSN 1010 of .1 > .2 (its mirror dropped it; the receiver got it
/// and ACKed it): not a loss of the hop leaf > spine but a packet the spine missed, told as
/// capture_missed; the hop's one real loss (PSN 1005, NAKed and resent) stays loss_located.
#[test]
fn a_packet_the_later_capture_missed_but_the_receiver_acknowledged_is_not_lost() {
    use roce_testgen::writer::{pcap_bytes, PcapFlavor};
    let dir = Scratch::dir("correlate-missed");
    let mut args = vec!["--correlate".to_string()];
    for (name, frames) in roce_testgen::correlate::points_with_spine_missing(&[1010]) {
        let path = dir.join(name);
        std::fs::write(&path, pcap_bytes(&frames, PcapFlavor::NANO_LE, 1, 65535)).unwrap();
        args.extend(["-r".to_string(), path.display().to_string()]);
    }
    args.push("--json".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let first = &r["correlation"]["hops"][0];
    assert_eq!(
        (first["lost"].as_u64(), first["missed"].as_u64()),
        (Some(1), Some(1))
    );
    let flow = &r["correlation"]["flows"][0];
    assert_eq!(flow["hops"][0]["missed"], 1, "{flow}");
    let codes: Vec<(String, u64)> = finding_counts(&r);
    assert!(codes.contains(&("capture_missed".into(), 1)), "{codes:?}");
    // One loss per hop, as without the miss: the missed packet is in neither.
    let lost: u64 = codes
        .iter()
        .filter(|(c, _)| c == "loss_located")
        .map(|(_, n)| n)
        .sum();
    assert_eq!(lost, 2, "{codes:?}");
}
