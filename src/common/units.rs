//! Numbers as a person reads them on a screen: rates in the unit that fits.

/// `0 b/s`, `812 b/s`, `38.9 kb/s`, `4.10 Mb/s`, `97.3 Gb/s`: three significant digits.
pub fn bit_rate(bps: f64) -> String {
    scaled(bps, "b/s")
}

/// `0/s`, `950/s`, `12.3k/s`, `2.41M/s`.
pub fn frame_rate(fps: f64) -> String {
    let (v, prefix) = prefix_of(fps);
    format!("{}{prefix}/s", digits(v, prefix.is_empty()))
}

fn scaled(v: f64, unit: &str) -> String {
    let (v, prefix) = prefix_of(v);
    format!("{} {prefix}{unit}", digits(v, prefix.is_empty()))
}

fn prefix_of(v: f64) -> (f64, &'static str) {
    let v = v.max(0.0);
    for (scale, prefix) in [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")] {
        if v >= scale {
            return (v / scale, prefix);
        }
    }
    (v, "")
}

fn digits(v: f64, whole: bool) -> String {
    if whole || v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A duration in ns as `0 s`, `335 us`, `12.5 ms`, `3.20 s`.
pub fn duration_ns(ns: u64) -> String {
    let v = ns as f64;
    if ns == 0 {
        "0".into()
    } else if v < 1e6 {
        format!("{} us", digits(v / 1e3, false))
    } else if v < 1e9 {
        format!("{} ms", digits(v / 1e6, false))
    } else {
        format!("{} s", digits(v / 1e9, false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_in_the_unit_that_fits() {
        assert_eq!(bit_rate(0.0), "0 b/s");
        assert_eq!(bit_rate(812.0), "812 b/s");
        assert_eq!(bit_rate(38_900.0), "38.9 kb/s");
        assert_eq!(bit_rate(4_100_000.0), "4.10 Mb/s");
        assert_eq!(bit_rate(97.3e9), "97.3 Gb/s");
        assert_eq!(frame_rate(12_345.0), "12.3k/s");
        assert_eq!(frame_rate(950.0), "950/s");
        assert_eq!(duration_ns(335_000), "335 us");
        assert_eq!(duration_ns(12_500_000), "12.5 ms");
    }
}
