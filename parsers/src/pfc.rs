//! MAC Control frames (ethertype 0x8808): 802.3x PAUSE and 802.1Qbb PFC.

use nom::number::complete::be_u16;
use nom::IResult;

use crate::{truncated, DecodeError, Layer};

pub const OPCODE_PAUSE: u16 = 0x0001;
pub const OPCODE_PFC: u16 = 0x0101;
/// Destination MAC of MAC Control frames.
pub const MAC_CONTROL_DST: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x01];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MacControl {
    /// 802.3x PAUSE: one pause time for the whole link, in quanta of 512 bit times.
    Pause { quanta: u16 },
    /// 802.1Qbb PFC: class-enable vector (bit n = priority n) and eight pause times,
    /// priority 0 first. A time of 0 on an enabled priority is XON.
    Pfc { cev: u16, quanta: [u16; 8] },
    /// Another MAC Control opcode (kept, not interpreted).
    Other { opcode: u16 },
}

fn pfc_body(input: &[u8]) -> IResult<&[u8], (u16, [u16; 8])> {
    let (mut input, cev) = be_u16(input)?;
    let mut quanta = [0u16; 8];
    for q in quanta.iter_mut() {
        let (rest, v) = be_u16(input)?;
        *q = v;
        input = rest;
    }
    Ok((input, (cev, quanta)))
}

impl MacControl {
    /// Parses the MAC Control payload (after the ethertype).
    pub fn parse(data: &[u8]) -> Result<MacControl, DecodeError> {
        let (body, opcode) = be_u16::<_, nom::error::Error<&[u8]>>(data)
            .map_err(|_| truncated(Layer::MacControl, 2, data.len()))?;
        match opcode {
            OPCODE_PAUSE => be_u16::<_, nom::error::Error<&[u8]>>(body)
                .map(|(_, quanta)| MacControl::Pause { quanta })
                .map_err(|_| truncated(Layer::MacControl, 4, data.len())),
            OPCODE_PFC => pfc_body(body)
                .map(|(_, (cev, quanta))| MacControl::Pfc { cev, quanta })
                .map_err(|_| truncated(Layer::MacControl, 20, data.len())),
            opcode => Ok(MacControl::Other { opcode }),
        }
    }

    /// Writes the MAC Control payload (opcode onwards, padded to the 46-byte minimum).
    pub fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        match *self {
            MacControl::Pause { quanta } => {
                out.extend_from_slice(&OPCODE_PAUSE.to_be_bytes());
                out.extend_from_slice(&quanta.to_be_bytes());
            }
            MacControl::Pfc { cev, quanta } => {
                out.extend_from_slice(&OPCODE_PFC.to_be_bytes());
                out.extend_from_slice(&cev.to_be_bytes());
                for q in quanta {
                    out.extend_from_slice(&q.to_be_bytes());
                }
            }
            MacControl::Other { opcode } => out.extend_from_slice(&opcode.to_be_bytes()),
        }
        out.resize(start + 46, 0);
    }
}

/// Duration of `quanta` pause quanta (512 bit times each) at `link_gbps`, in nanoseconds.
pub fn quanta_to_ns(quanta: u64, link_gbps: f64) -> f64 {
    quanta as f64 * 512.0 / link_gbps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pfc_and_pause() {
        let mut raw = Vec::new();
        let pfc = MacControl::Pfc {
            cev: 0b0000_1000,
            quanta: [0, 0, 0, 0xffff, 0, 0, 0, 0],
        };
        pfc.emit(&mut raw);
        assert_eq!(raw.len(), 46);
        assert_eq!(&raw[..4], &[0x01, 0x01, 0x00, 0x08]);
        assert_eq!(MacControl::parse(&raw).unwrap(), pfc);

        let raw = [0x00, 0x01, 0x12, 0x34];
        assert_eq!(
            MacControl::parse(&raw).unwrap(),
            MacControl::Pause { quanta: 0x1234 }
        );
        assert_eq!(
            MacControl::parse(&[0x00, 0x02]).unwrap(),
            MacControl::Other { opcode: 2 }
        );
        assert!(MacControl::parse(&[0x01, 0x01, 0, 8, 0]).is_err());
        assert!(MacControl::parse(&[0x01]).is_err());
    }

    #[test]
    fn quanta_time() {
        // 0xffff quanta at 100 Gb/s: 335.5 us.
        let ns = quanta_to_ns(0xffff, 100.0);
        assert!((ns - 335_539.2).abs() < 0.01, "{ns}");
    }
}
