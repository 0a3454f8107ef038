//! The report as `--json` and the report directory's `report.json` write it: serde_json's
//! pretty form, byte for byte, with the flows written by hand.
//!
//! Why: serde_json spent about 4 us a flow (a call per key and value through the flattened
//! parts, each key scanned for characters to escape, each token copied into the writer): half
//! the time of `-r` on a capture of 600,000 flows. Each flow is now written compact by
//! `flow_json` (as the events' `flow_end` lines are, and as serde writes it) and laid out as
//! serde's `PrettyFormatter` lays it out; the rest of the report, small, is serde's own.

use std::io::{self, Write};

use crate::model::{FlowReport, Report};
use crate::monitor::flow_json::write_flow;

/// Where serde puts the flows of a report that has none: a key of the top-level object (at
/// the start of a line, two spaces in; no string holds a raw line break, so nothing else
/// matches).
const NO_FLOWS: &[u8] = b"\n  \"flows\": []";

/// The report's flows are its second level: each flow object opens four spaces in.
const FLOW_INDENT: usize = 2;

/// Writes `report` as `serde_json::to_writer_pretty` does.
pub fn write_pretty(out: &mut dyn Write, report: &Report) -> io::Result<()> {
    if report.flows.is_empty() {
        return serde_json::to_writer_pretty(out, report).map_err(io::Error::from);
    }
    // Every field but the flows, named one by one: a field added to `Report` must be added
    // here too, or this does not compile.
    let without_flows = Report {
        schema: report.schema,
        capture: report.capture.clone(),
        flows: Vec::new(),
        pfc: report.pfc.clone(),
        findings: report.findings.clone(),
        verify: report.verify.clone(),
    };
    let rest = serde_json::to_vec_pretty(&without_flows).map_err(io::Error::from)?;
    let at = rest
        .windows(NO_FLOWS.len())
        .position(|w| w == NO_FLOWS)
        .ok_or_else(|| io::Error::other("the report's flows have no place in its JSON"))?;
    let (before, after) = rest.split_at(at + NO_FLOWS.len() - 1);
    out.write_all(before)?;
    write_flows(out, &report.flows)?;
    // `after` begins with the `]` that closed the empty list.
    out.write_all(b"\n  ")?;
    out.write_all(after)
}

/// The flows, each on the lines serde gives it, in chunks of about 256 KB.
fn write_flows(out: &mut dyn Write, flows: &[FlowReport]) -> io::Result<()> {
    let mut compact = Vec::with_capacity(4096);
    let mut chunk = Vec::with_capacity(1 << 18);
    for (i, flow) in flows.iter().enumerate() {
        if i > 0 {
            chunk.push(b',');
        }
        new_line(&mut chunk, FLOW_INDENT);
        compact.clear();
        write_flow(&mut compact, flow)?;
        pretty(&compact, FLOW_INDENT, &mut chunk);
        if chunk.len() >= 1 << 18 {
            out.write_all(&chunk)?;
            chunk.clear();
        }
    }
    out.write_all(&chunk)
}

/// A line break and the spaces of up to 32 levels.
const NEWLINE_AND_SPACES: [u8; 65] = {
    let mut b = [b' '; 65];
    b[0] = b'\n';
    b
};

/// Whether a byte shapes the layout outside strings (or opens one).
const SHAPES: [bool; 256] = {
    let mut t = [false; 256];
    let mut k = 0;
    let shapes = *b"\"{}[],:";
    while k < shapes.len() {
        t[shapes[k] as usize] = true;
        k += 1;
    }
    t
};

/// Spaces for `levels` levels (no line break).
fn indent(out: &mut Vec<u8>, levels: usize) {
    for _ in 0..levels {
        out.extend_from_slice(b"  ");
    }
}

/// A line break, and the spaces of `levels` levels.
fn new_line(out: &mut Vec<u8>, levels: usize) {
    match NEWLINE_AND_SPACES.get(..1 + 2 * levels) {
        Some(line) => out.extend_from_slice(line),
        None => {
            out.push(b'\n');
            indent(out, levels);
        }
    }
}

/// Lays out compact JSON (serde_json's, no whitespace outside strings) as serde_json's
/// `PrettyFormatter` does, the value starting `levels` deep: each member and element on a line
/// of its own, two spaces a level, `": "` after a key, empty objects and lists as `{}`, `[]`.
pub fn pretty(compact: &[u8], levels: usize, out: &mut Vec<u8>) {
    out.reserve(compact.len() * 2);
    let mut depth = levels;
    let mut i = 0;
    while i < compact.len() {
        // Up to the next byte that shapes the layout, copied as it is (a number, a literal).
        let start = i;
        while i < compact.len() && !SHAPES[usize::from(compact[i])] {
            i += 1;
        }
        out.extend_from_slice(&compact[start..i]);
        let Some(&c) = compact.get(i) else { break };
        match c {
            b'"' => {
                let end = string_end(compact, i);
                out.extend_from_slice(&compact[i..end]);
                i = end;
                continue;
            }
            b'{' | b'[' => {
                let close = if c == b'{' { b'}' } else { b']' };
                if compact.get(i + 1) == Some(&close) {
                    out.extend_from_slice(&[c, close]);
                    i += 2;
                    continue;
                }
                depth += 1;
                out.push(c);
                new_line(out, depth);
            }
            b'}' | b']' => {
                depth -= 1;
                new_line(out, depth);
                out.push(c);
            }
            b',' => {
                out.push(b',');
                new_line(out, depth);
            }
            _ => out.extend_from_slice(b": "),
        }
        i += 1;
    }
}

/// Where the string opening at `start` ends (just past its closing quote).
fn string_end(s: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while let Some(k) = s[i..].iter().position(|&c| c == b'"' || c == b'\\') {
        i += k;
        if s[i] == b'"' {
            return i + 1;
        }
        i += 2;
        if i >= s.len() {
            break;
        }
    }
    s.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn laid_out(v: &serde_json::Value) -> String {
        let mut out = Vec::new();
        pretty(&serde_json::to_vec(v).unwrap(), 0, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn compact_json_is_laid_out_as_serde_lays_it_out() {
        let v = serde_json::json!({
            "a": {},
            "b": [],
            "c": [1, [2, {}], {"d": "x,y:{z}[\"w\\\"]"}],
            "e": {"f": null, "g": -1.5e-7, "h": [true, false]},
            "": "\u{1}\n\\",
        });
        assert_eq!(laid_out(&v), serde_json::to_string_pretty(&v).unwrap());
        for scalar in [
            serde_json::json!(3),
            serde_json::json!("s"),
            serde_json::json!([]),
        ] {
            assert_eq!(
                laid_out(&scalar),
                serde_json::to_string_pretty(&scalar).unwrap()
            );
        }
    }

    #[test]
    fn a_report_is_written_as_serde_writes_it() {
        let data = std::fs::read("testdata/sample.pcap").unwrap();
        let an = crate::analysis::Analyzer::new(Default::default());
        let (an, counts) = crate::analysis::testing::feed(&data, an, |_, _| {});
        let meta = crate::analysis::report_build::CaptureMeta {
            counts,
            ..Default::default()
        };
        let report = an.finish(meta);
        assert!(!report.findings.is_empty() && !report.pfc.priorities.is_empty());
        let mut out = Vec::new();
        write_pretty(&mut out, &report).unwrap();
        assert!(report.flows.len() > 5, "{} flows", report.flows.len());
        assert_eq!(
            String::from_utf8(out).unwrap(),
            serde_json::to_string_pretty(&report).unwrap()
        );
    }
}
