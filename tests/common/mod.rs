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

/// A place under the system's temporary directory that one test owns: a directory of its own,
/// removed with everything in it when the test passes, kept (its path printed) when the test
/// fails, for a look at what was written. Derefs to the path the test asked for.
pub struct Scratch {
    root: PathBuf,
    path: PathBuf,
}

impl Scratch {
    /// An empty directory `roce-sniff-TAG-PID-N`, N counting the calls of this process (tests
    /// run in parallel).
    pub fn dir(tag: &str) -> Scratch {
        static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("roce-sniff-{tag}-{}-{n}", std::process::id());
        let root = std::env::temp_dir().join(name);
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("scratch directory");
        Scratch {
            path: root.clone(),
            root,
        }
    }

    /// The path NAME (nothing made there) in a directory `dir(tag)` of its own.
    pub fn file(tag: &str, name: &str) -> Scratch {
        let mut s = Scratch::dir(tag);
        s.path = s.root.join(name);
        s
    }
}

impl std::ops::Deref for Scratch {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.path
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.path.as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept for a look: {}", self.root.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}

pub fn run(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run roce-sniff")
}

/// The binary with `args`, `input` written to its standard input (`-r -`).
pub fn run_stdin(args: &[&str], input: &[u8]) -> Output {
    use std::io::Write;
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run roce-sniff");
    // A binary that exits before reading all of it closes the pipe: its output says why.
    let _ = child.stdin.take().expect("stdin").write_all(input);
    child.wait_with_output().expect("wait for roce-sniff")
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

/// The findings of a report (or a correlation) with `code`, in order.
pub fn findings_of<'a>(report: &'a Value, code: &str) -> Vec<&'a Value> {
    report["findings"]
        .as_array()
        .expect("a report with findings[]")
        .iter()
        .filter(|f| f["code"] == code)
        .collect()
}

/// The first finding with `code`; a failure names the codes the report has.
pub fn finding<'a>(report: &'a Value, code: &str) -> &'a Value {
    findings_of(report, code)
        .first()
        .copied()
        .unwrap_or_else(|| panic!("no {code} among {:?}", finding_codes(report)))
}

/// (code, count) of each of a report's findings, in order.
pub fn finding_counts(report: &Value) -> Vec<(String, u64)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["code"].as_str().unwrap().to_string(),
                f["count"].as_u64().unwrap(),
            )
        })
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

/// A copy of the capture at `path` without the frames numbered in `drop` (from 1), as a
/// capture that missed them holds it: the file `NAME` in a scratch directory tagged `tag`.
pub fn capture_without(path: &Path, drop: &[u64], tag: &str) -> Scratch {
    capture_keeping(path, |frame| !drop.contains(&frame), tag)
}

/// A copy of the capture at `path` with only the frames numbered (from 1) that `keep` takes:
/// the file `NAME` in a scratch directory tagged `tag`.
pub fn capture_keeping(path: &Path, keep: impl Fn(u64) -> bool, tag: &str) -> Scratch {
    use roce_parsers::capture::{CaptureParser, Next};
    let data = std::fs::read(path).unwrap();
    let (mut parser, mut at) = CaptureParser::new(&data).unwrap();
    let mut out = data[..at].to_vec();
    let mut frame = 0;
    loop {
        match parser.next(&data[at..], at as u64).unwrap() {
            Next::Record(_, used) => {
                frame += 1;
                if keep(frame) {
                    out.extend_from_slice(&data[at..at + used]);
                }
                at += used;
            }
            Next::Skip(used) => {
                out.extend_from_slice(&data[at..at + used]);
                at += used;
            }
            Next::Incomplete { .. } => break,
        }
    }
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let copy = Scratch::file(tag, &name);
    std::fs::write(&copy, out).unwrap();
    copy
}

/// A process killed (SIGTERM) when the test ends, however it ends.
pub struct Running(pub std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let _ = self.0.wait();
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// GET `path` of 127.0.0.1:`port`: the body, if it answered.
pub fn http_get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    out.split_once("\r\n\r\n").map(|(_, body)| body.to_string())
}

/// `%`-encodes a PromQL query for a URL.
pub fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'-' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The single value PromQL `q` gives, once Prometheus has it.
/// The alerts firing now, as (alertname, its labels).
pub fn firing_alerts(port: u16) -> Vec<(String, Value)> {
    let q = "ALERTS{alertstate=\"firing\"}";
    let Some(body) = http_get(port, &format!("/api/v1/query?query={}", encode(q))) else {
        return Vec::new();
    };
    let v: Value = serde_json::from_str(&body).unwrap_or_default();
    v["data"]["result"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            let name = r["metric"]["alertname"].as_str().unwrap_or("").to_string();
            (name, r["metric"].clone())
        })
        .collect()
}

/// The metric names of `exprs` (PromQL) that `served` (a /metrics text) has no family of.
pub fn unserved_metrics(exprs: &[&str], served: &str) -> Vec<String> {
    let mut missing = Vec::new();
    for e in exprs {
        for (at, _) in e.match_indices("roce_sniff_") {
            let name: String = e[at..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            let family = name.strip_suffix("_bucket").unwrap_or(&name);
            if !served.contains(&format!("# TYPE {family} ")) {
                missing.push(name);
            }
        }
    }
    missing
}

pub fn promql(port: u16, q: &str) -> Option<f64> {
    let body = http_get(port, &format!("/api/v1/query?query={}", encode(q)))?;
    let v: Value = serde_json::from_str(&body).ok()?;
    let result = v["data"]["result"].as_array()?;
    let first = result.first()?;
    first["value"][1].as_str()?.parse().ok()
}

/// Whether `program` runs here (`version_arg` asks for its version). Under CI it must: `make
/// test` installs it, and a missing one fails the test instead of skipping `test`.
pub fn installed(program: &str, version_arg: &str, test: &str) -> bool {
    if Command::new(program).arg(version_arg).output().is_ok() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{program} missing under CI: `make test` installs it"
    );
    eprintln!("SKIPPED {test}: {program} is not installed (`make test` installs it)");
    false
}

/// Whether Debian's `prometheus` is here.
pub fn prometheus_installed() -> bool {
    installed("prometheus", "--version", "the Prometheus test")
}

/// A Prometheus server on 127.0.0.1:`port`, its data in `dir`, scraping roce-sniff's metrics
/// at 127.0.0.1:`target` every second.
pub fn start_prometheus(dir: &Path, target: u16, port: u16) -> Running {
    std::fs::create_dir_all(dir).unwrap();
    let config = dir.join("prometheus.yml");
    // The alerting rules of docs/prometheus, evaluated every second.
    let rules = repo().join("docs/prometheus/roce-sniff-alerts.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files: ['{}']\nscrape_configs:\n  - job_name: roce-sniff\n    static_configs:\n      - targets: ['127.0.0.1:{target}']\n",
            rules.display()
        ),
    )
    .unwrap();
    Running(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

/// The rows DuckDB (its Python package, which `make test` installs) gives for `sql`, as JSON
/// values (numbers stay numbers).
pub fn duckdb_rows(sql: &str) -> Vec<Vec<Value>> {
    let script = "import duckdb, json, sys\n\
                  rows = duckdb.sql(sys.argv[1]).fetchall()\n\
                  print(json.dumps([[v if isinstance(v, (int, float, str)) or v is None else str(v) for v in r] for r in rows]))";
    let out = Command::new("python3")
        .args(["-c", script, sql])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "duckdb: {sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// PromQL queries and what they give for a monitor that analysed the capture of `report` (its
/// flows all open): frame, QP and PFC counters. Not bytes: a replayed snap-length capture
/// carries other lengths than its file tells.
pub fn promql_of_report(report: &Value) -> Vec<(&'static str, f64)> {
    let c = &report["capture"];
    let flows = report["flows"].as_array().unwrap();
    let sum = |k: &dyn Fn(&Value) -> &Value| {
        flows.iter().map(|f| k(f).as_u64().unwrap()).sum::<u64>() as f64
    };
    vec![
        (
            "roce_sniff_frames_total{kind=\"roce\"}",
            c["roce_packets"].as_f64().unwrap(),
        ),
        (
            "roce_sniff_frames_total{kind=\"pfc\"}",
            c["pfc_frames"].as_f64().unwrap(),
        ),
        ("roce_sniff_flows_active", flows.len() as f64),
        ("sum(roce_sniff_qp_packets_total)", sum(&|f| &f["packets"])),
        (
            "sum(roce_sniff_qp_psn_gaps_total)",
            sum(&|f| &f["psn"]["gaps"]),
        ),
        ("sum(roce_sniff_qp_ce_total)", sum(&|f| &f["ce"])),
        ("sum(roce_sniff_qp_cnps_total)", sum(&|f| &f["cnps"])),
        (
            "sum(roce_sniff_pfc_pause_frames_total)",
            report["pfc"]["priorities"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["xoff"].as_f64().unwrap())
                .sum(),
        ),
    ]
}

/// The queries of `expect` whose answer differs, as lines saying so.
pub fn promql_wrong(port: u16, expect: &[(&str, f64)]) -> Vec<String> {
    expect
        .iter()
        .filter_map(|&(q, want)| {
            let got = promql(port, q);
            (got != Some(want)).then(|| format!("{q}: got {got:?}, expected {want}"))
        })
        .collect()
}

/// Whether tshark runs here (under CI it must: `make test` installs it).
pub fn tshark_available() -> bool {
    let found = Command::new("tshark")
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "tshark is not installed under CI: `make test` should have installed it"
        );
        eprintln!("SKIPPED: tshark not installed (run `make test`, which installs it)");
    }
    found
}

/// tshark's standard output for `args`.
pub fn tshark(args: &[&str]) -> String {
    let out = Command::new("tshark")
        .args(args)
        .output()
        .expect("tshark (make test installs it)");
    assert!(
        out.status.success(),
        "tshark {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The headless browser installed, if any (`make test` installs chromium).
pub fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

/// The value of the JavaScript expression `expr` on the page `page` as the browser lays it
/// out at 1400 x 900 px: a copy of the page runs it and leaves the value in the DOM.
pub fn measure_in_browser(browser: &str, page: &Path, expr: &str) -> String {
    measure_in_browser_at(browser, page, expr, 1400)
}

/// `measure_in_browser` in a window `width` px wide.
pub fn measure_in_browser_at(browser: &str, page: &Path, expr: &str, width: u32) -> String {
    let html = std::fs::read_to_string(page).unwrap();
    let probe = page.with_file_name("probe.html");
    let script = format!(
        "<script>document.body.setAttribute('data-measure', String({expr}));</script></body>"
    );
    std::fs::write(&probe, html.replace("</body>", &script)).unwrap();
    let profile = page.with_file_name("browser-profile");
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .arg(format!("--window-size={width},900"))
        .arg("--dump-dom")
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", probe.display()))
        .output()
        .unwrap();
    std::fs::remove_file(&probe).ok();
    std::fs::remove_dir_all(&profile).ok();
    let dom = String::from_utf8_lossy(&out.stdout);
    dom.split("data-measure=\"")
        .nth(1)
        .map(|v| v[..v.find('"').unwrap()].to_string())
        .unwrap_or_else(|| panic!("no measure: {}", String::from_utf8_lossy(&out.stderr)))
}

/// Whether the first and last columns of a PNG are white on every row: nothing drawn runs off
/// the drawing's sides.
pub fn sides_are_blank(path: &Path) -> bool {
    let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let bpp = info.line_size / info.width as usize;
    buf[..info.buffer_size()].chunks(info.line_size).all(|row| {
        let row = &row[..info.width as usize * bpp];
        let (left, right) = (&row[..3 * bpp], &row[row.len() - 3 * bpp..]);
        left.iter().chain(right).all(|&b| b == 255)
    })
}

/// The smallest text of the page's plots in pixels as the browser draws them `width` pixels
/// wide (the rotated axis names too).
pub fn smallest_plot_text_at(browser: &str, page: &Path, width: u32) -> f64 {
    let expr = "Math.min(...[...document.querySelectorAll('.plot svg text')].map(t => \
                parseFloat(getComputedStyle(t).fontSize) \
                * Math.hypot(t.getScreenCTM().a, t.getScreenCTM().b)))";
    let px = measure_in_browser_at(browser, page, expr, width);
    px.parse()
        .unwrap_or_else(|_| panic!("no plot text size: {px}"))
}

/// Native ERF (what a DAG card writes): the ERF records of testdata/real's
/// srinivas_infiniband.pcap (link type ERF) one after the other, each record's length set to
/// what the pcap kept of it; the file `NAME` in a scratch directory tagged `tag`.
pub fn native_erf(tag: &str, name: &str) -> Scratch {
    use roce_parsers::capture::{CaptureParser, Next};
    let pcap = std::fs::read(real_capture("srinivas_infiniband.pcap")).unwrap();
    let (mut parser, mut at) = CaptureParser::new(&pcap).unwrap();
    let mut erf = Vec::new();
    while let Ok(Next::Record(r, used)) = parser.next(&pcap[at..], at as u64) {
        let mut record = r.data.to_vec();
        let rlen = record.len() as u16;
        record[10..12].copy_from_slice(&rlen.to_be_bytes());
        erf.extend_from_slice(&record);
        at += used;
    }
    let path = Scratch::file(tag, name);
    std::fs::write(&path, &erf).unwrap();
    path
}
