//! Atomic extension headers: AtomicETH (28 bytes, CmpSwap / FetchAdd requests) and
//! AtomicAckETH (8 bytes, the original remote data in ATOMIC Acknowledge).

use nom::number::complete::{be_u32, be_u64};
use nom::IResult;

pub const ATOMIC_ETH_LEN: usize = 28;
pub const ATOMIC_ACK_ETH_LEN: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtomicEth {
    pub va: u64,
    pub rkey: u32,
    /// Swap value (CmpSwap) or value to add (FetchAdd).
    pub swap_add: u64,
    pub compare: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtomicAckEth {
    pub orig_data: u64,
}

pub(crate) fn atomic_eth(input: &[u8]) -> IResult<&[u8], AtomicEth> {
    let (input, va) = be_u64(input)?;
    let (input, rkey) = be_u32(input)?;
    let (input, swap_add) = be_u64(input)?;
    let (input, compare) = be_u64(input)?;
    Ok((
        input,
        AtomicEth {
            va,
            rkey,
            swap_add,
            compare,
        },
    ))
}

pub(crate) fn atomic_ack_eth(input: &[u8]) -> IResult<&[u8], AtomicAckEth> {
    let (input, orig_data) = be_u64(input)?;
    Ok((input, AtomicAckEth { orig_data }))
}

impl AtomicEth {
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.va.to_be_bytes());
        out.extend_from_slice(&self.rkey.to_be_bytes());
        out.extend_from_slice(&self.swap_add.to_be_bytes());
        out.extend_from_slice(&self.compare.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let a = AtomicEth {
            va: 1 << 40,
            rkey: 7,
            swap_add: 9,
            compare: 11,
        };
        let mut raw = Vec::new();
        a.emit(&mut raw);
        assert_eq!(raw.len(), ATOMIC_ETH_LEN);
        assert_eq!(atomic_eth(&raw).unwrap().1, a);
        assert!(atomic_eth(&raw[..27]).is_err());
        assert_eq!(atomic_ack_eth(&raw[..8]).unwrap().1.orig_data, 1 << 40);
    }
}
