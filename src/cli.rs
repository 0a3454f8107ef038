//! Command-line flags, turned into a validated [`Config`] before any work starts.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Parser;

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
        Ok(Config {
            input,
            packets: a.packets,
            roce_only: a.roce_only,
            json,
            max_warnings: a.max_warnings,
        })
    }
}
