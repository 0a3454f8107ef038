//! The report as `--json` and the report directory's `report.json` write it: serde_json's
//! pretty form, byte for byte, with the flows written by hand.
//!
//! Why: serde_json spent about 4 us a flow (a call per key and value through the flattened
//! parts, each key scanned for characters to escape, each token copied into the writer): half
//! the time of `-r` on a capture of 600,000 flows. Each flow is now written by `flow_json` (the
//! events' `flow_end` writer) as serde's `PrettyFormatter` lays it out; the rest of the
//! report, small, is serde's own.

use std::io::{self, Write};

use crate::model::{FlowReport, Report};
use crate::monitor::flow_json::{new_line, write_flow_pretty};

/// Where serde puts the flows of a report that has none: a key of the top-level object (at
/// the start of a line, two spaces in; no string holds a raw line break, so nothing else
/// matches).
const NO_FLOWS: &[u8] = b"\n  \"flows\": []";

/// The report's flows are its second level: each flow object opens four spaces in.
const FLOW_LEVELS: usize = 2;

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
    let mut chunk = Vec::with_capacity(1 << 18);
    for (i, flow) in flows.iter().enumerate() {
        if i > 0 {
            chunk.push(b',');
        }
        new_line(&mut chunk, FLOW_LEVELS);
        write_flow_pretty(&mut chunk, flow, FLOW_LEVELS)?;
        if chunk.len() >= 1 << 18 {
            out.write_all(&chunk)?;
            chunk.clear();
        }
    }
    out.write_all(&chunk)
}

#[cfg(test)]
mod tests {
    use super::*;

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
