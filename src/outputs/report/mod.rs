//! The renderers: text, JSON, the verification table, HTML, plots and the report directory.
//! They read the report model (`crate::model`) and nothing else of the analysis.

pub mod correlation;
pub mod correlation_dir;
mod correlation_html;
pub mod dir;
pub mod html;
pub mod json;
pub mod nics;
pub mod plots;
pub mod text;
pub mod verify;

/// Frame numbers as every renderer lists them: `4, 9, 14`.
/// A finding's frames: `file:frame` when several files were read as one (each frame named in
/// its own file, as Wireshark shows it there), else the frame numbers.
pub fn finding_frames(f: &crate::model::Finding) -> String {
    if f.frame_refs.is_empty() {
        return frame_list(&f.frames);
    }
    f.frame_refs
        .iter()
        .map(|r| format!("{}:{}", r.file, r.frame))
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn frame_list(frames: &[u64]) -> String {
    frames
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Damaged regions named in full up to this many; the rest are counted.
const REGIONS_NAMED: usize = 3;

/// The damaged regions of a capture in one phrase, as the report's header and the verdict
/// say them: "1 region unread (a.pcap: 76 bytes from byte 2152, read on at byte 2228); 76
/// bytes in all".
pub fn damage_summary(d: &crate::model::CaptureDamage) -> String {
    let shown = crate::common::error::shown;
    let mut named: Vec<String> = d
        .regions
        .iter()
        .take(REGIONS_NAMED)
        .map(|r| {
            let after = match r.resynced_at {
                Some(at) => format!("read on at byte {at}"),
                None => "nothing readable after it".into(),
            };
            format!(
                "{}: {} bytes from byte {}, {after}",
                shown(&r.file),
                r.bytes_skipped,
                r.offset
            )
        })
        .collect();
    let more = d.region_count.saturating_sub(named.len() as u64);
    if more > 0 {
        named.push(format!("{more} more"));
    }
    let mut parts = Vec::new();
    if d.region_count > 0 {
        parts.push(format!(
            "{} unread ({})",
            crate::common::words::plural(d.region_count, "region"),
            named.join("; ")
        ));
    }
    if d.packets_skipped > 0 {
        parts.push(format!(
            "{} of an interface never described skipped",
            crate::common::words::plural(d.packets_skipped, "packet block")
        ));
    }
    format!("{}; {} bytes in all", parts.join(", "), d.bytes_skipped)
}
