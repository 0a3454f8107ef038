//! The `/metrics` server's request judgment on any bytes: never a panic, a judgment that only
//! more bytes can change while the head is incomplete, and `/metrics` served only to a GET of
//! it over HTTP/1.
#![no_main]

use libfuzzer_sys::fuzz_target;
use roce_sniff::outputs::metrics::http::{parse_request, Request, MAX_REQUEST};

fuzz_target!(|data: &[u8]| {
    let judged = parse_request(data);
    // A complete head is judged for good: what follows it changes nothing.
    if !matches!(judged, Request::Incomplete) {
        let mut more = data.to_vec();
        more.extend_from_slice(b"GET /metrics HTTP/1.1\r\n\r\n");
        assert_eq!(parse_request(&more), judged);
    }
    match judged {
        Request::Incomplete => assert!(data.len() <= MAX_REQUEST),
        Request::TooLarge => assert!(data.len() > MAX_REQUEST),
        Request::Metrics => {
            assert!(data.starts_with(b"GET /metrics"));
            let line_end = data.iter().position(|&b| b == b'\r').unwrap();
            assert!(line_end < MAX_REQUEST);
            assert!(data[..line_end].windows(8).any(|w| w == b" HTTP/1."));
        }
        _ => {}
    }
});
