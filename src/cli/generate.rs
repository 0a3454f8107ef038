//! `--generate`: the man page and the shell completion scripts, made from the clap definitions
//! of [`super::Args`] (what packagers and `make install` put in place).

use std::io::{self, Write};

use clap::{CommandFactory, Parser, ValueEnum};
use clap_complete::Shell;

/// What `--generate` prints.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generated {
    /// roce-sniff(1), roff for `man`.
    Man,
    CompleteBash,
    CompleteZsh,
    CompleteFish,
}

/// The `--generate` asked for in `args`, when they parse: it is answered before any other
/// option is checked (no capture to name).
pub fn requested(args: &[std::ffi::OsString]) -> Option<Generated> {
    super::Args::try_parse_from(args).ok()?.generate
}

/// Writes `what` to `out`.
pub fn write(what: Generated, out: &mut dyn Write) -> io::Result<()> {
    let mut cmd = super::Args::command();
    let shell = match what {
        Generated::Man => return man_page(cmd, out),
        Generated::CompleteBash => Shell::Bash,
        Generated::CompleteZsh => Shell::Zsh,
        Generated::CompleteFish => Shell::Fish,
    };
    clap_complete::generate(shell, &mut cmd, "roce-sniff", out);
    Ok(())
}

/// roce-sniff(1): clap's title, name, description and options, between a synopsis with the
/// values named and the sections a man page reader looks for (ripgrep's and fd's are the
/// models): EXAMPLES, EXIT STATUS, SEE ALSO. The help's notes after the options are not
/// repeated as an EXTRA section: they are here, as roff.
fn man_page(cmd: clap::Command, out: &mut dyn Write) -> io::Result<()> {
    let man = clap_mangen::Man::new(cmd);
    man.render_title(out)?;
    man.render_name_section(out)?;
    out.write_all(SYNOPSIS.as_bytes())?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;
    out.write_all(EXAMPLES_AND_MORE.as_bytes())?;
    man.render_version_section(out)
}

const SYNOPSIS: &str = r".SH SYNOPSIS
.B roce\-sniff
[\fIOPTIONS\fR] \fB\-r\fR \fIFILE\fR... [\fIFILTER\fR]
.br
.B roce\-sniff
[\fIOPTIONS\fR] \fB\-i\fR \fIIFACE\fR [\fIFILTER\fR]
.br
.B roce\-sniff
\fB\-\-correlate\fR \fB\-r\fR \fIFILE\fR \fB\-r\fR \fIFILE\fR... [\fIOPTIONS\fR]
.br
.B roce\-sniff
\fB\-D\fR | \fB\-\-generate\fR \fIWHAT\fR
";

const EXAMPLES_AND_MORE: &str = r".SH EXAMPLES
.TP
.B roce\-sniff \-r capture.pcap
The analysis report: flows, PSN loss, ECN and CNPs, PFC pauses, NICs, findings.
.TP
.B roce\-sniff \-r capture.pcap \-\-json=report.json \-\-report=out/rep
The JSON report into a file, and a report directory with plots.
.TP
.B roce\-sniff \-r capture.pcap \-\-packets
One line per frame, tcpdump\-like; with \fB\-\-json\fR, one JSON object per frame.
.TP
.B roce\-sniff \-r cap.pcap \-\-expect\-tos 0x68 \-\-expect\-pcp 3
Verify the QoS marking of every RoCE data and ACK frame: PASS, FAIL or UNVERIFIABLE.
.TP
.B roce\-sniff \-r mirror.pcap \-\-finding psn_loss \-w lossy.pcap
Keep the connections that lost packets, for Wireshark.
.TP
.B roce\-sniff \-\-correlate \-r leaf.pcap \-r spine.pcap \-r receiver.pcap
Where packets were lost, re\-marked or delayed, hop by hop.
.TP
.B sudo roce\-sniff \-i eth0 \-\-duration 30s \-w run.pcap
Live: the full\-screen view (status lines when not a terminal), then the report.
.TP
.B roce\-sniff \-i ens1f0 \-\-no\-tui \-\-metrics=10.0.0.5:9464 \-\-events=e.ndjson
A fabric monitor: Prometheus metrics and NDJSON events.
.SH EXIT STATUS
.TP
.B 0
Success: the analysis ran (and a verification passed).
.TP
.B 1
A verification failed or could not be made, no frame was analysed or printed (an empty
capture, or a filter or selection that matched nothing), or a finding \fB\-\-fail\-on\fR names
was raised.
.TP
.B 2
An error: unreadable or unrecognised input, bad flags, an output that cannot be written.
.SH SEE ALSO
.BR tcpdump (1),
.BR tshark (1),
.BR pcap\-filter (7),
.BR ibdump (1).
The README and docs/ of the source tree: docs/json.md (the JSON report, key by key),
docs/usage.md, docs/monitor.md, docs/parquet.md.
";

#[cfg(test)]
mod tests {
    use super::*;

    fn text(what: Generated) -> String {
        let mut out = Vec::new();
        write(what, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_man_page_lists_every_option() {
        let man = text(Generated::Man);
        assert!(
            man.starts_with(".ie") || man.contains(".TH roce-sniff 1"),
            "{man}"
        );
        for arg in super::super::Args::command().get_arguments() {
            if let Some(long) = arg.get_long().filter(|_| !arg.is_hide_set()) {
                // roff escapes the dashes of option names.
                assert!(
                    man.contains(&format!("\\-\\-{}", long.replace('-', "\\-"))),
                    "{long}"
                );
            }
        }
    }

    #[test]
    fn the_man_page_has_a_synopsis_with_values_examples_exit_status_and_see_also() {
        let man = text(Generated::Man);
        for section in ["SYNOPSIS", "EXAMPLES", "EXIT STATUS", "SEE ALSO", "OPTIONS"] {
            assert!(man.contains(&format!(".SH {section}")), "{section}");
        }
        assert!(
            !man.contains(".SH EXTRA"),
            "the help's notes are not repeated"
        );
        assert!(
            man.contains(r"\fB\-r\fR \fIFILE\fR"),
            "a value named in the synopsis"
        );
        assert_eq!(man.matches(".SH SYNOPSIS").count(), 1);
    }

    #[test]
    fn each_shell_script_names_the_options() {
        for what in [
            Generated::CompleteBash,
            Generated::CompleteZsh,
            Generated::CompleteFish,
        ] {
            let script = text(what);
            assert!(script.contains("flow-timeout"), "{what:?}");
            assert!(script.contains("roce-sniff"), "{what:?}");
        }
    }

    #[test]
    fn it_is_answered_without_a_capture() {
        let args = ["roce-sniff", "--generate", "man"].map(Into::into);
        assert_eq!(requested(&args), Some(Generated::Man));
        let args = ["roce-sniff", "-r", "x.pcap"].map(Into::into);
        assert_eq!(requested(&args), None);
    }
}
