//! The full-screen live view, drawn from a snapshot: a header (interface, filter, elapsed
//! time, frames and rate, RoCE share, the kernel's counters), the QPs (troubled first unless
//! sorted otherwise), PFC per priority and source, and the findings raised so far, newest
//! first. A function of the snapshot and the view's own state (scroll, sort, pause), so its
//! tests draw it on ratatui's test backend at several sizes.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table};
use ratatui::Frame;

use super::snapshot::{QpRow, Snapshot};
use crate::common::units::{bit_rate, duration_ns, frame_rate};
use crate::common::words::plural;

/// What the person at the view chose.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ViewState {
    /// First QP row shown.
    pub scroll: usize,
    /// The display is frozen (the capture goes on).
    pub paused: bool,
    /// Colours, unless NO_COLOR is set.
    pub color: bool,
}

/// Wider than this, the QP table also shows packets and ACK RTT.
const WIDE: u16 = 110;

fn style(state: &ViewState, color: Color) -> Style {
    if state.color {
        Style::default().fg(color)
    } else {
        Style::default()
    }
}

fn bold() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}

/// Draws the whole view.
pub fn draw(f: &mut Frame, s: &Snapshot, state: &ViewState) {
    let area = f.area();
    let pfc_rows = s.pfc.len().clamp(1, 4) as u16;
    // Findings get the room they need, up to a third of a tall terminal.
    let finding_rows = (s.findings.len().max(1) as u16 + 1).clamp(5, (area.height / 3).max(5));
    // A fourth header line when the capture missed PSNs: every figure below is a lower bound.
    let header_rows = 3 + u16::from(s.capture_missed > 0);
    let [header, qps, pfc, findings, footer] = Layout::vertical([
        Constraint::Length(header_rows),
        Constraint::Min(4),
        Constraint::Length(pfc_rows + 3),
        Constraint::Length(finding_rows),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_header(f, header, s, state);
    draw_qps(f, qps, s, state);
    draw_pfc(f, pfc, s, state);
    draw_findings(f, findings, s, state);
    let keys = format!(
        " q quit  j/k/arrows scroll  s sort ({})  p {}",
        s.sort.name(),
        if state.paused {
            "resume (display paused)"
        } else {
            "pause display"
        }
    );
    f.render_widget(
        Paragraph::new(keys).style(style(state, Color::DarkGray)),
        footer,
    );
}

fn draw_header(f: &mut Frame, area: Rect, s: &Snapshot, state: &ViewState) {
    let secs = s.elapsed.as_secs();
    let roce_share = if s.frames > 0 {
        s.roce as f64 * 100.0 / s.frames as f64
    } else {
        0.0
    };
    let mut kernel = s.kernel.map_or("kernel: -".into(), |k| {
        format!(
            "kernel: {} received, {} dropped, {} if-dropped",
            k.received, k.dropped, k.if_dropped
        )
    });
    if s.records_dropped > 0 {
        kernel.push_str(&format!("  outputs dropped {} records", s.records_dropped));
    }
    let drops = s.kernel.is_some_and(|k| k.dropped + k.if_dropped > 0);
    let lines = vec![
        Line::from(vec![
            Span::styled(format!("roce-sniff on {}", s.interface), bold()),
            Span::raw(format!(
                "  {:02}:{:02}:{:02}  filter: {}",
                secs / 3600,
                secs / 60 % 60,
                secs % 60,
                s.filter
            )),
        ]),
        Line::from(format!(
            "{} frames ({}, {})  RoCE {} ({roce_share:.0}%) in {} QPs  PFC {}",
            s.frames,
            frame_rate(s.fps),
            bit_rate(s.bps),
            s.roce,
            s.flows_seen,
            s.pfc_frames
        )),
        Line::from(vec![
            Span::styled(
                kernel,
                if drops {
                    style(state, Color::Red)
                } else {
                    Style::default()
                },
            ),
            Span::raw(format!(
                "  gaps {} retx {} CE {} CNP {}",
                s.psn_gaps, s.retransmitted, s.ce, s.cnps
            )),
        ]),
    ];
    let mut lines = lines;
    if s.capture_missed > 0 {
        lines.push(Line::from(Span::styled(
            format!(
                "the capture missed {} the other end acknowledged: figures are lower bounds",
                plural(s.capture_missed, "PSN")
            ),
            style(state, Color::Yellow),
        )));
    }
    f.render_widget(Paragraph::new(lines), area);
}

/// `label` shortened to `width` characters: the start of the addresses and the whole `qp ...`
/// tail kept, the middle cut with `…`.
pub fn shorten(label: &str, width: usize) -> String {
    let n = label.chars().count();
    if n <= width || width < 8 {
        return label.chars().take(width).collect();
    }
    let tail_at = label.find(" qp ").unwrap_or(label.len());
    let tail: String = label[tail_at..].chars().collect();
    let tail_len = tail.chars().count();
    if tail_len + 4 > width {
        let mut s: String = label.chars().take(width - 1).collect();
        s.push('…');
        return s;
    }
    let head_len = width - tail_len - 1;
    let head: String = label.chars().take(head_len).collect();
    format!("{head}…{tail}")
}

/// A finding's message in `width` characters. The flow's label, which report messages carry
/// mid-sentence, gives up room first (down to its `qp ...` tail) so that the figures after it
/// stay in sight; what still does not fit is cut at the end.
pub fn fit_finding(text: &str, flow: Option<&str>, width: usize) -> String {
    let len = |s: &str| s.chars().count();
    if len(text) <= width {
        return text.to_string();
    }
    let Some((label, at)) = flow.and_then(|l| Some((l, text.find(l)?))) else {
        return shorten(text, width);
    };
    let (before, after) = (&text[..at], &text[at + label.len()..]);
    let rest = len(before) + len(after);
    let qp_tail = label.find(" qp ").map_or(label, |i| &label[i + 1..]);
    let label_room = width.saturating_sub(rest);
    let short = if label_room >= len(qp_tail) + 8 {
        shorten(label, label_room)
    } else {
        qp_tail.to_string()
    };
    let text = format!("{before}{short}{after}");
    if len(&text) <= width {
        return text;
    }
    let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

fn rtt(r: &QpRow) -> String {
    match (r.rtt_p50_us, r.rtt_p99_us) {
        (Some(a), Some(b)) => format!("{a:.1}/{b:.1}"),
        _ => "-".into(),
    }
}

fn draw_qps(f: &mut Frame, area: Rect, s: &Snapshot, state: &ViewState) {
    let wide = area.width >= WIDE;
    let numbers: Vec<(&str, u16)> = if wide {
        vec![
            ("packets", 9),
            ("rate", 10),
            ("gaps", 6),
            ("retx", 6),
            ("NAK", 5),
            ("CE", 6),
            ("CNP", 6),
            ("RTT p50/p99 us", 14),
        ]
    } else {
        vec![
            ("rate", 9),
            ("gaps", 5),
            ("retx", 5),
            ("NAK", 4),
            ("CE", 5),
            ("CNP", 5),
        ]
    };
    // Each column and the one space ratatui leaves before it.
    let fixed: u16 = numbers.iter().map(|(_, w)| w + 1).sum::<u16>();
    let label_w = area.width.saturating_sub(fixed).max(8);
    let mut widths = vec![Constraint::Length(label_w)];
    widths.extend(numbers.iter().map(|&(_, w)| Constraint::Length(w)));
    let mut head = vec![Cell::from("QP")];
    head.extend(numbers.iter().map(|(h, _)| Cell::from(*h)));
    let visible = area.height.saturating_sub(3) as usize;
    let rows: Vec<Row> = s
        .qps
        .iter()
        .skip(state.scroll)
        .take(visible)
        .map(|r| {
            let mut cells = vec![Cell::from(shorten(&r.label, usize::from(label_w)))];
            if wide {
                cells.push(Cell::from(r.packets.to_string()));
            }
            cells.push(Cell::from(bit_rate(r.bps)));
            for n in [r.gaps, r.retx, r.naks, r.ce, r.cnps] {
                cells.push(Cell::from(n.to_string()));
            }
            if wide {
                cells.push(Cell::from(rtt(r)));
            }
            let row = Row::new(cells);
            if r.gaps + r.retx + r.naks > 0 {
                row.style(style(state, Color::Red))
            } else if r.ce > r.cnps {
                row.style(style(state, Color::Yellow))
            } else {
                row
            }
        })
        .collect();
    let title = format!(
        " QPs: {} of {} (sorted by {}) ",
        s.qps.len().min(visible),
        s.flows,
        s.sort.name()
    );
    let table = Table::new(rows, widths)
        .header(Row::new(head).style(bold()))
        .block(Block::default().borders(Borders::TOP).title(title));
    f.render_widget(table, area);
}

fn draw_pfc(f: &mut Frame, area: Rect, s: &Snapshot, state: &ViewState) {
    let block = Block::default()
        .borders(Borders::TOP)
        .title(" PFC: priority, source ");
    if s.pfc.is_empty() {
        f.render_widget(Paragraph::new("no PFC frames").block(block), area);
        return;
    }
    let rows: Vec<Row> = s
        .pfc
        .iter()
        .map(|p| {
            let row = Row::new(vec![
                Cell::from(format!(
                    "p{}{}",
                    p.priority,
                    if p.roce { " (RoCE)" } else { "" }
                )),
                Cell::from(p.source.clone()),
                Cell::from(p.xoff.to_string()),
                Cell::from(duration_ns(p.paused_ns)),
                Cell::from(format!("{:.0}%", p.paused_share * 100.0)),
                Cell::from(p.storms.to_string()),
            ]);
            if p.storms > 0 {
                row.style(style(state, Color::Red))
            } else {
                row
            }
        })
        .collect();
    let widths = [
        Constraint::Length(10),
        Constraint::Length(18),
        Constraint::Length(8),
        Constraint::Length(10),
        Constraint::Length(10),
        Constraint::Length(7),
    ];
    let head = Row::new(["prio", "source", "XOFF", "paused", "last 1 s", "storms"]).style(bold());
    f.render_widget(Table::new(rows, widths).header(head).block(block), area);
}

fn draw_findings(f: &mut Frame, area: Rect, s: &Snapshot, state: &ViewState) {
    let fit = usize::from(area.height.saturating_sub(1));
    // Say how many are out of sight: the oldest are cut when the pane is full.
    let title = match s.findings_raised {
        0 => " Findings so far ".to_string(),
        n if n > fit => format!(" Findings so far: {n}, the newest {fit} shown "),
        n => format!(" Findings so far: {n}, newest first "),
    };
    let block = Block::default().borders(Borders::TOP).title(title);
    let lines: Vec<Line> = if s.findings.is_empty() {
        vec![Line::from("nothing looks wrong yet")]
    } else {
        // The code column as wide as the longest code shown, and a space: a long code
        // (loss_on_lossless_priority) ran into its message at a fixed 24.
        let code_width = s
            .findings
            .iter()
            .take(fit)
            .map(|x| x.code.len())
            .max()
            .unwrap_or(0)
            + 1;
        s.findings
            .iter()
            .take(fit)
            .map(|x| {
                let room = usize::from(area.width).saturating_sub(7 + code_width);
                Line::from(vec![
                    Span::raw(format!("{:>5}s ", x.at_s)),
                    Span::styled(format!("{:<code_width$}", x.code), style(state, Color::Red)),
                    Span::raw(fit_finding(&x.text, x.flow.as_deref(), room)),
                ])
            })
            .collect()
    };
    f.render_widget(Paragraph::new(lines).block(block), area);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outputs::live::snapshot::{LiveFinding, PfcRow, SortBy};
    use crate::source::KernelCounters;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn qp(label: &str, gaps: u64, retx: u64, bps: f64) -> QpRow {
        QpRow {
            label: label.into(),
            packets: 5000,
            bytes: 5_000_000,
            bps,
            gaps,
            retx,
            naks: gaps,
            ce: 12,
            cnps: 3,
            rtt_p50_us: Some(7.0),
            rtt_p99_us: Some(39.0),
        }
    }

    /// A fixed analysis state: two QPs (one lossy), a paused RoCE priority, two findings.
    fn fixed() -> Snapshot {
        Snapshot {
            interface: "eth0.100".into(),
            filter: "udp dst port 4791".into(),
            elapsed: std::time::Duration::from_secs(75),
            frames: 58_492,
            bytes: 60_000_000,
            roce: 58_000,
            pfc_frames: 40,
            fps: 12_000.0,
            bps: 97.3e9,
            kernel: Some(KernelCounters {
                received: 58_492,
                dropped: 0,
                if_dropped: 0,
            }),
            flows: 2,
            flows_seen: 2,
            psn_gaps: 3,
            retransmitted: 9,
            ce: 24,
            cnps: 6,
            capture_missed: 0,
            records_dropped: 0,
            sort: SortBy::Trouble,
            qps: vec![
                qp("10.0.0.5 > 10.0.0.2 qp 0x000213 vlan 100", 3, 9, 4.1e9),
                qp(
                    "fd00:1234:5678:9abc::1 > fd00:1234:5678:9abc::2 qp 0x000214 vlan 100",
                    0,
                    0,
                    38_900.0,
                ),
            ],
            pfc: vec![PfcRow {
                priority: 3,
                source: "02:00:00:00:00:5e".into(),
                roce: true,
                xoff: 40,
                paused_ns: 12_500_000,
                paused_share: 0.25,
                storms: 0,
            }],
            findings: vec![
                LiveFinding {
                    at_s: 61,
                    code: "retransmissions",
                    text: "retransmissions on 10.0.0.5 > 10.0.0.2 qp 0x000213 vlan 100".into(),
                    flow: Some("10.0.0.5 > 10.0.0.2 qp 0x000213 vlan 100".into()),
                },
                LiveFinding {
                    at_s: 60,
                    code: "psn_loss",
                    text: "PSN gaps on 10.0.0.5 > 10.0.0.2 qp 0x000213 vlan 100".into(),
                    flow: Some("10.0.0.5 > 10.0.0.2 qp 0x000213 vlan 100".into()),
                },
            ],
            findings_raised: 2,
        }
    }

    fn screen(w: u16, h: u16, s: &Snapshot, state: &ViewState) -> String {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| draw(f, s, state)).unwrap();
        let buf = t.backend().buffer().clone();
        (0..h)
            .map(|y| {
                (0..w)
                    .map(|x| buf[(x, y)].symbol().to_string())
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The capture missed PSNs: a header line says the figures are lower bounds, and the
    /// rest still fits.
    #[test]
    fn the_header_says_when_the_capture_missed_psns() {
        let mut s = fixed();
        assert!(!screen(80, 24, &s, &ViewState::default()).contains("capture missed"));
        s.capture_missed = 4;
        let text = screen(80, 24, &s, &ViewState::default());
        assert!(
            text.contains(
                "the capture missed 4 PSNs the other end acknowledged: figures are lower bounds"
            ),
            "{text}"
        );
        assert!(
            text.contains("10.0.0.5 > 10.0.0.2 qp 0x000213 vlan 100"),
            "{text}"
        );
        assert!(text.lines().all(|l| l.chars().count() <= 80));
    }

    /// Outputs that dropped records say so in the header, beside the kernel's counters.
    #[test]
    fn the_header_says_when_outputs_dropped_records() {
        let mut s = fixed();
        assert!(!screen(80, 24, &s, &ViewState::default()).contains("outputs dropped"));
        s.records_dropped = 1_234;
        let text = screen(120, 24, &s, &ViewState::default());
        assert!(text.contains("outputs dropped 1234 records"), "{text}");
    }

    #[test]
    fn fits_80x24_with_the_qps_pfc_and_findings() {
        let text = screen(80, 24, &fixed(), &ViewState::default());
        for want in [
            "roce-sniff on eth0.100",
            "00:01:15",
            "58492 frames (12.0k/s, 97.3 Gb/s)",
            "kernel: 58492 received, 0 dropped, 0 if-dropped",
            "10.0.0.5 > 10.0.0.2 qp 0x000213 vlan 100",
            "gaps",
            "retx",
            "NAK",
            "CE",
            "CNP",
            "4.10 Gb/s",
            "38.9 kb/s",
            "p3 (RoCE)",
            "12.5 ms",
            "25%",
            // The code column as wide as the longest code shown (retransmissions).
            "psn_loss        PSN gaps on 10.0.0.5 > 10.0.0.2 qp 0x000213 vlan 100",
            "q quit",
        ] {
            assert!(text.contains(want), "{want:?} not on the screen:\n{text}");
        }
        // The long IPv6 label is shortened to fit, its QP kept.
        assert!(
            text.contains("…:: qp 0x000214") || text.contains("… qp 0x000214"),
            "{text}"
        );
        // Newest finding first.
        assert!(text.find("retransmissions").unwrap() < text.find("psn_loss").unwrap());
        assert!(text.lines().all(|l| l.chars().count() <= 80));
    }

    #[test]
    fn a_wide_terminal_shows_packets_and_rtt() {
        let narrow = screen(80, 24, &fixed(), &ViewState::default());
        assert!(!narrow.contains("RTT"), "{narrow}");
        let wide = screen(140, 30, &fixed(), &ViewState::default());
        assert!(wide.contains("RTT p50/p99 us"), "{wide}");
        assert!(wide.contains("7.0/39.0"), "{wide}");
        assert!(
            wide.contains("fd00:1234:5678:9abc::1 > fd00:1234:5678:9abc::2 qp 0x000214"),
            "{wide}"
        );
    }

    #[test]
    fn scrolling_and_pause_show() {
        let state = ViewState {
            scroll: 1,
            paused: true,
            color: false,
        };
        let text = screen(80, 24, &fixed(), &state);
        assert!(!text.contains("qp 0x000213 vlan 100     "), "{text}");
        assert!(text.contains("display paused"), "{text}");
    }

    #[test]
    fn a_small_terminal_degrades_without_breaking() {
        for (w, h) in [(50, 12), (30, 8), (80, 10)] {
            let text = screen(w, h, &fixed(), &ViewState::default());
            assert!(text.contains("roce-sniff on"), "{w}x{h}:\n{text}");
            assert!(text.lines().all(|l| l.chars().count() <= usize::from(w)));
        }
    }

    #[test]
    fn findings_grow_their_pane_and_say_how_many_are_out_of_sight() {
        let mut s = fixed();
        s.findings = (0..12)
            .rev()
            .map(|i| LiveFinding {
                at_s: i,
                code: "psn_loss",
                text: format!("PSN gaps on 10.0.0.{i} > 10.0.0.2 qp 0x000213"),
                flow: None,
            })
            .collect();
        s.findings_raised = 12;
        // A tall terminal shows them all, newest first.
        let tall = screen(100, 60, &s, &ViewState::default());
        assert!(tall.contains("Findings so far: 12, newest first"), "{tall}");
        assert!(
            tall.contains("10.0.0.11 >") && tall.contains("10.0.0.0 >"),
            "{tall}"
        );
        // A short one keeps the newest and says the rest are out of sight.
        let short = screen(100, 24, &s, &ViewState::default());
        assert!(
            short.contains("Findings so far: 12, the newest 7 shown"),
            "{short}"
        );
        assert!(
            short.contains("10.0.0.11 >") && !short.contains("10.0.0.0 >"),
            "{short}"
        );
    }

    #[test]
    fn labels_are_shortened_in_the_middle() {
        let l = "fd00:1234:5678:9abc::1 > fd00:1234:5678:9abc::2 qp 0x000214 vlan 100";
        let s = shorten(l, 40);
        assert_eq!(s.chars().count(), 40);
        assert!(s.ends_with(" qp 0x000214 vlan 100"), "{s}");
        assert!(s.starts_with("fd00:1234:5678"), "{s}");
        assert_eq!(
            shorten("10.0.0.1 > 10.0.0.2 qp 0x000001", 40),
            "10.0.0.1 > 10.0.0.2 qp 0x000001"
        );
    }

    #[test]
    fn a_long_finding_gives_up_its_label_before_its_figures() {
        let flow = "10.0.0.5 > 10.0.0.2 qp 0x000213 vlan 100";
        let text = format!(
            "PSN loss on RC {flow}: 3 PSNs lost (3 recovered by retransmission, 0 never seen) \
             in 1 gap"
        );
        // What fits is shown whole.
        assert_eq!(fit_finding(&text, Some(flow), 200), text);
        // Some room: the label is shortened in its middle, the figures all kept.
        let s = fit_finding(&text, Some(flow), 115);
        assert_eq!(s.chars().count(), 115, "{s}");
        assert!(s.starts_with("PSN loss on RC 10.0"), "{s}");
        assert!(s.contains("… qp 0x000213 vlan 100: 3 PSNs lost"), "{s}");
        assert!(s.ends_with("in 1 gap"), "{s}");
        // An 80-column terminal (49 left for the text): the QP stays, the figure after it too,
        // and the end is cut.
        let s = fit_finding(&text, Some(flow), 49);
        assert_eq!(s, "PSN loss on RC qp 0x000213 vlan 100: 3 PSNs lost…");
        // A finding of no flow is cut at its end.
        let storm = "PFC storm on priority 4 from 02:00:00:00:00:5f: 1 storm, the first 150.3 ms";
        let s = fit_finding(storm, None, 49);
        assert_eq!(s.chars().count(), 49);
        assert!(
            s.starts_with("PFC storm on priority 4 from 02:00:00:00:00:5f"),
            "{s}"
        );
    }

    #[test]
    fn a_long_code_does_not_run_into_its_message() {
        let mut s = fixed();
        s.findings.insert(
            0,
            LiveFinding {
                at_s: 62,
                code: "loss_on_lossless_priority",
                text: "3 PSNs lost on a priority PFC paused".into(),
                flow: None,
            },
        );
        let shown = screen(120, 40, &s, &ViewState::default());
        assert!(
            shown.contains("loss_on_lossless_priority 3 PSNs lost"),
            "{shown}"
        );
    }
}
