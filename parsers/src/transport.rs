//! The extension headers between the BTH and the payload, decoded in wire order
//! (DETH, XRCETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH; CNP reserved bytes).

use crate::aeth::{aeth, Aeth, AETH_LEN};
use crate::atomic::{
    atomic_ack_eth, atomic_eth, AtomicAckEth, AtomicEth, ATOMIC_ACK_ETH_LEN, ATOMIC_ETH_LEN,
};
use crate::cnp::CNP_RESERVED_LEN;
use crate::deth::{deth, Deth, DETH_LEN};
use crate::immdt::{u32_header, IETH_LEN, IMMDT_LEN};
use crate::reth::{reth, Reth, RETH_LEN};
use crate::{truncated, DecodeError, Layer, Opcode};

const XRCETH_LEN: usize = 4;

/// The extension headers of one packet; absent ones are `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExtHeaders {
    pub deth: Option<Deth>,
    /// XRC SRQ number (24 bits).
    pub xrc_srqn: Option<u32>,
    pub reth: Option<Reth>,
    pub atomic: Option<AtomicEth>,
    pub aeth: Option<Aeth>,
    pub atomic_ack: Option<AtomicAckEth>,
    pub imm: Option<u32>,
    pub ieth: Option<u32>,
}

impl ExtHeaders {
    /// Decodes the extension headers `opcode` calls for at the start of `data`.
    /// Returns what was decoded, the bytes after them, and the error that stopped decoding
    /// if the bytes ran out (the headers before the cut are kept).
    pub fn parse(opcode: Opcode, data: &[u8]) -> (ExtHeaders, &[u8], Option<DecodeError>) {
        let layout = opcode.ext_layout();
        let mut ext = ExtHeaders::default();
        let mut rest = data;
        macro_rules! take {
            ($present:expr, $parser:expr, $len:expr, $slot:expr) => {
                if $present {
                    match $parser(rest) {
                        Ok((r, v)) => {
                            rest = r;
                            $slot = Some(v);
                        }
                        Err(_) => {
                            return (
                                ext,
                                rest,
                                Some(truncated(Layer::ExtHeader, $len, rest.len())),
                            )
                        }
                    }
                }
            };
        }
        take!(layout.deth, deth, DETH_LEN, ext.deth);
        take!(layout.xrceth, u32_header, XRCETH_LEN, ext.xrc_srqn);
        if let Some(srqn) = ext.xrc_srqn.as_mut() {
            *srqn &= 0x00ff_ffff;
        }
        take!(layout.reth, reth, RETH_LEN, ext.reth);
        take!(layout.atomic_eth, atomic_eth, ATOMIC_ETH_LEN, ext.atomic);
        take!(layout.aeth, aeth, AETH_LEN, ext.aeth);
        take!(
            layout.atomic_ack_eth,
            atomic_ack_eth,
            ATOMIC_ACK_ETH_LEN,
            ext.atomic_ack
        );
        take!(layout.immdt, u32_header, IMMDT_LEN, ext.imm);
        take!(layout.ieth, u32_header, IETH_LEN, ext.ieth);
        if layout.cnp_reserved {
            if rest.len() < CNP_RESERVED_LEN {
                return (
                    ext,
                    rest,
                    Some(truncated(Layer::ExtHeader, CNP_RESERVED_LEN, rest.len())),
                );
            }
            rest = &rest[CNP_RESERVED_LEN..];
        }
        (ext, rest, None)
    }

    /// Total length of the extension headers `opcode` calls for.
    pub fn wire_len(opcode: Opcode) -> usize {
        let l = opcode.ext_layout();
        let mut n = 0;
        for (present, len) in [
            (l.deth, DETH_LEN),
            (l.xrceth, XRCETH_LEN),
            (l.reth, RETH_LEN),
            (l.atomic_eth, ATOMIC_ETH_LEN),
            (l.aeth, AETH_LEN),
            (l.atomic_ack_eth, ATOMIC_ACK_ETH_LEN),
            (l.immdt, IMMDT_LEN),
            (l.ieth, IETH_LEN),
            (l.cnp_reserved, CNP_RESERVED_LEN),
        ] {
            if present {
                n += len;
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_only_with_immediate_has_reth_then_imm() {
        let mut raw = Vec::new();
        Reth {
            va: 1,
            rkey: 2,
            dlen: 3,
        }
        .emit(&mut raw);
        raw.extend_from_slice(&0xcafe_f00du32.to_be_bytes());
        raw.extend_from_slice(b"data");
        let (ext, rest, err) = ExtHeaders::parse(Opcode(0x0b), &raw);
        assert_eq!(err, None);
        assert_eq!(ext.reth.unwrap().dlen, 3);
        assert_eq!(ext.imm, Some(0xcafe_f00d));
        assert_eq!(rest, b"data");
        assert_eq!(ExtHeaders::wire_len(Opcode(0x0b)), 20);
    }

    #[test]
    fn cut_inside_keeps_what_came_before() {
        let mut raw = Vec::new();
        Reth {
            va: 1,
            rkey: 2,
            dlen: 3,
        }
        .emit(&mut raw);
        raw.extend_from_slice(&[0xca, 0xfe]);
        let (ext, _, err) = ExtHeaders::parse(Opcode(0x0b), &raw);
        assert!(ext.reth.is_some());
        assert_eq!(ext.imm, None);
        assert_eq!(
            err,
            Some(DecodeError::Truncated {
                layer: Layer::ExtHeader,
                need: 4,
                have: 2
            })
        );
    }

    #[test]
    fn ud_and_atomic_ack() {
        let mut raw = Vec::new();
        Deth { qkey: 5, sqpn: 6 }.emit(&mut raw);
        raw.extend_from_slice(&7u32.to_be_bytes());
        let (ext, rest, err) = ExtHeaders::parse(Opcode(0x65), &raw);
        assert_eq!(
            (ext.deth.unwrap().sqpn, ext.imm, rest.len(), err),
            (6, Some(7), 0, None)
        );

        let raw = [0x00, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 42];
        let (ext, _, err) = ExtHeaders::parse(Opcode(0x12), &raw);
        assert_eq!(err, None);
        assert_eq!(ext.aeth.unwrap().msn, 9);
        assert_eq!(ext.atomic_ack.unwrap().orig_data, 42);
    }
}
