//! The renderers: text, JSON, the verification table, HTML, plots and the report directory.
//! They read the report model (`crate::model`) and nothing else of the analysis.

pub mod dir;
pub mod html;
pub mod plots;
pub mod text;
pub mod verify;
