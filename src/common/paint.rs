//! Colour on a terminal, as `--color WHEN` (never, auto, always) and NO_COLOR say: what the
//! text outputs mark with it, and where they leave it out (files, pipes, dumb terminals).

use std::io::IsTerminal;
use std::ops::Range;

pub use anstyle::{AnsiColor, Style};

/// When to colour, as ripgrep's `--color`: `auto` on a terminal that is not `dumb`, unless
/// NO_COLOR is set to anything; `always` and `never` whatever the terminal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    Never,
    #[default]
    Auto,
    Always,
}

/// Whether a text output is coloured; `PLAIN` for files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Paint {
    colour: bool,
}

impl Paint {
    pub const PLAIN: Paint = Paint { colour: false };
    pub const COLOUR: Paint = Paint { colour: true };

    /// The paint for standard output.
    pub fn for_stdout(when: ColorWhen) -> Paint {
        let env = |name| std::env::var_os(name).filter(|v| !v.is_empty());
        Paint {
            colour: decide(
                when,
                std::io::stdout().is_terminal(),
                env("NO_COLOR").is_some(),
                env("TERM").is_some_and(|t| t == "dumb"),
            ),
        }
    }

    /// Wraps `o[range]` in `style`, when colouring.
    pub fn at(self, o: &mut String, range: Range<usize>, style: Style) {
        if self.colour && !range.is_empty() {
            o.insert_str(range.end, &format!("{style:#}"));
            o.insert_str(range.start, &format!("{style}"));
        }
    }
}

fn decide(when: ColorWhen, terminal: bool, no_color: bool, dumb: bool) -> bool {
    match when {
        ColorWhen::Never => false,
        ColorWhen::Always => true,
        ColorWhen::Auto => terminal && !no_color && !dumb,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_colours_a_terminal_only_without_no_color() {
        assert!(decide(ColorWhen::Auto, true, false, false));
        assert!(!decide(ColorWhen::Auto, false, false, false));
        assert!(!decide(ColorWhen::Auto, true, true, false));
        assert!(!decide(ColorWhen::Auto, true, false, true));
        assert!(decide(ColorWhen::Always, false, true, true));
        assert!(!decide(ColorWhen::Never, true, false, false));
    }

    #[test]
    fn a_range_is_wrapped_in_its_style_and_reset() {
        let red = Style::new().fg_color(Some(AnsiColor::Red.into())).bold();
        let mut s = String::from("  CRITICAL psn_loss");
        Paint::PLAIN.at(&mut s, 2..10, red);
        assert_eq!(s, "  CRITICAL psn_loss");
        Paint::COLOUR.at(&mut s, 2..10, red);
        assert_eq!(s, "  \x1b[1m\x1b[31mCRITICAL\x1b[0m psn_loss");
    }
}
