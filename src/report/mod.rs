//! The renderers: text, JSON, the verification table, HTML, plots and the report directory.
//! They read the report model (`crate::model`) and nothing else of the analysis.

pub mod correlation;
pub mod correlation_dir;
pub mod dir;
pub mod html;
pub mod plots;
pub mod text;
pub mod verify;

/// Frame numbers as every renderer lists them: `4, 9, 14`.
pub fn frame_list(frames: &[u64]) -> String {
    frames
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
