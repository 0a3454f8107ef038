//! Immediate Data (ImmDt) and Invalidate (IETH) extension headers: one u32 each.

use nom::number::complete::be_u32;
use nom::IResult;

pub const IMMDT_LEN: usize = 4;
pub const IETH_LEN: usize = 4;

/// ImmDt is opaque application data, IETH the R_Key to invalidate: both a big-endian u32.
pub(crate) fn u32_header(input: &[u8]) -> IResult<&[u8], u32> {
    be_u32(input)
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_big_endian() {
        assert_eq!(
            super::u32_header(&[0xde, 0xad, 0xbe, 0xef]).unwrap().1,
            0xdeadbeef
        );
        assert!(super::u32_header(&[1, 2, 3]).is_err());
    }
}
