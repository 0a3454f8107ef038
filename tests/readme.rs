//! The README's examples are what the binary prints: every fenced block that starts with a
//! `$ roce-sniff ...` line is run again, and each line it shows must come, in order, in the
//! output (`...` stands for lines left out). The committed sample report is what the binary
//! writes. When one fails, run the command and paste its output (`make sample-report` for the
//! report).

mod common;

use common::*;

/// One example: the command (after `roce-sniff`) and the lines shown, `...` left out.
struct Example {
    line: usize,
    args: Vec<String>,
    shown: Vec<String>,
}

fn examples(readme: &str) -> Vec<Example> {
    let mut out: Vec<Example> = Vec::new();
    let mut in_block = false;
    for (i, line) in readme.lines().enumerate() {
        if line.starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if !in_block {
            continue;
        }
        if let Some(cmd) = line.strip_prefix("$ roce-sniff ") {
            out.push(Example {
                line: i + 1,
                args: cmd.split_whitespace().map(String::from).collect(),
                shown: Vec::new(),
            });
        } else if let Some(e) = out.last_mut() {
            if line.trim() != "..." && !line.starts_with("$ ") {
                e.shown.push(line.trim_end().to_string());
            }
        }
    }
    for e in &mut out {
        while e.shown.last().is_some_and(|l| l.is_empty()) {
            e.shown.pop();
        }
    }
    out
}

/// The first line of `shown` not found in `output` after the lines before it.
fn first_missing<'a>(shown: &'a [String], output: &str) -> Option<&'a str> {
    let mut lines = output.lines().map(str::trim_end);
    shown
        .iter()
        .find(|want| !lines.any(|got| got == want.as_str()))
        .map(String::as_str)
}

#[test]
fn every_readme_example_is_what_the_binary_prints() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let examples = examples(&readme);
    assert!(examples.len() >= 6, "{} examples", examples.len());
    let mut wrong = Vec::new();
    for e in &examples {
        let args: Vec<&str> = e.args.iter().map(String::as_str).collect();
        let out = std::process::Command::new(bin())
            .args(&args)
            .current_dir(repo())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        if let Some(line) = first_missing(&e.shown, &stdout) {
            wrong.push(format!(
                "README.md:{} `roce-sniff {}`: not printed (in that order): {line}",
                e.line,
                e.args.join(" ")
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_committed_sample_report_is_what_the_binary_writes() {
    let dir = Scratch::dir("readme-sample-report");
    let report = format!("--report={}", dir.display());
    // As `make sample-report` runs it: from the repository, the capture named relatively.
    let out = std::process::Command::new(bin())
        .args(["-r", "testdata/sample.pcap", &report])
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    for file in [
        "report.txt",
        "report.json",
        "timeline.csv",
        "pfc_timeline.csv",
    ] {
        let written = std::fs::read_to_string(dir.join(file)).unwrap();
        let committed =
            std::fs::read_to_string(repo().join("reports/sample").join(file)).unwrap_or_default();
        assert!(
            written == committed,
            "reports/sample/{file} differs from what the binary writes: run `make sample-report`"
        );
    }
}
