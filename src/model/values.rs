//! Values the analysis hands to the outputs beside the report: what one frame did, PFC pauses
//! that ended, and how a span of time falls into bins.

use roce_parsers::MacAddr;

/// What one frame did in the analysis: the flow it counted in (by `Flow::id`), and how its
/// PSN was judged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    pub flow: Option<usize>,
    pub psn: Option<PsnEvent>,
    /// A CNP: the data flow it tells to slow down.
    pub cnp_for: Option<usize>,
    /// A NAK (sequence, error or RNR): the data flow it answers.
    pub nak_for: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PsnEvent {
    Gap,
    Retransmitted,
    Duplicate,
    OutOfOrder,
}

impl PsnEvent {
    pub fn name(self) -> &'static str {
        match self {
            PsnEvent::Gap => "gap",
            PsnEvent::Retransmitted => "retransmitted",
            PsnEvent::Duplicate => "duplicate",
            PsnEvent::OutOfOrder => "out_of_order",
        }
    }
}

/// A PFC pause of one (source MAC, priority): (start, end) in ns.
pub type SourcePause = ((MacAddr, u8), (u64, u64));

/// The time `[from, to)` spends in each slot of `slot_ns` from `origin` that it touches:
/// (slot number, ns), in order. Time before `origin` is left out.
pub fn slot_overlaps(
    from: u64,
    to: u64,
    origin: u64,
    slot_ns: u64,
) -> impl Iterator<Item = (u64, u64)> {
    let from = from.max(origin);
    let slot_ns = slot_ns.max(1);
    let first = (from - origin) / slot_ns;
    let end = if to > from {
        (to - 1 - origin) / slot_ns + 1
    } else {
        first
    };
    (first..end).map(move |k| {
        let lo = origin + k * slot_ns;
        (k, to.min(lo + slot_ns) - from.max(lo))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_is_cut_at_the_slots_it_crosses() {
        let cut: Vec<_> = slot_overlaps(15, 42, 10, 10).collect();
        assert_eq!(cut, vec![(0, 5), (1, 10), (2, 10), (3, 2)]);
        // Before the origin is left out; an empty span touches nothing.
        assert_eq!(
            slot_overlaps(0, 25, 10, 10).collect::<Vec<_>>(),
            vec![(0, 10), (1, 5)]
        );
        assert_eq!(slot_overlaps(30, 30, 0, 10).count(), 0);
        assert_eq!(slot_overlaps(5, 8, 10, 10).count(), 0);
    }
}
