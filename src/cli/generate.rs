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
        Generated::Man => return clap_mangen::Man::new(cmd).render(out),
        Generated::CompleteBash => Shell::Bash,
        Generated::CompleteZsh => Shell::Zsh,
        Generated::CompleteFish => Shell::Fish,
    };
    clap_complete::generate(shell, &mut cmd, "roce-sniff", out);
    Ok(())
}

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
