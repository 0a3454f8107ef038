//! `--fail-on`: the findings that make a run fail (exit code 1).

use crate::model::{Finding, FindingCode, Severity};

/// `--fail-on`: the findings that make a run fail, by severity (that one and those above it)
/// or by code.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FailOn {
    /// The least severe level that fails.
    pub level: Option<Severity>,
    pub codes: Vec<FindingCode>,
}

impl FailOn {
    /// `critical`, `warning`, `info` or finding codes, comma-separated.
    pub fn parse(s: &str) -> Result<FailOn, String> {
        let mut fail = FailOn::default();
        for word in s.split(',').map(str::trim) {
            let level = match word {
                "critical" => Some(Severity::Critical),
                "warning" => Some(Severity::Warning),
                "info" => Some(Severity::Info),
                _ => None,
            };
            if let Some(level) = level {
                // Of two levels, the lower fails on more: keep it.
                fail.level = Some(fail.level.map_or(level, |l| l.max(level)));
            } else if let Some(code) = FindingCode::ALL.into_iter().find(|c| c.name() == word) {
                fail.codes.push(code);
            } else {
                let known = ["critical", "warning", "info"]
                    .into_iter()
                    .chain(FindingCode::ALL.map(|c| c.name()));
                return Err(format!(
                    "`{word}` is neither a level (critical, warning, info) nor a finding code{} (docs/json.md lists them)",
                    super::did_you_mean(word, known)
                ));
            }
        }
        Ok(fail)
    }

    /// The first of `findings` that fails the run.
    pub fn first_failing<'a>(&self, findings: &'a [Finding]) -> Option<&'a Finding> {
        findings.iter().find(|f| {
            // Severity orders critical first: "at or above" a level is "not after it".
            self.level.is_some_and(|l| f.severity <= l) || self.codes.contains(&f.code)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(severity: Severity, code: FindingCode) -> Finding {
        Finding {
            severity,
            code,
            message: String::new(),
            cause: String::new(),
            flow: None,
            count: 1,
            frames: vec![1],
            frame_refs: Vec::new(),
            group: None,
            grouped_flows: Vec::new(),
        }
    }

    #[test]
    fn a_level_fails_on_itself_and_what_is_above_it() {
        let found = [
            finding(Severity::Info, FindingCode::SnaplenHidesIcrc),
            finding(Severity::Warning, FindingCode::Dscp0WithPcp),
        ];
        let fails = |s: &str| {
            FailOn::parse(s)
                .unwrap()
                .first_failing(&found)
                .map(|f| f.code)
        };
        assert_eq!(fails("critical"), None);
        assert_eq!(fails("warning"), Some(FindingCode::Dscp0WithPcp));
        assert_eq!(fails("info"), Some(FindingCode::SnaplenHidesIcrc));
        assert_eq!(fails("psn_loss"), None);
        assert_eq!(
            fails("psn_loss,snaplen_hides_icrc"),
            Some(FindingCode::SnaplenHidesIcrc)
        );
        assert_eq!(
            fails("critical, dscp0_with_pcp"),
            Some(FindingCode::Dscp0WithPcp)
        );
        assert_eq!(
            FailOn::parse("warning,info").unwrap().level,
            Some(Severity::Info)
        );
    }

    #[test]
    fn an_unknown_word_is_named() {
        let err = FailOn::parse("critical,psn-loss").unwrap_err();
        assert!(err.starts_with("`psn-loss` is neither"), "{err}");
    }
}
