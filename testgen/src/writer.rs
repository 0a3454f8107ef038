//! Capture file writers: classic pcap (micro/nano, both byte orders) and pcapng (several
//! interfaces with their own link types and timestamp resolutions).

use std::io::{self, Write};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PcapFlavor {
    pub nanos: bool,
    pub big_endian: bool,
}

impl PcapFlavor {
    pub const MICRO_LE: PcapFlavor = PcapFlavor {
        nanos: false,
        big_endian: false,
    };
    pub const NANO_LE: PcapFlavor = PcapFlavor {
        nanos: true,
        big_endian: false,
    };
}

/// Classic pcap writer.
pub struct PcapWriter<W: Write> {
    out: W,
    flavor: PcapFlavor,
    snaplen: u32,
}

impl<W: Write> PcapWriter<W> {
    pub fn new(mut out: W, flavor: PcapFlavor, linktype: u32, snaplen: u32) -> io::Result<Self> {
        let magic: u32 = if flavor.nanos {
            0xa1b2_3c4d
        } else {
            0xa1b2_c3d4
        };
        let mut h = Vec::with_capacity(24);
        let w32 = |v: u32, h: &mut Vec<u8>| {
            h.extend_from_slice(&if flavor.big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            })
        };
        let w16 = |v: u16, h: &mut Vec<u8>| {
            h.extend_from_slice(&if flavor.big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            })
        };
        w32(magic, &mut h);
        w16(2, &mut h);
        w16(4, &mut h);
        w32(0, &mut h);
        w32(0, &mut h);
        w32(snaplen, &mut h);
        w32(linktype, &mut h);
        out.write_all(&h)?;
        Ok(PcapWriter {
            out,
            flavor,
            snaplen,
        })
    }

    /// Writes a frame, cut to the snap length; the original length is kept.
    pub fn write(&mut self, ts_ns: u64, frame: &[u8]) -> io::Result<()> {
        let caplen = frame.len().min(self.snaplen as usize);
        self.write_raw(ts_ns, &frame[..caplen], frame.len() as u32)
    }

    /// Writes a record with the given captured bytes and original length.
    pub fn write_raw(&mut self, ts_ns: u64, data: &[u8], orig_len: u32) -> io::Result<()> {
        let sec = (ts_ns / 1_000_000_000) as u32;
        let frac = if self.flavor.nanos {
            (ts_ns % 1_000_000_000) as u32
        } else {
            ((ts_ns % 1_000_000_000) / 1000) as u32
        };
        let mut h = [0u8; 16];
        for (i, v) in [sec, frac, data.len() as u32, orig_len]
            .into_iter()
            .enumerate()
        {
            let b = if self.flavor.big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            };
            h[i * 4..i * 4 + 4].copy_from_slice(&b);
        }
        self.out.write_all(&h)?;
        self.out.write_all(data)
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

/// pcapng writer (little-endian).
pub struct PcapngWriter<W: Write> {
    out: W,
    /// (snaplen, units per second as 10^exp)
    interfaces: Vec<(u32, u8)>,
}

fn block(out: &mut impl Write, block_type: u32, body: &[u8]) -> io::Result<()> {
    let padded = (body.len() + 3) & !3;
    let total = (12 + padded) as u32;
    out.write_all(&block_type.to_le_bytes())?;
    out.write_all(&total.to_le_bytes())?;
    out.write_all(body)?;
    out.write_all(&[0u8; 3][..padded - body.len()])?;
    out.write_all(&total.to_le_bytes())
}

impl<W: Write> PcapngWriter<W> {
    pub fn new(mut out: W) -> io::Result<Self> {
        let mut shb = Vec::new();
        shb.extend_from_slice(&0x1a2b_3c4du32.to_le_bytes());
        shb.extend_from_slice(&1u16.to_le_bytes());
        shb.extend_from_slice(&0u16.to_le_bytes());
        shb.extend_from_slice(&(-1i64).to_le_bytes());
        block(&mut out, 0x0a0d_0d0a, &shb)?;
        Ok(PcapngWriter {
            out,
            interfaces: Vec::new(),
        })
    }

    /// Adds an interface; `tsresol_exp` is the if_tsresol exponent (6 = us, 9 = ns).
    pub fn add_interface(
        &mut self,
        linktype: u16,
        snaplen: u32,
        tsresol_exp: u8,
    ) -> io::Result<u32> {
        let mut idb = Vec::new();
        idb.extend_from_slice(&linktype.to_le_bytes());
        idb.extend_from_slice(&0u16.to_le_bytes());
        idb.extend_from_slice(&snaplen.to_le_bytes());
        // if_tsresol
        idb.extend_from_slice(&9u16.to_le_bytes());
        idb.extend_from_slice(&1u16.to_le_bytes());
        idb.extend_from_slice(&[tsresol_exp, 0, 0, 0]);
        // opt_endofopt
        idb.extend_from_slice(&[0, 0, 0, 0]);
        block(&mut self.out, 1, &idb)?;
        self.interfaces.push((snaplen, tsresol_exp));
        Ok(self.interfaces.len() as u32 - 1)
    }

    pub fn write(&mut self, interface: u32, ts_ns: u64, frame: &[u8]) -> io::Result<()> {
        let (snaplen, exp) = self.interfaces[interface as usize];
        let caplen = frame.len().min(snaplen as usize);
        let units: u64 = if exp >= 9 {
            ts_ns * 10u64.pow(u32::from(exp) - 9)
        } else {
            ts_ns / 10u64.pow(9 - u32::from(exp))
        };
        let mut body = Vec::with_capacity(20 + caplen);
        body.extend_from_slice(&interface.to_le_bytes());
        body.extend_from_slice(&((units >> 32) as u32).to_le_bytes());
        body.extend_from_slice(&(units as u32).to_le_bytes());
        body.extend_from_slice(&(caplen as u32).to_le_bytes());
        body.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        body.extend_from_slice(&frame[..caplen]);
        block(&mut self.out, 6, &body)
    }

    /// Writes a block of an unknown type (readers must skip it).
    pub fn write_unknown_block(&mut self, block_type: u32, body: &[u8]) -> io::Result<()> {
        block(&mut self.out, block_type, body)
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Start of every crafted capture: 2023-11-14 22:13:20 UTC.
pub const T0_NS: u64 = 1_700_000_000_000_000_000;

/// A capture as a list of (timestamp, frame).
pub type Frames = Vec<(u64, Vec<u8>)>;

/// A whole pcap file of `frames`.
pub fn pcap_bytes(frames: &Frames, flavor: PcapFlavor, linktype: u32, snaplen: u32) -> Vec<u8> {
    let mut w = PcapWriter::new(Vec::new(), flavor, linktype, snaplen).expect("write to memory");
    for (ts, f) in frames {
        w.write(*ts, f).expect("write to memory");
    }
    w.into_inner()
}
