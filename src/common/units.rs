//! Numbers as a person reads them, the same in the text and HTML reports, the live view, the
//! status line and the findings' messages: one way to write a rate and one a duration.

/// `0 b/s`, `812 b/s`, `38.9 kb/s`, `4.10 Mb/s`, `97.3 Gb/s`: three significant digits, kept
/// when they are zeros so that a column of rates does not jitter.
pub fn bit_rate(bps: f64) -> String {
    scaled(bps, "b/s")
}

/// A rate given in Gb/s, as the reports' figures hold it, written as `bit_rate` writes it.
pub fn gbit_rate(gbps: f64) -> String {
    bit_rate(gbps * 1e9)
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

/// Prefixes from the largest, with what each stands for.
const PREFIXES: [(f64, &str, &str); 5] = [
    (1e12, "T", "Tb/s"),
    (1e9, "G", "Gb/s"),
    (1e6, "M", "Mb/s"),
    (1e3, "k", "kb/s"),
    (1.0, "", "b/s"),
];

/// The largest prefix that keeps `v` at 1 or more (none below 1000).
fn prefix_for(v: f64) -> (f64, &'static str, &'static str) {
    PREFIXES
        .into_iter()
        .find(|&(scale, _, _)| v >= scale)
        .unwrap_or(PREFIXES[PREFIXES.len() - 1])
}

fn prefix_of(v: f64) -> (f64, &'static str) {
    let v = v.max(0.0);
    let (scale, prefix, _) = prefix_for(v);
    (v / scale, prefix)
}

/// The unit an axis of bit rates up to `max_bps` reads in, as `bit_rate` would write its top,
/// and the bits per second one of it stands for: `("Mb/s", 1e6)` for 400 Mb/s.
pub fn bit_rate_unit(max_bps: f64) -> (&'static str, f64) {
    let (scale, _, unit) = prefix_for(max_bps.max(0.0));
    (unit, scale)
}

fn digits(v: f64, whole: bool) -> String {
    if whole || v >= 99.95 {
        format!("{v:.0}")
    } else if v >= 9.995 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A duration in ns: `0 s`, `850 ns`, `5 us`, `7.5 us`, `335 us`, `40.1 ms`, `150 ms`,
/// `4.29 s`. Three significant digits, trailing zeros dropped (a bin or timeout of 1 ms
/// reads `1 ms`); the unit is the largest that keeps the number at 1 or more.
pub fn duration_ns(ns: u64) -> String {
    if ns == 0 {
        return "0 s".into();
    }
    let v = ns as f64;
    let (v, unit) = [(1e9, "s"), (1e6, "ms"), (1e3, "us")]
        .into_iter()
        .find(|&(scale, _)| v >= scale * 0.9995)
        .map_or((v, "ns"), |(scale, unit)| (v / scale, unit));
    let text = digits(v, unit == "ns");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    format!("{text} {unit}")
}

/// A duration given in microseconds, as the reports' figures hold it.
pub fn duration_us(us: f64) -> String {
    duration_ns((us.max(0.0) * 1e3).round() as u64)
}

/// A duration that has a sign, as a clock offset: `+300 us`, `-200 us`, `0 s`.
pub fn signed_duration_us(us: f64) -> String {
    let sign = if us > 0.0 {
        "+"
    } else if us < 0.0 {
        "-"
    } else {
        ""
    };
    format!("{sign}{}", duration_us(us.abs()))
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
        assert_eq!(gbit_rate(0.239), "239 Mb/s");
        assert_eq!(gbit_rate(0.09), "90.0 Mb/s");
        assert_eq!(gbit_rate(0.000706), "706 kb/s");
        assert_eq!(frame_rate(12_345.0), "12.3k/s");
        assert_eq!(frame_rate(950.0), "950/s");
    }

    #[test]
    fn a_rate_axis_reads_in_the_largest_unit_that_keeps_its_top_at_one_or_more() {
        assert_eq!(bit_rate_unit(0.4e9), ("Mb/s", 1e6));
        assert_eq!(bit_rate_unit(25e9), ("Gb/s", 1e9));
        assert_eq!(bit_rate_unit(0.0009e9), ("kb/s", 1e3));
        assert_eq!(bit_rate_unit(3e-6 * 1e9), ("kb/s", 1e3));
        assert_eq!(bit_rate_unit(3e-7 * 1e9), ("b/s", 1.0));
    }

    #[test]
    fn rounding_up_to_the_next_digit_keeps_three_digits() {
        assert_eq!(bit_rate(99_960.0), "100 kb/s");
        assert_eq!(bit_rate(9_999_000.0), "10.0 Mb/s");
        assert_eq!(duration_ns(999_600), "1 ms");
    }

    #[test]
    fn durations_in_the_unit_that_fits() {
        assert_eq!(duration_ns(0), "0 s");
        assert_eq!(duration_ns(850), "850 ns");
        assert_eq!(duration_ns(5_000), "5 us");
        assert_eq!(duration_ns(7_500), "7.5 us");
        assert_eq!(duration_ns(335_000), "335 us");
        assert_eq!(duration_ns(450_000), "450 us");
        assert_eq!(duration_ns(1_000_000), "1 ms");
        assert_eq!(duration_ns(12_500_000), "12.5 ms");
        assert_eq!(duration_ns(40_135_500), "40.1 ms");
        assert_eq!(duration_ns(150_335_500), "150 ms");
        assert_eq!(duration_ns(4_294_967_296), "4.29 s");
        assert_eq!(duration_ns(3_600_000_000_000), "3600 s");
        assert_eq!(duration_us(40_135.5), "40.1 ms");
        assert_eq!(duration_us(7.0), "7 us");
        assert_eq!(signed_duration_us(300.0), "+300 us");
        assert_eq!(signed_duration_us(-200.0), "-200 us");
        assert_eq!(signed_duration_us(0.0), "0 s");
    }
}
