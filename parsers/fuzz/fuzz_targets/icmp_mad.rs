//! Any bytes as an ICMP or ICMPv6 message quoting a RoCE packet, and as an RDMA-CM MAD:
//! the parsers never panic, and what they return is self-consistent.
#![no_main]

use libfuzzer_sys::fuzz_target;
use roce_parsers::{icmp, mad};

fuzz_target!(|data: &[u8]| {
    for v6 in [false, true] {
        if let Some(e) = icmp::parse(data, v6) {
            assert_eq!(e.v6, v6);
            let _ = e.name();
        }
    }
    if let Some(roce_parsers::CmMessage::Reject { reason, .. }) = mad::parse(data) {
        let _ = mad::reject_reason_name(reason);
    }
});
