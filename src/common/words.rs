//! Small helpers for the words of messages and reports.

/// `1 packet`, `2 packets`: a count with its noun in the right number.
pub fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
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
}
