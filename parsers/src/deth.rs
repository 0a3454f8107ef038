//! Datagram Extended Transport Header (8 bytes, UD): Q_Key and source QP.

use nom::number::complete::{be_u24, be_u32, be_u8};
use nom::IResult;

pub const DETH_LEN: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deth {
    pub qkey: u32,
    /// Source QP (24 bits).
    pub sqpn: u32,
}

pub(crate) fn deth(input: &[u8]) -> IResult<&[u8], Deth> {
    let (input, qkey) = be_u32(input)?;
    let (input, _reserved) = be_u8(input)?;
    let (input, sqpn) = be_u24(input)?;
    Ok((input, Deth { qkey, sqpn }))
}

impl Deth {
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.qkey.to_be_bytes());
        out.push(0);
        out.extend_from_slice(&self.sqpn.to_be_bytes()[1..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let d = Deth {
            qkey: 0x80010000,
            sqpn: 1,
        };
        let mut raw = Vec::new();
        d.emit(&mut raw);
        assert_eq!(raw, [0x80, 0x01, 0, 0, 0, 0, 0, 1]);
        assert_eq!(deth(&raw).unwrap().1, d);
        assert!(deth(&raw[..7]).is_err());
    }
}
