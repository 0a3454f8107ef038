//! `--metrics`: the server, bound before any work, and the output that feeds it.

use crate::cli::ReportOptions;
use crate::common::error::Error;
use crate::outputs::metrics::http::MetricsServer;
use crate::outputs::metrics::publish::MetricsOutput;

/// Binds the server of `--metrics` (before any work, so that a bad address fails at once) and
/// makes the output that publishes to it. `report_is_whole`: the report covers the whole
/// capture (a file), so its findings are the final ones.
pub(super) fn open_metrics(
    opts: &ReportOptions,
    report_is_whole: bool,
) -> Result<Option<(MetricsServer, Box<MetricsOutput>)>, Error> {
    let Some(cfg) = &opts.metrics else {
        return Ok(None);
    };
    let server = MetricsServer::bind(&cfg.addr)
        .map_err(|e| Error::Usage(format!("--metrics={}: cannot listen there: {e}", cfg.addr)))?;
    stderr_line!("roce-sniff: metrics at http://{}/metrics", server.addr);
    let output = MetricsOutput::new(cfg.max_qps, server.publisher(), report_is_whole)
        .map_err(|e| Error::Live(format!("--metrics: cannot start its thread: {e}")))?;
    Ok(Some((server, Box::new(output))))
}

/// The final figures (published when the capture ended) served until SIGINT or SIGTERM, so
/// that a scrape after the end gets them.
pub(super) fn serve_final(server: &MetricsServer) {
    let stop = crate::common::signals::flag();
    // An earlier Ctrl-C ended the read: the report is out, and so is the wait.
    if stop.swap(false, std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    stderr_line!(
        "roce-sniff: the capture is analysed; serving its final metrics at http://{}/metrics until SIGINT or SIGTERM",
        server.addr
    );
    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// The metrics as a real analysis feeds them: figures, ended flows and findings told.
#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use crate::analysis::testing::analysed;
    use crate::analysis::Analyzer;
    use crate::model::SourceStatus;
    use crate::outputs::metrics::tests::series;
    use crate::outputs::metrics::{Metrics, QpCounts};

    /// PSNs the other end acknowledged are the capture's misses, not the QP's loss: QP 0x100
    /// of diagnose/capture_missed.pcap has 3 gaps and lost nothing; 0x104 lost its gap.
    #[test]
    fn psns_lost_leave_out_what_the_capture_missed() {
        let (an, counts) = analysed("diagnose/capture_missed.pcap");
        let mut m = Metrics::new(1000);
        m.update(&counts, &an.figures(), &SourceStatus::default());
        let text = m.text();
        let lost = series(&text, "roce_sniff_qp_psns_lost_total");
        let of = |qp: &str| {
            lost.iter()
                .find(|(k, _)| k.contains(&format!("qp=\"{qp}\"")))
                .map(|(_, v)| *v)
        };
        assert_eq!(of("0x000100"), Some(0.0), "{text}");
        assert_eq!(of("0x000104"), Some(1.0), "{text}");
        assert!(
            text.contains("roce_sniff_capture_missed_psns_total 5\n"),
            "{text}"
        );
    }

    #[test]
    fn qp_series_are_bounded_and_always_add_up_to_the_totals() {
        let (an, counts) = analysed("sample.pcap");
        let total_packets: u64 = an.flows().iter().map(|f| f.packets).sum();
        for max in [1000, 3] {
            let mut m = Metrics::new(max);
            m.update(&counts, &an.figures(), &SourceStatus::default());
            let text = m.text();
            let packets = series(&text, "roce_sniff_qp_packets_total");
            // Each QP of its own up to the bound, plus `other`.
            assert_eq!(packets.len(), an.flows().len().min(max) + 1, "{text}");
            let sum: f64 = packets.iter().map(|(_, v)| v).sum();
            assert_eq!(sum as u64, total_packets);
            let other = packets
                .iter()
                .find(|(k, _)| k.contains("qp=\"other\""))
                .unwrap();
            assert_eq!(other.1 > 0.0, max < an.flows().len(), "{max}: {other:?}");
            let gaps: f64 = series(&text, "roce_sniff_qp_psn_gaps_total")
                .iter()
                .map(|(_, v)| v)
                .sum();
            assert_eq!(gaps as u64, an.totals.psn_gaps);
        }
        let mut m = Metrics::new(1000);
        m.update(&counts, &an.figures(), &SourceStatus::default());
        let text = m.text();
        assert!(text.contains(
            "roce_sniff_qp_psn_gaps_total{src=\"10.0.0.5\",dst=\"10.0.0.2\",qp=\"0x000213\",vlan=\"100\"} 1"
        ), "{text}");
        assert!(text.contains("roce_sniff_frames_total{kind=\"roce\"} 13822"));
        assert!(text.contains("roce_sniff_frames_total{kind=\"pfc\"} 801"));
        assert!(text.contains(
            "roce_sniff_pfc_pause_frames_total{source=\"02:00:00:00:00:5e\",priority=\"3\"} 200"
        ), "{text}");
        // The report's one storm, on priority 4; none where priority 3 was paused.
        assert!(
            text.contains(
                "roce_sniff_pfc_storms_total{source=\"02:00:00:00:00:5f\",priority=\"4\"} 1"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "roce_sniff_pfc_storms_total{source=\"02:00:00:00:00:5e\",priority=\"3\"} 0"
            ),
            "{text}"
        );
        // The histogram counts every RTT, cumulatively.
        let buckets = series(&text, "roce_sniff_ack_rtt_seconds_bucket");
        assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1));
        assert_eq!(buckets.last().unwrap().1 as u64, an.totals.ack_rtt.count);
        // A second update with nothing new changes no counter.
        m.update(&counts, &an.figures(), &SourceStatus::default());
        assert_eq!(m.text(), text);
    }

    /// What Prometheus's `increase()` adds up over every series of `family` it ever scraped:
    /// each series' rises, a fall being a counter reset (a series that came back from 0).
    #[derive(Default)]
    struct Scraped {
        last: HashMap<String, f64>,
        /// Counted by series before they were reset.
        before_resets: f64,
    }

    impl Scraped {
        fn scrape(&mut self, text: &str, family: &str) {
            for (labels, v) in series(text, family) {
                let last = self.last.entry(labels).or_default();
                if v < *last {
                    self.before_resets += *last;
                }
                *last = v;
            }
        }

        fn counted(&self) -> f64 {
            self.before_resets + self.last.values().sum::<f64>()
        }
    }

    #[test]
    fn the_series_of_ended_flows_leave_and_every_count_shows_in_one_series_once() {
        every_count_shows_in_one_series_once(false);
    }

    /// The ended flows' counts merged, as the update thread takes them once it fell behind:
    /// no packet is lost or counted twice.
    #[test]
    fn merged_ended_flows_count_every_packet_once() {
        every_count_shows_in_one_series_once(true);
    }

    fn every_count_shows_in_one_series_once(merged: bool) {
        use crate::analysis::AnalysisConfig;
        use roce_testgen::churn::{write_churn, ChurnConfig};
        let cfg = ChurnConfig {
            qps: 2_000,
            ..ChurnConfig::default()
        };
        let mut data = Vec::new();
        write_churn(&mut data, cfg).unwrap();
        let mut an = Analyzer::new(AnalysisConfig {
            flow_timeout_ns: Some(1_000_000),
            keep_ended: false,
            ..AnalysisConfig::default()
        });
        an.tell_ended(crate::analysis::lifetime::EndedParts {
            reports: false,
            counters: true,
        });
        let mut m = Metrics::new(50);
        let (mut scraped, mut ended) = (Scraped::default(), 0);
        let (an, counts) = crate::analysis::testing::feed(&data, an, |an, counts| {
            let (mut sum, mut ids) = (QpCounts::default(), Vec::new());
            for e in an.take_ended() {
                let c = e.counters.expect("asked for");
                if merged {
                    sum.plus(QpCounts::from(&c));
                    ids.push(c.id);
                } else {
                    m.flow_ended(&c);
                }
                ended += 1;
            }
            if merged {
                m.flows_ended_merged(sum, &ids);
            }
            if counts.frames % 1000 == 0 {
                m.update(counts, &an.figures(), &SourceStatus::default());
                let text = m.text();
                scraped.scrape(&text, "roce_sniff_qp_packets_total");
                // Open flows have series of their own, and the flows that ended since the
                // last update one last time (and `other`).
                let series = series(&text, "roce_sniff_qp_packets_total").len();
                assert!(series <= (an.flow_count() + ended).min(50) + 1, "{series}");
                ended = 0;
            }
        });
        m.update(&counts, &an.figures(), &SourceStatus::default());
        let text = m.text();
        scraped.scrape(&text, "roce_sniff_qp_packets_total");
        // Each packet counted once over all the series scraped: the leaving QPs' counts did
        // not move into `other` as well.
        assert_eq!(scraped.counted() as u64, counts.roce);
        assert!(an.flows_ended() > cfg.flows() / 2);
        // Ended flows leave after their last update: open flows and `other` stay.
        m.update(&counts, &an.figures(), &SourceStatus::default());
        let left = series(&m.text(), "roce_sniff_qp_packets_total").len();
        assert!(left <= an.flow_count().min(50) + 1, "{left}");
        assert!(text.contains(&format!(
            "roce_sniff_flows_ended_total {}",
            an.flows_ended()
        )));
        assert!(text.contains(&format!("roce_sniff_flows_active {}", an.flow_count())));
    }

    #[test]
    fn every_finding_code_has_its_series_from_the_start() {
        let mut m = Metrics::new(10);
        let zero = m.text();
        let findings = series(&zero, "roce_sniff_findings_total");
        assert_eq!(findings.len(), crate::model::FindingCode::ALL.len() * 3);
        assert!(findings.iter().all(|(_, v)| *v == 0.0));
        // The findings as the events tell them, and the final report's again at the end:
        // each (code, flow) counted once.
        let finding = |code, flow: Option<&str>| crate::model::Finding {
            severity: crate::model::Severity::Critical,
            code,
            message: String::new(),
            cause: String::new(),
            flow: flow.map(String::from),
            count: 1,
            frames: Vec::new(),
            frame_refs: Vec::new(),
            group: None,
            grouped_flows: Vec::new(),
        };
        let storm = |flow| finding(crate::model::FindingCode::PfcStorm, flow);
        let mut watch = crate::analysis::watch::FindingWatch::default();
        let mut tell = |m: &mut Metrics, findings: &[crate::model::Finding]| {
            let told = watch.untold(0, findings);
            m.findings_told(&told.map_or(Vec::new(), |t| t.told().collect()));
        };
        tell(&mut m, &[storm(None), storm(Some("a"))]);
        tell(&mut m, &[storm(None), storm(Some("a")), storm(Some("b"))]);
        // A loss first on one flow, then grouped with two more: three flows, not four.
        let loss = |flow| finding(crate::model::FindingCode::PsnLoss, flow);
        tell(&mut m, &[loss(Some("a"))]);
        let group = crate::model::Finding {
            group: Some(crate::model::FindingGroup {
                flows: 3,
                worst: Vec::new(),
            }),
            grouped_flows: vec!["a".into(), "b".into(), "c".into()],
            ..loss(None)
        };
        tell(&mut m, std::slice::from_ref(&group));
        tell(&mut m, &[group, loss(Some("b"))]);
        let text = m.text();
        assert!(
            text.contains("roce_sniff_findings_total{code=\"pfc_storm\",severity=\"critical\"} 3"),
            "{text}"
        );
        assert!(
            text.contains("roce_sniff_findings_total{code=\"psn_loss\",severity=\"critical\"} 3"),
            "{text}"
        );
        assert_eq!(
            series(&text, "roce_sniff_findings_total").len(),
            findings.len()
        );
    }
}
