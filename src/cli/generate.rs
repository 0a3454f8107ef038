//! `--generate`: the man page and the shell completion scripts, made from the clap definitions
//! of [`super::Args`] (what packagers and `make install` put in place).

use std::io::{self, Write};

use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::{CommandFactory, Parser, ValueEnum};
use clap_complete::Shell;

use crate::model::{FindingCode, Severity};

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
    let cmd = super::Args::command();
    let shell = match what {
        Generated::Man => return man_page(cmd, out),
        Generated::CompleteBash => Shell::Bash,
        Generated::CompleteZsh => Shell::Zsh,
        Generated::CompleteFish => Shell::Fish,
    };
    // Into memory first: clap_complete panics on an output it cannot write (a closed pipe).
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut completable(cmd), "roce-sniff", &mut script);
    let script = String::from_utf8(script).map_err(io::Error::other)?;
    let script = with_code_lists(shell, with_interfaces(shell, script));
    out.write_all(script.as_bytes())
}

/// The command as the completions see it: --finding completes the finding codes and
/// --fail-on the levels and the codes. Only the scripts take these lists: the options keep
/// their own parsers (lists of codes, "did you mean").
fn completable(cmd: clap::Command) -> clap::Command {
    let codes = FindingCode::ALL.map(|c| PossibleValue::new(c.name()));
    let levels = Severity::ALL
        .map(|s| PossibleValue::new(s.name()).help("a level: every finding at or above it"));
    let fail_on: Vec<PossibleValue> = levels.into_iter().chain(codes.clone()).collect();
    cmd.mut_arg("finding", |a| {
        a.value_parser(PossibleValuesParser::new(codes))
    })
    .mut_arg("fail_on", |a| {
        a.value_parser(PossibleValuesParser::new(fail_on))
    })
}

/// The script completing each code of a comma list (`--finding psn_loss,pfc_`), where
/// clap's completes the first: bash and zsh complete what follows the last comma, fish lists
/// each completion with the codes before it.
fn with_code_lists(shell: Shell, script: String) -> String {
    match shell {
        Shell::Bash => bash_code_lists(script),
        Shell::Zsh => zsh_code_lists(script),
        Shell::Fish => fish_code_lists(script),
        _ => script,
    }
}

/// The values --finding (`finding`) or --fail-on (`fail_on`) takes, space-separated.
fn list_values(option: &str) -> String {
    let codes = FindingCode::ALL.map(FindingCode::name);
    let levels = Severity::ALL.map(Severity::name);
    let values: Vec<&str> = match option {
        "fail_on" => levels.into_iter().chain(codes).collect(),
        _ => codes.to_vec(),
    };
    values.join(" ")
}

/// bash: the `--finding)` and `--fail-on)` branches complete after the last comma, the codes
/// before it kept as a prefix.
fn bash_code_lists(script: String) -> String {
    let whole = r#"-- "${cur}"))"#;
    let last_item = r#"-P "${cur%"${cur##*,}"}" -- "${cur##*,}"))"#;
    bash_branches(&script, &["--finding)", "--fail-on)"], |code| {
        code.starts_with("COMPREPLY=($(compgen -W ")
            .then(|| code.replace(whole, last_item))
    })
}

/// `script` with the first line of each `case` branch of `options` (bash's `--interface)`
/// and the like) replaced by what `rewrite` makes of it, where it makes something.
fn bash_branches(
    script: &str,
    options: &[&str],
    rewrite: impl Fn(&str) -> Option<String>,
) -> String {
    let mut out = String::with_capacity(script.len() + 256);
    let mut in_branch = false;
    for line in script.lines() {
        let code = line.trim();
        match rewrite(code).filter(|_| in_branch) {
            Some(new) => out.push_str(&line.replace(code, &new)),
            None => out.push_str(line),
        }
        out.push('\n');
        in_branch = options.contains(&code);
    }
    out
}

/// zsh: `_sequence` completes each item of a comma-separated list. clap writes the values
/// of --fail-on, which have descriptions, one per line: the spec ends where a line does
/// with `'`.
fn zsh_code_lists(script: String) -> String {
    let mut out = String::with_capacity(script.len() + 128);
    let mut lines = script.lines();
    while let Some(line) = lines.next() {
        let list = [("'--finding=[", "finding"), ("'--fail-on=[", "fail_on")]
            .into_iter()
            .find(|(start, _)| line.starts_with(start));
        let Some((option, at)) = list.and_then(|(_, o)| line.find("...:(").map(|at| (o, at + 4)))
        else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        let mut last = line;
        while !last.trim_end_matches(" \\").ends_with('\'') {
            match lines.next() {
                Some(next) => last = next,
                None => break,
            }
        }
        let end = if last.ends_with(" \\") { " \\" } else { "" };
        out.push_str(&line[..at]);
        out.push_str(&format!(
            "_sequence compadd - {}'{end}\n",
            list_values(option)
        ));
    }
    out
}

/// fish: `__fish_complete_list` offers each value after the codes already typed.
fn fish_code_lists(script: String) -> String {
    let mut out = script;
    out.push_str(&format!(
        "\nfunction __roce_sniff_values\n    switch $argv[1]\n        case fail_on\n            \
         printf '%s\\n' {}\n        case '*'\n            printf '%s\\n' {}\n    end\nend\n",
        list_values("fail_on"),
        list_values("finding")
    ));
    // With the option's summary: the description fish shows is the last one given.
    let cmd = super::Args::command();
    for (long, option) in [("finding", "finding"), ("fail-on", "fail_on")] {
        let summary = cmd
            .get_arguments()
            .find(|a| a.get_id() == option)
            .and_then(|a| a.get_help())
            .map_or(String::new(), |h| h.to_string().replace('\'', "\\'"));
        out.push_str(&format!(
            "complete -c roce-sniff -l {long} -d '{summary}' -r -f -a '(__fish_complete_list , \"__roce_sniff_values {option}\")'\n"
        ));
    }
    out
}

/// The names `roce-sniff -D` lists (`1.eth0 [Up, Running]`), as a shell pipeline.
const LIST_INTERFACES: &str = r"roce-sniff -D 2>/dev/null | sed -n 's/^[0-9]*\.\([^ ]*\).*/\1/p'";

/// The script with -i completing the interfaces roce-sniff can capture on, asked of
/// `roce-sniff -D` at completion time, where clap's script completes file names.
fn with_interfaces(shell: Shell, script: String) -> String {
    match shell {
        Shell::Bash => bash_interfaces(script),
        Shell::Zsh => zsh_interfaces(script),
        Shell::Fish => fish_interfaces(script),
        _ => script,
    }
}

/// The `-i)` and `--interface)` branches of bash's `case "${prev}"` take `compgen -W`.
fn bash_interfaces(script: String) -> String {
    let files = r#"COMPREPLY=($(compgen -f "${cur}"))"#;
    let names = format!(r#"COMPREPLY=($(compgen -W "$({LIST_INTERFACES})" -- "${{cur}}"))"#);
    bash_branches(&script, &["-i)", "--interface)"], |code| {
        (code == files).then(|| names.clone())
    })
}

/// zsh: the IFACE value calls `_roce_sniff_interfaces`, defined beside the generated function.
fn zsh_interfaces(script: String) -> String {
    let function = format!(
        "(( $+functions[_roce_sniff_interfaces] )) ||\n_roce_sniff_interfaces() {{\n    \
         local -a interfaces\n    interfaces=(${{(f)\"$({LIST_INTERFACES})\"}})\n    \
         _describe -t interfaces 'interface' interfaces\n}}\n\n"
    );
    let mut script = script.replace(":IFACE:_default'", ":IFACE:_roce_sniff_interfaces'");
    let at = script
        .find("if [ \"$funcstack[1]\"")
        .unwrap_or(script.len());
    script.insert_str(at, &function);
    script
}

/// fish: `-i` takes no file names (`-f`) but the output of `__roce_sniff_interfaces`.
fn fish_interfaces(script: String) -> String {
    let mut out = format!("function __roce_sniff_interfaces\n    {LIST_INTERFACES}\nend\n\n");
    for line in script.lines() {
        out.push_str(line);
        if line.starts_with("complete -c roce-sniff -s i -l interface ") {
            out.push_str(" -f -a '(__roce_sniff_interfaces)'");
        }
        out.push('\n');
    }
    out
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
    fn every_option_has_a_one_line_summary_before_its_details() {
        // What -h and fish's descriptions show: a line, not the paragraph --help gives.
        for arg in super::super::Args::command().get_arguments() {
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            assert!(
                !help.is_empty() && help.chars().count() <= 100,
                "{}: {help}",
                arg.get_id()
            );
        }
    }

    #[test]
    fn completions_offer_codes_levels_and_interfaces() {
        let fish = text(Generated::CompleteFish);
        for wanted in [
            r#"-l finding -d 'Keep the connections and frames of findings of these codes' -r -f -a "psn_loss\t''"#,
            r"critical\t'a level: every finding at or above it'",
            "-s i -l interface -d 'Capture live on this interface (needs root, or CAP_NET_RAW and CAP_NET_ADMIN)' -r -f -a '(__roce_sniff_interfaces)'",
        ] {
            assert!(fish.contains(wanted), "{wanted}: {fish}");
        }
        let bash = text(Generated::CompleteBash);
        assert_eq!(
            bash.matches(LIST_INTERFACES).count(),
            2,
            "-i and --interface"
        );
        let zsh = text(Generated::CompleteZsh);
        assert_eq!(zsh.matches(":IFACE:_roce_sniff_interfaces'").count(), 2);
    }

    #[test]
    fn it_is_answered_without_a_capture() {
        let args = ["roce-sniff", "--generate", "man"].map(Into::into);
        assert_eq!(requested(&args), Some(Generated::Man));
        let args = ["roce-sniff", "-r", "x.pcap"].map(Into::into);
        assert_eq!(requested(&args), None);
    }
}
