//! When the capture thread looks at the kernel's ring again after emptying it. Every wake-up
//! costs a system call and two context switches: waking 1,000 times a second under load was
//! 8% of a live analysis's CPU, where tcpdump, blocked in `poll`, wakes once per block.

use std::time::{Duration, Instant};

/// Shortest pause under load: what a small ring (-B) can hold at high rates.
const LEAST: Duration = Duration::from_millis(1);
/// Longest pause under load: a burst waits at most this long in the ring.
const MOST: Duration = Duration::from_millis(10);
/// Under load, a pause lets at most this part of the ring fill.
const RING_SHARE: u64 = 16;
/// libpcap's ring blocks (TPACKET_V3, one per 256 KiB snapshot): the kernel wakes a `poll`
/// once per filled block, or when a block's timeout retires it half full.
const RING_BLOCK_BYTES: f64 = 256.0 * 1024.0;

/// What to do once the ring is empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Under load: sleep this long, then take the blocks that filled meanwhile.
    Sleep(Duration),
    /// Light or no traffic: block in `poll` until the kernel fills (or retires) a block, at
    /// most until the next chunk is due.
    Poll,
}

/// Paces the capture thread by the rate it has seen.
#[derive(Debug)]
pub struct Pacer {
    ring_bytes: u64,
    since: Instant,
    bytes: u64,
}

impl Pacer {
    pub fn new(ring_bytes: u64, now: Instant) -> Pacer {
        Pacer {
            ring_bytes,
            since: now,
            bytes: 0,
        }
    }

    /// `bytes` more were taken from the ring (captured lengths: the ring's own headers are
    /// left out, a few percent of a RoCE frame).
    pub fn taken(&mut self, bytes: u64) {
        self.bytes += bytes;
    }

    /// The ring ran empty at `now`: how to wait for more, by the rate since it last did.
    /// Sleeping wakes once per pause, polling once per block: whichever wakes less.
    pub fn wait(&mut self, now: Instant) -> Wait {
        let elapsed = now.saturating_duration_since(self.since).as_secs_f64();
        let rate = if elapsed > 0.0 {
            self.bytes as f64 / elapsed
        } else {
            0.0
        };
        self.since = now;
        self.bytes = 0;
        let blocks_per_second = rate / RING_BLOCK_BYTES;
        if blocks_per_second * MOST.as_secs_f64() <= 1.0 {
            return Wait::Poll;
        }
        let fills_share = (self.ring_bytes / RING_SHARE) as f64 / rate;
        Wait::Sleep(Duration::from_secs_f64(fills_share).clamp(LEAST, MOST))
    }
}

/// One thread captures, decodes and analyses while it keeps up: a second thread costs 10%
/// more CPU (the decoded frames cross cores, and two threads wake where one would), so it is
/// started only once the ring has not been emptied for this long.
const BEHIND_AFTER: Duration = Duration::from_millis(250);

/// Whether the capture, done on the thread that analyses, falls behind the traffic: the ring
/// not emptied for `BEHIND_AFTER`, or frames dropped.
#[derive(Debug)]
pub struct Backlog {
    emptied: Instant,
    drops: Option<u64>,
}

impl Backlog {
    pub fn new(now: Instant) -> Backlog {
        Backlog {
            emptied: now,
            drops: None,
        }
    }

    /// The ring ran empty at `now`.
    pub fn emptied(&mut self, now: Instant) {
        self.emptied = now;
    }

    /// Whether one thread is behind at `now`, with the kernel's drop count as last read.
    pub fn behind(&mut self, now: Instant, drops: Option<u64>) -> bool {
        let dropped = match (self.drops, drops) {
            (Some(before), Some(after)) => after > before,
            _ => false,
        };
        self.drops = drops.or(self.drops);
        dropped || now.saturating_duration_since(self.emptied) >= BEHIND_AFTER
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RING: u64 = 64 << 20;

    fn wait_after(ring: u64, bytes: u64, elapsed: Duration) -> Wait {
        let start = Instant::now();
        let mut pacer = Pacer::new(ring, start);
        pacer.taken(bytes);
        pacer.wait(start + elapsed)
    }

    #[test]
    fn an_idle_or_quiet_link_polls() {
        assert_eq!(wait_after(RING, 0, Duration::from_millis(5)), Wait::Poll);
        // 10,000 frames/s of 1 KB: a block every 25 ms, fewer wakes than sleeping 10 ms
        assert_eq!(
            wait_after(RING, 10_000, Duration::from_millis(1)),
            Wait::Poll
        );
        // no time passed: no rate known
        assert_eq!(wait_after(RING, 5_000, Duration::ZERO), Wait::Poll);
    }

    #[test]
    fn a_loaded_link_sleeps_longer_the_more_ring_there_is() {
        // 300,000 frames/s of 1 KB into 64 MiB: 1/16 fills in 14 ms, so the longest pause
        let busy = 300_000_000 / 1000;
        assert_eq!(
            wait_after(RING, busy, Duration::from_millis(1)),
            Wait::Sleep(MOST)
        );
        // the same into 8 MiB: 1/16 fills in 1.7 ms
        match wait_after(8 << 20, busy, Duration::from_millis(1)) {
            Wait::Sleep(d) => assert!(d > LEAST && d < Duration::from_millis(2), "{d:?}"),
            w => panic!("{w:?}"),
        }
        // into tcpdump's default 2 MiB, the shortest pause
        assert_eq!(
            wait_after(2 << 20, busy, Duration::from_millis(1)),
            Wait::Sleep(LEAST)
        );
    }

    #[test]
    fn the_rate_is_that_since_the_ring_last_ran_empty() {
        let start = Instant::now();
        let mut pacer = Pacer::new(RING, start);
        pacer.taken(300_000);
        let later = start + Duration::from_millis(1);
        assert!(matches!(pacer.wait(later), Wait::Sleep(_)));
        // the traffic stopped: nothing since
        assert_eq!(pacer.wait(later + Duration::from_millis(10)), Wait::Poll);
    }

    #[test]
    fn one_thread_keeps_up_while_the_ring_runs_empty() {
        let start = Instant::now();
        let mut b = Backlog::new(start);
        let mut now = start;
        for _ in 0..100 {
            now += Duration::from_millis(50);
            b.emptied(now - Duration::from_millis(10));
            assert!(!b.behind(now, Some(0)));
        }
    }

    #[test]
    fn a_ring_never_emptied_for_a_quarter_second_is_behind() {
        let start = Instant::now();
        let mut b = Backlog::new(start);
        assert!(!b.behind(start + Duration::from_millis(249), None));
        assert!(b.behind(start + BEHIND_AFTER, None));
    }

    #[test]
    fn frames_dropped_are_behind_at_once() {
        let start = Instant::now();
        let mut b = Backlog::new(start);
        // Drops before the first reading (none here) are not this thread's doing.
        assert!(!b.behind(start, Some(3)));
        assert!(!b.behind(start, Some(3)));
        assert!(b.behind(start, Some(4)));
    }
}
