//! The analysis in shards (`--shards N`) gives the report of one analysis: byte-identical JSON
//! and exit code for every capture of testdata/ with 1, 2, 3 and 8 shards (more than the
//! machine's cores), and the same report directory, text and capped flow tables.

mod common;

use common::*;

/// The exit code and standard output of `path` read with `args` and each number of shards.
fn per_shard_count(
    path: &std::path::Path,
    args: &[&str],
    counts: &[&str],
) -> Vec<(Option<i32>, Vec<u8>)> {
    counts
        .iter()
        .map(|n| {
            let mut a = args.to_vec();
            a.extend_from_slice(&["--shards", n]);
            let o = run_path(path, &a);
            (o.status.code(), o.stdout)
        })
        .collect()
}

#[test]
fn every_testdata_capture_gives_the_same_json_in_any_number_of_shards() {
    let mut captures = testdata_captures();
    captures.extend(real_captures());
    assert!(captures.len() > 80, "{} captures", captures.len());
    let mut differ = Vec::new();
    for path in &captures {
        let outs = per_shard_count(path, &["--json"], &["1", "2", "3", "8"]);
        assert!(!outs[0].1.is_empty(), "{}: no JSON", path.display());
        if let Some(k) = (1..outs.len()).find(|&k| outs[k] != outs[0]) {
            differ.push(format!("{} (shard count #{k})", path.display()));
        }
    }
    assert!(differ.is_empty(), "JSON depends on --shards: {differ:#?}");
}

#[test]
fn the_text_report_and_the_report_directory_do_not_depend_on_the_shards() {
    for file in [
        "sample.pcap",
        "report_burst.pcap",
        "diagnose/incast_of_two.pcap",
        "diagnose/pfc_mutual.pcap",
        "decode_all.pcap",
    ] {
        let path = testdata(file);
        let text = per_shard_count(&path, &[], &["1", "3"]);
        assert_eq!(text[0], text[1], "{file}: text report depends on --shards");
        let dirs: Vec<Scratch> = ["1", "8"]
            .iter()
            .map(|n| {
                let dir = Scratch::dir(&format!("shards-report-{n}"));
                let out = dir.join("report");
                let o = run_path(
                    &path,
                    &[&format!("--report={}", out.display()), "--shards", n],
                );
                assert!(o.status.success(), "{file}: {}", stderr(&o));
                dir
            })
            .collect();
        let files = |d: &Scratch| {
            let mut names: Vec<_> = std::fs::read_dir(d.join("report"))
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            names.sort();
            names
                .into_iter()
                .map(|p| {
                    (
                        p.file_name().unwrap().to_owned(),
                        std::fs::read(&p).unwrap(),
                    )
                })
                .collect::<Vec<_>>()
        };
        let (one, eight) = (files(&dirs[0]), files(&dirs[1]));
        assert!(one.len() > 5, "{file}: {} files", one.len());
        for ((name, a), (_, b)) in one.iter().zip(&eight) {
            assert!(a == b, "{file}: {name:?} depends on --shards");
        }
        assert_eq!(one.len(), eight.len());
    }
}

#[test]
fn a_full_flow_table_refuses_the_same_flows_in_any_number_of_shards() {
    // sample.pcap has flows of several pairs: a table of two open flows refuses some.
    let path = testdata("sample.pcap");
    let outs = per_shard_count(&path, &["--json", "--max-flows", "2"], &["1", "2", "8"]);
    let report: serde_json::Value = serde_json::from_slice(&outs[0].1).unwrap();
    let unfull: serde_json::Value =
        serde_json::from_slice(&run_path(&path, &["--json"]).stdout).unwrap();
    assert!(
        report["flows"].as_array().unwrap().len() < unfull["flows"].as_array().unwrap().len(),
        "the cap refused nothing"
    );
    assert!(
        outs.windows(2).all(|w| w[0] == w[1]),
        "--max-flows depends on --shards"
    );
}

#[test]
fn idle_flows_end_by_the_capture_clock_in_any_number_of_shards() {
    for file in ["sample.pcap", "diagnose/cm_retried_at_the_end.pcap"] {
        let path = testdata(file);
        let outs = per_shard_count(
            &path,
            &["--json", "--flow-timeout", "1ms"],
            &["1", "2", "8"],
        );
        assert!(
            outs.windows(2).all(|w| w[0] == w[1]),
            "{file}: --flow-timeout depends on --shards"
        );
    }
}
