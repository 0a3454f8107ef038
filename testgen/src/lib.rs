//! Crafted frames and capture files, for the test captures of `testdata/` and for benchmarks.
//! Every value is chosen by the caller, so tests know exactly what to expect.

pub mod bulk;
pub mod churn;
pub mod correlate;
pub mod diagnose;
pub mod encap;
pub mod frames;
pub mod scenario;
pub mod testdata;
pub mod writer;

pub use frames::{FrameSpec, Net, RoceSpec};
pub use writer::{PcapFlavor, PcapWriter, PcapngWriter};
