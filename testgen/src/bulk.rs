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
    let emit = |w: &mut PcapWriter<CountingWriter<_>>, ts: &mut u64, f: &[u8]| -> io::Result<()> {
        *ts += 80; // ~12.5 Mpps: a busy 100G link
        w.write(*ts, f)
    };
    while written < cfg.frames {
        let q = &mut qps[(xorshift(&mut rng) % u64::from(cfg.qps.max(1))) as usize];
        let r = xorshift(&mut rng) % 1000;
        if r < 2 {
            // PFC on the RoCE priority.
            let mut quanta = [0u16; 8];
            quanta[3] = if r == 0 { 0 } else { 0x400 };
            emit(&mut w, &mut ts, &frames::pfc(MAC_SWITCH, 1 << 3, quanta))?;
            written += 1;
            continue;
        }
        if r < 7 {
            // A CE-marked packet and the CNP that answers it.
            let p = RoceSpec::new(0x0a, q.resp_qpn, q.psn).payload(1024).reth(
                0x7f00_0000_0000,
                1,
                1024,
            );
            q.psn = (q.psn + 1) & 0xff_ffff;
            emit(
                &mut w,
                &mut ts,
                &frames::rocev2(&q.link, q.net.with_tos(0x6b), q.sport, &p),
            )?;
            let cnp = RoceSpec::new(0x81, q.req_qpn, 0);
            emit(
                &mut w,
                &mut ts,
                &frames::rocev2(&q.rev, q.net.reversed().with_tos(0xc2), 0, &cnp),
            )?;
            written += 2;
            continue;
        }
        if r < 40 {
            // A READ of 4096 bytes and its four responses.
            let first = q.psn;
            let req =
                RoceSpec::new(0x0c, q.resp_qpn, first)
                    .ackreq()
                    .reth(0x7f00_0000_0000, 1, 4096);
            emit(
                &mut w,
                &mut ts,
                &frames::rocev2(&q.link, q.net, q.sport, &req),
            )?;
            for (k, op) in [0x0du8, 0x0e, 0x0e, 0x0f].into_iter().enumerate() {
                let mut s =
                    RoceSpec::new(op, q.req_qpn, (first + k as u32) & 0xff_ffff).payload(1024);
                if op != 0x0e {
                    s = s.aeth(0x1f, 1);
                }
                emit(
                    &mut w,
                    &mut ts,
                    &frames::rocev2(&q.rev, q.net.reversed(), q.sport, &s),
                )?;
            }
            q.psn = (q.psn + 4) & 0xff_ffff;
            written += 5;
            continue;
        }
        // A WRITE of 4096 bytes: First, Middle, Middle, Last (AckReq).
        for (k, op) in [0x06u8, 0x07, 0x07, 0x08].into_iter().enumerate() {
            let mut s = RoceSpec::new(op, q.resp_qpn, q.psn).payload(1024);
            if k == 0 {
                s = s.reth(0x7f00_0000_0000, 1, 4096);
            }
            if k == 3 {
                s = s.ackreq();
            }
            emit(
                &mut w,
                &mut ts,
                &frames::rocev2(&q.link, q.net, q.sport, &s),
            )?;
            q.psn = (q.psn + 1) & 0xff_ffff;
        }
        written += 4;
        q.unacked += 1;
        // Coalesced ACKs: one per two messages.
        if q.unacked == 2 {
            q.unacked = 0;
            let ack = RoceSpec::new(0x11, q.req_qpn, (q.psn + 0xff_ffff) & 0xff_ffff).aeth(0x1f, 1);
            emit(
                &mut w,
                &mut ts,
                &frames::rocev2(&q.rev, q.net.reversed(), q.sport, &ack),
            )?;
            written += 1;
        }
    }
    let mut inner = w.into_inner();
    inner.flush()?;
    Ok(inner.n)
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
        };
        let mut a = Vec::new();
        let mut b = Vec::new();
        write_bulk(&mut a, cfg).unwrap();
        write_bulk(&mut b, cfg).unwrap();
        assert_eq!(a, b);
        // ~1 KB per frame on average.
        let per_frame = a.len() as f64 / 2000.0;
        assert!((700.0..1300.0).contains(&per_frame), "{per_frame}");
    }
}
