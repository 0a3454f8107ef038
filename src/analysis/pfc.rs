//! PFC and 802.3x PAUSE: per source MAC and priority, XOFF/XON counts, quanta, the time
//! actually paused (the union of pause intervals, cut short by XON), the longest continuous
//! pause, and storms.
//!
//! A storm is a stretch of at least `storm_ms` during which the priority either stays paused
//! (each XOFF arriving before the previous one ran out) or receives pause frames faster than
//! `storm_fps`. Overlapping stretches of both kinds are reported as one storm.

use std::collections::{BTreeMap, VecDeque};

use roce_parsers::MacAddr;

use crate::model::{Storm, StormKind};

/// Storms listed per priority; more are counted.
const STORMS_SHOWN: usize = 32;
/// Pauses kept per priority for the plots: past this many, neighbours merge into spans that
/// keep the time paused in them. Only the plots read them: the figures, the overlaps of two
/// sources' pauses and the dataset's paused time take every pause as it closes.
const INTERVALS_KEPT: usize = 10_000;
/// Closed pauses a source keeps for telling which other sources' pauses overlap them (see
/// `MutualTally`): those that may still overlap a pause in force, at most this many.
const RECENT_KEPT: usize = 65_536;

#[derive(Debug, Clone, Copy)]
pub struct PfcConfig {
    pub link_gbps: f64,
    pub storm_ns: u64,
    pub storm_fps: f64,
}

impl PfcConfig {
    /// One pause quantum in nanoseconds at the configured link speed.
    fn quantum_ns(&self) -> f64 {
        roce_parsers::pfc::quanta_to_ns(1, self.link_gbps)
    }
}

#[derive(Debug, Clone, Copy)]
struct Stretch {
    start: u64,
    end: u64,
    frames: u64,
    first_frame: u64,
    last_frame: u64,
}

/// Pause state of one (MAC, priority).
#[derive(Debug, Clone, Default)]
pub struct PauseTracker {
    pub xoff: u64,
    pub xon: u64,
    pub quanta: u64,
    pub paused_ns: u64,
    pub longest_ns: u64,
    pub first_frame: Option<u64>,
    /// The pause in force: (start, end, frames in it, first frame).
    interval: Option<Stretch>,
    /// Frames arriving faster than the storm rate.
    burst: Option<Stretch>,
    last_frame_ts: Option<u64>,
    /// Candidate storms: (start, end, frames, first frame, kind bits 1=paused 2=rate).
    storms: Vec<(Stretch, u8)>,
    storms_total: u64,
    /// Pauses for the plots, (start, end, time paused in it) in ns: each pause, or past
    /// `INTERVALS_KEPT` a span of neighbouring ones.
    intervals: Vec<(u64, u64, u64)>,
    /// A pause starting this soon after the last span's start joins it (0 until the spans
    /// first had to merge).
    merge_within: u64,
    /// The latest closed pauses, in time order, for `MutualTally`.
    recent: VecDeque<(u64, u64)>,
}

impl PauseTracker {
    /// A pause frame for this priority at `ts` asking for `quanta` (0 = XON); the pause it
    /// ended (start, end), if it ended one.
    pub fn frame(
        &mut self,
        cfg: &PfcConfig,
        frame_no: u64,
        ts: u64,
        quanta: u16,
    ) -> Option<(u64, u64)> {
        self.first_frame.get_or_insert(frame_no);
        // Rate stretch: consecutive frames closer than 1/storm_fps.
        let min_gap = (1e9 / cfg.storm_fps) as u64;
        match (self.burst.as_mut(), self.last_frame_ts) {
            (Some(b), Some(last)) if ts.saturating_sub(last) <= min_gap => {
                b.end = ts;
                b.frames += 1;
                b.last_frame = frame_no;
            }
            _ => {
                if let Some(b) = self.burst.take() {
                    self.maybe_storm(cfg, b, 2);
                }
                self.burst = Some(Stretch {
                    start: ts,
                    end: ts,
                    frames: 1,
                    first_frame: frame_no,
                    last_frame: frame_no,
                });
            }
        }
        self.last_frame_ts = Some(ts);

        if quanta == 0 {
            self.xon += 1;
            let mut iv = self.interval.take()?;
            if ts < iv.end {
                iv.end = ts.max(iv.start);
            }
            iv.frames += 1;
            iv.last_frame = frame_no;
            return Some(self.close_interval(cfg, iv));
        }
        self.xoff += 1;
        self.quanta += u64::from(quanta);
        let end = ts + (f64::from(quanta) * cfg.quantum_ns()).round() as u64;
        match self.interval.as_mut() {
            // A new XOFF before the last ran out restarts the timer.
            Some(iv) if ts <= iv.end => {
                iv.end = end;
                iv.frames += 1;
                iv.last_frame = frame_no;
                None
            }
            _ => {
                let closed = self.interval.take().map(|iv| self.close_interval(cfg, iv));
                self.interval = Some(Stretch {
                    start: ts,
                    end,
                    frames: 1,
                    first_frame: frame_no,
                    last_frame: frame_no,
                });
                closed
            }
        }
    }

    /// Ends the pause `iv`: (start, end).
    fn close_interval(&mut self, cfg: &PfcConfig, iv: Stretch) -> (u64, u64) {
        let dur = iv.end.saturating_sub(iv.start);
        self.keep_for_plots(iv.start, iv.end);
        self.paused_ns += dur;
        self.longest_ns = self.longest_ns.max(dur);
        self.maybe_storm(cfg, iv, 1);
        (iv.start, iv.end)
    }

    /// Keeps pause (start, end) for the plots. Past `INTERVALS_KEPT` spans, neighbours merge
    /// two by two, and later pauses join the last span while they start within the spans'
    /// length of it: the list covers the whole capture, at a resolution that halves as needed,
    /// and each span keeps the time paused in it (a span of pauses that took turns with others
    /// was once drawn, and counted in `pause_us`, as paused throughout).
    fn keep_for_plots(&mut self, start: u64, end: u64) {
        let paused = end.saturating_sub(start);
        if let Some(last) = self.intervals.last_mut() {
            if start < last.0.saturating_add(self.merge_within) {
                last.1 = last.1.max(end);
                last.2 += paused;
                return;
            }
        }
        self.intervals.push((start, end, paused));
        if self.intervals.len() >= INTERVALS_KEPT {
            self.intervals = self
                .intervals
                .chunks(2)
                .map(|pair| {
                    let (first, last) = (pair[0], pair[pair.len() - 1]);
                    (first.0, last.1.max(first.1), pair.iter().map(|p| p.2).sum())
                })
                .collect();
            // Saturating: a file's timestamps may go back.
            let covered = self.intervals[self.intervals.len() - 1]
                .1
                .saturating_sub(self.intervals[0].0);
            self.merge_within = covered / (INTERVALS_KEPT as u64 / 2);
        }
    }

    fn maybe_storm(&mut self, cfg: &PfcConfig, s: Stretch, kind: u8) {
        if s.end.saturating_sub(s.start) < cfg.storm_ns {
            return;
        }
        // Merge with an overlapping candidate of the other kind.
        if let Some((last, k)) = self.storms.last_mut() {
            if s.start <= last.end && last.start <= s.end {
                last.start = last.start.min(s.start);
                last.end = last.end.max(s.end);
                last.frames = last.frames.max(s.frames);
                last.first_frame = last.first_frame.min(s.first_frame);
                last.last_frame = last.last_frame.max(s.last_frame);
                *k |= kind;
                return;
            }
        }
        self.storms_total += 1;
        if self.storms.len() < STORMS_SHOWN {
            self.storms.push((s, kind));
        }
    }

    /// When the pause in force ends, if one is.
    pub fn pause_end(&self) -> Option<u64> {
        self.interval.as_ref().map(|iv| iv.end)
    }

    /// Whether the pause in force at `ts` began at least `grace_ns` earlier: a sender that
    /// still sends then does not honour it.
    pub fn pauses_at(&self, ts: u64, grace_ns: u64) -> bool {
        self.interval
            .as_ref()
            .is_some_and(|iv| iv.start + grace_ns <= ts && ts < iv.end)
    }

    /// Closes what is still open at the end of the capture; the pause it ended, if one was in
    /// force.
    pub fn finish(&mut self, cfg: &PfcConfig) -> Option<(u64, u64)> {
        let closed = self.interval.take().map(|iv| self.close_interval(cfg, iv));
        if let Some(b) = self.burst.take() {
            self.maybe_storm(cfg, b, 2);
        }
        self.storms.sort_by_key(|(s, _)| s.start);
        closed
    }

    pub fn storms(&self) -> Vec<Storm> {
        self.storms
            .iter()
            .map(|(s, kind)| {
                let dur_ns = s.end.saturating_sub(s.start).max(1);
                Storm {
                    start_ns: s.start,
                    start_ts: s.start as f64 / 1e9,
                    end_ts: s.end as f64 / 1e9,
                    duration_ms: dur_ns as f64 / 1e6,
                    frames: s.frames,
                    rate_fps: s.frames as f64 * 1e9 / dur_ns as f64,
                    kind: match kind {
                        1 => StormKind::Paused,
                        2 => StormKind::Rate,
                        _ => StormKind::PausedAndRate,
                    },
                    first_frame: s.first_frame,
                }
            })
            .collect()
    }

    /// Paused time up to `now`: the closed pauses and what of the one in force has run.
    pub fn paused_until(&self, now: u64) -> u64 {
        let open = self
            .interval
            .as_ref()
            .map_or(0, |iv| now.min(iv.end).saturating_sub(iv.start));
        self.paused_ns + open
    }

    /// Storms so far, the one going on (pauses or frames still dense) included when it
    /// already lasts a storm's length.
    pub fn storms_until(&self, cfg: &PfcConfig, now: u64) -> u64 {
        let paused = self
            .interval
            .as_ref()
            .is_some_and(|iv| iv.end.min(now).saturating_sub(iv.start) >= cfg.storm_ns);
        let dense = self
            .burst
            .as_ref()
            .is_some_and(|b| b.end.saturating_sub(b.start) >= cfg.storm_ns);
        let ongoing = paused || dense;
        self.storms_total + u64::from(ongoing)
    }

    pub fn storms_total(&self) -> u64 {
        self.storms_total
    }

    /// The pauses for the plots, (start, end, time paused in it): each pause, or past 10,000
    /// spans of neighbouring pauses.
    pub fn intervals(&self) -> &[(u64, u64, u64)] {
        &self.intervals
    }

    /// Whether a pause of this source covers `at` that began before it (at it, when `first`:
    /// this source comes first of the two): in force, or among the recent closed ones.
    fn paused_through(&self, at: u64, first: bool) -> bool {
        let began_before = |start: u64| start < at || (start == at && first);
        if let Some(iv) = &self.interval {
            if began_before(iv.start) && iv.end > at {
                return true;
            }
        }
        // Closed pauses are disjoint and in time order: the one covering `at` is the first
        // to end after it.
        let i = self.recent.partition_point(|&(_, end)| end <= at);
        self.recent
            .get(i)
            .is_some_and(|&(start, _)| began_before(start))
    }

    /// The pause in force: (start, end as asked for so far).
    pub fn in_force(&self) -> Option<(u64, u64)> {
        self.interval.as_ref().map(|iv| (iv.start, iv.end))
    }

    /// Each storm's first and last frame, its length and its frames (after `finish`).
    pub fn storm_edges(&self) -> Vec<(u64, u64, u64, u64)> {
        self.storms
            .iter()
            .map(|(s, _)| {
                let dur = s.end.saturating_sub(s.start);
                (s.first_frame, s.last_frame, dur, s.frames)
            })
            .collect()
    }

    /// Storm stretches as (start, end) in ns.
    pub fn storm_spans(&self) -> Vec<(u64, u64)> {
        self.storms.iter().map(|(s, _)| (s.start, s.end)).collect()
    }
}

/// Two sources pausing one priority at overlapping times: the two ends of a link pausing each
/// other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MutualPause {
    pub priority: u8,
    pub a: MacAddr,
    pub b: MacAddr,
    /// Overlapping pause intervals, and when the first began.
    pub overlaps: u64,
    pub first_ns: u64,
}

/// A PFC pause of one (source, priority): that key, and its (start, end) in ns.
pub use crate::model::SourcePause;

/// Which sources paused one priority at the same time, told pause by pause as each closes,
/// so that it holds however many pauses a capture or a monitor sees (the overlaps were once
/// found between the plots' lists, whose pauses past the 10,000th are merged into one: two
/// sources taking turns then paused "at the same time").
///
/// Each overlapping pair of pauses is counted once, when the one that began later closes: the
/// other source's pause that covers its start, in force or among its recent closed ones (a
/// source's pauses are disjoint, so there is at most one).
#[derive(Debug, Clone, Default)]
pub struct MutualTally {
    /// Per (a, priority, b), a before b: overlapping pairs, and when the first overlap began.
    pairs: BTreeMap<(MacAddr, u8, MacAddr), (u64, u64)>,
}

impl MutualTally {
    /// The pause (start, end) of `key` closed at `now`: its overlaps with the other sources'
    /// pauses of the priority that began before it are counted, and it is kept for the pauses
    /// of others still in force.
    pub fn closed(
        &mut self,
        trackers: &mut BTreeMap<(MacAddr, u8), PauseTracker>,
        key: (MacAddr, u8),
        (start, end): (u64, u64),
        now: u64,
    ) {
        let (mac, prio) = key;
        // A closed pause older than every pause in force (and than now) overlaps no pause
        // that has yet to close.
        let mut horizon = now;
        for (&(other, p), t) in trackers.iter() {
            if p != prio || other == mac {
                continue;
            }
            if let Some(iv) = &t.interval {
                horizon = horizon.min(iv.start);
            }
            if end > start && t.paused_through(start, other < mac) {
                let pair = if other < mac {
                    (other, prio, mac)
                } else {
                    (mac, prio, other)
                };
                let e = self.pairs.entry(pair).or_insert((0, start));
                e.0 += 1;
                e.1 = e.1.min(start);
            }
        }
        for (&(_, p), t) in trackers.iter_mut() {
            if p == prio {
                while t.recent.front().is_some_and(|&(_, e)| e <= horizon) {
                    t.recent.pop_front();
                }
            }
        }
        if let Some(t) = trackers.get_mut(&key) {
            if t.recent.len() == RECENT_KEPT {
                t.recent.pop_front();
            }
            t.recent.push_back((start, end));
        }
    }

    /// Ends every pause in force (the capture ends, or is looked at as if it did): each is
    /// counted as it closes. The pauses ended, per source and priority.
    pub fn finish(
        &mut self,
        trackers: &mut BTreeMap<(MacAddr, u8), PauseTracker>,
        cfg: &PfcConfig,
    ) -> Vec<SourcePause> {
        let keys: Vec<(MacAddr, u8)> = trackers.keys().copied().collect();
        let mut ended = Vec::new();
        for key in keys {
            let closed = trackers.get_mut(&key).and_then(|t| t.finish(cfg));
            if let Some(iv) = closed {
                self.closed(trackers, key, iv, iv.1);
                ended.push((key, iv));
            }
        }
        ended
    }

    /// Every pair of sources whose pauses of one priority overlapped.
    pub fn pairs(&self) -> Vec<MutualPause> {
        self.pairs
            .iter()
            .map(|(&(a, priority, b), &(overlaps, first_ns))| MutualPause {
                priority,
                a,
                b,
                overlaps,
                first_ns,
            })
            .collect()
    }
}

/// How many intervals of `a` overlap one of `b` (both sorted), and where the first overlap
/// starts; None when none do. The tests' oracle for `MutualTally`.
#[cfg(test)]
fn overlaps(a: &[(u64, u64)], b: &[(u64, u64)]) -> Option<(u64, u64)> {
    let (mut i, mut j) = (0, 0);
    let mut count = 0;
    let mut first = None;
    while i < a.len() && j < b.len() {
        let start = a[i].0.max(b[j].0);
        if start < a[i].1.min(b[j].1) {
            count += 1;
            first.get_or_insert(start);
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    first.map(|f| (count, f))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CFG: PfcConfig = PfcConfig {
        link_gbps: 100.0,
        storm_ns: 100_000_000,
        storm_fps: 1000.0,
    };

    #[test]
    fn xoff_then_xon_cuts_the_pause() {
        let mut t = PauseTracker::default();
        t.frame(&CFG, 1, 1_000_000, 0xffff); // 335.5 us
        t.frame(&CFG, 2, 1_100_000, 0); // XON after 100 us
        t.finish(&CFG);
        assert_eq!((t.xoff, t.xon, t.quanta), (1, 1, 0xffff));
        assert_eq!(t.paused_ns, 100_000);
        assert_eq!(t.longest_ns, 100_000);
        assert!(t.storms().is_empty());
    }

    #[test]
    fn refreshed_xoff_is_one_continuous_pause_and_a_storm() {
        let mut t = PauseTracker::default();
        // An XOFF of 0xffff quanta every 300 us for 150 ms: paused throughout.
        let mut ts = 0;
        for i in 0..500 {
            t.frame(&CFG, i, ts, 0xffff);
            ts += 300_000;
        }
        t.finish(&CFG);
        let expected = 499 * 300_000 + 335_539;
        assert!(
            (t.paused_ns as i64 - expected as i64).abs() <= 1,
            "{}",
            t.paused_ns
        );
        assert_eq!(t.longest_ns, t.paused_ns);
        let storms = t.storms();
        assert_eq!(storms.len(), 1);
        assert_eq!(storms[0].frames, 500);
        assert_eq!(storms[0].kind, crate::model::StormKind::PausedAndRate);
    }

    #[test]
    fn short_pauses_far_apart_are_no_storm() {
        let mut t = PauseTracker::default();
        for i in 0..10 {
            t.frame(&CFG, i, i * 10_000_000, 100);
        }
        t.finish(&CFG);
        assert_eq!(t.xoff, 10);
        assert_eq!(t.paused_ns, 10 * 512);
        assert!(t.storms().is_empty());
    }

    /// Three sources pausing one priority at random (XOFFs refreshed or cut by XON), 15,000
    /// pauses each, more than the plots keep: the tally, told pause by pause, counts what the
    /// whole lists overlap; sources taking turns never overlap.
    #[test]
    fn the_mutual_tally_counts_every_overlap_of_whole_pause_lists() {
        let macs = [
            MacAddr([2, 0, 0, 0, 0, 3]),
            MacAddr([2, 0, 0, 0, 0, 1]),
            MacAddr([2, 0, 0, 0, 0, 2]),
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rand = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut frames: Vec<(u64, usize, u16)> = Vec::new();
        for k in 0..3 {
            let mut ts = rand(1000);
            for _ in 0..15_000 {
                frames.push((ts, k, 0xffff)); // 335 us
                if rand(3) > 0 {
                    frames.push((ts + 1 + rand(400_000), k, 0));
                }
                ts += 400_001 + rand(300_000);
            }
        }
        frames.sort();
        let mut trackers: BTreeMap<(MacAddr, u8), PauseTracker> = BTreeMap::new();
        let mut tally = MutualTally::default();
        let mut all: BTreeMap<(MacAddr, u8), Vec<(u64, u64)>> = BTreeMap::new();
        for (i, &(ts, k, q)) in frames.iter().enumerate() {
            let key = (macs[k], 3);
            if let Some(iv) = trackers
                .entry(key)
                .or_default()
                .frame(&CFG, i as u64, ts, q)
            {
                tally.closed(&mut trackers, key, iv, ts);
                all.entry(key).or_default().push(iv);
            }
        }
        for (key, iv) in tally.finish(&mut trackers, &CFG) {
            all.entry(key).or_default().push(iv);
        }
        let keys: Vec<_> = all.keys().copied().collect();
        let mut expected = Vec::new();
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i + 1..] {
                if let Some((overlaps, first_ns)) = overlaps(&all[a], &all[b]) {
                    expected.push((a.0, b.0, overlaps, first_ns));
                }
            }
        }
        let got: Vec<_> = tally
            .pairs()
            .iter()
            .map(|m| (m.a, m.b, m.overlaps, m.first_ns))
            .collect();
        assert_eq!(got, expected);
        assert!(expected.iter().all(|e| e.2 > 100), "{expected:?}");
        assert!(all.values().all(|v| v.len() > INTERVALS_KEPT));
        // Taking turns: 12,000 pauses of 10 us each, 50 us apart.
        let mut trackers = BTreeMap::new();
        let mut tally = MutualTally::default();
        for k in 0..12_000u64 {
            for (src, at) in [(0, 0), (1, 50_000)] {
                let key = (macs[src], 3);
                let ts = k * 100_000 + at;
                let t: &mut PauseTracker = trackers.entry(key).or_default();
                assert!(t.frame(&CFG, 0, ts, 0xffff).is_none());
                let iv = t.frame(&CFG, 0, ts + 10_000, 0).unwrap();
                tally.closed(&mut trackers, key, iv, ts + 10_000);
            }
        }
        assert!(tally.finish(&mut trackers, &CFG).is_empty());
        assert_eq!(tally.pairs(), vec![]);
        assert!(trackers.values().all(|t| t.recent.len() <= 1));
    }

    /// 30,000 pauses of 10 us, 100 us apart: the plots' list stays under 10,000 spans, covers
    /// the whole time, and keeps the time paused (the later pauses were once merged into one
    /// span drawn as paused throughout).
    #[test]
    fn the_plots_keep_the_time_paused_of_many_pauses_in_spans() {
        let mut t = PauseTracker::default();
        for k in 0..30_000u64 {
            t.frame(&CFG, 0, k * 100_000, 0xffff);
            t.frame(&CFG, 0, k * 100_000 + 10_000, 0);
        }
        t.finish(&CFG);
        let spans = t.intervals();
        assert!(spans.len() < INTERVALS_KEPT && spans.len() > INTERVALS_KEPT / 4);
        assert_eq!(spans[0].0, 0);
        assert_eq!(spans[spans.len() - 1].1, 29_999 * 100_000 + 10_000);
        assert_eq!(spans.iter().map(|s| s.2).sum::<u64>(), t.paused_ns);
        assert_eq!(t.paused_ns, 30_000 * 10_000);
        // No span is mostly paused: each holds pauses a tenth of its time.
        assert!(
            spans.iter().all(|s| s.2 * 5 < s.1 - s.0),
            "{:?}",
            &spans[..3]
        );
    }

    #[test]
    fn overlapping_pauses_are_counted_once_each() {
        let a = [(0, 10), (20, 30), (40, 50)];
        let b = [(5, 8), (9, 25), (60, 70)];
        // (5,8) and (9,25) overlap (0,10); (9,25) overlaps (20,30) too.
        assert_eq!(overlaps(&a, &b), Some((3, 5)));
        assert_eq!(overlaps(&a, &[(10, 20)]), None);
        assert_eq!(overlaps(&[], &b), None);
    }
}
