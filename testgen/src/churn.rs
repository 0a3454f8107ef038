//! A churning cluster: many short-lived QPs, each sending a few RDMA WRITEs and getting one ACK
//! back, a handful alive at once, then never used again. What a job scheduler starting and
//! ending jobs makes a fabric monitor see: flow state must come and go with the QPs.
//!
//! Every QP is its own flow (a destination QP number never reused), its ACK another: `qps`
//! QPs give `2 * qps` flows (`qps` without ACKs) and `(requests + 1) * qps` frames. The last
//! request asks for the ACK; the ACK covers it, so a healthy analysis finds no loss and no
//! unanswered request. With `lossy_every`, one QP in that many loses its second request on the
//! path before the capture point: its responder answers with a NAK (PSN sequence error) for
//! it instead of the ACK, and the QP ends without resending it. Loss that keeps coming over a
//! long run (an ACK covering the gap would say the capture missed the request, not the
//! network). With `silence_every`, the link falls silent now and then, the QPs in flight on
//! both sides of it. Deterministic.

use std::io::{self, Write};

use super::frames::{self, FrameSpec, Net, RoceSpec};
use super::writer::{PcapFlavor, PcapWriter, T0_NS};

#[derive(Debug, Clone, Copy)]
pub struct ChurnConfig {
    /// QPs started over the capture, one after another.
    pub qps: u32,
    /// RDMA WRITE Only requests each QP sends (the last with AckReq).
    pub requests: u32,
    /// Whether the responder ACKs the last request.
    pub acks: bool,
    /// QPs alive at once (their frames interleave).
    pub concurrent: u32,
    /// Time between two frames, in ns (3,333: 300,000 frames/s).
    pub gap_ns: u64,
    /// Payload of each WRITE.
    pub payload: u32,
    /// One QP in this many (the last of every `lossy_every`) loses its second request; 0: none.
    pub lossy_every: u32,
    /// After every this many frames the link falls silent for `silence_ns` (a replay that
    /// stalled, a capture paused); 0: never. The QPs in flight then have frames on both sides
    /// of the silence.
    pub silence_every: u64,
    pub silence_ns: u64,
}

impl Default for ChurnConfig {
    fn default() -> Self {
        ChurnConfig {
            qps: 300_000,
            requests: 3,
            acks: true,
            concurrent: 16,
            gap_ns: 3_333,
            payload: 256,
            lossy_every: 0,
            silence_every: 0,
            silence_ns: 0,
        }
    }
}

/// Hosts of the cluster: QP `i` runs from host `i % HOSTS` to host `(i / HOSTS + i + 1) % HOSTS`.
const HOSTS: u32 = 32;
/// The first destination QP number (requester and responder numbers are disjoint).
const FIRST_QPN: u32 = 0x100;

/// One QP in flight: which it is and how many of its frames were written.
#[derive(Clone, Copy)]
struct Live {
    qp: u32,
    sent: u32,
}

impl ChurnConfig {
    pub fn frames_per_qp(&self) -> u32 {
        self.requests.max(1) + u32::from(self.acks)
    }

    pub fn flows(&self) -> u64 {
        u64::from(self.qps) * (1 + u64::from(self.acks))
    }

    /// Whether QP `qp` loses a request (its second: a gap of one PSN).
    pub fn is_lossy(&self, qp: u32) -> bool {
        self.lossy_every > 0 && self.requests >= 2 && qp % self.lossy_every == self.lossy_every - 1
    }

    /// The QPs that lose a request.
    pub fn lossy_qps(&self) -> u32 {
        (0..self.qps).filter(|&qp| self.is_lossy(qp)).count() as u32
    }

    /// The `k`-th frame of QP `qp`.
    fn frame(&self, qp: u32, k: u32) -> Vec<u8> {
        let a = qp % HOSTS;
        let b = (qp / HOSTS + qp + 1) % HOSTS;
        let b = if a == b { (b + 1) % HOSTS } else { b };
        let mac = |h: u32| [0x02, 0x30, 0, 0, (h >> 8) as u8, h as u8];
        let link = FrameSpec::new(mac(a), mac(b)).vlan(100, 3);
        let net = Net::v4([10, 3, 0, a as u8 + 1], [10, 3, 0, b as u8 + 1], 0x6a);
        let sport = 49152 + (qp % 16384) as u16;
        let responder_qpn = FIRST_QPN + 2 * qp;
        let requester_qpn = responder_qpn + 1;
        let psn = qp.wrapping_mul(7919) & 0xff_ffff;
        let requests = self.requests.max(1);
        if k < requests {
            let mut s = RoceSpec::new(0x0a, responder_qpn, (psn + k) & 0xff_ffff)
                .payload(self.payload as usize)
                .reth(0x7f00_0000_0000 + u64::from(k) * 4096, 1, self.payload);
            if k + 1 == requests {
                s = s.ackreq();
            }
            frames::rocev2(&link, net, sport, &s)
        } else if self.is_lossy(qp) {
            // A NAK, PSN sequence error, for the lost second request.
            let nak = RoceSpec::new(0x11, requester_qpn, (psn + 1) & 0xff_ffff).aeth(0x60, 1);
            let rev = FrameSpec::new(mac(b), mac(a)).vlan(100, 3);
            frames::rocev2(&rev, net.reversed(), sport, &nak)
        } else {
            let last = (psn + requests - 1) & 0xff_ffff;
            let ack = RoceSpec::new(0x11, requester_qpn, last).aeth(0x1f, requests);
            let rev = FrameSpec::new(mac(b), mac(a)).vlan(100, 3);
            frames::rocev2(&rev, net.reversed(), sport, &ack)
        }
    }
}

/// Writes the churn as a nanosecond pcap; returns the frames written.
pub fn write_churn(out: impl Write, cfg: ChurnConfig) -> io::Result<u64> {
    let mut w = PcapWriter::new(out, PcapFlavor::NANO_LE, 1, 65535)?;
    let per_qp = cfg.frames_per_qp();
    let mut next_qp = 0u32;
    let mut live: Vec<Live> = Vec::new();
    while live.len() < cfg.concurrent.max(1) as usize && next_qp < cfg.qps {
        live.push(Live {
            qp: next_qp,
            sent: 0,
        });
        next_qp += 1;
    }
    let (mut ts, mut written, mut slot) = (T0_NS, 0u64, 0usize);
    while !live.is_empty() {
        slot %= live.len();
        let l = &mut live[slot];
        // A lost request leaves no frame: the QP's next frame takes its slot.
        if l.sent == 1 && cfg.is_lossy(l.qp) {
            l.sent += 1;
        }
        w.write(ts, &cfg.frame(l.qp, l.sent))?;
        ts += cfg.gap_ns;
        written += 1;
        if cfg.silence_every > 0 && written % cfg.silence_every == 0 {
            ts += cfg.silence_ns;
        }
        l.sent += 1;
        if l.sent == per_qp {
            if next_qp < cfg.qps {
                *l = Live {
                    qp: next_qp,
                    sent: 0,
                };
                next_qp += 1;
            } else {
                live.swap_remove(slot);
                continue;
            }
        }
        slot += 1;
    }
    w.into_inner().flush()?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_qp_sends_its_requests_and_gets_its_ack() {
        let cfg = ChurnConfig {
            qps: 100,
            ..ChurnConfig::default()
        };
        let mut out = Vec::new();
        assert_eq!(write_churn(&mut out, cfg).unwrap(), 400);
        let mut again = Vec::new();
        write_churn(&mut again, cfg).unwrap();
        assert_eq!(out, again);
        assert_eq!(cfg.flows(), 200);
        let none = ChurnConfig { acks: false, ..cfg };
        assert_eq!(write_churn(&mut Vec::new(), none).unwrap(), 300);
        // One QP in 10 loses one request: 10 frames fewer.
        let lossy = ChurnConfig {
            lossy_every: 10,
            ..cfg
        };
        assert_eq!(lossy.lossy_qps(), 10);
        assert!(lossy.is_lossy(9) && !lossy.is_lossy(10));
        assert_eq!(write_churn(&mut Vec::new(), lossy).unwrap(), 390);
    }
}
