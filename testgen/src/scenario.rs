//! Building blocks for crafted conversations: a connection between two hosts that hands out
//! PSNs the way a NIC does, and a timeline of frames.

use super::frames::{self, FrameSpec, Net, RoceSpec};
use super::writer::Frames;

/// Frames at chosen times, in any order; `into_frames` sorts them (stable).
#[derive(Default)]
pub struct Timeline {
    frames: Frames,
}

impl Timeline {
    pub fn push(&mut self, ts: u64, frame: Vec<u8>) {
        self.frames.push((ts, frame));
    }

    pub fn into_frames(mut self) -> Frames {
        self.frames.sort_by_key(|(ts, _)| *ts);
        self.frames
    }
}

/// One end of a connection.
#[derive(Debug, Clone, Copy)]
pub struct Host {
    pub mac: [u8; 6],
    pub ip: [u8; 4],
}

pub const fn host(n: u8) -> Host {
    Host {
        mac: [0x02, 0, 0, 0, 0, n],
        ip: [10, 0, 0, n],
    }
}

/// A QP pair: the requester sends requests to `resp_qpn`, the responder answers to `req_qpn`.
#[derive(Debug, Clone)]
pub struct Conn {
    pub fwd_link: FrameSpec,
    pub rev_link: FrameSpec,
    pub fwd_net: Net,
    pub rev_net: Net,
    pub sport: u16,
    pub req_qpn: u32,
    pub resp_qpn: u32,
    /// Next request PSN.
    pub psn: u32,
    pub mtu: u32,
    /// 0x00 for RC, 0x20 for UC.
    pub transport: u8,
    pub msn: u32,
}

impl Conn {
    /// An RC connection from `a` to `b`, tagged with `vlan` = (VID, PCP) when given, with `tos`.
    pub fn rc(
        a: Host,
        b: Host,
        vlan: Option<(u16, u8)>,
        tos: u8,
        req_qpn: u32,
        resp_qpn: u32,
        psn: u32,
    ) -> Self {
        let mut fwd = FrameSpec::new(a.mac, b.mac);
        let mut rev = FrameSpec::new(b.mac, a.mac);
        if let Some((vid, pcp)) = vlan {
            fwd = fwd.vlan(vid, pcp);
            rev = rev.vlan(vid, pcp);
        }
        let net = Net::v4(a.ip, b.ip, tos);
        Conn {
            fwd_link: fwd,
            rev_link: rev,
            fwd_net: net,
            rev_net: net.reversed(),
            sport: 49152 + (req_qpn & 0x3fff) as u16,
            req_qpn,
            resp_qpn,
            psn,
            mtu: 1024,
            transport: 0x00,
            msn: 0,
        }
    }

    pub fn uc(mut self) -> Self {
        self.transport = 0x20;
        self
    }

    pub fn tos(mut self, tos: u8) -> Self {
        self.fwd_net = self.fwd_net.with_tos(tos);
        self
    }

    fn next_psn(&mut self) -> u32 {
        let p = self.psn;
        self.psn = (self.psn + 1) & 0xff_ffff;
        p
    }

    /// The packets of one message (SEND when `write` is false) of `len` bytes; AckReq on the last.
    pub fn message(&mut self, len: u32, write: bool) -> Vec<RoceSpec> {
        let n = len.div_ceil(self.mtu).max(1);
        let base = self.transport + if write { 0x06 } else { 0x00 };
        let mut out = Vec::new();
        for i in 0..n {
            let op = match (n, i) {
                (1, _) => base + 4,
                (_, 0) => base,
                (_, i) if i == n - 1 => base + 2,
                _ => base + 1,
            };
            let payload = if i == n - 1 {
                len - self.mtu * (n - 1)
            } else {
                self.mtu
            };
            let mut s = RoceSpec::new(op, self.resp_qpn, self.next_psn()).payload(payload as usize);
            if write && (i == 0) {
                s = s.reth(0x7f00_0000_0000, 0x1234, len);
            }
            if i == n - 1 {
                s = s.ackreq();
            }
            out.push(s);
        }
        self.msn += 1;
        out
    }

    pub fn write(&mut self, len: u32) -> Vec<RoceSpec> {
        self.message(len, true)
    }

    pub fn send(&mut self, len: u32) -> Vec<RoceSpec> {
        self.message(len, false)
    }

    /// A READ request of `len` bytes and the responses it gets.
    pub fn read(&mut self, len: u32) -> (RoceSpec, Vec<RoceSpec>) {
        let n = len.div_ceil(self.mtu).max(1);
        let first = self.psn;
        let req = RoceSpec::new(self.transport + 0x0c, self.resp_qpn, first)
            .ackreq()
            .reth(0x7f00_0000_0000, 0x1234, len);
        self.psn = (self.psn + n) & 0xff_ffff;
        self.msn += 1;
        let mut resps = Vec::new();
        for i in 0..n {
            let op = match (n, i) {
                (1, _) => 0x10,
                (_, 0) => 0x0d,
                (_, i) if i == n - 1 => 0x0f,
                _ => 0x0e,
            };
            let payload = if i == n - 1 {
                len - self.mtu * (n - 1)
            } else {
                self.mtu
            };
            let mut s =
                RoceSpec::new(op, self.req_qpn, (first + i) & 0xff_ffff).payload(payload as usize);
            if op != 0x0e {
                s = s.aeth(0x1f, self.msn);
            }
            resps.push(s);
        }
        (req, resps)
    }

    pub fn ack(&self, psn: u32) -> RoceSpec {
        RoceSpec::new(0x11, self.req_qpn, psn).aeth(0x1f, self.msn)
    }

    /// A NAK: `code` 0 PSN sequence error, 1 invalid request, 2 remote access error...
    pub fn nak(&self, psn: u32, code: u8) -> RoceSpec {
        RoceSpec::new(0x11, self.req_qpn, psn).aeth(0x60 | code, self.msn)
    }

    pub fn rnr_nak(&self, psn: u32) -> RoceSpec {
        RoceSpec::new(0x11, self.req_qpn, psn).aeth(0x20 | 14, self.msn)
    }

    pub fn request_frame(&self, s: &RoceSpec) -> Vec<u8> {
        frames::rocev2(&self.fwd_link, self.fwd_net, self.sport, s)
    }

    pub fn response_frame(&self, s: &RoceSpec) -> Vec<u8> {
        frames::rocev2(&self.rev_link, self.rev_net, self.sport, s)
    }

    /// A CNP from the responder back to the requester's QP, with DSCP 48 and PCP 6.
    pub fn cnp_frame(&self) -> Vec<u8> {
        let mut link = self.rev_link.clone();
        for tag in link.vlans.iter_mut() {
            tag.1 = 6;
        }
        frames::rocev2(
            &link,
            self.rev_net.with_tos(0xc2),
            0,
            &RoceSpec::new(0x81, self.req_qpn, 0),
        )
    }
}
