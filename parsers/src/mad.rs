//! RDMA-CM (InfiniBand CM MADs on QP 1): the ConnectRequest and ConnectReply carry each side's
//! QPN and starting PSN, which pair the two directions of a connection and start its PSN
//! history, and the path MTU; a ConnectReject says why a connection was refused. Layouts:
//! IBTA Vol. 1, chapter 12 (REQ 12.6.5, REP 12.6.8, REJ 12.6.7).

use crate::Qpn;

/// MAD management class of the Communication Manager.
const MGMT_CLASS_CM: u8 = 0x07;
const ATTR_REQ: u16 = 0x0010;
const ATTR_REP: u16 = 0x0013;
const ATTR_REJ: u16 = 0x0012;
const MAD_HEADER_LEN: usize = 24;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmMessage {
    /// ConnectRequest: the active side's communication ID and QPN, and the path MTU in bytes.
    Request {
        comm_id: u32,
        qpn: Qpn,
        /// The first PSN the active side sends.
        starting_psn: u32,
        path_mtu: Option<u32>,
        /// Remote CM Response Timeout: the active side waits 4.096 us x 2^this for the answer
        /// before it sends the REQ again (rdma_cm asks for 20: 4.3 s).
        response_timeout: u8,
        /// Retry Count (0-7): how often the connection's QPs resend a request no ACK answers
        /// before they give up (the QP goes to the error state).
        retry_count: u8,
        /// RNR Retry Count (0-7; 7 retries for ever): how often they resend after an RNR NAK
        /// before they give up. 7 when a snap length cut it off.
        rnr_retry_count: u8,
        /// The primary path's Local ACK Timeout: the requester resends a request no ACK
        /// answered after 4.096 us x 2^this (0: no timeout, or a snap length cut it off).
        local_ack_timeout: u8,
    },
    /// ConnectReply: the passive side's QPN and first PSN, and the request it answers.
    Reply {
        comm_id: u32,
        remote_comm_id: u32,
        qpn: Qpn,
        starting_psn: u32,
    },
    /// ConnectReject: the message refused (0 REQ, 1 REP, 2 other), of which connection
    /// (`remote_comm_id` is the other side's ID), and why.
    Reject {
        comm_id: u32,
        remote_comm_id: u32,
        rejected: u8,
        reason: u16,
    },
}

/// The name of a ConnectReject reason (IBTA Vol. 1, table 112).
pub fn reject_reason_name(reason: u16) -> &'static str {
    match reason {
        1 => "no QP available",
        2 => "no EE context available",
        3 => "no resources available",
        4 => "timeout",
        5 => "unsupported request",
        6 => "invalid communication ID",
        7 => "invalid communication instance",
        8 => "invalid service ID (nothing listens there)",
        9 => "invalid transport service type",
        10 => "stale connection",
        11 => "RDC does not exist",
        12 => "primary remote GID rejected",
        13 => "primary remote LID rejected",
        14 => "invalid primary SL",
        15 => "invalid primary traffic class",
        16 => "invalid primary hop limit",
        17 => "invalid primary packet rate",
        18..=23 => "invalid alternate path",
        24 => "port and CM redirection",
        25 => "port redirection",
        26 => "invalid path MTU",
        27 => "insufficient responder resources",
        28 => "consumer reject (the application refused)",
        29 => "RNR retry count reject",
        30 => "duplicate local communication ID",
        31 => "unsupported class version",
        32 | 33 => "invalid flow label",
        _ => "reserved reason",
    }
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at + 4)?;
    Some(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

fn be24(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at + 3)?;
    Some(u32::from_be_bytes([0, s[0], s[1], s[2]]))
}

fn mtu_bytes(code: u8) -> Option<u32> {
    match code {
        1..=5 => Some(128u32 << code),
        _ => None,
    }
}

/// Parses a MAD from a UD payload; `None` unless it is a CM REQ or REP.
pub fn parse(mad: &[u8]) -> Option<CmMessage> {
    if mad.len() < MAD_HEADER_LEN || mad[1] != MGMT_CLASS_CM {
        return None;
    }
    let attr = u16::from_be_bytes([mad[16], mad[17]]);
    let cm = &mad[MAD_HEADER_LEN..];
    match attr {
        ATTR_REQ => Some(CmMessage::Request {
            comm_id: be32(cm, 0)?,
            qpn: Qpn(be24(cm, 32)?),
            starting_psn: be24(cm, 44)?,
            path_mtu: cm.get(50).and_then(|b| mtu_bytes(b >> 4)),
            response_timeout: cm.get(43)? >> 3,
            retry_count: cm.get(47)? & 0x7,
            // Later in the message than what the REQ needs: a snap length may cut them off,
            // and the REQ still pairs the connection.
            rnr_retry_count: cm.get(50).map_or(7, |b| b & 0x7),
            local_ack_timeout: cm.get(95).map_or(0, |b| b >> 3),
        }),
        ATTR_REP => Some(CmMessage::Reply {
            comm_id: be32(cm, 0)?,
            remote_comm_id: be32(cm, 4)?,
            qpn: Qpn(be24(cm, 12)?),
            starting_psn: be24(cm, 20)?,
        }),
        ATTR_REJ => Some(CmMessage::Reject {
            comm_id: be32(cm, 0)?,
            remote_comm_id: be32(cm, 4)?,
            rejected: cm.get(8)? >> 6,
            reason: u16::from_be_bytes([*cm.get(10)?, *cm.get(11)?]),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_and_reply() {
        let mut mad = vec![0u8; 256];
        mad[0] = 1;
        mad[1] = MGMT_CLASS_CM;
        mad[16..18].copy_from_slice(&ATTR_REQ.to_be_bytes());
        mad[24..28].copy_from_slice(&0x34cf_b552u32.to_be_bytes());
        mad[24 + 32..24 + 35].copy_from_slice(&[0, 0, 0x11]);
        // MTU code 3 (1024 bytes), RNR Retry Count 6; the primary path's Local ACK Timeout 14.
        mad[24 + 50] = 0x36;
        mad[24 + 95] = 14 << 3;
        mad[24 + 44..24 + 47].copy_from_slice(&[0x0a, 0xbc, 0xde]);
        // Remote CM Response Timeout 20 above transport type RC and flow control.
        mad[24 + 43] = 20 << 3 | 0b001;
        // Local CM Response Timeout 18 above Retry Count 5.
        mad[24 + 47] = 18 << 3 | 5;
        assert_eq!(
            parse(&mad),
            Some(CmMessage::Request {
                comm_id: 0x34cf_b552,
                qpn: Qpn(0x11),
                starting_psn: 0x0a_bcde,
                path_mtu: Some(1024),
                response_timeout: 20,
                retry_count: 5,
                rnr_retry_count: 6,
                local_ack_timeout: 14,
            })
        );
        mad[16..18].copy_from_slice(&ATTR_REP.to_be_bytes());
        mad[24 + 4..24 + 8].copy_from_slice(&0x1234u32.to_be_bytes());
        mad[24 + 12..24 + 15].copy_from_slice(&[0, 0, 0x22]);
        mad[24 + 20..24 + 23].copy_from_slice(&[0, 0x01, 0x00]);
        assert_eq!(
            parse(&mad),
            Some(CmMessage::Reply {
                comm_id: 0x34cf_b552,
                remote_comm_id: 0x1234,
                qpn: Qpn(0x22),
                starting_psn: 0x100,
            })
        );
        mad[16..18].copy_from_slice(&ATTR_REJ.to_be_bytes());
        mad[24 + 8] = 0x00;
        mad[24 + 10..24 + 12].copy_from_slice(&8u16.to_be_bytes());
        assert_eq!(
            parse(&mad),
            Some(CmMessage::Reject {
                comm_id: 0x34cf_b552,
                remote_comm_id: 0x1234,
                rejected: 0,
                reason: 8,
            })
        );
        assert_eq!(
            reject_reason_name(8),
            "invalid service ID (nothing listens there)"
        );
        assert_eq!(parse(&mad[..20]), None);
        mad[1] = 0x01;
        assert_eq!(parse(&mad), None);
    }

    #[test]
    fn a_request_cut_by_a_snap_length_still_pairs_the_connection() {
        let mut mad = vec![0u8; 256];
        mad[0] = 1;
        mad[1] = MGMT_CLASS_CM;
        mad[16..18].copy_from_slice(&ATTR_REQ.to_be_bytes());
        mad[24 + 32..24 + 35].copy_from_slice(&[0, 0, 0x11]);
        mad[24 + 47] = 5;
        mad[24 + 50] = 0x36;
        mad[24 + 95] = 14 << 3;
        // Cut after the Retry Count: no MTU, RNR retries for ever, no ACK timeout known.
        match parse(&mad[..24 + 48]) {
            Some(CmMessage::Request {
                qpn,
                retry_count,
                rnr_retry_count,
                local_ack_timeout,
                path_mtu,
                ..
            }) => {
                assert_eq!(qpn, Qpn(0x11));
                assert_eq!((retry_count, rnr_retry_count, local_ack_timeout), (5, 7, 0));
                assert_eq!(path_mtu, None);
            }
            other => panic!("{other:?}"),
        }
    }
}
