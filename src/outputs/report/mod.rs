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
