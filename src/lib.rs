//! roce-sniff: a RoCEv2 capture analyzer. Data flows one way: a `source` hands out records,
//! the `pipeline` decodes them (`decode`) into a sink of `run`, which feeds the `analysis`;
//! the analysis hands out values (`model`) that the sink passes to the `outputs` (report
//! renderers, Parquet, events, metrics, the live screen, the annotated copy). `cli` turns flags
//! into a configuration, `run` holds one file per mode, `common` what every part shares.
//! docs/design.md states the rules; tests/layout.rs checks them.
//!
//! The only `unsafe` code is the memory map of a capture file (`source::mapped`, with its
//! contract and guards; `--no-mmap` reads files in blocks instead), one call that returns
//! freed heap pages to the system (`common::memory`) and the `poll` that waits for the kernel's capture
//! ring (`source::live`).
#![deny(unsafe_code)]

/// `eprintln!` that never panics: once the terminal is gone (a closed SSH session), writing
/// to it fails, and `eprintln!` would panic before the outputs still to be written (the
/// report file, the events) are written.
macro_rules! stderr_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub mod analysis;
pub mod cli;
pub mod common;
pub mod correlate;
pub mod decode;
pub mod model;
pub mod outputs;
pub mod pipeline;
pub mod run;
pub mod source;

pub use run::{analyze_bytes, main_with_args, run, run_in_memory, run_in_memory_files};
