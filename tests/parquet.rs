//! `--parquet`: two captures exported into one dataset, read back with DuckDB and with Spark
//! in local mode (tests/parquet/check.py; `make test` installs both Python packages), and
//! checked against each capture's JSON report: packet counts, per-flow counters, timeline sums
//! per flow, PFC counts, findings.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn export(dir: &Path, capture: &str, name: Option<&str>) -> PathBuf {
    let json = dir.join(format!("{}.json", name.unwrap_or("sample")));
    let mut args = vec![
        "-r".to_string(),
        testdata(capture).to_str().unwrap().to_string(),
        format!("--json={}", json.display()),
        "--parquet".into(),
        dir.join("dataset").to_str().unwrap().into(),
    ];
    if let Some(n) = name {
        args.push("--capture-name".into());
        args.push(n.into());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    json
}

fn check(engine: &str, dir: &Path, reports: &[(&str, &Path)]) {
    let mut cmd = Command::new("python3");
    cmd.arg(repo().join("tests/parquet/check.py"))
        .arg(engine)
        .arg(dir.join("dataset"));
    for (name, path) in reports {
        cmd.arg(format!("{name}={}", path.display()));
    }
    let out = cmd.output().expect("python3 runs");
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "ok",
        "{engine}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_fleet_dataset_reads_back_equal_to_the_reports_in_duckdb_and_spark() {
    let dir = std::env::temp_dir().join(format!("roce-sniff-parquet-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let sample = export(&dir, "sample.pcap", None);
    let psn = export(&dir, "analysis_psn.pcap", Some("host-b"));
    let congestion = export(&dir, "analysis_congestion.pcap", Some("host-c"));
    for p in ["packets", "flows", "timeline", "pfc", "findings"] {
        for c in ["sample", "host-b", "host-c"] {
            let f = dir
                .join("dataset")
                .join(p)
                .join(format!("capture={c}"))
                .join("part-0.parquet");
            assert!(f.is_file(), "{}", f.display());
        }
    }
    let reports = [
        ("sample", sample.as_path()),
        ("host-b", psn.as_path()),
        ("host-c", congestion.as_path()),
    ];
    check("duckdb", &dir, &reports);
    check("spark", &dir, &reports);
    // Both engines read them back: integers delta-encoded, every column zstd-compressed.
    let packets = dir.join("dataset/packets/capture=sample/part-0.parquet");
    let encodings = duckdb_rows(&format!(
        "SELECT DISTINCT type, encodings, compression FROM parquet_metadata('{}') ORDER BY ALL",
        packets.display()
    ));
    for row in &encodings {
        let (ty, enc) = (row[0].as_str().unwrap(), row[1].as_str().unwrap());
        assert_eq!(row[2], "ZSTD", "{row:?}");
        if ty.starts_with("INT") {
            assert!(enc.contains("DELTA_BINARY_PACKED"), "{row:?}");
        } else {
            assert!(!enc.contains("DELTA"), "{row:?}");
        }
    }
    assert!(encodings.len() >= 4, "{encodings:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn parquet_is_refused_where_it_does_not_apply() {
    let sample = testdata("sample.pcap");
    // A live capture's report writes a rolling dataset; --packets exports only files.
    let out = run(&["-i", "lo", "--packets", "--parquet", "/tmp/x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--parquet with --packets exports capture files"),
        "{}",
        stderr(&out)
    );
    let s = sample.to_str().unwrap();
    for (args, says) in [
        (
            &["-r", s, "--rotate", "1s"][..],
            "--rotate applies to --parquet",
        ),
        (
            &["-r", s, "--parquet", "/tmp/x", "--rotate", "1500us"][..],
            "--rotate must be a whole number of --bin widths",
        ),
        (
            &[
                "-r",
                s,
                "--packets",
                "--parquet",
                "/tmp/x",
                "--rotate",
                "1s",
            ][..],
            "--rotate applies to the report's --parquet",
        ),
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
    let out = run(&[
        "-r",
        sample.to_str().unwrap(),
        "--parquet",
        "/tmp/x",
        "--capture-name",
        "a/b",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--capture-name"), "{}", stderr(&out));
}

#[test]
fn a_capture_exported_again_replaces_its_partition() {
    let dir = std::env::temp_dir().join(format!("roce-sniff-parquet-again-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    export(&dir, "sample.pcap", None);
    let partition = dir.join("dataset/packets/capture=sample");
    std::fs::write(partition.join("part-9.parquet"), b"left over").unwrap();
    export(&dir, "sample.pcap", None);
    assert!(!partition.join("part-9.parquet").exists());
    assert!(partition.join("part-0.parquet").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_packets_mode_exports_the_same_tables() {
    let dir =
        std::env::temp_dir().join(format!("roce-sniff-parquet-packets-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let report = export(&dir, "analysis_psn.pcap", Some("psn"));
    std::fs::remove_dir_all(dir.join("dataset")).unwrap();
    let out = run(&[
        "-r",
        testdata("analysis_psn.pcap").to_str().unwrap(),
        "--packets",
        "--json",
        "--parquet",
        dir.join("dataset").to_str().unwrap(),
        "--capture-name",
        "psn",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let frames =
        serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(&report).unwrap())
            .unwrap()["capture"]["packets"]
            .as_u64()
            .unwrap();
    assert_eq!(
        stdout(&out).lines().count() as u64,
        frames,
        "the frames are printed too"
    );
    check("duckdb", &dir, &[("psn", report.as_path())]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every part number of a rolling dataset, per table.
fn parts(dataset: &Path, table: &str, capture: &str) -> Vec<u64> {
    let dir = dataset.join(table).join(format!("capture={capture}"));
    let mut n: Vec<u64> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .map(|name| {
            name.strip_prefix("part-")
                .and_then(|n| n.strip_suffix(".parquet"))
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{table}: {name} is not a part"))
        })
        .collect();
    n.sort_unstable();
    n
}

#[test]
fn a_rotated_export_holds_what_its_events_and_report_tell() {
    let dir = std::env::temp_dir().join(format!("roce-sniff-rotate-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let dataset = dir.join("dataset");
    let mut checked = Vec::new();
    // A churn of lossy QPs over 16 s: its findings are groups of the QPs first told each
    // second, their `flows` what the events tell.
    use roce_testgen::churn::{write_churn, ChurnConfig};
    let churn = ChurnConfig {
        qps: 4_000,
        gap_ns: 1_000_000,
        lossy_every: 10,
        ..ChurnConfig::default()
    };
    let lossy_churn = dir.join("lossy_churn.pcap");
    write_churn(std::fs::File::create(&lossy_churn).unwrap(), churn).unwrap();
    // sample twice: a file exported again replaces its parts and numbers its flows anew.
    for (capture, every) in [
        (testdata("sample.pcap"), "5ms"),
        (testdata("sample.pcap"), "20ms"),
        (testdata("analysis_congestion.pcap"), "2ms"),
        (lossy_churn.clone(), "1s"),
    ] {
        let file_name = capture.file_name().unwrap().to_string_lossy().into_owned();
        let name = file_name.trim_end_matches(".pcap");
        let (json, events) = (
            dir.join(format!("{name}.json")),
            dir.join(format!("{name}.ndjson")),
        );
        let out = run(&[
            "-r",
            capture.to_str().unwrap(),
            &format!("--json={}", json.display()),
            &format!("--events={}", events.display()),
            "--parquet",
            dataset.to_str().unwrap(),
            "--rotate",
            every,
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        // Complete sets numbered from 0, none left half-written.
        let numbers = parts(&dataset, "packets", name);
        assert!(numbers.len() > 3, "{name}: {numbers:?}");
        assert_eq!(numbers, (0..numbers.len() as u64).collect::<Vec<_>>());
        for table in ["flows", "timeline", "pfc", "findings"] {
            assert_eq!(parts(&dataset, table, name), numbers, "{table}");
        }
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let next_id =
            std::fs::read_to_string(dataset.join(format!(".capture={name}.next-flow-id"))).unwrap();
        assert_eq!(
            next_id.trim().parse::<u64>().unwrap(),
            report["capture"]["flows"].as_u64().unwrap()
        );
        checked.retain(|(n, _, _)| *n != name);
        checked.push((name.to_string(), json, events));
    }
    // Every lossy QP once in the findings' flows, over more than one part.
    let loss = duckdb_rows(&format!(
        "select sum(flows)::bigint, count(*) from read_parquet('{}/findings/capture=lossy_churn/*.parquet') \
         where code = 'psn_loss'",
        dataset.display()
    ));
    assert_eq!(loss[0][0], serde_json::Value::from(churn.lossy_qps()));
    assert!(loss[0][1].as_u64().unwrap() >= 15, "{loss:?}");
    let args: Vec<String> = checked
        .iter()
        .map(|(name, json, events)| format!("{name}={},{}", json.display(), events.display()))
        .collect();
    let out = Command::new("python3")
        .arg(repo().join("tests/parquet/check.py"))
        .arg("duckdb")
        .arg(&dataset)
        .args(&args)
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "ok",
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A dataset whose disk fills while a churn is read with --rotate (a 1 MB tmpfs): the run
/// fails naming the file with the report written; the parts published before stay whole
/// (DuckDB reads them all), and no temporary part is left. The message once read "External:
/// No space left on device", and the set being opened when the disk filled stayed behind.
#[test]
fn a_full_disk_under_a_rolling_dataset_leaves_whole_parts_and_the_report() {
    let base = std::env::temp_dir().join(format!("roce-sniff-pq-full-{}", std::process::id()));
    let disk = base.join("disk");
    std::fs::create_dir_all(&disk).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&disk)
        .output()
        .is_ok_and(|o| o.status.success());
    if !mounted {
        eprintln!("SKIPPED full-disk dataset test: cannot mount a tmpfs here (needs root)");
        let _ = std::fs::remove_dir_all(&base);
        return;
    }
    use roce_testgen::churn::{write_churn, ChurnConfig};
    let capture = base.join("churn.pcap");
    let cfg = ChurnConfig {
        qps: 20_000,
        ..ChurnConfig::default()
    };
    write_churn(std::fs::File::create(&capture).unwrap(), cfg).unwrap();
    let (dataset, json) = (disk.join("ds"), base.join("report.json"));
    let out = run_path(
        &capture,
        &[
            "--flow-timeout",
            "5ms",
            "--parquet",
            dataset.to_str().unwrap(),
            "--rotate",
            "10ms",
            &format!("--json={}", json.display()),
        ],
    );
    let err = stderr(&out);
    let published = parts(&dataset, "packets", "churn");
    let parts_hold = duckdb_rows(&format!(
        "select count(*) from read_parquet('{}/*/*/*.parquet')",
        dataset.display()
    ));
    let leftovers: Vec<String> = ["flows", "timeline", "findings", "pfc"]
        .iter()
        .flat_map(|t| std::fs::read_dir(dataset.join(t).join("capture=churn")).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    let _ = Command::new("umount").arg(&disk).status();
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let _ = std::fs::remove_dir_all(&base);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.ends_with(".parquet.tmp: no space left on the device"),
        "{err}"
    );
    // The parts are written on a thread behind a queue: the read may be over when the disk
    // fills. If it was not, it stopped there, and the report says so.
    if let Some(warning) = report["capture"]["warnings"][0].as_str() {
        assert!(warning.starts_with("reading stopped: "), "{warning}");
    }
    assert!(report["capture"]["packets"].as_u64().unwrap() > 0);
    assert!(!published.is_empty(), "some parts were published before");
    assert!(parts_hold[0][0].as_u64().unwrap() > 0);
    assert_eq!(leftovers, Vec::<String>::new());
}

/// Two switch ports taking turns pausing priority 3, 12,000 pauses of 10 us each, 50 us apart:
/// more than the plots keep (10,000, the later ones merged into the last). Past the 10,000th
/// the merged pause once made the two "pause each other" (`pfc_mutual`) and the dataset's
/// `paused_ns` count the gaps between pauses (300 ms instead of 120 ms a port). Read whole and
/// as a rolling dataset cut every 100 ms (pauses end in the parts of the intervals they lie
/// in), the paused time is the report's; so is the plots' timeline (it too counted the gaps).
#[test]
fn many_pauses_taking_turns_neither_overlap_nor_count_the_gaps() {
    use roce_testgen::frames;
    use roce_testgen::writer::{pcap_bytes, PcapFlavor, T0_NS};
    let ports = [[2, 0, 0, 0, 0x0a, 1], [2, 0, 0, 0, 0x0b, 1]];
    let pfc = |port: usize, quanta: u16| {
        let mut q = [0u16; 8];
        q[3] = quanta;
        frames::pfc(ports[port], 1 << 3, q)
    };
    let mut capture = Vec::new();
    for k in 0..12_000u64 {
        for (port, at) in [(0, 0), (1, 50_000)] {
            let ts = T0_NS + k * 100_000 + at;
            capture.push((ts, pfc(port, 0xffff)));
            capture.push((ts + 10_000, pfc(port, 0)));
        }
    }
    let dir = Scratch::dir("pfc-turns");
    let path = dir.join("turns.pcap");
    std::fs::write(&path, pcap_bytes(&capture, PcapFlavor::NANO_LE, 1, 65535)).unwrap();
    for (name, rotate) in [("whole", None), ("rolling", Some("100ms"))] {
        let dataset = dir.join(name);
        let json = dir.join(format!("{name}.json"));
        let mut args = vec![
            "-r".to_string(),
            path.to_str().unwrap().into(),
            format!("--json={}", json.display()),
            "--parquet".into(),
            dataset.to_str().unwrap().into(),
        ];
        match rotate {
            Some(r) => args.extend(["--rotate".into(), r.into()]),
            // The plots' timeline too: its paused time per bin.
            None => args.push(format!("--report={}", dir.join("report").display())),
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(&args);
        assert!(
            out.status.code().is_some_and(|c| c <= 1),
            "{}",
            stderr(&out)
        );
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert!(
            !finding_codes(&report).contains(&"pfc_mutual".to_string()),
            "{name}: {:?}",
            finding_codes(&report)
        );
        if rotate.is_none() {
            let timeline: serde_json::Value = serde_json::from_slice(
                &std::fs::read(dir.join("report").join("timeline.json")).unwrap(),
            )
            .unwrap();
            for p in timeline["pfc"].as_array().unwrap() {
                let us: f64 = p["pause_us"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_f64().unwrap())
                    .sum();
                assert!((us - 120_000.0).abs() < 0.01, "{}: {us}", p["source"]);
            }
        }
        let priorities = report["pfc"]["priorities"].as_array().unwrap();
        assert_eq!(priorities.len(), 2);
        for p in priorities {
            assert_eq!(p["pause_us"], 120_000.0, "{p}");
        }
        let rows = duckdb_rows(&format!(
            "SELECT src_mac, sum(paused_ns), sum(xoff), sum(xon) FROM read_parquet('{}/pfc/**/*.parquet') GROUP BY src_mac ORDER BY src_mac",
            dataset.display()
        ));
        let expected = |mac: &str| -> Vec<serde_json::Value> {
            vec![
                mac.into(),
                120_000_000u64.into(),
                12_000u64.into(),
                12_000u64.into(),
            ]
        };
        assert_eq!(
            rows,
            vec![expected("02:00:00:00:0a:01"), expected("02:00:00:00:0b:01")],
            "{name}"
        );
    }
}
