//! RDMA-CM (InfiniBand CM MADs on QP 1): the ConnectRequest and ConnectReply carry each side's
//! QPN, which pairs the two directions of a connection, and the path MTU.

use crate::Qpn;

/// MAD management class of the Communication Manager.
const MGMT_CLASS_CM: u8 = 0x07;
const ATTR_REQ: u16 = 0x0010;
const ATTR_REP: u16 = 0x0013;
const MAD_HEADER_LEN: usize = 24;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmMessage {
    /// ConnectRequest: the active side's communication ID and QPN, and the path MTU in bytes.
    Request {
        comm_id: u32,
        qpn: Qpn,
        path_mtu: Option<u32>,
    },
    /// ConnectReply: the passive side's QPN, and the request it answers.
    Reply {
        comm_id: u32,
        remote_comm_id: u32,
        qpn: Qpn,
    },
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
            path_mtu: cm.get(50).and_then(|b| mtu_bytes(b >> 4)),
        }),
        ATTR_REP => Some(CmMessage::Reply {
            comm_id: be32(cm, 0)?,
            remote_comm_id: be32(cm, 4)?,
            qpn: Qpn(be24(cm, 12)?),
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
        mad[24 + 50] = 0x37;
        assert_eq!(
            parse(&mad),
            Some(CmMessage::Request {
                comm_id: 0x34cf_b552,
                qpn: Qpn(0x11),
                path_mtu: Some(1024)
            })
        );
        mad[16..18].copy_from_slice(&ATTR_REP.to_be_bytes());
        mad[24 + 4..24 + 8].copy_from_slice(&0x1234u32.to_be_bytes());
        mad[24 + 12..24 + 15].copy_from_slice(&[0, 0, 0x22]);
        assert_eq!(
            parse(&mad),
            Some(CmMessage::Reply {
                comm_id: 0x34cf_b552,
                remote_comm_id: 0x1234,
                qpn: Qpn(0x22)
            })
        );
        assert_eq!(parse(&mad[..20]), None);
        mad[1] = 0x01;
        assert_eq!(parse(&mad), None);
    }
}
