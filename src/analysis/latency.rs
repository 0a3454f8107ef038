//! Latency samples with bounded memory: exact count and max, percentiles from a reservoir.

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
        if self.count == 0 {
            return LatencySummary::default();
        }
        let mut v = self.kept.clone();
        v.sort_unstable();
        // Nearest-rank percentile.
        let pct = |p: f64| {
            let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
            v[rank.min(v.len()) - 1] as f64 / unit
        };
        LatencySummary {
            count: self.count,
            p50: Some(pct(50.0)),
            p99: Some(pct(99.0)),
            p999: Some(pct(99.9)),
            max: Some(self.max_ns as f64 / unit),
        }
    }
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
}
