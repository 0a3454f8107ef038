//! PFC and 802.3x PAUSE: per source MAC and priority, XOFF/XON counts, quanta, the time
//! actually paused (the union of pause intervals, cut short by XON), the longest continuous
//! pause, and storms.
//!
//! A storm is a stretch of at least `storm_ms` during which the priority either stays paused
//! (each XOFF arriving before the previous one ran out) or receives pause frames faster than
//! `storm_fps`. Overlapping stretches of both kinds are reported as one storm.

use std::collections::BTreeMap;

use roce_parsers::MacAddr;

use crate::model::{Storm, StormKind};

/// Storms listed per priority; more are counted.
const STORMS_SHOWN: usize = 32;
/// Pause intervals kept per priority for plots; later ones are merged into the last.
const INTERVALS_KEPT: usize = 10_000;

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
    /// Pause intervals (start, end) in ns, for the Gantt plot.
    intervals: Vec<(u64, u64)>,
}

impl PauseTracker {
    /// A pause frame for this priority at `ts` asking for `quanta` (0 = XON).
    pub fn frame(&mut self, cfg: &PfcConfig, frame_no: u64, ts: u64, quanta: u16) {
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
            if let Some(mut iv) = self.interval.take() {
                if ts < iv.end {
                    iv.end = ts.max(iv.start);
                }
                iv.frames += 1;
                iv.last_frame = frame_no;
                self.close_interval(cfg, iv);
            }
            return;
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
            }
            _ => {
                if let Some(iv) = self.interval.take() {
                    self.close_interval(cfg, iv);
                }
                self.interval = Some(Stretch {
                    start: ts,
                    end,
                    frames: 1,
                    first_frame: frame_no,
                    last_frame: frame_no,
                });
            }
        }
    }

    fn close_interval(&mut self, cfg: &PfcConfig, iv: Stretch) {
        let dur = iv.end.saturating_sub(iv.start);
        if self.intervals.len() < INTERVALS_KEPT {
            self.intervals.push((iv.start, iv.end));
        } else if let Some(last) = self.intervals.last_mut() {
            last.1 = last.1.max(iv.end);
        }
        self.paused_ns += dur;
        self.longest_ns = self.longest_ns.max(dur);
        self.maybe_storm(cfg, iv, 1);
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

    /// Closes what is still open at the end of the capture.
    pub fn finish(&mut self, cfg: &PfcConfig) {
        if let Some(iv) = self.interval.take() {
            self.close_interval(cfg, iv);
        }
        if let Some(b) = self.burst.take() {
            self.maybe_storm(cfg, b, 2);
        }
        self.storms.sort_by_key(|(s, _)| s.start);
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

    pub fn intervals(&self) -> &[(u64, u64)] {
        &self.intervals
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

/// The pauses of one PFC (source, priority): (start, end) in ns.
pub struct PauseSpans<'a> {
    pub key: (MacAddr, u8),
    pub ended: &'a [(u64, u64)],
    pub in_force: Option<(u64, u64)>,
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

/// Every pair of sources whose pauses of one priority overlap in time.
pub fn mutual_pauses(pfc: &BTreeMap<(MacAddr, u8), PauseTracker>) -> Vec<MutualPause> {
    let mut out = Vec::new();
    let sources: Vec<(&(MacAddr, u8), &PauseTracker)> = pfc.iter().collect();
    for (i, &(&(a, prio), ta)) in sources.iter().enumerate() {
        for &(&(b, prio_b), tb) in &sources[i + 1..] {
            if prio_b != prio || a == b {
                continue;
            }
            if let Some((overlaps, first_ns)) = overlaps(ta.intervals(), tb.intervals()) {
                out.push(MutualPause {
                    priority: prio,
                    a,
                    b,
                    overlaps,
                    first_ns,
                });
            }
        }
    }
    out
}

/// How many intervals of `a` overlap one of `b` (both sorted), and where the first overlap
/// starts; None when none do.
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
