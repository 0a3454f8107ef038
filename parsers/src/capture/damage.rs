//! Damage inside a capture: which record headers cannot be right, where reading goes on after
//! them, and the log of the bytes skipped.
//!
//! A record whose header is implausible ([`Implausible`]) is only *suspect*: it is still read
//! when the header after it is plausible or when it ends the input exactly, so that the odd
//! writer (a caplen above the snap length) keeps its records. Otherwise it is damage, and the
//! reader scans forward for the next place it can trust:
//!
//! * pcap: two plausible record headers in a row (or one that ends the input exactly, or the
//!   file header of a capture concatenated after it);
//! * pcapng: a 4-aligned block whose two length fields agree, whatever its type;
//! * ERF: a record of a known type, a length that holds its header and a time near the last.
//!
//! Records are numbered as they are read: the frames after a damaged region go on from the
//! number of the last frame before it.

use core::fmt;

use super::{erf_record_problem, rd_u32, ERF_HEADER_LEN, ERF_TYPE_PAD};

/// Longest frame a plausible record holds (captured or on the wire): above the largest jumbo
/// frame and the 64 KiB segments of an offloading NIC, well below a damaged length field.
pub const PLAUSIBLE_FRAME_LEN: u32 = 256 << 10;
/// Farthest a plausible record's time lies from the record before it.
pub const PLAUSIBLE_SPAN_S: u64 = 86_400;
/// Longest block a pcapng resynchronisation takes: a 4-byte length read from noise is below
/// 16 MiB one time in 256, and waiting for each such block to check its trailing length
/// would copy megabytes per candidate.
pub const RESYNC_BLOCK_LEN: usize = 1 << 20;
/// Damaged regions listed per input; more are counted in the totals.
pub const MAX_REGIONS: usize = 100;

/// Why a record header cannot be right.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Implausible {
    /// No byte captured.
    Empty,
    CaplenAboveSnaplen {
        caplen: u32,
        snaplen: u32,
    },
    CaplenTooLong {
        caplen: u32,
    },
    OriglenBelowCaplen {
        caplen: u32,
        len: u32,
    },
    OriglenTooLong {
        len: u32,
    },
    /// The fraction of a second is not below 10^6 (10^9 in a nanosecond file).
    Fraction {
        frac: u64,
        nanos: bool,
    },
    /// More than a day from the record before it.
    FarInTime {
        secs: u64,
        before: u64,
    },
    /// Not an ERF record header (`erf_record_problem`).
    Erf(&'static str),
}

impl fmt::Display for Implausible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let most = PLAUSIBLE_FRAME_LEN >> 10;
        match *self {
            Implausible::Empty => f.write_str("claims 0 captured bytes"),
            Implausible::CaplenAboveSnaplen { caplen, snaplen } => write!(
                f,
                "claims {caplen} captured bytes, above the snap length {snaplen}"
            ),
            Implausible::CaplenTooLong { caplen } => write!(
                f,
                "claims {caplen} captured bytes, more than any frame ({most} KiB)"
            ),
            Implausible::OriglenBelowCaplen { caplen, len } => {
                write!(f, "claims {caplen} captured bytes of a {len}-byte frame")
            }
            Implausible::OriglenTooLong { len } => write!(
                f,
                "claims a {len}-byte frame, more than any frame ({most} KiB)"
            ),
            Implausible::Fraction { frac, nanos } => write!(
                f,
                "has {frac} {} past the second",
                if nanos { "ns" } else { "us" }
            ),
            Implausible::FarInTime { secs, before } => write!(
                f,
                "has a time {} s from the record before it",
                secs.abs_diff(before)
            ),
            Implausible::Erf(why) => write!(f, "is not an ERF record ({why})"),
        }
    }
}

/// A pcap record header, read without trusting it.
#[derive(Debug, Clone, Copy)]
pub(super) struct PcapHeader {
    pub secs: u64,
    pub frac: u64,
    pub caplen: u32,
    pub len: u32,
}

impl PcapHeader {
    /// The header at the start of `b` (at least `LEN` bytes).
    pub fn read(b: &[u8], be: bool) -> PcapHeader {
        PcapHeader {
            secs: u64::from(rd_u32(b, 0, be)),
            frac: u64::from(rd_u32(b, 4, be)),
            caplen: rd_u32(b, 8, be),
            len: rd_u32(b, 12, be),
        }
    }

    /// What cannot be right in this header of a file of snap length `snaplen` (0: none),
    /// after a record at `before` seconds (None: the first of its file).
    pub fn problem(&self, snaplen: u32, nanos: bool, before: Option<u64>) -> Option<Implausible> {
        let (caplen, len) = (self.caplen, self.len);
        let second = if nanos { 1_000_000_000 } else { 1_000_000 };
        if caplen == 0 {
            Some(Implausible::Empty)
        } else if snaplen != 0 && caplen > snaplen {
            Some(Implausible::CaplenAboveSnaplen { caplen, snaplen })
        } else if caplen > PLAUSIBLE_FRAME_LEN {
            Some(Implausible::CaplenTooLong { caplen })
        } else if len < caplen {
            Some(Implausible::OriglenBelowCaplen { caplen, len })
        } else if len > PLAUSIBLE_FRAME_LEN {
            Some(Implausible::OriglenTooLong { len })
        } else if self.frac >= second {
            Some(Implausible::Fraction {
                frac: self.frac,
                nanos,
            })
        } else {
            far_in_time(self.secs, before)
        }
    }
}

fn far_in_time(secs: u64, before: Option<u64>) -> Option<Implausible> {
    before
        .filter(|&b| secs.abs_diff(b) > PLAUSIBLE_SPAN_S)
        .map(|before| Implausible::FarInTime { secs, before })
}

/// The seconds of an ERF record header, None for padding (whose time says nothing).
pub(super) fn erf_secs(h: &[u8]) -> Option<u64> {
    (h[8] & 0x7f != ERF_TYPE_PAD).then(|| u64::from(u32::from_le_bytes([h[4], h[5], h[6], h[7]])))
}

/// What cannot be right in the ERF record header at the start of `h` (at least
/// `ERF_HEADER_LEN` bytes), after a record at `before` seconds.
pub(super) fn erf_problem(h: &[u8], before: Option<u64>) -> Option<Implausible> {
    if let Some(why) = erf_record_problem(&h[..ERF_HEADER_LEN]) {
        return Some(Implausible::Erf(why));
    }
    erf_secs(h).and_then(|secs| far_in_time(secs, before))
}

/// Whether reading can go on at a place: yes, no, or not until `Need` bytes are there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sync {
    Yes,
    No,
    Need(usize),
}

/// What a suspect record is: read as it is, damage, or not known until more bytes are there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Judged {
    Read,
    Damage,
    Need(usize),
}

/// A run of bytes that could not be read as records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DamagedRegion {
    /// Where it starts, as the caller counts the input's bytes.
    pub offset: u64,
    pub bytes_skipped: u64,
    /// Where reading went on; None when nothing readable followed.
    pub resynced_at: Option<u64>,
    /// pcapng packet blocks skipped whole right after the damage: the interface they name
    /// was never described (its description lost in it).
    pub packets_skipped: u64,
    /// What was wrong where it starts.
    pub why: String,
}

/// Every damaged region of an input, the first `MAX_REGIONS` listed, all counted; and the
/// pcapng packet blocks skipped for want of their interface's description.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DamageLog {
    pub regions: Vec<DamagedRegion>,
    pub region_count: u64,
    /// Bytes skipped: the regions' and the packet blocks'.
    pub bytes_skipped: u64,
    /// Packet blocks skipped, in regions or not.
    pub packets_skipped: u64,
    /// Why the first packet block skipped outside a region was.
    pub packet_why: Option<String>,
    /// The latest region while it goes on (nothing read after it yet): where it ends, and
    /// whether it is listed (the last of `regions`).
    open: Option<(u64, bool)>,
}

impl DamageLog {
    /// `n` bytes at `offset` skipped as damage: they extend the latest region when it ends
    /// there and nothing was read since, else they start a region, for reason `why`.
    pub(super) fn skip(&mut self, offset: u64, n: usize, why: impl FnOnce() -> String) {
        let n = n as u64;
        match self.open {
            Some((end, listed)) if end == offset => {
                if listed {
                    if let Some(r) = self.regions.last_mut() {
                        r.bytes_skipped += n;
                    }
                }
                self.open = Some((end + n, listed));
            }
            _ => {
                self.region_count += 1;
                let listed = self.regions.len() < MAX_REGIONS;
                if listed {
                    self.regions.push(DamagedRegion {
                        offset,
                        bytes_skipped: n,
                        resynced_at: None,
                        packets_skipped: 0,
                        why: why(),
                    });
                }
                self.open = Some((offset + n, listed));
            }
        }
        self.bytes_skipped += n;
    }

    /// A whole packet block of `n` bytes at `offset` skipped, its interface never described:
    /// counted, and part of the latest region when it goes on there (its description lost in
    /// it), else counted alone.
    pub(super) fn skip_packet(&mut self, offset: u64, n: usize, why: impl FnOnce() -> String) {
        self.packets_skipped += 1;
        match self.open {
            Some((end, _)) if end == offset => {
                self.skip(offset, n, why);
                if let (Some((_, true)), Some(r)) = (self.open, self.regions.last_mut()) {
                    r.packets_skipped += 1;
                }
            }
            _ => {
                self.bytes_skipped += n as u64;
                self.packet_why.get_or_insert_with(why);
            }
        }
    }

    /// Something was read at `offset`: the latest region, if it went on, ended there.
    pub(super) fn read_on(&mut self, offset: u64) {
        if let (Some((_, true)), Some(r)) = (self.open.take(), self.regions.last_mut()) {
            r.resynced_at = Some(offset);
        }
    }
}
