//! Command-line flags, turned into a validated [`Config`] before any work starts.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Parser;

use crate::analysis::pfc::PfcConfig;
use crate::analysis::AnalysisConfig;
use crate::error::Error;
use crate::verify::{EcnExpect, Expectations};

const AFTER_HELP: &str = "\
Examples:
  roce-sniff -r capture.pcap                     analysis report (flows, PSN, ECN/CNP, PFC, findings)
  roce-sniff -r capture.pcap --packets           one line per frame, tcpdump-like
  roce-sniff -r capture.pcap --packets --json    one JSON object per frame (NDJSON)
  tcpdump -i eth0 -w - | roce-sniff -r -         read a capture from standard input

Verification (for test scripts):
  roce-sniff -r cap.pcap --expect-tos 0x68 --expect-pcp 3
      checks every RoCE data and ACK frame; prints a per-flow table and PASS or FAIL.
      A check the capture cannot support (PCP without VLAN tags, a cooked capture) is
      UNVERIFIABLE, and a capture without RoCE is not a PASS: both exit with 1.

Exit codes: 0 ok (verification passed), 1 verification failed or could not be made,
2 error (unreadable input, bad flags).";

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

    /// Verify: every RoCE data/ACK frame must carry this DSCP (0-63).
    #[arg(long, value_name = "N", value_parser = parse_dscp, help_heading = "Verification (exit code 1 when a frame does not match)")]
    pub expect_dscp: Option<u8>,

    /// Verify: every RoCE data/ACK frame must carry this TOS; only its DSCP part is compared
    /// (switches rewrite the ECN bits; check those with --expect-ecn).
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
    pub expect: Expectations,
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

pub fn parse_pcp(s: &str) -> Result<u8, String> {
    parse_max(s, 7, "PCP").map(|v| v as u8)
}

pub fn parse_vid(s: &str) -> Result<u16, String> {
    parse_max(s, 4095, "VLAN ID").map(|v| v as u16)
}

pub fn parse_byte(s: &str) -> Result<u8, String> {
    parse_max(s, 255, "TOS").map(|v| v as u8)
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
        let tos_dscp = a.expect_tos.map(|t| t >> 2);
        if let (Some(d), Some(t)) = (a.expect_dscp, tos_dscp) {
            if d != t {
                return Err(Error::Usage(format!(
                    "--expect-dscp {d} and --expect-tos (DSCP {t}) disagree"
                )));
            }
        }
        let expect = Expectations {
            dscp: a.expect_dscp.or(tos_dscp),
            pcp: a.expect_pcp,
            vlan: a.expect_vlan,
            ecn: a.expect_ecn,
            cnp_dscp: a.expect_cnp_dscp,
            cnp_pcp: a.expect_cnp_pcp,
        };
        if expect.any() && a.packets {
            return Err(Error::Usage(
                "--expect-* verifies the whole capture; it does not combine with --packets".into(),
            ));
        }
        Ok(Config {
            input,
            expect,
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
        assert_eq!(c.expect.dscp, Some(26));
        assert_eq!(c.expect.pcp, Some(3));
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
}
