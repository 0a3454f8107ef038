//! Base Transport Header (12 bytes).

use nom::bytes::complete::take;
use nom::IResult;

use crate::{truncated, DecodeError, Layer, Opcode};

pub const BTH_LEN: usize = 12;

/// The decoded BTH: every field, FECN and BECN included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bth {
    pub opcode: Opcode,
    /// Solicited event.
    pub se: bool,
    /// MigReq.
    pub m: bool,
    /// Pad count: bytes of padding before the ICRC (0..3).
    pub pad: u8,
    /// Transport header version.
    pub tver: u8,
    pub pkey: u16,
    pub fecn: bool,
    pub becn: bool,
    /// Destination QP (24 bits).
    pub dqpn: u32,
    pub ackreq: bool,
    /// Packet sequence number (24 bits).
    pub psn: u32,
}

/// One length check for the whole fixed header, then the fields from the array: a check per
/// field (nom's numbers one by one) cost 5% of the decode's instructions.
fn bth(input: &[u8]) -> IResult<&[u8], Bth> {
    let (input, header) = take(BTH_LEN)(input)?;
    let h: [u8; BTH_LEN] = header.try_into().unwrap_or([0; BTH_LEN]);
    let be24 = |at: usize| u32::from_be_bytes([0, h[at], h[at + 1], h[at + 2]]);
    let flags = h[1];
    Ok((
        input,
        Bth {
            opcode: Opcode(h[0]),
            se: flags & 0x80 != 0,
            m: flags & 0x40 != 0,
            pad: (flags >> 4) & 0x03,
            tver: flags & 0x0f,
            pkey: u16::from_be_bytes([h[2], h[3]]),
            fecn: h[4] & 0x80 != 0,
            becn: h[4] & 0x40 != 0,
            dqpn: be24(5),
            ackreq: h[8] & 0x80 != 0,
            psn: be24(9),
        },
    ))
}

impl Bth {
    /// Parses the BTH at the start of `data`; returns it and the bytes after it.
    pub fn parse(data: &[u8]) -> Result<(Bth, &[u8]), DecodeError> {
        match bth(data) {
            Ok((rest, h)) => Ok((h, rest)),
            Err(_) => Err(truncated(Layer::Bth, BTH_LEN, data.len())),
        }
    }

    /// Writes the header into `out` (12 bytes); used to craft test frames.
    pub fn emit(&self, out: &mut [u8; BTH_LEN]) {
        out[0] = self.opcode.0;
        out[1] = (u8::from(self.se) << 7)
            | (u8::from(self.m) << 6)
            | ((self.pad & 3) << 4)
            | (self.tver & 0x0f);
        out[2..4].copy_from_slice(&self.pkey.to_be_bytes());
        out[4] = (u8::from(self.fecn) << 7) | (u8::from(self.becn) << 6);
        out[5..8].copy_from_slice(&self.dqpn.to_be_bytes()[1..]);
        out[8] = u8::from(self.ackreq) << 7;
        out[9..12].copy_from_slice(&self.psn.to_be_bytes()[1..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_field() {
        // RC WRITE First, SE, M, pad 2, tver 0, pkey ffff, FECN+BECN, QP 0x123456, AckReq, PSN 0xabcdef
        let raw = [
            0x06, 0xe0, 0xff, 0xff, 0xc0, 0x12, 0x34, 0x56, 0x80, 0xab, 0xcd, 0xef, 0x99,
        ];
        let (h, rest) = Bth::parse(&raw).unwrap();
        assert_eq!(rest, &[0x99]);
        assert_eq!(h.opcode, Opcode(0x06));
        assert!(h.se && h.m && h.fecn && h.becn && h.ackreq);
        assert_eq!((h.pad, h.tver, h.pkey), (2, 0, 0xffff));
        assert_eq!((h.dqpn, h.psn), (0x123456, 0xabcdef));
        let mut out = [0u8; BTH_LEN];
        h.emit(&mut out);
        assert_eq!(&out[..], &raw[..12]);
    }

    #[test]
    fn cut_short_is_an_error_not_a_panic() {
        for len in 0..BTH_LEN {
            let raw = [0u8; BTH_LEN];
            let err = Bth::parse(&raw[..len]).unwrap_err();
            assert_eq!(
                err,
                DecodeError::Truncated {
                    layer: Layer::Bth,
                    need: 12,
                    have: len
                }
            );
        }
    }
}
