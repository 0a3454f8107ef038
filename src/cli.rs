//! Command-line flags, turned into a validated [`Config`] before any work starts.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Parser;

use crate::analysis::pfc::PfcConfig;
use crate::analysis::AnalysisConfig;
use crate::error::Error;

const AFTER_HELP: &str = "\
Examples:
  roce-sniff -r capture.pcap                     analysis report (flows, PSN, ECN/CNP, PFC, findings)
  roce-sniff -r capture.pcap --packets           one line per frame, tcpdump-like
  roce-sniff -r capture.pcap --packets --json    one JSON object per frame (NDJSON)
  tcpdump -i eth0 -w - | roce-sniff -r -         read a capture from standard input

Exit codes: 0 ok, 1 verification failed, 2 error (unreadable input, bad flags).";

#[derive(Parser, Debug)]
#[command(
    name = "roce-sniff",
    version,
    about = "RoCEv2 capture analyzer: decode, PSN loss, ECN/CNP, PFC pauses, QoS verification",
    after_help = AFTER_HELP
)]
pub struct Args {
    /// Capture file to read (pcap or pcapng); `-` reads standard input.
    #[arg(short = 'r', long = "read", value_name = "FILE")]
    pub read: Option<String>,

    /// Show every frame, one per line, instead of the analysis report.
    #[arg(long)]
    pub packets: bool,

    /// With --packets, leave out frames that are neither RoCE nor PFC/PAUSE.
    #[arg(long)]
    pub roce_only: bool,

    /// JSON output: the report as one document, or with --packets one object per frame
    /// (NDJSON). Written to FILE, or to standard output when FILE is absent or `-`.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<String>,

    /// Link speed for turning PFC pause quanta into time: 10G, 25G, 40G, 50G, 100G, 200G,
    /// 400G or 800G (a quantum is 512 bit times).
    #[arg(long, value_name = "SPEED", default_value = "100G", value_parser = parse_link_speed)]
    pub link_speed: f64,

    /// A PFC storm is a stretch at least this long (ms) of continuous pause or of pause
    /// frames faster than --storm-fps.
    #[arg(long, value_name = "MS", default_value_t = 100.0)]
    pub storm_ms: f64,

    /// Pause frames per second on one priority above which a stretch counts as a storm.
    #[arg(long, value_name = "FPS", default_value_t = 1000.0)]
    pub storm_fps: f64,

    /// Most flows tracked; packets of further flows are counted but not analysed.
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub max_flows: usize,

    /// Show at most this many per-frame warnings on stderr (the rest are counted).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub max_warnings: u32,
}

/// Where JSON goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    Stdout,
    File(PathBuf),
}

#[derive(Debug, Clone)]
pub struct Config {
    pub input: String,
    pub packets: bool,
    pub roce_only: bool,
    pub json: Option<Output>,
    pub max_warnings: u32,
    pub analysis: AnalysisConfig,
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
        let args = Args::try_parse_from(args)?;
        Config::validate(args).map_err(|e| {
            clap::Error::raw(clap::error::ErrorKind::ArgumentConflict, format!("{e}\n"))
        })
    }

    fn validate(a: Args) -> Result<Config, Error> {
        let Some(input) = a.read else {
            return Err(Error::Usage(
                "nothing to read: give a capture with -r FILE (or -r - for standard input)".into(),
            ));
        };
        if a.roce_only && !a.packets {
            return Err(Error::Usage("--roce-only applies to --packets".into()));
        }
        let json = a.json.map(|j| {
            if j == "-" {
                Output::Stdout
            } else {
                Output::File(PathBuf::from(j))
            }
        });
        let positive = |v: f64| v.is_finite() && v > 0.0;
        if !positive(a.storm_ms) || !positive(a.storm_fps) {
            return Err(Error::Usage(
                "--storm-ms and --storm-fps must be positive".into(),
            ));
        }
        if a.max_flows == 0 {
            return Err(Error::Usage("--max-flows must be at least 1".into()));
        }
        let analysis = AnalysisConfig {
            pfc: PfcConfig {
                link_gbps: a.link_speed,
                storm_ns: (a.storm_ms * 1e6) as u64,
                storm_fps: a.storm_fps,
            },
            max_flows: a.max_flows,
        };
        Ok(Config {
            input,
            analysis,
            packets: a.packets,
            roce_only: a.roce_only,
            json,
            max_warnings: a.max_warnings,
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
}
