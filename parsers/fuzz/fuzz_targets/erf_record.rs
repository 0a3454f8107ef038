//! Any bytes as an ERF record (Ethernet, InfiniBand and other record types, with or without
//! extension headers), as a frame and as a whole ERF file through the analysis: never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use roce_parsers::{decode_frame, link::LINKTYPE_ERF};

fuzz_target!(|data: &[u8]| {
    let frame = decode_frame(LINKTYPE_ERF, data, data.len() as u32);
    let mut out = Vec::new();
    roce_sniff::outputs::packets::write_json_line(&mut out, 1, 0, &frame).expect("write to memory");
    let _ = roce_sniff::analyze_bytes(data);
});
