//! ACK Extended Transport Header (4 bytes): syndrome and MSN.

use nom::number::complete::{be_u24, be_u8};
use nom::IResult;

pub const AETH_LEN: usize = 4;

/// Bits 6-5 of the syndrome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AethKind {
    /// Positive ACK; the value is the credit count.
    Ack,
    /// Receiver not ready; the value is the RNR timer code.
    RnrNak,
    /// 0b10, reserved by the specification.
    Reserved,
    /// Negative ACK; the value is the NAK code.
    Nak,
}

impl AethKind {
    pub fn name(self) -> &'static str {
        match self {
            AethKind::Ack => "ack",
            AethKind::RnrNak => "rnr_nak",
            AethKind::Reserved => "reserved",
            AethKind::Nak => "nak",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Aeth {
    pub syndrome: u8,
    /// Message sequence number (24 bits).
    pub msn: u32,
}

pub const NAK_PSN_SEQUENCE_ERROR: u8 = 0;
pub const NAK_INVALID_REQUEST: u8 = 1;
pub const NAK_REMOTE_ACCESS_ERROR: u8 = 2;
pub const NAK_REMOTE_OPERATIONAL_ERROR: u8 = 3;
pub const NAK_INVALID_RD_REQUEST: u8 = 4;

impl Aeth {
    pub fn kind(&self) -> AethKind {
        match (self.syndrome >> 5) & 0x03 {
            0 => AethKind::Ack,
            1 => AethKind::RnrNak,
            2 => AethKind::Reserved,
            _ => AethKind::Nak,
        }
    }

    /// Credit count (ACK), RNR timer (RNR NAK) or NAK code (NAK).
    pub fn value(&self) -> u8 {
        self.syndrome & 0x1f
    }

    pub fn nak_code_name(code: u8) -> &'static str {
        match code {
            NAK_PSN_SEQUENCE_ERROR => "psn_sequence_error",
            NAK_INVALID_REQUEST => "invalid_request",
            NAK_REMOTE_ACCESS_ERROR => "remote_access_error",
            NAK_REMOTE_OPERATIONAL_ERROR => "remote_operational_error",
            NAK_INVALID_RD_REQUEST => "invalid_rd_request",
            _ => "reserved",
        }
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.push(self.syndrome);
        out.extend_from_slice(&self.msn.to_be_bytes()[1..]);
    }
}

pub(crate) fn aeth(input: &[u8]) -> IResult<&[u8], Aeth> {
    let (input, syndrome) = be_u8(input)?;
    let (input, msn) = be_u24(input)?;
    Ok((input, Aeth { syndrome, msn }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syndromes() {
        let cases = [
            (0x1f, AethKind::Ack, 31),
            (0x00, AethKind::Ack, 0),
            (0x2e, AethKind::RnrNak, 14),
            (0x40, AethKind::Reserved, 0),
            (0x60, AethKind::Nak, NAK_PSN_SEQUENCE_ERROR),
            (0x62, AethKind::Nak, NAK_REMOTE_ACCESS_ERROR),
            (0x63, AethKind::Nak, NAK_REMOTE_OPERATIONAL_ERROR),
        ];
        for (syn, kind, value) in cases {
            let (_, a) = aeth(&[syn, 0x00, 0x01, 0x02]).unwrap();
            assert_eq!(a.kind(), kind, "{syn:#x}");
            assert_eq!(a.value(), value, "{syn:#x}");
            assert_eq!(a.msn, 0x0102);
        }
        assert_eq!(Aeth::nak_code_name(2), "remote_access_error");
        assert!(aeth(&[0x60, 0, 0]).is_err());
    }
}
