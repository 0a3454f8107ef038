//! Small helpers for the words of messages and reports.

/// `1 packet`, `2 packets`: a count with its noun in the right number.
pub fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// A span of time as a message says it: `4.3 s`, `120 ms`, `0.5 ms`.
pub fn duration(ns: u64) -> String {
    let ms = ns as f64 / 1e6;
    if ms >= 1_000.0 {
        format!("{:.1} s", ms / 1e3)
    } else if ms >= 1.0 {
        format!("{ms:.0} ms")
    } else {
        format!("{ms:.1} ms")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn plurals() {
        assert_eq!(super::plural(1, "gap"), "1 gap");
        assert_eq!(super::plural(0, "flow"), "0 flows");
        assert_eq!(super::plural(2, "storm"), "2 storms");
    }

    #[test]
    fn durations() {
        assert_eq!(super::duration(4_294_967_296), "4.3 s");
        assert_eq!(super::duration(120_400_000), "120 ms");
        assert_eq!(super::duration(450_000), "0.5 ms");
    }
}
