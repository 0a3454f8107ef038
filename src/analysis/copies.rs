//! The same frame captured at several points (the captures of both ends of a connection read
//! as one): each copy after the first is a copy of the capture, not a resend.
//!
//! The clocks of different hosts may differ by milliseconds, far more than the 5 us within
//! which one point's double copies are recognised (`Flow::is_capture_copy`), so frames are
//! remembered for up to a second here. A resend is byte-identical to its original when the NIC
//! leaves the IP ID at 0, so copies are counted per point: the k-th sighting of a frame at one
//! point is a copy of the k-th sighting at another. A point that saw a frame more often than
//! every other (the sender, which saw the original and its resend) contributes its extra
//! sightings as frames of their own.

use std::collections::VecDeque;

use roce_parsers::Psn;
use rustc_hash::FxHashMap;

/// How long a frame is remembered after its first sighting: clock offsets of hosts synchronised
/// by NTP plus the path's delay stay well within it.
pub const CROSS_POINT_WINDOW_NS: u64 = 1_000_000_000;
/// Most frames remembered (about 40 MB): at high rates the window is shorter.
pub const CROSS_POINT_MAX_FRAMES: usize = 1 << 19;
/// Points counted apart; further points share the last slot.
const MAX_POINTS: usize = 8;

/// A frame as every point sees it: its flow, PSN and identity (IP ID, length, ICRC).
type FrameKey = (u32, Psn, u64);

#[derive(Default)]
pub struct PointCopies {
    /// Sightings of each remembered frame, per point.
    seen: FxHashMap<FrameKey, [u16; MAX_POINTS]>,
    /// Remembered frames in the order of their first sighting, to forget the oldest.
    order: VecDeque<(u64, FrameKey)>,
}

impl PointCopies {
    /// Whether this sighting at `point` of the frame (`flow`, `psn`, `identity`) at `ts` is a
    /// copy of one made at another point.
    pub fn is_copy(&mut self, flow: usize, psn: Psn, identity: u64, point: u16, ts: u64) -> bool {
        self.forget_before(ts.saturating_sub(CROSS_POINT_WINDOW_NS));
        let key = (flow as u32, psn, identity);
        let slot = usize::from(point).min(MAX_POINTS - 1);
        let counts = self.seen.entry(key).or_insert_with(|| {
            self.order.push_back((ts, key));
            [0; MAX_POINTS]
        });
        counts[slot] = counts[slot].saturating_add(1);
        let elsewhere = (0..MAX_POINTS)
            .filter(|&q| q != slot)
            .map(|q| counts[q])
            .max()
            .unwrap_or(0);
        counts[slot] <= elsewhere
    }

    fn forget_before(&mut self, oldest: u64) {
        while let Some(&(ts, key)) = self.order.front() {
            if ts >= oldest && self.order.len() < CROSS_POINT_MAX_FRAMES {
                break;
            }
            self.order.pop_front();
            self.seen.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn the_second_point_copies_the_first_even_milliseconds_apart() {
        let mut c = PointCopies::default();
        assert!(!c.is_copy(0, Psn::new(1), 7, 0, 10 * MS));
        assert!(!c.is_copy(0, Psn::new(2), 8, 0, 11 * MS));
        assert!(c.is_copy(0, Psn::new(1), 7, 1, 13 * MS));
        assert!(c.is_copy(0, Psn::new(2), 8, 1, 14 * MS));
        // Another flow with the same PSN and identity is another frame.
        assert!(!c.is_copy(1, Psn::new(1), 7, 1, 14 * MS));
    }

    #[test]
    fn a_byte_identical_resend_pairs_with_the_kth_copy() {
        let mut c = PointCopies::default();
        // The sender saw the original and its resend; the original was lost before the
        // receiver, which saw the resend only.
        assert!(!c.is_copy(0, Psn::new(5), 9, 0, MS));
        assert!(!c.is_copy(0, Psn::new(5), 9, 0, 5 * MS));
        assert!(c.is_copy(0, Psn::new(5), 9, 1, 7 * MS));
        // Seen first downstream (its clock behind): the sender's second sighting is the resend.
        let mut c = PointCopies::default();
        assert!(!c.is_copy(0, Psn::new(5), 9, 1, MS));
        assert!(c.is_copy(0, Psn::new(5), 9, 0, 2 * MS));
        assert!(!c.is_copy(0, Psn::new(5), 9, 0, 6 * MS));
    }

    #[test]
    fn one_point_alone_never_copies_itself() {
        let mut c = PointCopies::default();
        assert!(!c.is_copy(0, Psn::new(5), 9, 0, MS));
        assert!(!c.is_copy(0, Psn::new(5), 9, 0, MS + 1));
    }

    #[test]
    fn frames_are_forgotten_after_the_window() {
        let mut c = PointCopies::default();
        assert!(!c.is_copy(0, Psn::new(5), 9, 0, MS));
        assert!(!c.is_copy(0, Psn::new(5), 9, 1, MS + CROSS_POINT_WINDOW_NS + 1));
        assert_eq!(c.seen.len(), 1);
        for i in 0..CROSS_POINT_MAX_FRAMES as u32 + 10 {
            c.is_copy(0, Psn::new(i), 1, 0, 2 * CROSS_POINT_WINDOW_NS);
        }
        assert_eq!(c.seen.len(), CROSS_POINT_MAX_FRAMES);
    }
}
