//! RDMA Extended Transport Header (16 bytes): WRITE First/Only and READ requests.

use nom::number::complete::{be_u32, be_u64};
use nom::IResult;

pub const RETH_LEN: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reth {
    pub va: u64,
    pub rkey: u32,
    /// DMA length of the whole message in bytes.
    pub dlen: u32,
}

pub(crate) fn reth(input: &[u8]) -> IResult<&[u8], Reth> {
    let (input, va) = be_u64(input)?;
    let (input, rkey) = be_u32(input)?;
    let (input, dlen) = be_u32(input)?;
    Ok((input, Reth { va, rkey, dlen }))
}

impl Reth {
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.va.to_be_bytes());
        out.extend_from_slice(&self.rkey.to_be_bytes());
        out.extend_from_slice(&self.dlen.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_emits() {
        let r = Reth {
            va: 0x0000_7f00_dead_beef,
            rkey: 0x1234,
            dlen: 65536,
        };
        let mut raw = Vec::new();
        r.emit(&mut raw);
        assert_eq!(raw.len(), RETH_LEN);
        assert_eq!(reth(&raw).unwrap().1, r);
        assert!(reth(&raw[..15]).is_err());
    }
}
