//! `--report DIR`: the report as files a person opens rather than reads: timelines (CSV and
//! JSON), plots (PNG and SVG) and a self-contained index.html, beside report.json and report.txt.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::html;
use super::plots::{self, css_color, flow_color, Rendered};
use crate::common::error::Error;
use crate::model::{Bin, PlotData, Report};

const TIMELINE_SCHEMA: &str = "roce-sniff.timeline/2";

/// Columns of a flow's timeline, one value per bin.
#[derive(Debug, Serialize)]
pub struct SeriesJson {
    pub packets: Vec<u64>,
    pub bytes: Vec<u64>,
    pub gbps: Vec<f64>,
    pub psn_gaps: Vec<u64>,
    pub retransmissions: Vec<u64>,
    pub ce: Vec<u64>,
    pub cnps: Vec<u64>,
    pub naks: Vec<u64>,
    pub psn_progress: Vec<Option<i64>>,
}

impl SeriesJson {
    fn new(bins: &[Bin], bin_ns: u64) -> Self {
        SeriesJson {
            packets: bins.iter().map(|b| b.packets).collect(),
            bytes: bins.iter().map(|b| b.bytes).collect(),
            gbps: bins.iter().map(|b| gbps(b, bin_ns)).collect(),
            psn_gaps: bins.iter().map(|b| b.psn_gaps).collect(),
            retransmissions: bins.iter().map(|b| b.retransmissions).collect(),
            ce: bins.iter().map(|b| b.ce).collect(),
            cnps: bins.iter().map(|b| b.cnps).collect(),
            naks: bins.iter().map(|b| b.naks).collect(),
            psn_progress: bins.iter().map(|b| b.psn_progress).collect(),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct FlowTimeline {
    /// The flow's `id` in report.json.
    pub id: usize,
    pub flow: String,
    pub color: String,
    #[serde(flatten)]
    pub series: SeriesJson,
}

#[derive(Debug, Serialize)]
pub struct PfcTimeline {
    /// None for 802.3x PAUSE.
    pub priority: Option<u8>,
    pub source: String,
    pub roce: bool,
    /// Microseconds paused in each bin.
    pub pause_us: Vec<f64>,
    /// Pause intervals in seconds since the capture start.
    pub intervals: Vec<[f64; 2]>,
}

#[derive(Debug, Serialize)]
pub struct TimelineJson {
    pub schema: &'static str,
    /// Where bin 0 starts (seconds since the epoch): bin i covers [start + i*bin,
    /// start + (i+1)*bin). The bins cover the traffic (RoCE, PFC, PAUSE), on a grid from the
    /// capture's first frame: idle time before and after it is left out.
    pub start_ts: f64,
    /// The capture's first frame (seconds since the epoch): the `_s` times count from it.
    pub capture_start_ts: f64,
    pub bin_us: f64,
    pub bins: usize,
    pub flows: Vec<FlowTimeline>,
    /// Flows beyond the timeline cap, summed (absent when every flow has its own series).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other: Option<SeriesJson>,
    pub pfc: Vec<PfcTimeline>,
}

fn gbps(b: &Bin, bin_ns: u64) -> f64 {
    b.bytes as f64 * 8.0 / bin_ns as f64
}

/// Microseconds paused in each bin.
fn pause_per_bin(d: &PlotData, intervals: &[(u64, u64, u64)]) -> Vec<f64> {
    super::plots::paused_per_slot(intervals, d.start_ns, d.bin_ns, d.bins)
        .into_iter()
        .map(|ns| ns / 1e3)
        .collect()
}

fn timeline_json(d: &PlotData) -> TimelineJson {
    let secs = |ns: u64| ns.saturating_sub(d.origin_ns) as f64 / 1e9;
    TimelineJson {
        schema: TIMELINE_SCHEMA,
        start_ts: d.start_ns as f64 / 1e9,
        capture_start_ts: d.origin_ns as f64 / 1e9,
        bin_us: d.bin_ns as f64 / 1e3,
        bins: d.bins,
        flows: d
            .flows
            .iter()
            .map(|f| FlowTimeline {
                id: f.id,
                flow: f.name.clone(),
                color: css_color(flow_color(f.id)),
                series: SeriesJson::new(&f.bins, d.bin_ns),
            })
            .collect(),
        other: d.other.as_ref().map(|o| SeriesJson::new(o, d.bin_ns)),
        pfc: d
            .pfc
            .iter()
            .map(|r| PfcTimeline {
                priority: r.priority,
                source: r.source.clone(),
                roce: r.roce,
                pause_us: pause_per_bin(d, &r.intervals),
                intervals: r
                    .intervals
                    .iter()
                    .map(|&(a, b, _)| [secs(a), secs(b)])
                    .collect(),
            })
            .collect(),
    }
}

fn flows_csv(d: &PlotData, t: &TimelineJson) -> String {
    let mut o = String::from(
        "flow_id,flow,bin_start_s,packets,bytes,gbps,psn_gaps,retransmissions,ce,cnps,naks,psn_progress\n",
    );
    let first_s = d.start_ns.saturating_sub(d.origin_ns) as f64 / 1e9;
    let bin_s = d.bin_ns as f64 / 1e9;
    for f in &t.flows {
        let s = &f.series;
        for i in 0..t.bins {
            let _ = writeln!(
                o,
                "{},\"{}\",{:.9},{},{},{:.6},{},{},{},{},{},{}",
                f.id,
                f.flow,
                first_s + i as f64 * bin_s,
                s.packets[i],
                s.bytes[i],
                s.gbps[i],
                s.psn_gaps[i],
                s.retransmissions[i],
                s.ce[i],
                s.cnps[i],
                s.naks[i],
                s.psn_progress[i].map_or(String::new(), |p| p.to_string())
            );
        }
    }
    o
}

fn pfc_csv(d: &PlotData, t: &TimelineJson) -> String {
    let mut o = String::from("bin_start_s,source,priority,roce,pause_us\n");
    let first_s = d.start_ns.saturating_sub(d.origin_ns) as f64 / 1e9;
    let bin_s = d.bin_ns as f64 / 1e9;
    for r in &t.pfc {
        for (i, us) in r.pause_us.iter().enumerate() {
            let _ = writeln!(
                o,
                "{:.9},{},{},{},{:.3}",
                first_s + i as f64 * bin_s,
                r.source,
                r.priority.map_or("all".into(), |p| p.to_string()),
                r.roce,
                us
            );
        }
    }
    o
}

/// Writes `bytes` to `dir/name`.
pub(crate) fn write(dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf, Error> {
    let path = dir.join(name);
    std::fs::write(&path, bytes).map_err(|source| Error::Output {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

/// The files of a report directory besides the plots.
pub const FILES: [&str; 6] = [
    "report.json",
    "report.txt",
    "timeline.json",
    "timeline.csv",
    "pfc_timeline.csv",
    "index.html",
];

/// Every file a report directory holds, plots included: what a later report may replace.
pub fn file_names() -> Vec<String> {
    let plots = crate::model::PlotKind::ALL
        .iter()
        .flat_map(|k| ["png", "svg"].map(|ext| format!("{}.{ext}", k.name())));
    FILES.iter().map(|f| f.to_string()).chain(plots).collect()
}

/// Writes the whole report directory; returns the files written.
pub fn write_dir(
    dir: &Path,
    report: &Report,
    text: &str,
    d: &PlotData,
) -> Result<Vec<PathBuf>, Error> {
    crate::common::destination::make_report_dir(dir)?;
    let mut files = Vec::new();
    let mut json = Vec::new();
    super::json::write_pretty(&mut json, report).map_err(|source| Error::Output {
        path: dir.join("report.json"),
        source,
    })?;
    files.push(write(dir, "report.json", &json)?);
    files.push(write(dir, "report.txt", text.as_bytes())?);
    let t = timeline_json(d);
    let tj = serde_json::to_vec(&t).map_err(|e| Error::Output {
        path: dir.join("timeline.json"),
        source: e.into(),
    })?;
    files.push(write(dir, "timeline.json", &tj)?);
    files.push(write(dir, "timeline.csv", flows_csv(d, &t).as_bytes())?);
    files.push(write(dir, "pfc_timeline.csv", pfc_csv(d, &t).as_bytes())?);
    let rendered: Vec<Rendered> = plots::render_all(dir, d).map_err(|e| Error::Output {
        path: dir.to_path_buf(),
        source: std::io::Error::other(e),
    })?;
    for r in &rendered {
        files.push(dir.join(format!("{}.png", r.kind.name())));
        files.push(dir.join(format!("{}.svg", r.kind.name())));
    }
    let page = html::render(report, d, &rendered);
    files.push(write(dir, "index.html", page.as_bytes())?);
    Ok(files)
}
