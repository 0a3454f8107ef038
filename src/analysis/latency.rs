//! Latency samples with bounded memory: exact count and max, percentiles from a reservoir.

use std::collections::BinaryHeap;

use crate::model::LatencySummary;

/// Samples kept for percentiles per series. Below this, percentiles are exact.
const RESERVOIR: usize = 4096;

#[derive(Debug, Clone)]
pub struct Samples {
    count: u64,
    max_ns: u64,
    kept: Vec<u64>,
    /// Samples kept at most.
    reservoir: usize,
    /// Deterministic generator for reservoir replacement, so results never depend on timing.
    rng: u64,
}

impl Default for Samples {
    fn default() -> Self {
        Samples {
            count: 0,
            max_ns: 0,
            kept: Vec::new(),
            reservoir: RESERVOIR,
            rng: 0x9e37_79b9_7f4a_7c15,
        }
    }
}

crate::empty!(Samples);

impl Samples {
    /// Samples that keep at most `reservoir` values (exact percentiles below that).
    pub fn with_reservoir(reservoir: usize) -> Self {
        Samples {
            reservoir: reservoir.max(1),
            ..Samples::default()
        }
    }

    pub fn add(&mut self, ns: u64) {
        self.count += 1;
        self.max_ns = self.max_ns.max(ns);
        if self.kept.len() < self.reservoir {
            self.kept.push(ns);
        } else {
            // xorshift64*
            self.rng ^= self.rng >> 12;
            self.rng ^= self.rng << 25;
            self.rng ^= self.rng >> 27;
            let r = self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d);
            let slot = r % self.count;
            if (slot as usize) < self.reservoir {
                self.kept[slot as usize] = ns;
            }
        }
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// The samples kept (all of them below the reservoir size), in nanoseconds.
    pub fn kept(&self) -> &[u64] {
        &self.kept
    }

    /// Adds what `other` holds: its count and maximum, and the samples it kept.
    pub fn merge(&mut self, other: &Samples) {
        for &v in &other.kept {
            self.add(v);
        }
        self.count += other.count - other.kept.len() as u64;
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// In microseconds.
    pub fn summary(&self) -> LatencySummary {
        self.summary_in(1e3)
    }

    /// In units of `unit` of what was added (1e3: microseconds of nanoseconds).
    pub fn summary_in(&self, unit: f64) -> LatencySummary {
        summary_of(self.count, self.max_ns, self.kept.clone(), unit)
    }
}

/// Count, max and percentiles of `kept`, the samples kept of `count`, in units of `unit`.
fn summary_of(count: u64, max_ns: u64, mut kept: Vec<u64>, unit: f64) -> LatencySummary {
    if count == 0 {
        return LatencySummary::default();
    }
    kept.sort_unstable();
    // Nearest-rank percentile.
    let pct = |p: f64| {
        let rank = ((p / 100.0) * kept.len() as f64).ceil().max(1.0) as usize;
        kept[rank.min(kept.len()) - 1] as f64 / unit
    };
    LatencySummary {
        count,
        p50: Some(pct(50.0)),
        p99: Some(pct(99.0)),
        p999: Some(pct(99.9)),
        max: Some(max_ns as f64 / unit),
    }
}

/// Samples pooled from many flows (a host's figures), which reach the pool in an order that
/// depends on how the analysis was split into shards and when flows ended: the `reservoir`
/// samples with the smallest keys are kept, a key hashing the sample's flow (its first frame)
/// and its place among that flow's samples, so that the same ones are kept in any order.
#[derive(Debug, Clone)]
pub struct PooledSamples {
    count: u64,
    max_ns: u64,
    /// (key, value): a max-heap on the key, the first to leave on top.
    kept: BinaryHeap<(u64, u64)>,
    reservoir: usize,
}

impl PooledSamples {
    pub fn with_reservoir(reservoir: usize) -> Self {
        PooledSamples {
            count: 0,
            max_ns: 0,
            kept: BinaryHeap::new(),
            reservoir: reservoir.max(1),
        }
    }

    /// Adds the samples of the flow whose first frame is `flow_first_frame`.
    pub fn pool(&mut self, samples: &Samples, flow_first_frame: u64) {
        if samples.count == 0 {
            return;
        }
        self.count += samples.count;
        self.max_ns = self.max_ns.max(samples.max_ns);
        let seed = flow_first_frame.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        for (place, &ns) in (0u64..).zip(&samples.kept) {
            self.keep(mix64(seed ^ place), ns);
        }
    }

    /// Adds what `other` pooled.
    pub fn merge(&mut self, other: &PooledSamples) {
        self.count += other.count;
        self.max_ns = self.max_ns.max(other.max_ns);
        for &(key, ns) in &other.kept {
            self.keep(key, ns);
        }
    }

    fn keep(&mut self, key: u64, ns: u64) {
        if self.kept.len() < self.reservoir {
            self.kept.push((key, ns));
        } else if self.kept.peek().is_some_and(|&top| (key, ns) < top) {
            self.kept.pop();
            self.kept.push((key, ns));
        }
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// In units of `unit` of what was added.
    pub fn summary_in(&self, unit: f64) -> LatencySummary {
        let kept = self.kept.iter().map(|&(_, ns)| ns).collect();
        summary_of(self.count, self.max_ns, kept, unit)
    }

    /// In microseconds.
    pub fn summary(&self) -> LatencySummary {
        self.summary_in(1e3)
    }
}

/// A 64-bit finalizer (splitmix64's): every input bit moves every output bit.
pub fn mix64(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_percentiles_for_small_sets() {
        let mut s = Samples::default();
        for us in 1..=100u64 {
            s.add(us * 1000);
        }
        let m = s.summary();
        assert_eq!(m.count, 100);
        assert_eq!(m.p50, Some(50.0));
        assert_eq!(m.p99, Some(99.0));
        assert_eq!(m.max, Some(100.0));
        assert_eq!(Samples::default().summary().p50, None);
    }

    #[test]
    fn bounded_for_large_sets() {
        let mut s = Samples::default();
        for i in 0..100_000u64 {
            s.add(i);
        }
        assert_eq!(s.kept.len(), RESERVOIR);
        let m = s.summary();
        assert_eq!(m.count, 100_000);
        let p50 = m.p50.unwrap() * 1000.0;
        assert!((40_000.0..60_000.0).contains(&p50), "{p50}");
    }

    #[test]
    fn pooled_samples_keep_the_same_samples_in_any_order() {
        let flows: Vec<(u64, Samples)> = (0..40u64)
            .map(|f| {
                let mut s = Samples::default();
                for i in 0..(f % 7 + 10) {
                    s.add(f * 1000 + i * 13);
                }
                (f * 97 + 5, s)
            })
            .collect();
        let pooled = |order: &mut dyn Iterator<Item = &(u64, Samples)>| {
            let mut p = PooledSamples::with_reservoir(64);
            for (first, s) in order {
                p.pool(s, *first);
            }
            p.summary()
        };
        let forward = pooled(&mut flows.iter());
        assert_eq!(forward, pooled(&mut flows.iter().rev()));
        // Split in two pools, merged either way round.
        let (mut a, mut b) = (
            PooledSamples::with_reservoir(64),
            PooledSamples::with_reservoir(64),
        );
        for (k, (first, s)) in flows.iter().enumerate() {
            [&mut a, &mut b][k % 2].pool(s, *first);
        }
        let mut ab = a.clone();
        ab.merge(&b);
        b.merge(&a);
        assert_eq!(ab.summary(), forward);
        assert_eq!(b.summary(), forward);
        assert_eq!(
            forward.count,
            flows.iter().map(|(_, s)| s.count()).sum::<u64>()
        );
    }

    #[test]
    fn pooled_samples_below_the_reservoir_are_exact() {
        let mut s = Samples::default();
        for us in 1..=100u64 {
            s.add(us * 1000);
        }
        let mut p = PooledSamples::with_reservoir(256);
        p.pool(&s, 1);
        assert_eq!(p.summary(), s.summary());
    }
}
