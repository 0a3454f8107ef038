//! Helpers for the end-to-end tests: run the real binary, read its NDJSON, find the captures.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_roce-sniff")
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn testdata(name: &str) -> PathBuf {
    repo().join("testdata").join(name)
}

/// The real captures of testdata/real/ (provenance and licences in its README). Missing is a
/// failure, not a silent pass: these are what users bring.
pub fn real_captures() -> Vec<PathBuf> {
    let dir = repo().join("testdata").join("real");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("real captures not found at {} ({e})", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no captures in {}", dir.display());
    files
}

pub fn real_capture(name: &str) -> PathBuf {
    let path = repo().join("testdata").join("real").join(name);
    assert!(path.is_file(), "real capture {} missing", path.display());
    path
}

/// Every crafted capture under testdata/, recursively (the real captures of testdata/real/ are
/// not crafted: `real_captures` lists them).
pub fn testdata_captures() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).expect("testdata readable").flatten() {
            let p = e.path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n != "real") {
                    walk(&p, out);
                }
            } else if p.extension().is_some_and(|x| x == "pcap" || x == "pcapng") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&repo().join("testdata"), &mut out);
    out.sort();
    out
}

pub fn run(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run roce-sniff")
}

pub fn run_path(path: &Path, extra: &[&str]) -> Output {
    let p = path.to_str().expect("utf-8 path");
    let mut args = vec!["-r", p];
    args.extend_from_slice(extra);
    run(&args)
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The codes of a report's findings, in order.
pub fn finding_codes(report: &Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_string())
        .collect()
}

/// `--packets --json` of a capture, one value per frame; asserts exit code 0.
pub fn ndjson(path: &Path) -> Vec<Value> {
    let out = run_path(path, &["--packets", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}: {}",
        path.display(),
        stderr(&out)
    );
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l}: {e}")))
        .collect()
}
