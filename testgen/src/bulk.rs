//! Large realistic captures for benchmarks: many QPs between senders and receivers on VLAN 100
//! PCP 3, DSCP 26; RDMA WRITEs of 4096 bytes at MTU 1024 with coalesced ACKs, some READs, a few
//! CE marks answered by CNPs, and PFC frames. Deterministic for a given seed.

use std::io::{self, Write};

use super::frames::{self, FrameSpec, Net, RoceSpec};
use super::testdata::MAC_SWITCH;
use super::writer::{PcapFlavor, PcapWriter, T0_NS};

#[derive(Debug, Clone, Copy)]
pub struct BulkConfig {
    pub frames: u64,
    pub qps: u32,
    pub seed: u64,
    /// Time between two frames, in ns (80: about 12.5 Mpps, a busy 100G link). Wider gaps
    /// stretch the capture, its ACK RTTs with it.
    pub gap_ns: u64,
}

impl Default for BulkConfig {
    fn default() -> Self {
        BulkConfig {
            frames: 2_000_000,
            qps: 64,
            seed: 1,
            gap_ns: 80,
        }
    }
}

struct Qp {
    link: FrameSpec,
    rev: FrameSpec,
    net: Net,
    sport: u16,
    req_qpn: u32,
    resp_qpn: u32,
    psn: u32,
    unacked: u32,
}

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

/// Writes `cfg.frames` frames as a microsecond pcap; returns the bytes written.
pub fn write_bulk(out: impl Write, cfg: BulkConfig) -> io::Result<u64> {
    let mut w = PcapWriter::new(
        CountingWriter { inner: out, n: 0 },
        PcapFlavor::MICRO_LE,
        1,
        65535,
    )?;
    let mut rng = cfg.seed | 1;
    let mut qps: Vec<Qp> = (0..cfg.qps.max(1))
        .map(|i| {
            let src = [10, 1, (i % 8) as u8, 1];
            let dst = [10, 2, ((i / 8) % 8) as u8, 1];
            let smac = [0x02, 0x10, 0, 0, (i % 8) as u8, 1];
            let dmac = [0x02, 0x20, 0, 0, ((i / 8) % 8) as u8, 1];
            Qp {
                link: FrameSpec::new(smac, dmac).vlan(100, 3),
                rev: FrameSpec::new(dmac, smac).vlan(100, 3),
                net: Net::v4(src, dst, 0x6a),
                sport: 49152 + i as u16,
                req_qpn: 0x1000 + i,
                resp_qpn: 0x2000 + i,
                psn: (i * 7919) & 0xff_ffff,
                unacked: 0,
            }
        })
        .collect();
    let mut ts = T0_NS;
    let mut written = 0u64;
    while written < cfg.frames {
        let q = &mut qps[(xorshift(&mut rng) % u64::from(cfg.qps.max(1))) as usize];
        let r = xorshift(&mut rng) % 1000;
        let event = match r {
            0..=1 => pfc_event(r == 0),
            2..=6 => ce_event(q),
            7..=39 => read_event(q),
            _ => write_event(q),
        };
        // The last event is cut to give exactly the frames asked for.
        let remaining = (cfg.frames - written) as usize;
        for f in event.iter().take(remaining) {
            ts += cfg.gap_ns;
            w.write(ts, f)?;
            written += 1;
        }
    }
    let mut inner = w.into_inner();
    inner.flush()?;
    Ok(inner.n)
}

/// A PFC frame on the RoCE priority: XOFF, or XON.
fn pfc_event(xon: bool) -> Vec<Vec<u8>> {
    let mut quanta = [0u16; 8];
    quanta[3] = if xon { 0 } else { 0x400 };
    vec![frames::pfc(MAC_SWITCH, 1 << 3, quanta)]
}

/// A CE-marked packet and the CNP that answers it.
fn ce_event(q: &mut Qp) -> Vec<Vec<u8>> {
    let p = RoceSpec::new(0x0a, q.resp_qpn, q.psn)
        .payload(1024)
        .reth(0x7f00_0000_0000, 1, 1024);
    q.psn = (q.psn + 1) & 0xff_ffff;
    let cnp = RoceSpec::new(0x81, q.req_qpn, 0);
    vec![
        frames::rocev2(&q.link, q.net.with_tos(0x6b), q.sport, &p),
        frames::rocev2(&q.rev, q.net.reversed().with_tos(0xc2), 0, &cnp),
    ]
}

/// A READ of 4096 bytes and its four responses.
fn read_event(q: &mut Qp) -> Vec<Vec<u8>> {
    let first = q.psn;
    let req = RoceSpec::new(0x0c, q.resp_qpn, first)
        .ackreq()
        .reth(0x7f00_0000_0000, 1, 4096);
    let mut out = vec![frames::rocev2(&q.link, q.net, q.sport, &req)];
    for (k, op) in [0x0du8, 0x0e, 0x0e, 0x0f].into_iter().enumerate() {
        let mut s = RoceSpec::new(op, q.req_qpn, (first + k as u32) & 0xff_ffff).payload(1024);
        if op != 0x0e {
            s = s.aeth(0x1f, 1);
        }
        out.push(frames::rocev2(&q.rev, q.net.reversed(), q.sport, &s));
    }
    q.psn = (q.psn + 4) & 0xff_ffff;
    out
}

/// A WRITE of 4096 bytes (First, Middle, Middle, Last with AckReq), and a coalesced ACK after
/// every second one.
fn write_event(q: &mut Qp) -> Vec<Vec<u8>> {
    let mut out = Vec::with_capacity(5);
    for (k, op) in [0x06u8, 0x07, 0x07, 0x08].into_iter().enumerate() {
        let mut s = RoceSpec::new(op, q.resp_qpn, q.psn).payload(1024);
        if k == 0 {
            s = s.reth(0x7f00_0000_0000, 1, 4096);
        }
        if k == 3 {
            s = s.ackreq();
        }
        out.push(frames::rocev2(&q.link, q.net, q.sport, &s));
        q.psn = (q.psn + 1) & 0xff_ffff;
    }
    q.unacked += 1;
    if q.unacked == 2 {
        q.unacked = 0;
        let ack = RoceSpec::new(0x11, q.req_qpn, (q.psn + 0xff_ffff) & 0xff_ffff).aeth(0x1f, 1);
        out.push(frames::rocev2(&q.rev, q.net.reversed(), q.sport, &ack));
    }
    out
}

struct CountingWriter<W> {
    inner: W,
    n: u64,
}

impl<W: Write> Write for CountingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.n += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_about_the_asked_size() {
        let cfg = BulkConfig {
            frames: 2000,
            qps: 16,
            seed: 7,
            ..BulkConfig::default()
        };
        let mut a = Vec::new();
        let mut b = Vec::new();
        write_bulk(&mut a, cfg).unwrap();
        write_bulk(&mut b, cfg).unwrap();
        assert_eq!(a, b);
        // ~1 KB per frame on average.
        let per_frame = a.len() as f64 / 2000.0;
        assert!((700.0..1300.0).contains(&per_frame), "{per_frame}");
        // Exactly the frames asked for (it used to overshoot by the rest of the last event).
        for frames in [1, 3, 1999, 3001] {
            let mut out = Vec::new();
            write_bulk(&mut out, BulkConfig { frames, ..cfg }).unwrap();
            assert_eq!(count_records(&out), frames, "{frames}");
        }
    }

    /// Records of a little-endian microsecond pcap.
    fn count_records(pcap: &[u8]) -> u64 {
        let mut at = 24;
        let mut n = 0;
        while at + 16 <= pcap.len() {
            let caplen = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
            at += 16 + caplen;
            n += 1;
        }
        n
    }
}
