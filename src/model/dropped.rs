//! Records an output did not write because a live capture outpaced it (its queue was full),
//! by output and kind. Shared by the outputs that drop (they count) and those that tell it
//! (the events, the metrics, the dataset's parts, the status line, the report's warnings): a
//! loss is never silent.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// Every (output, kind) an output may drop, told at 0 from the start (a counter born at 1 is
/// a first sample Prometheus's `increase()` does not count).
pub const DROPPABLE: [(&str, &str); 4] = [
    ("events", "flow_end"),
    ("parquet", "packets"),
    ("parquet", "timeline"),
    ("parquet", "flows"),
];

/// Records dropped by output, then kind, every one of `DROPPABLE` present (0 when none were):
/// the report's `capture.live.records_dropped`.
pub type DroppedByOutput = BTreeMap<&'static str, BTreeMap<&'static str, u64>>;

#[derive(Debug, Default)]
pub struct DroppedRecords {
    counts: [AtomicU64; DROPPABLE.len()],
}

impl DroppedRecords {
    /// `output` dropped `n` more records of `kind` (one of `DROPPABLE`).
    pub fn add(&self, output: &str, kind: &str, n: u64) {
        let Some(at) = DROPPABLE
            .iter()
            .position(|&(o, k)| o == output && k == kind)
        else {
            debug_assert!(false, "not droppable: {output} {kind}");
            return;
        };
        self.counts[at].fetch_add(n, Ordering::Relaxed);
    }

    /// Each (output, kind, records dropped so far), in `DROPPABLE`'s order.
    pub fn counts(&self) -> [(&'static str, &'static str, u64); DROPPABLE.len()] {
        std::array::from_fn(|i| {
            let n = self.counts[i].load(Ordering::Relaxed);
            (DROPPABLE[i].0, DROPPABLE[i].1, n)
        })
    }

    /// Records dropped so far by (output, kind), in `DROPPABLE`'s order.
    pub fn by_kind(&self) -> [u64; DROPPABLE.len()] {
        self.counts().map(|c| c.2)
    }

    /// Records dropped so far, every output and kind.
    pub fn total(&self) -> u64 {
        self.by_kind().iter().sum()
    }

    /// Records dropped so far by output, then kind.
    pub fn by_output(&self) -> DroppedByOutput {
        let mut all = DroppedByOutput::new();
        for (output, kind, n) in self.counts() {
            all.entry(output).or_default().insert(kind, n);
        }
        all
    }

    /// What was dropped, as a warning's words: none when nothing was.
    pub fn warning(&self) -> Option<String> {
        let parts: Vec<String> = self
            .counts()
            .iter()
            .filter(|c| c.2 > 0)
            .map(|(output, kind, n)| format!("{output} {n} {kind}"))
            .collect();
        (!parts.is_empty()).then(|| {
            format!(
                "outputs could not keep up with the capture and dropped records ({}): the capture and the report are whole; the outputs named lack those records",
                parts.join(", ")
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_are_counted_by_output_and_kind_and_worded_once_there_are_some() {
        let d = DroppedRecords::default();
        assert_eq!(d.warning(), None);
        d.add("events", "flow_end", 3);
        d.add("parquet", "packets", 5);
        d.add("events", "flow_end", 1);
        assert_eq!(d.total(), 9);
        assert_eq!(d.counts()[0], ("events", "flow_end", 4));
        let w = d.warning().unwrap();
        assert!(w.contains("events 4 flow_end, parquet 5 packets"), "{w}");
        assert_eq!(
            serde_json::to_string(&d.by_output()).unwrap(),
            r#"{"events":{"flow_end":4},"parquet":{"flows":0,"packets":5,"timeline":0}}"#
        );
    }
}
