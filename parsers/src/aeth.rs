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

/// The code of a NAK (syndrome bits 4-0 when the kind is NAK).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NakCode {
    /// The responder expected another PSN: the requester goes back to it (go-back-N).
    PsnSequenceError,
    InvalidRequest,
    RemoteAccessError,
    RemoteOperationalError,
    InvalidRdRequest,
    /// A code the specification reserves, kept as it was.
    Reserved(u8),
}

impl NakCode {
    pub fn from_value(code: u8) -> NakCode {
        match code {
            0 => NakCode::PsnSequenceError,
            1 => NakCode::InvalidRequest,
            2 => NakCode::RemoteAccessError,
            3 => NakCode::RemoteOperationalError,
            4 => NakCode::InvalidRdRequest,
            other => NakCode::Reserved(other),
        }
    }

    pub fn value(self) -> u8 {
        match self {
            NakCode::PsnSequenceError => 0,
            NakCode::InvalidRequest => 1,
            NakCode::RemoteAccessError => 2,
            NakCode::RemoteOperationalError => 3,
            NakCode::InvalidRdRequest => 4,
            NakCode::Reserved(v) => v,
        }
    }

    /// The name every output of roce-sniff uses.
    pub fn name(self) -> &'static str {
        match self {
            NakCode::PsnSequenceError => "psn_sequence_error",
            NakCode::InvalidRequest => "invalid_request",
            NakCode::RemoteAccessError => "remote_access_error",
            NakCode::RemoteOperationalError => "remote_operational_error",
            NakCode::InvalidRdRequest => "invalid_rd_request",
            NakCode::Reserved(_) => "reserved",
        }
    }
}

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

    /// The NAK code, when this is a NAK.
    pub fn nak_code(&self) -> Option<NakCode> {
        (self.kind() == AethKind::Nak).then(|| NakCode::from_value(self.value()))
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
            (0x60, AethKind::Nak, 0),
            (0x62, AethKind::Nak, 2),
            (0x63, AethKind::Nak, 3),
        ];
        for (syn, kind, value) in cases {
            let (_, a) = aeth(&[syn, 0x00, 0x01, 0x02]).unwrap();
            assert_eq!(a.kind(), kind, "{syn:#x}");
            assert_eq!(a.value(), value, "{syn:#x}");
            assert_eq!(a.msn, 0x0102);
        }
        let nak = |syndrome| Aeth { syndrome, msn: 0 }.nak_code();
        assert_eq!(nak(0x62), Some(NakCode::RemoteAccessError));
        assert_eq!(nak(0x62).unwrap().name(), "remote_access_error");
        assert_eq!(nak(0x67), Some(NakCode::Reserved(7)));
        assert_eq!(nak(0x1f), None);
        assert!(aeth(&[0x60, 0, 0]).is_err());
    }
}
