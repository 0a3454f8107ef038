//! Any bytes as a whole capture file through the reader, the decoder and the analyzer (with
//! timelines and verification on): never a panic, a hang or a huge allocation.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = roce_sniff::analyze_bytes(data);
});
