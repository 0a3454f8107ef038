//! Model values built by hand, for the tests of what reads them (the outputs): a flow, a
//! finding and an empty report, as the analysis would hand them over.

use super::{Finding, FindingCode, FlowReport, FlowRole, Report, Severity};

/// A report of nothing captured: what an output's end is given when its content does not
/// matter to the test.
pub fn empty_report() -> Report {
    Report {
        schema: super::SCHEMA,
        capture: Default::default(),
        flows: Vec::new(),
        pfc: Default::default(),
        hosts: Vec::new(),
        findings: Vec::new(),
        verify: None,
    }
}

/// A data flow of 10.0.0.5 > 10.0.0.2, QP 0x000213, VLAN 100, number `id`, 2714 packets.
pub fn flow_report(id: usize) -> FlowReport {
    FlowReport {
        id,
        src: "10.0.0.5".into(),
        dst: "10.0.0.2".into(),
        dqpn: 0x213,
        vlan: Some(100),
        transport: Some("RC"),
        role: FlowRole::Data,
        packets: 2714,
        bytes: 11_520_930,
        payload_bytes: 11_116_544,
        requests: 2714,
        messages: 2714,
        first_frame: 4,
        first_ts: 1.0,
        last_ts: 1.36,
        duration_us: 360_000.0,
        rate: Default::default(),
        path_mtu: Some(4096),
        path_mtu_at_least: None,
        pcp: Default::default(),
        dscp: Default::default(),
        ecn: Default::default(),
        opcodes: Default::default(),
        psn: Default::default(),
        loss_frames: Default::default(),
        retransmit_frames: Default::default(),
        read_response_gaps: 0,
        acks: 273,
        feedback: Default::default(),
        ack_rtt_us: Default::default(),
        read_latency_us: Default::default(),
        recovery: Default::default(),
        icrc_bad: 0,
        oversize: 0,
        peer: None,
        paired_by: None,
        native_ib: false,
    }
}

/// A finding of `code` at `severity`, on `flow` when given, citing frame 4881.
pub fn finding(severity: Severity, code: FindingCode, flow: Option<&str>) -> Finding {
    Finding {
        severity,
        code,
        message: format!("{code} as a test tells it"),
        cause: "a test".into(),
        flow: flow.map(String::from),
        count: 1,
        frames: vec![4881],
        frame_refs: Vec::new(),
        group: None,
        grouped_flows: Vec::new(),
    }
}
