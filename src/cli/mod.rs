//! Command-line flags, turned into a validated [`Config`] before any work starts.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

mod fail_on;
pub mod generate;

use crate::analysis::pfc::PfcConfig;
use crate::analysis::AnalysisConfig;
use crate::common::destination::Destination;
use crate::common::error::Error;
use crate::common::paint::{ColorWhen, Paint};
use crate::decode::select::SelectConfig;
use crate::model::{EcnExpect, Expectations};
use crate::outputs::packets::{PacketFormat, PrintSettings};
use crate::source::file::ReadMethod;
pub use crate::source::live::LiveConfig;
pub use fail_on::FailOn;
use roce_parsers::{DecodeOptions, TrafficClass};

/// What -h shows after the options: a few examples, and where the rest is.
const SHORT_AFTER_HELP: &str = "\
Examples:
  roce-sniff -r capture.pcap              the analysis report
  roce-sniff -i eth0 --duration 30s       live, then the report
  roce-sniff -r capture.pcap --report     a report directory with plots
  roce-sniff -r cap.pcap --expect-tos 0x68 --expect-pcp 3
                                          verify the QoS marking

--help gives each option's details, more examples and the exit codes.";

/// What --help shows after the options.
const AFTER_HELP: &str = "\
Examples:
  roce-sniff -r capture.pcap
      the analysis report (flows, PSN, ECN/CNP, PFC, findings)
  roce-sniff -i eth0 --duration 30s
      live: a status line every second, then the report
  roce-sniff -i eth0 -w out.pcap -c 100000
      live, keeping what was captured
  roce-sniff -r capture.pcap --packets
      one line per frame, tcpdump-like (--json: one JSON object per frame)
  roce-sniff -r capture.pcap --json=report.json
      the JSON report into a file
  roce-sniff -r capture.pcap --report=out/rep
      a report directory with plots
  roce-sniff -i eth0 --json udp dst port 4791
      JSON on stdout; the capture filter follows
  tcpdump -i eth0 -w - | roce-sniff -r -
      read a capture from standard input

Options with an optional value take it only after `=` (--json=FILE, --report=DIR), so that a capture filter after them is never read as a file name; `--json -` is standard output. Durations take ns, us, ms, s, m or h (a plain number is seconds). Ctrl-C while reading a file or standard input ends the read: the report covers what was read.

Verification (for test scripts):
  roce-sniff -r cap.pcap --expect-tos 0x68 --expect-pcp 3
      checks every RoCE data and ACK frame; prints a per-flow table and PASS or FAIL. A check the capture cannot support (PCP without VLAN tags, a cooked capture) is UNVERIFIABLE, and a capture without RoCE is not a PASS: both exit with 1.

Exit codes: 0 ok (verification passed); 1 verification failed or could not be made, no frame was analysed or printed (an empty capture, or a filter or selection that matched nothing; --packets too), or a finding --fail-on names was raised; 2 error (unreadable input, bad flags).";

#[derive(Parser, Debug)]
#[command(
    name = "roce-sniff",
    version,
    about = "RoCEv2 capture analyzer: decode, PSN loss, ECN/CNP, PFC pauses, QoS verification",
    // Wrapped to the terminal (COLUMNS when it is none), and never wider than 100 columns.
    max_term_width = 100,
    after_help = SHORT_AFTER_HELP,
    after_long_help = AFTER_HELP
)]
pub struct Args {
    /// Capture file to read; `-` reads standard input.
    ///
    /// Formats: pcap, pcapng or ERF, gzip or zstd compressed or not. Several -r (or a
    /// directory) are read as one capture, merged by time.
    #[arg(
        short = 'r',
        long = "read",
        value_name = "FILE",
        help_heading = "Input"
    )]
    pub read: Vec<String>,

    /// A UDP port that carries VXLAN besides 4789 (some fabrics use 8472, Linux's old default).
    #[arg(long, value_name = "PORT", help_heading = "Input")]
    pub vxlan_port: Option<u16>,

    /// Frame times: `capture` or `erspan`.
    ///
    /// `capture`: the capture's record times; `erspan`: the ERSPAN III timestamps of mirrored
    /// frames, at their granularity, where they have one.
    #[arg(
        long,
        value_name = "capture|erspan",
        value_enum,
        default_value = "capture",
        help_heading = "Input"
    )]
    pub time: TimeSource,

    /// Decoding threads of a file (0: one per core).
    ///
    /// More than the cores are not used; a live capture decodes on its capture thread. The report
    /// is the same whatever the number.
    #[arg(long, value_name = "N", default_value_t = 0, help_heading = "Input")]
    pub threads: usize,

    /// Analyse a file in N shards side by side (default: the decoding threads).
    ///
    /// The analysis is split by IP pair, a QP's two directions in one shard. Any number gives the
    /// same report, more than the cores too. The outputs written while a capture runs (--events,
    /// --parquet, --metrics) and --annotate take one shard.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..), help_heading = "Input")]
    pub shards: Option<u16>,

    /// Read capture files with plain reads, never memory-mapped.
    ///
    /// For a file that something may truncate while it is read (a mapped file that shrinks ends the
    /// process with SIGBUS).
    #[arg(long, help_heading = "Input")]
    pub no_mmap: bool,

    /// Capture filter (BPF, as in tcpdump).
    ///
    /// Live, it replaces the default, which keeps what -r decodes: RoCEv2, RoCEv1 and MAC Control
    /// frames, bare or in a mirror session or tunnel (GRE/ERSPAN, VXLAN, Geneve, IP-in-IP, MPLS),
    /// ICMP errors, tagged or not; with -r it selects the frames analysed. Options may come before or after it, as tcpdump
    /// takes them; words after a lone `--` are all the filter's.
    #[arg(value_name = "FILTER", help_heading = "Selection")]
    pub filter: Vec<String>,

    /// Stop after N frames (N at least 1): captured live, or kept from a file.
    #[arg(
        short = 'c',
        long = "count",
        value_name = "N",
        value_parser = parse_count,
        help_heading = "Selection"
    )]
    pub count: Option<u64>,

    /// Keep one connection of a capture file.
    ///
    /// The frames to this destination QP, and the ACKs, READ responses and CNPs sent back between
    /// the same two hosts.
    #[arg(long, value_name = "QPN", value_parser = parse_qpn, help_heading = "Selection")]
    pub qp: Option<u32>,

    /// Keep the connections and frames of findings of these codes.
    ///
    /// Keep, as --qp does, the connections (both directions, with their CNPs) that findings of
    /// these codes concern, every pause frame of each PFC storm (pfc_storm), or the frames a
    /// finding cites where it concerns neither: for -w, --annotate, --packets and the report, which
    /// is the report of the traffic kept. Reads the capture files twice.
    #[arg(long, value_name = "CODE,...", value_parser = parse_finding_codes, help_heading = "Selection")]
    pub finding: Option<FindingCodes>,

    /// Show every frame, one per line, instead of the analysis report.
    #[arg(long, help_heading = "What to print")]
    pub packets: bool,

    /// With --packets, leave out frames that are neither RoCE nor PFC/PAUSE.
    #[arg(long, help_heading = "What to print")]
    pub roce_only: bool,

    /// JSON output: the report, or with --packets one object per frame.
    ///
    /// The report as one document, or with --packets one object per frame (NDJSON). To standard
    /// output (`--json`, `--json -`), or to FILE with --json=FILE (the `=` is required).
    #[arg(
        long,
        value_name = "FILE",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "-",
        help_heading = "What to print"
    )]
    pub json: Option<String>,

    /// Follow the same packets across captures of several points of a path.
    ///
    /// Give each point with -r, in path order from the data sender (a directory is one point's
    /// rotated set). Reports where packets were lost, CE-marked or re-marked, and each hop's delay.
    #[arg(long, help_heading = "What to print")]
    pub correlate: bool,

    /// Show at most this many per-frame warnings on stderr (the rest are counted).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 10,
        help_heading = "What to print"
    )]
    pub max_warnings: u32,

    /// When to colour the text: auto, always or never.
    ///
    /// Colour the text report's severities and the verification's verdict: auto (on a terminal,
    /// unless NO_COLOR is set), always or never.
    #[arg(
        long,
        value_name = "WHEN",
        default_value = "auto",
        help_heading = "What to print"
    )]
    pub color: ColorWhen,

    /// Also write the frames to this pcap file.
    ///
    /// What a live capture sees, or what is kept of a file (with a filter or --qp: one connection
    /// to hand to Wireshark).
    #[arg(
        short = 'w',
        long = "write",
        value_name = "FILE",
        help_heading = "Outputs"
    )]
    pub write: Option<PathBuf>,

    /// Write the frames to FILE as pcapng, with the findings as comments.
    ///
    /// The frames read (or those a filter, --qp or --finding keeps), each byte for byte at its own
    /// time, with a comment (`roce-sniff: <code>: ...`) on every frame a finding cites and on the
    /// analysis's events (PSN gaps, resends, NAKs, CE marks without a CNP, CNPs, PFC storms,
    /// capture copies). Reads the capture files a second time.
    #[arg(long, value_name = "FILE", help_heading = "Outputs")]
    pub annotate: Option<PathBuf>,

    /// Write a report directory: timelines, plots and index.html.
    ///
    /// Timelines (CSV, JSON), plots (PNG, SVG), index.html and report.txt. Into DIR with
    /// --report=DIR (the `=` is required); without it, reports/<capture name>.
    #[arg(long, value_name = "DIR", num_args = 0..=1, require_equals = true, default_missing_value = "", help_heading = "Outputs")]
    pub report: Option<String>,

    /// Time bin of the timelines and plots: 100us, 1ms, 10ms... [default: automatic].
    ///
    /// Without it, the bin follows the capture's duration: at most 500 bins. A bin that would
    /// give more than 1000 bins is widened, with a note.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, help_heading = "Outputs")]
    pub bin: Option<Duration>,

    /// Also write the capture as Parquet tables into DIR.
    ///
    /// The tables packets, flows, timeline, pfc and findings, into DIR/<table>/capture=<name>/: one
    /// dataset for many captures, for DuckDB or Spark.
    #[arg(long, value_name = "DIR", help_heading = "Outputs")]
    pub parquet: Option<PathBuf>,

    /// With --parquet: a complete set of parts every DURATION.
    ///
    /// Of capture time, aligned on multiples of it, each file renamed into place when whole, so
    /// that DuckDB or Spark can read the dataset while the capture runs; flows are named by their
    /// own id. The default of a live capture: 1m (a file is written whole without it).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, help_heading = "Outputs")]
    pub rotate: Option<Duration>,

    /// The capture's name in the Parquet dataset (default: the file's stem; a live capture's
    /// interface).
    #[arg(long, value_name = "NAME", help_heading = "Outputs")]
    pub capture_name: Option<String>,

    /// Link speed for turning PFC pause quanta into time.
    ///
    /// 10G, 25G, 40G, 50G, 100G, 200G, 400G or 800G (a quantum is 512 bit times). Without it, 100G
    /// is assumed, and the report says so.
    #[arg(long, value_name = "SPEED", value_parser = parse_link_speed, help_heading = "Analysis settings")]
    pub link_speed: Option<f64>,

    /// Shortest PFC storm, in ms [default: 100].
    ///
    /// A PFC storm is a stretch at least this long (ms) of continuous pause or of pause frames
    /// faster than --storm-fps.
    #[arg(long, value_name = "MS", help_heading = "Analysis settings")]
    pub storm_ms: Option<f64>,

    /// Pause frames per second on one priority above which a stretch counts as a storm
    /// [default: 1000]
    #[arg(long, value_name = "FPS", help_heading = "Analysis settings")]
    pub storm_fps: Option<f64>,

    /// Most flows open at once; packets of further flows are counted but not analysed
    /// [default: 100000]
    #[arg(long, value_name = "N", help_heading = "Analysis settings")]
    pub max_flows: Option<usize>,

    /// End a connection idle this long [default: 60s].
    ///
    /// A connection idle this long (capture time; both directions: ACKs and CNPs keep it alive)
    /// ends: it is reported as it stood, its state freed, and its QP used again starts a new flow.
    /// `0` or `never`: flows last the whole run.
    #[arg(long, value_name = "DURATION", value_parser = parse_flow_timeout, help_heading = "Analysis settings")]
    pub flow_timeout: Option<FlowTimeout>,

    /// Verify: every RoCE data/ACK frame must carry this DSCP (0-63).
    #[arg(long, value_name = "N", value_parser = parse_dscp, help_heading = "Verification (exit code 1 when a frame does not match)")]
    pub expect_dscp: Option<u8>,

    /// Verify: every RoCE data/ACK frame must carry this TOS.
    ///
    /// Only its DSCP part is compared (switches rewrite the ECN bits; check those with
    /// --expect-ecn).
    #[arg(long, value_name = "0xNN", value_parser = parse_byte, help_heading = "Verification (exit code 1 when a frame does not match)")]
    pub expect_tos: Option<u8>,

    /// Verify: every RoCE data/ACK frame must carry this VLAN PCP (0-7), innermost tag.
    #[arg(long, value_name = "N", value_parser = parse_pcp, help_heading = "Verification (exit code 1 when a frame does not match)")]
    pub expect_pcp: Option<u8>,

    /// Verify: every RoCE data/ACK frame must carry this VLAN ID (innermost tag).
    #[arg(long, value_name = "N", value_parser = parse_vid, help_heading = "Verification (exit code 1 when a frame does not match)")]
    pub expect_vlan: Option<u16>,

    /// Verify: ECN must be `ect` (ECT(0), ECT(1) or CE) or `not-ect` on every RoCE data/ACK frame.
    #[arg(long, value_name = "ect|not-ect", value_parser = EcnExpect::parse, help_heading = "Verification (exit code 1 when a frame does not match)")]
    pub expect_ecn: Option<EcnExpect>,

    /// Verify: every CNP must carry this DSCP (CNPs are otherwise reported apart).
    #[arg(long, value_name = "N", value_parser = parse_dscp, help_heading = "Verification (exit code 1 when a frame does not match)")]
    pub expect_cnp_dscp: Option<u8>,

    /// Verify: every CNP must carry this PCP.
    #[arg(long, value_name = "N", value_parser = parse_pcp, help_heading = "Verification (exit code 1 when a frame does not match)")]
    pub expect_cnp_pcp: Option<u8>,

    /// Exit code 1 when a finding of this level or code is raised.
    ///
    /// A level raises on every finding at or above it (`critical`, `warning`, `info`); codes on
    /// their own findings: `--fail-on critical`, `--fail-on psn_loss,icrc_bad`. Combines with
    /// --expect-* (either failing gives 1).
    #[arg(long, value_name = "LEVEL|CODE,...", value_parser = FailOn::parse, help_heading = "Verification (exit code 1 when a frame does not match)")]
    pub fail_on: Option<FailOn>,

    /// Capture live on this interface (needs root, or CAP_NET_RAW and CAP_NET_ADMIN).
    #[arg(
        short = 'i',
        long = "interface",
        value_name = "IFACE",
        help_heading = "Live capture"
    )]
    pub interface: Option<String>,

    /// List the interfaces that can be captured on, like `tcpdump -D`.
    #[arg(short = 'D', long = "list-interfaces", help_heading = "Live capture")]
    pub list_interfaces: bool,

    /// Stop a live capture after this long.
    ///
    /// 30s, 500ms, 2m, 1h (ns, us, ms, s, m, h; a plain number is seconds).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, help_heading = "Live capture")]
    pub duration: Option<Duration>,

    /// The kernel's capture buffer, in KiB, as tcpdump's -B.
    ///
    /// Default 65536 (64 MiB). A larger buffer rides out longer bursts without drops.
    #[arg(short = 'B', long = "buffer-size", value_name = "KiB", value_parser = clap::value_parser!(u32).range(1..=2_097_151), help_heading = "Live capture")]
    pub buffer_size: Option<u32>,

    /// Status lines instead of the full-screen live view.
    ///
    /// On standard error, even when standard output is a terminal.
    #[arg(long, help_heading = "Live capture")]
    pub no_tui: bool,

    /// Capture and decode on a thread of their own from the start.
    ///
    /// The analysis runs on another. Without it one thread does all while it keeps up (it costs
    /// least), and the second starts once the kernel's buffer is not emptied for 250 ms or frames
    /// are dropped.
    #[arg(long, help_heading = "Live capture")]
    pub capture_thread: bool,

    /// Serve Prometheus metrics at http://ADDR:PORT/metrics.
    ///
    /// While the capture runs (with -r, until SIGINT or SIGTERM after the file is read). No
    /// authentication: bind it to 127.0.0.1 or a management address.
    #[arg(long, value_name = "ADDR:PORT", help_heading = "Monitoring")]
    pub metrics: Option<String>,

    /// NDJSON events: findings as they hold, flows as they end, drops.
    ///
    /// Findings as they first hold (evaluated every second of capture time), flows as they end, the
    /// kernel's drops; to standard output, or to FILE with --events=FILE (flushed per line).
    #[arg(long, value_name = "FILE", num_args = 0..=1, require_equals = true, default_missing_value = "-", help_heading = "Monitoring")]
    pub events: Option<String>,

    /// QPs with metric series of their own; the rest count in qp="other".
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..), help_heading = "Monitoring")]
    pub metrics_max_qps: u32,

    /// Print the man page or a shell's completion script.
    ///
    /// The man page (`man`) or the completion script of bash, zsh or fish (`complete-bash`,
    /// `complete-zsh`, `complete-fish`), made from these options, then exit: what `make install`
    /// installs; after `cargo install`, e.g. `roce-sniff --generate complete-bash >
    /// ~/.local/share/bash-completion/completions/roce-sniff`.
    #[arg(long, value_name = "WHAT", help_heading = "Packaging")]
    pub generate: Option<generate::Generated>,
}

/// Where frame times come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TimeSource {
    Capture,
    Erspan,
}

/// What to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// One capture file or `-`, or several read as one (merged by time).
    Files(Vec<String>),
    Live(LiveConfig),
    ListDevices,
}

/// `--flow-timeout` when not given.
pub const DEFAULT_FLOW_TIMEOUT: Duration = Duration::from_secs(60);

/// `--flow-timeout`: a duration, or none (`0`, `never`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowTimeout(pub Option<Duration>);

fn parse_flow_timeout(s: &str) -> Result<FlowTimeout, String> {
    match s {
        "0" | "never" => Ok(FlowTimeout(None)),
        _ => parse_duration(s).map(|d| FlowTimeout(Some(d))),
    }
}

/// Parses a duration: a number with ns, us (or µs), ms, s, m (or min) or h; a plain number is
/// seconds.
/// A live capture's `--parquet` writes a set of parts this often unless told.
const DEFAULT_ROTATE: Duration = Duration::from_secs(60);

pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, unit) = match t.find(|c: char| c.is_alphabetic()) {
        Some(i) => (&t[..i], &t[i..]),
        None => (t, "s"),
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a duration (say 30s, 500ms, 100us)"))?;
    let secs = match unit {
        "ns" => v / 1e9,
        "us" | "µs" => v / 1e6,
        "ms" => v / 1e3,
        "s" => v,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        _ => {
            return Err(format!(
                "`{s}`: unknown unit `{unit}` (ns, us, ms, s, m, h)"
            ))
        }
    };
    if !secs.is_finite() || secs <= 0.0 || secs > 1e9 {
        return Err(format!(
            "`{s}`: a duration must be positive (and below 30 years)"
        ));
    }
    Ok(Duration::from_secs_f64(secs).max(Duration::from_nanos(1)))
}

/// What to produce.
#[derive(Debug, Clone)]
pub enum Mode {
    /// The analysis report (text, or JSON with --json), with verification (--expect-*) and a
    /// report directory (--report).
    Report(ReportOptions),
    /// Every frame, one per line (--packets), as text or NDJSON.
    Packets {
        settings: PrintSettings,
        out: Destination,
        /// --parquet: the frames analysed and exported too.
        export: Option<PacketsExport>,
    },
    /// Captures of several points correlated (--correlate), as text or JSON.
    Correlate {
        json: Option<Destination>,
        decode: DecodeOptions,
        /// --report: the plots and the page.
        report_dir: Option<PathBuf>,
        /// `--fail-on`: findings that make the exit code 1.
        fail_on: Option<FailOn>,
        /// `--color`: the text view's colours.
        paint: Paint,
    },
}

/// `--packets --parquet`: the analysis the export needs, and where it goes.
#[derive(Debug, Clone)]
pub struct PacketsExport {
    pub parquet: crate::outputs::parquet::ExportConfig,
    pub analysis: AnalysisConfig,
}

#[derive(Debug, Clone)]
pub struct ReportOptions {
    pub decode: DecodeOptions,
    pub analysis: AnalysisConfig,
    pub expect: Expectations,
    /// Where the JSON report goes; None prints the text report (or the verification table).
    pub json: Option<Destination>,
    /// Where to write the report directory.
    pub report_dir: Option<PathBuf>,
    /// `--parquet`: where the tables go.
    pub parquet: Option<crate::outputs::parquet::ExportConfig>,
    /// `--metrics`: where to serve them, and how many QPs get series.
    pub metrics: Option<MetricsConfig>,
    /// `--events`: where the NDJSON events go.
    pub events: Option<Destination>,
    /// `--fail-on`: findings that make the exit code 1.
    pub fail_on: Option<FailOn>,
    /// `--annotate`: where the annotated pcapng copy goes.
    pub annotate: Option<PathBuf>,
    /// `--color`: the text report's colours on standard output.
    pub paint: Paint,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsConfig {
    pub addr: String,
    pub max_qps: usize,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub source: Source,
    pub mode: Mode,
    /// Of a file read: the filter, --qp, -c and -w.
    pub select: SelectConfig,
    pub max_warnings: u32,
    /// Decoding threads, at least 1 (0 on the command line means one per core).
    pub threads: usize,
    /// Shards of a file's analysis, at least 1 (`--shards`, else the decoding threads).
    pub shards: usize,
    /// How capture files are read (--no-mmap).
    pub read_method: ReadMethod,
}

/// reports/<file stem>, or reports/live-<iface> for a live capture.
fn default_report_dir(source: &Source) -> PathBuf {
    let name = match source {
        Source::Files(p) if p[0] == "-" => "stdin".to_string(),
        Source::Files(p) => std::path::Path::new(&p[0])
            .file_stem()
            .map_or("capture".into(), |s| s.to_string_lossy().into_owned()),
        Source::Live(l) => format!("live-{}", l.interface),
        Source::ListDevices => "devices".into(),
    };
    PathBuf::from("reports").join(name)
}

/// A queue pair number, decimal or 0x-hex, 24 bits.
fn parse_qpn(s: &str) -> Result<u32, String> {
    parse_max(s, 0xff_ffff, "QPN").map(|v| v as u32)
}

/// A frame count for -c: at least 1 (tcpdump refuses 0 too).
fn parse_count(s: &str) -> Result<u64, String> {
    match parse_number(s)? {
        0 => Err("-c needs at least 1 frame (without -c the capture runs until Ctrl-C)".into()),
        n => Ok(n),
    }
}

/// A number in decimal or 0x-hexadecimal.
fn parse_number(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => t.parse(),
    };
    parsed.map_err(|_| format!("`{s}` is not a number"))
}

fn parse_max(s: &str, max: u64, what: &str) -> Result<u64, String> {
    let v = parse_number(s)?;
    if v > max {
        return Err(format!("{what} {v} is out of range 0..{max}"));
    }
    Ok(v)
}

pub fn parse_dscp(s: &str) -> Result<u8, String> {
    parse_max(s, 63, "DSCP").map(|v| v as u8)
}

/// `--finding`'s finding codes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindingCodes(pub Vec<crate::model::FindingCode>);

/// `--finding`'s finding codes, comma-separated.
fn parse_finding_codes(s: &str) -> Result<FindingCodes, String> {
    let codes = s
        .split(',')
        .map(str::trim)
        .map(|word| {
            crate::model::FindingCode::ALL
                .into_iter()
                .find(|c| c.name() == word)
                .ok_or_else(|| {
                    let codes = crate::model::FindingCode::ALL.map(|c| c.name());
                    format!(
                        "`{word}` is not a finding code{} (docs/json.md lists them)",
                        did_you_mean(word, codes)
                    )
                })
        })
        .collect::<Result<_, _>>()?;
    Ok(FindingCodes(codes))
}

/// `; did you mean `x`?` when one of `known` is close to `word` (as clap suggests flags),
/// else nothing.
pub fn did_you_mean<'a>(word: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    known
        .into_iter()
        .map(|k| (strsim::jaro(word, k), k))
        .filter(|&(score, _)| score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map_or(String::new(), |(_, k)| format!("; did you mean `{k}`?"))
}

pub fn parse_pcp(s: &str) -> Result<u8, String> {
    parse_max(s, 7, "PCP").map(|v| v as u8)
}

pub fn parse_vid(s: &str) -> Result<u16, String> {
    parse_max(s, 4095, "VLAN ID").map(|v| v as u16)
}

fn parse_byte(s: &str) -> Result<u8, String> {
    parse_max(s, 255, "TOS").map(|v| v as u8)
}

/// `--json -` and `--report -` as `--json=-` and `--report=-`: a lone `-` right after them is
/// never a capture filter (as `-w -` is standard output for tcpdump). `--json -` writes to
/// standard output; `--report -` is then refused (a report is a directory).
fn join_lone_dash<I, T>(args: I) -> Vec<OsString>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let mut out: Vec<OsString> = Vec::new();
    for arg in args.into_iter().map(Into::into) {
        let after_flag = out
            .last()
            .and_then(|prev| prev.to_str())
            .filter(|prev| matches!(*prev, "--json" | "--report"))
            .map(str::to_string);
        match after_flag {
            Some(flag) if arg == "-" && !out.iter().any(|a| a == "--") => {
                out.pop();
                out.push(format!("{flag}=-").into());
            }
            _ => out.push(arg),
        }
    }
    out
}

/// Parses "100G", "100g", "100" or "100Gb/s" into Gb/s; 10 to 800 are accepted.
pub fn parse_link_speed(s: &str) -> Result<f64, String> {
    let t = s.trim().to_ascii_lowercase();
    let t = t
        .strip_suffix("gb/s")
        .or_else(|| t.strip_suffix("gbps"))
        .or_else(|| t.strip_suffix('g'))
        .unwrap_or(&t);
    let v: f64 = t
        .parse()
        .map_err(|_| format!("`{s}` is not a link speed (say 100G)"))?;
    if !(10.0..=800.0).contains(&v) {
        return Err(format!("link speed {v} Gb/s is outside 10G..800G"));
    }
    Ok(v)
}

impl Config {
    pub fn from_args<I, T>(args: I) -> Result<Config, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let args = Args::try_parse_from(join_lone_dash(args))?;
        Config::validate(args).map_err(|e| {
            clap::Error::raw(clap::error::ErrorKind::ArgumentConflict, format!("{e}\n"))
        })
    }

    fn validate(a: Args) -> Result<Config, Error> {
        if a.report.as_deref() == Some("-") {
            return Err(usage(
                "--report writes a directory: `-` (standard output) is not one; give --report=DIR",
            ));
        }
        let source = a.source()?;
        if a.json.as_deref() == Some("") {
            return Err(usage(
                "--json= needs a file name (or --json alone for standard output)",
            ));
        }
        let json = a.json.as_deref().map(|j| {
            if j == "-" {
                Destination::Stdout
            } else {
                Destination::File(PathBuf::from(j))
            }
        });
        let mode = if a.correlate {
            a.correlate_mode(json)?
        } else if a.packets {
            a.packets_mode(json, &source)?
        } else {
            a.report_mode(json, &source)?
        };
        // More threads than cores only add switching (100,000 made a machine unusable).
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = if a.interface.is_some() {
            // A live capture decodes each frame on its capture thread, in the kernel's ring:
            // a pool would sit idle.
            1
        } else if a.threads == 0 {
            cores
        } else {
            a.threads.min(cores)
        };
        let select = SelectConfig {
            filter: (!a.filter.is_empty() && a.interface.is_none()).then(|| a.filter.join(" ")),
            qp: a.qp,
            count: a.count.filter(|_| a.interface.is_none()),
            write: a.write.clone().filter(|_| a.interface.is_none()),
            decode: a.decode_options(),
            erspan_time: a.time == TimeSource::Erspan,
            finding_codes: a.finding.clone().map(|c| c.0),
            finding: None,
        };
        Ok(Config {
            source,
            mode,
            select,
            max_warnings: a.max_warnings,
            threads,
            shards: a.shards.map_or(threads, usize::from),
            read_method: if a.no_mmap {
                ReadMethod::Read
            } else {
                ReadMethod::Auto
            },
        })
    }
}

fn usage(msg: &str) -> Error {
    Error::Usage(msg.into())
}

impl Args {
    /// What to read: one of -r, -i and -D, with the options of live capture only with -i.
    fn source(&self) -> Result<Source, Error> {
        let chosen = usize::from(!self.read.is_empty())
            + usize::from(self.interface.is_some())
            + usize::from(self.list_interfaces);
        if chosen > 1 {
            return Err(usage("give one of -r FILE, -i IFACE or -D"));
        }
        if self.duration.is_some() && self.interface.is_none() {
            return Err(usage("--duration applies to live capture (-i IFACE)"));
        }
        if self.buffer_size.is_some() && self.interface.is_none() {
            return Err(usage("-B/--buffer-size applies to live capture (-i IFACE)"));
        }
        if self.qp.is_some() && self.read.is_empty() {
            return Err(usage("--qp selects from a capture file (-r FILE)"));
        }
        if self.no_tui && self.interface.is_none() {
            return Err(usage("--no-tui applies to live capture (-i)"));
        }
        if self.capture_thread && self.interface.is_none() {
            return Err(usage("--capture-thread applies to live capture (-i)"));
        }
        if self.no_mmap && self.read.is_empty() {
            return Err(usage(
                "--no-mmap applies to reading capture files (-r FILE)",
            ));
        }
        if self.time == TimeSource::Erspan && self.read.is_empty() {
            return Err(usage("--time erspan applies to capture files (-r FILE)"));
        }
        if !self.read.is_empty() {
            Ok(Source::Files(self.read.clone()))
        } else if let Some(interface) = &self.interface {
            Ok(Source::Live(LiveConfig {
                interface: interface.clone(),
                filter: (!self.filter.is_empty()).then(|| self.filter.join(" ")),
                vxlan_port: self.vxlan_port,
                count: self.count,
                duration: self.duration,
                write: self.write.clone(),
                buffer_kib: self.buffer_size,
                no_tui: self.no_tui,
                capture_thread: self.capture_thread,
            }))
        } else if self.list_interfaces {
            Ok(Source::ListDevices)
        } else {
            Err(usage("nothing to read: give a capture with -r FILE (-r - for standard input), or capture live with -i IFACE"))
        }
    }

    fn packets_mode(&self, json: Option<Destination>, source: &Source) -> Result<Mode, Error> {
        self.check_second_pass(source)?;
        // With --parquet the analysis runs too (the export needs it): its options apply.
        let analysing = self.parquet.is_some();
        let report_only = [
            (self.report.is_some(), "--report"),
            (self.bin.is_some() && !analysing, "--bin"),
            (self.link_speed.is_some() && !analysing, "--link-speed"),
            (self.storm_ms.is_some() && !analysing, "--storm-ms"),
            (self.storm_fps.is_some() && !analysing, "--storm-fps"),
            (self.max_flows.is_some() && !analysing, "--max-flows"),
            (self.flow_timeout.is_some() && !analysing, "--flow-timeout"),
            (self.metrics.is_some(), "--metrics"),
            (self.events.is_some(), "--events"),
            (self.fail_on.is_some(), "--fail-on"),
            (self.annotate.is_some(), "--annotate"),
        ];
        if let Some((_, flag)) = report_only.iter().find(|(given, _)| *given) {
            return Err(Error::Usage(format!(
                "{flag} applies to the analysis, not to --packets"
            )));
        }
        if self.expectations()?.any() {
            return Err(usage(
                "--expect-* verifies the whole capture; it does not combine with --packets",
            ));
        }
        let format = if json.is_some() {
            PacketFormat::Json
        } else {
            PacketFormat::Text
        };
        Ok(Mode::Packets {
            settings: PrintSettings {
                format,
                roce_only: self.roce_only,
                inputs: Vec::new(),
                decode: self.decode_options(),
            },
            out: json.unwrap_or(Destination::Stdout),
            export: match self.parquet_export(source, false)? {
                Some(parquet) => Some(PacketsExport {
                    parquet,
                    analysis: self.analysis()?,
                }),
                None => None,
            },
        })
    }

    fn correlate_mode(&self, json: Option<Destination>) -> Result<Mode, Error> {
        if self.read.len() < 2 {
            return Err(usage(
                "--correlate needs a capture of each point: -r A.pcap -r B.pcap ... in path order",
            ));
        }
        let refused = [
            (self.packets, "--packets"),
            (self.expectations()?.any(), "--expect-*"),
            (!self.filter.is_empty(), "a filter"),
            (self.qp.is_some(), "--qp"),
            (self.count.is_some(), "-c"),
            (self.write.is_some(), "-w"),
            (self.parquet.is_some(), "--parquet"),
            (self.metrics.is_some(), "--metrics"),
            (self.events.is_some(), "--events"),
            (self.annotate.is_some(), "--annotate"),
            (self.finding.is_some(), "--finding"),
        ];
        if let Some((_, flag)) = refused.iter().find(|(given, _)| *given) {
            return Err(usage(&format!("{flag} does not apply to --correlate")));
        }
        let report_dir = self.report.as_ref().map(|d| {
            if d.is_empty() {
                let stem = std::path::Path::new(&self.read[0])
                    .file_stem()
                    .map_or("capture".into(), |s| s.to_string_lossy().into_owned());
                PathBuf::from("reports").join(format!("{stem}-correlation"))
            } else {
                PathBuf::from(d)
            }
        });
        Ok(Mode::Correlate {
            json,
            decode: self.decode_options(),
            report_dir,
            fail_on: self.fail_on.clone(),
            paint: Paint::for_stdout(self.color),
        })
    }

    fn report_mode(&self, json: Option<Destination>, source: &Source) -> Result<Mode, Error> {
        let events = self.events_output(&json)?;
        if self.roce_only {
            return Err(usage("--roce-only applies to --packets"));
        }
        self.check_second_pass(source)?;
        if self.bin.is_some() && self.report.is_none() && self.parquet.is_none() {
            return Err(usage(
                "--bin applies to --report (the timelines) and --parquet (the timeline table)",
            ));
        }
        let report_dir = self.report.as_ref().map(|d| {
            if d.is_empty() {
                default_report_dir(source)
            } else {
                PathBuf::from(d)
            }
        });
        Ok(Mode::Report(ReportOptions {
            decode: self.decode_options(),
            analysis: self.analysis()?,
            expect: self.expectations()?,
            json,
            report_dir,
            parquet: self.parquet_export(source, true)?,
            metrics: self.metrics.as_ref().map(|addr| MetricsConfig {
                addr: addr.clone(),
                max_qps: self.metrics_max_qps as usize,
            }),
            events,
            fail_on: self.fail_on.clone(),
            annotate: self.annotate.clone(),
            paint: Paint::for_stdout(self.color),
        }))
    }

    /// `--annotate` reads the input a second time: a file can be, standard input and a live
    /// capture cannot.
    fn check_second_pass(&self, source: &Source) -> Result<(), Error> {
        let flag = match (&self.annotate, &self.finding) {
            (Some(path), _) if path.as_os_str().is_empty() => {
                return Err(usage(
                    "--annotate= needs a file name: --annotate=FILE.pcapng",
                ))
            }
            (Some(_), _) => "--annotate",
            (None, Some(_)) => "--finding",
            (None, None) => return Ok(()),
        };
        match source {
            Source::Live(_) => Err(Error::Usage(format!(
                "{flag} reads the capture a second time, which a live capture cannot be: write it with -w FILE, then read FILE with -r"
            ))),
            Source::Files(p) if p.iter().any(|f| f == "-") => Err(Error::Usage(format!(
                "{flag} reads the capture a second time, which standard input cannot be: save it to a file first"
            ))),
            _ => Ok(()),
        }
    }

    /// `--events`: its output, refused where another output already has standard output.
    fn events_output(&self, json: &Option<Destination>) -> Result<Option<Destination>, Error> {
        let events = match self.events.as_deref() {
            None => return Ok(None),
            Some("") => {
                return Err(usage(
                    "--events= needs a file name (or --events for standard output)",
                ))
            }
            Some("-") => Destination::Stdout,
            Some(path) => Destination::File(PathBuf::from(path)),
        };
        if events == Destination::Stdout {
            let other = match json {
                Some(Destination::Stdout) => Some("--json"),
                None => Some("the text report"),
                Some(Destination::File(_)) => None,
            };
            if let Some(other) = other {
                return Err(usage(&format!(
                    "--events and {other} would both write to standard output: give --events=FILE or --json=FILE"
                )));
            }
        }
        Ok(Some(events))
    }

    /// `--parquet`: where the tables go; `rolling`: whether a live capture may write a rolling
    /// dataset (the report does; --packets does not).
    fn parquet_export(
        &self,
        source: &Source,
        rolling: bool,
    ) -> Result<Option<crate::outputs::parquet::ExportConfig>, Error> {
        let Some(dir) = &self.parquet else {
            if self.capture_name.is_some() {
                return Err(usage("--capture-name applies to --parquet"));
            }
            if self.rotate.is_some() {
                return Err(usage("--rotate applies to --parquet"));
            }
            return Ok(None);
        };
        let (name, live) =
            match source {
                Source::Files(paths) => (
                    std::path::Path::new(&paths[0])
                        .file_stem()
                        .map_or("stdin".into(), |s| s.to_string_lossy().into_owned()),
                    false,
                ),
                Source::Live(l) if rolling => (l.interface.clone(), true),
                _ => return Err(usage(
                    "--parquet with --packets exports capture files (-r FILE), not a live capture",
                )),
            };
        if !rolling && self.rotate.is_some() {
            return Err(usage(
                "--rotate applies to the report's --parquet, not to --packets",
            ));
        }
        let name = match &self.capture_name {
            Some(n) => n.clone(),
            None if name == "-" => "stdin".to_string(),
            None => name,
        };
        if name.is_empty() || name.contains(['/', '\\', '=']) || name.starts_with('.') {
            return Err(usage(&format!(
                "capture name {name:?} cannot be a partition directory: give --capture-name without '/', '=' or a leading '.'"
            )));
        }
        let bin_ns = self
            .bin
            .map_or(crate::outputs::parquet::DEFAULT_BIN_NS, |d| {
                d.as_nanos().clamp(1, u128::from(u64::MAX)) as u64
            });
        let rotate = self.rotate.or(live.then_some(DEFAULT_ROTATE));
        let rotate_ns = rotate.map(|d| d.as_nanos().min(u128::from(u64::MAX)) as u64);
        if let Some(every) = rotate_ns {
            if every == 0 || every % bin_ns != 0 {
                return Err(usage(&format!(
                    "--rotate must be a whole number of --bin widths ({} ns), so that no bin spans two parts",
                    bin_ns
                )));
            }
        }
        Ok(Some(crate::outputs::parquet::ExportConfig {
            dir: dir.clone(),
            capture: name,
            bin_ns,
            rotate_ns,
            append: live,
        }))
    }

    fn decode_options(&self) -> DecodeOptions {
        DecodeOptions {
            vxlan_port: self.vxlan_port,
        }
    }

    fn analysis(&self) -> Result<AnalysisConfig, Error> {
        let defaults = AnalysisConfig::default();
        let storm_ms = self.storm_ms.unwrap_or(defaults.pfc.storm_ns as f64 / 1e6);
        let storm_fps = self.storm_fps.unwrap_or(defaults.pfc.storm_fps);
        let positive = |v: f64| v.is_finite() && v > 0.0;
        if !positive(storm_ms) || !positive(storm_fps) {
            return Err(usage("--storm-ms and --storm-fps must be positive"));
        }
        let max_flows = self.max_flows.unwrap_or(defaults.max_flows);
        if max_flows == 0 {
            return Err(usage("--max-flows must be at least 1"));
        }
        Ok(AnalysisConfig {
            pfc: PfcConfig {
                link_gbps: self.link_speed.unwrap_or(defaults.pfc.link_gbps),
                storm_ns: (storm_ms * 1e6) as u64,
                storm_fps,
            },
            max_flows,
            timelines: self.report.is_some(),
            bin_ns: self
                .bin
                .map(|d| d.as_nanos().clamp(1, u128::from(u64::MAX)) as u64),
            several_points: false,
            link_speed_given: self.link_speed.is_some(),
            notes: self.annotate.is_some(),
            flow_timeout_ns: self
                .flow_timeout
                .map_or(Some(DEFAULT_FLOW_TIMEOUT), |t| t.0)
                .map(|d| d.as_nanos().clamp(1, u128::from(u64::MAX)) as u64),
            keep_ended: self.interface.is_none(),
        })
    }

    fn expectations(&self) -> Result<Expectations, Error> {
        let tos_dscp = self.expect_tos.map(|t| TrafficClass(t).dscp());
        if let (Some(d), Some(t)) = (self.expect_dscp, tos_dscp) {
            if d != t {
                return Err(Error::Usage(format!(
                    "--expect-dscp {d} and --expect-tos (DSCP {t}) disagree"
                )));
            }
        }
        Ok(Expectations {
            dscp: self.expect_dscp.or(tos_dscp),
            pcp: self.expect_pcp,
            vlan: self.expect_vlan,
            ecn: self.expect_ecn,
            cnp_dscp: self.expect_cnp_dscp,
            cnp_pcp: self.expect_cnp_pcp,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_speeds() {
        assert_eq!(parse_link_speed("100G"), Ok(100.0));
        assert_eq!(parse_link_speed("25g"), Ok(25.0));
        assert_eq!(parse_link_speed("400Gb/s"), Ok(400.0));
        assert_eq!(parse_link_speed("800"), Ok(800.0));
        assert!(parse_link_speed("1G").is_err());
        assert!(parse_link_speed("1600G").is_err());
        assert!(parse_link_speed("fast").is_err());
    }

    #[test]
    fn a_lone_dash_after_json_is_standard_output_not_a_filter() {
        let c = Config::from_args(["roce-sniff", "-r", "x", "--json", "-"]).unwrap();
        let Mode::Report(r) = c.mode else {
            panic!("report mode expected")
        };
        assert!(matches!(r.json, Some(Destination::Stdout)));
        let c = Config::from_args(["roce-sniff", "-r", "x", "--json", "-", "vlan"]).unwrap();
        assert_eq!(c.select.filter.as_deref(), Some("vlan"));
        let e = Config::from_args(["roce-sniff", "-r", "x", "--report", "-"]).unwrap_err();
        assert!(e.to_string().contains("--report writes a directory"), "{e}");
        assert!(Config::from_args(["roce-sniff", "-r", "x", "--report=-"]).is_err());
    }

    #[test]
    fn options_after_the_filter_are_options_and_words_after_a_lone_dash_dash_are_the_filters() {
        let args = ["roce-sniff", "-r", "x", "vlan", "and", "host", "10.0.0.5"];
        let with =
            |more: &[&'static str]| Config::from_args(args.iter().chain(more).copied()).unwrap();
        let c = with(&["--json", "-c", "5", "--qp", "0x213"]);
        assert_eq!(c.select.filter.as_deref(), Some("vlan and host 10.0.0.5"));
        assert_eq!((c.select.count, c.select.qp), (Some(5), Some(0x213)));
        let Mode::Report(r) = &c.mode else {
            panic!("report mode expected")
        };
        assert!(matches!(r.json, Some(Destination::Stdout)));
        let c = with(&["--packets"]);
        assert!(matches!(c.mode, Mode::Packets { .. }));
        let c = Config::from_args(["roce-sniff", "-r", "x", "--", "vlan", "--json"]).unwrap();
        assert_eq!(c.select.filter.as_deref(), Some("vlan --json"));
        assert!(matches!(&c.mode, Mode::Report(r) if r.json.is_none()));
    }

    #[test]
    fn expectations() {
        let c = Config::from_args([
            "roce-sniff",
            "-r",
            "x",
            "--expect-tos",
            "0x6a",
            "--expect-pcp",
            "3",
        ])
        .unwrap();
        let Mode::Report(r) = c.mode else {
            panic!("report mode expected")
        };
        assert_eq!(r.expect.dscp, Some(26));
        assert_eq!(r.expect.pcp, Some(3));
        assert!(Config::from_args(["roce-sniff", "-r", "x", "--expect-pcp", "8"]).is_err());
        assert!(Config::from_args(["roce-sniff", "-r", "x", "--expect-dscp", "64"]).is_err());
        assert!(Config::from_args([
            "roce-sniff",
            "-r",
            "x",
            "--expect-dscp",
            "10",
            "--expect-tos",
            "0x68"
        ])
        .is_err());
        assert!(Config::from_args(["roce-sniff", "-r", "x", "--expect-ecn", "maybe"]).is_err());
        assert_eq!(parse_vid("0x64"), Ok(100));
    }

    #[test]
    fn a_live_capture_starts_no_decoding_pool() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let live = Config::from_args(["roce-sniff", "-i", "eth0"]).unwrap();
        assert_eq!(live.threads, 1, "it decodes on its capture thread");
        let asked = Config::from_args(["roce-sniff", "-i", "eth0", "--threads", "4"]).unwrap();
        assert_eq!(asked.threads, 1);
        let file = Config::from_args(["roce-sniff", "-r", "x"]).unwrap();
        assert_eq!(file.threads, cores);
    }

    #[test]
    fn live_flags() {
        let c = Config::from_args([
            "roce-sniff",
            "-i",
            "eth0",
            "-c",
            "10",
            "udp",
            "port",
            "4791",
        ])
        .unwrap();
        assert_eq!(
            c.source,
            Source::Live(LiveConfig {
                interface: "eth0".into(),
                filter: Some("udp port 4791".into()),
                vxlan_port: None,
                count: Some(10),
                duration: None,
                write: None,
                buffer_kib: None,
                no_tui: false,
                capture_thread: false,
            })
        );
        // -c, -w and a filter select from a file too; --duration is live only.
        let c = Config::from_args(["roce-sniff", "-r", "x", "-c", "10", "udp"]).unwrap();
        assert_eq!(
            (c.select.count, c.select.filter.as_deref()),
            (Some(10), Some("udp"))
        );
        assert!(Config::from_args(["roce-sniff", "-r", "x", "--duration", "1s"]).is_err());
        // -B is tcpdump's buffer size in KiB, for live capture only.
        assert!(Config::from_args(["roce-sniff", "-r", "x", "-B", "4096"]).is_err());
        let c = Config::from_args(["roce-sniff", "-i", "eth0", "-B", "4096"]).unwrap();
        assert!(matches!(c.source, Source::Live(ref l) if l.buffer_kib == Some(4096)));
        assert!(Config::from_args(["roce-sniff", "-i", "eth0", "-B", "0"]).is_err());
        // --capture-thread is live only.
        assert!(Config::from_args(["roce-sniff", "-r", "x", "--capture-thread"]).is_err());
        let c = Config::from_args(["roce-sniff", "-i", "eth0", "--capture-thread"]).unwrap();
        assert!(matches!(c.source, Source::Live(ref l) if l.capture_thread));
        assert!(Config::from_args(["roce-sniff", "-i", "eth0", "--qp", "5"]).is_err());
        assert!(Config::from_args(["roce-sniff", "-r", "x", "-i", "eth0"]).is_err());
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert!(parse_duration("0s").is_err() && parse_duration("5x").is_err());
        // Every unit --help names (--bin 100us was its first example, and was refused).
        assert_eq!(parse_duration("100us"), Ok(Duration::from_micros(100)));
        assert_eq!(parse_duration("100µs"), Ok(Duration::from_micros(100)));
        assert_eq!(parse_duration("250ns"), Ok(Duration::from_nanos(250)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
    }
}
