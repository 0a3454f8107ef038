//! Global Route Header (40 bytes): the network header of RoCEv1 (ethertype 0x8915).

use nom::bytes::complete::take;
use nom::number::complete::{be_u16, be_u32, be_u8};
use nom::IResult;

use crate::{truncated, DecodeError, Layer};

pub const GRH_LEN: usize = 40;
/// GRH next header value meaning "BTH follows".
pub const NEXT_HEADER_BTH: u8 = 0x1b;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grh {
    pub ip_version: u8,
    pub traffic_class: u8,
    pub flow_label: u32,
    /// Bytes after the GRH (BTH to ICRC, without the ICRC's... the ICRC included).
    pub payload_len: u16,
    pub next_header: u8,
    pub hop_limit: u8,
    pub sgid: [u8; 16],
    pub dgid: [u8; 16],
}

fn grh(input: &[u8]) -> IResult<&[u8], Grh> {
    let (input, word) = be_u32(input)?;
    let (input, payload_len) = be_u16(input)?;
    let (input, next_header) = be_u8(input)?;
    let (input, hop_limit) = be_u8(input)?;
    let (input, sgid) = take(16usize)(input)?;
    let (input, dgid) = take(16usize)(input)?;
    let mut s = [0u8; 16];
    let mut d = [0u8; 16];
    s.copy_from_slice(sgid);
    d.copy_from_slice(dgid);
    Ok((
        input,
        Grh {
            ip_version: (word >> 28) as u8,
            traffic_class: (word >> 20) as u8,
            flow_label: word & 0x000f_ffff,
            payload_len,
            next_header,
            hop_limit,
            sgid: s,
            dgid: d,
        },
    ))
}

impl Grh {
    pub fn parse(data: &[u8]) -> Result<(Grh, &[u8]), DecodeError> {
        grh(data)
            .map(|(rest, g)| (g, rest))
            .map_err(|_| truncated(Layer::Grh, GRH_LEN, data.len()))
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        let word = (u32::from(self.ip_version) << 28)
            | (u32::from(self.traffic_class) << 20)
            | (self.flow_label & 0x000f_ffff);
        out.extend_from_slice(&word.to_be_bytes());
        out.extend_from_slice(&self.payload_len.to_be_bytes());
        out.push(self.next_header);
        out.push(self.hop_limit);
        out.extend_from_slice(&self.sgid);
        out.extend_from_slice(&self.dgid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation() {
        let g = Grh {
            ip_version: 6,
            traffic_class: 0x68,
            flow_label: 0x12345,
            payload_len: 32,
            next_header: NEXT_HEADER_BTH,
            hop_limit: 64,
            sgid: [1; 16],
            dgid: [2; 16],
        };
        let mut raw = Vec::new();
        g.emit(&mut raw);
        assert_eq!(raw.len(), GRH_LEN);
        assert_eq!(Grh::parse(&raw).unwrap().0, g);
        assert!(Grh::parse(&raw[..39]).is_err());
    }
}
