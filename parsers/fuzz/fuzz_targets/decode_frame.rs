//! Any bytes as a frame of every supported (and one unsupported) link type: decoding must never
//! panic, and the per-frame outputs (text line, JSON) must be produced for whatever decoded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use roce_parsers::decode_frame;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, bytes)) = data.split_first() else {
        return;
    };
    let linktype = [1u32, 113, 276, 101, 228, 229, 197][usize::from(selector) % 7];
    // Half the time pretend the frame was longer on the wire (a snap-length cut).
    let orig_len = bytes.len() as u32 + u32::from(selector & 0x80 != 0) * 100;
    let frame = decode_frame(linktype, bytes, orig_len);
    let mut out = Vec::new();
    let mut line = String::new();
    roce_sniff::outputs::packets::write_json_line(&mut out, 1, 0, &frame).expect("write to memory");
    roce_sniff::outputs::packets::write_text_line(
        &mut out,
        1,
        roce_sniff::outputs::packets::RelativeTime {
            ns: 0,
            nanosecond: true,
        },
        &frame,
        &mut line,
    )
    .expect("write to memory");
    let record = roce_parsers::capture::Record {
        ts_ns: 0,
        caplen: bytes.len() as u32,
        len: orig_len,
        linktype,
        interface: 0,
        input: 0,
        point: 0,
        frame: 1,
        input_frame: 1,
        file: 0,
        data: bytes,
    };
    let _ = roce_sniff::decode::summary::PacketSummary::new(1, &record, &frame);
});
