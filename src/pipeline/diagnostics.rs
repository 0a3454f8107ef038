//! The one place warnings go. Each is printed once on stderr, naming the input, and kept for
//! the report; the same way for files, standard input, live capture and the in-memory entry
//! point. Problems of single frames are counted by layer in the report and printed up to a
//! limit, so a damaged capture cannot flood the terminal.

use roce_parsers::link::{linktype_name, SUPPORTED_SUMMARY};
use roce_parsers::DecodeError;

use crate::model::{CaptureWarning, WarningKind};

pub struct Diagnostics {
    /// The input, named in every line.
    source: String,
    /// Whether to print (the in-memory entry point of benchmarks and fuzzing may not).
    print: bool,
    warnings: Vec<CaptureWarning>,
    /// Link types already reported as unsupported (one line each, not one per frame).
    unsupported: Vec<u32>,
    frame_limit: u32,
    frames_shown: u32,
    frames_suppressed: u64,
}

impl Diagnostics {
    /// `frame_limit`: most per-frame problems printed (the rest are counted).
    pub fn new(source: &str, frame_limit: u32) -> Self {
        Diagnostics {
            source: crate::common::error::shown(source),
            print: true,
            warnings: Vec::new(),
            unsupported: Vec::new(),
            frame_limit,
            frames_shown: 0,
            frames_suppressed: 0,
        }
    }

    /// Keeps warnings for the report without printing them.
    pub fn silent(mut self) -> Self {
        self.print = false;
        self
    }

    fn print(&self, line: &str) {
        if self.print {
            stderr_line!("roce-sniff: warning: {}: {line}", self.source);
        }
    }

    /// A warning about the capture as a whole: printed now, listed in the report.
    pub fn warn(&mut self, kind: WarningKind, message: String) {
        self.print(&message);
        self.warnings.push(CaptureWarning { kind, message });
    }

    /// A warning whose printed line adds what it means for this run (`hint`), which the
    /// report says in its own words (findings).
    pub fn warn_with_hint(&mut self, kind: WarningKind, message: String, hint: &str) {
        self.print(&format!("{message}; {hint}"));
        self.warnings.push(CaptureWarning { kind, message });
    }

    /// A frame that could not be decoded (or not completely).
    pub fn frame_problem(&mut self, frame_no: u64, error: DecodeError, malformed: bool) {
        if let DecodeError::UnsupportedLinkType(lt) = error {
            if !self.unsupported.contains(&lt) {
                self.unsupported.push(lt);
                self.print(&format!(
                    "frame {frame_no}: link type {lt} ({}) is not supported (supported: {SUPPORTED_SUMMARY}); its frames are counted, not decoded",
                    linktype_name(lt)
                ));
            }
            return;
        }
        if !malformed {
            return;
        }
        if self.frames_shown < self.frame_limit {
            self.frames_shown += 1;
            self.print(&format!("frame {frame_no}: {error}"));
        } else {
            self.frames_suppressed += 1;
        }
    }

    /// Ends the run: says how many frame problems were not shown; returns the warnings.
    pub fn finish(self) -> Vec<CaptureWarning> {
        if self.frames_suppressed > 0 {
            self.print(&format!(
                "{} more malformed frames not shown",
                self.frames_suppressed
            ));
        }
        self.warnings
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use roce_parsers::Layer;

    #[test]
    fn warnings_are_kept_and_frame_problems_limited() {
        let mut d = Diagnostics::new("x.pcap", 1).silent();
        d.warn(WarningKind::FileDamaged, "cut".into());
        let e = DecodeError::Truncated {
            layer: Layer::Udp,
            need: 8,
            have: 2,
        };
        d.frame_problem(1, e, true);
        d.frame_problem(2, e, true);
        assert_eq!((d.frames_shown, d.frames_suppressed), (1, 1));
        let w = d.finish();
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].kind, WarningKind::FileDamaged);
    }
}
