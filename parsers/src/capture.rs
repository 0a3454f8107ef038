//! pcap and pcapng record containers, parsed from byte slices (no I/O).
//!
//! [`CaptureParser::next`] takes the unread part of the input and returns one record borrowing
//! it, a block to skip, or [`Next::Incomplete`] with the number of bytes the next record needs:
//! a mapped file ends there (a cut capture), a stream reads more and calls again. Every length
//! read from the file is checked before use; lengths beyond [`MAX_BLOCK_LEN`] are damage, so a
//! hostile header never drives an allocation. A header that cannot be right is damage: the
//! bytes up to the next place records can be trusted again are skipped and logged
//! (module `damage`), and reading goes on.

mod damage;

use core::fmt;

use damage::{erf_problem, erf_secs, Judged, PcapHeader, Sync, RESYNC_BLOCK_LEN};
pub use damage::{DamageLog, DamagedRegion, Implausible, MAX_REGIONS, PLAUSIBLE_FRAME_LEN};

use crate::link::LINKTYPE_ETHERNET;

/// Largest record or block accepted (16 MiB; real frames are at most 256 KiB).
pub const MAX_BLOCK_LEN: usize = 16 << 20;
/// Most pcapng interfaces accepted in one section.
pub const MAX_INTERFACES: usize = 4096;

const PCAP_MAGIC_MICRO: u32 = 0xa1b2_c3d4;
const PCAP_MAGIC_NANO: u32 = 0xa1b2_3c4d;
const PCAPNG_SHB: u32 = 0x0a0d_0d0a;
const PCAPNG_BYTE_ORDER_MAGIC: u32 = 0x1a2b_3c4d;
const PCAPNG_IDB: u32 = 0x0000_0001;
const PCAPNG_OBSOLETE_PB: u32 = 0x0000_0002;
const PCAPNG_SPB: u32 = 0x0000_0003;
const PCAPNG_EPB: u32 = 0x0000_0006;
const PCAPNG_ISB: u32 = 0x0000_0005;
pub const PCAP_HEADER_LEN: usize = 24;
const PCAP_RECORD_HEADER_LEN: usize = 16;

/// One captured frame, borrowing the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// Nanoseconds since the Unix epoch.
    pub ts_ns: u64,
    /// Bytes captured (== `data.len()`).
    pub caplen: u32,
    /// Length of the frame on the wire.
    pub len: u32,
    pub linktype: u32,
    pub interface: u32,
    /// Which input of a set read as one capture (`-r a -r b`) the record came from; 0 for one.
    pub input: u16,
    /// Which capture point the record was taken at: inputs read at the same time are
    /// different points, a file that starts after another ended continues it (a rotated set).
    pub point: u16,
    /// The frame's number, from 1, as Wireshark shows it: its place among the records of its
    /// capture, or of a set read as one (`-r a -r b`: the merged order).
    pub frame: u64,
    /// The frame's number in its own input (== `frame` for one input).
    pub input_frame: u64,
    /// Which capture of its input the record is in, from 0: pcap files one after the other
    /// (`cat a.pcap b.pcap`), or pcapng sections.
    pub file: u16,
    pub data: &'a [u8],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next<'a> {
    /// A record and the number of input bytes it took.
    Record(Record<'a>, usize),
    /// A block that holds no packet (section or interface description, statistics...).
    Skip(usize),
    /// The next record needs `need` bytes in all and fewer are there.
    Incomplete { need: usize },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaptureError {
    /// The first bytes are not a pcap or pcapng header.
    NotACapture { magic: [u8; 4] },
    /// The input is shorter than a file header.
    TooShort { len: usize },
    /// A header that cannot be right where no resynchronisation applies (a pcapng block
    /// before any section header); the rest of the input cannot be framed. Damage past the
    /// first header is skipped instead ([`CaptureParser::damage`]).
    Corrupt { what: String },
    /// No pcap or pcapng header, and the first records are not ERF's (`erf_verdict`).
    NotErf { magic: [u8; 4], why: &'static str },
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaptureError::NotACapture { magic } => write!(
                f,
                "not a pcap or pcapng capture (starts with {:02x} {:02x} {:02x} {:02x})",
                magic[0], magic[1], magic[2], magic[3]
            ),
            CaptureError::TooShort { len } => {
                write!(f, "too short for a capture file header ({len} bytes)")
            }
            CaptureError::Corrupt { what } => f.write_str(what),
            CaptureError::NotErf { magic, why } => write!(
                f,
                "not a pcap or pcapng capture (starts with {:02x} {:02x} {:02x} {:02x}), nor ERF records ({why})",
                magic[0], magic[1], magic[2], magic[3]
            ),
        }
    }
}

fn corrupt(what: String) -> CaptureError {
    CaptureError::Corrupt { what }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Pcap {
        big_endian: bool,
        nanos: bool,
    },
    Pcapng,
    /// A native ERF file (Endace DAG cards): records one after the other, no file header.
    Erf,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Pcap { nanos: false, .. } => "pcap",
            Format::Pcap { nanos: true, .. } => "pcap (ns)",
            Format::Pcapng => "pcapng",
            Format::Erf => "erf",
        }
    }
}

#[derive(Debug, Clone)]
struct Interface {
    linktype: u32,
    snaplen: u32,
    /// if_name and if_description, as the file gives them.
    name: Option<String>,
    description: Option<String>,
    /// Timestamp units per second are 10^exp (false) or 2^exp (true).
    tsresol_pow2: bool,
    tsresol_exp: u8,
    tsoffset_s: i64,
    /// The latest Interface Statistics Block: frames dropped by the interface (isb_ifdrop)
    /// and by the capturing OS or tool (isb_osdrop), cumulative.
    drops: u64,
}

/// What a capture says of the interface a record was taken on: what a writer needs to keep
/// the record's time and framing exactly (pcapng's interface description block).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfaceInfo {
    pub linktype: u32,
    pub snaplen: u32,
    /// pcapng's if_tsresol byte: bit 7 set, units are 2^-n s, else 10^-n s (6: microseconds).
    pub tsresol: u8,
    /// pcapng's if_tsoffset: seconds added to every timestamp.
    pub tsoffset_s: i64,
    pub name: Option<String>,
    pub description: Option<String>,
}

/// How a record's time and options were written in the file, for a writer that copies the
/// record exactly (`CaptureParser::next_raw`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RawPacket<'a> {
    /// The timestamp in the units of its interface (`InterfaceInfo::tsresol`), offset not
    /// applied: a pcap's seconds and fraction as one number, ERF's 32.32 fixed point.
    pub ts_units: u64,
    /// A pcapng packet block's options (empty elsewhere).
    pub options: PacketOptions<'a>,
}

/// The options of a pcapng packet block, in the byte order of its section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PacketOptions<'a> {
    bytes: &'a [u8],
    big_endian: bool,
}

/// One option of a packet block, its numbers read in the section's byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketOption<'a> {
    /// opt_comment (1): UTF-8 text.
    Comment(&'a [u8]),
    /// epb_flags (2): direction, reception type, FCS length, link-layer errors.
    Flags(u32),
    /// epb_hash (3): the algorithm byte and the hash.
    Hash(&'a [u8]),
    /// epb_dropcount (4): frames lost between this one and the one before.
    DropCount(u64),
    /// epb_packetid (5).
    PacketId(u64),
    /// epb_queue (6).
    Queue(u32),
    /// epb_verdict (7): the type byte and the verdict.
    Verdict(&'a [u8]),
    /// Any other option (custom options among them): its code and value as they are in the
    /// file, which only the section's byte order can tell how to read.
    Other(u16, &'a [u8]),
}

impl<'a> PacketOptions<'a> {
    /// Options as a section of that byte order holds them (tests build some by hand).
    #[doc(hidden)]
    pub fn for_tests(bytes: &'a [u8], big_endian: bool) -> Self {
        PacketOptions { bytes, big_endian }
    }

    /// Whether the section, and so these options, are big-endian.
    pub fn big_endian(&self) -> bool {
        self.big_endian
    }

    /// The options in file order (a malformed tail is left out).
    pub fn iter(&self) -> impl Iterator<Item = PacketOption<'a>> + 'a {
        let (mut rest, be) = (self.bytes, self.big_endian);
        core::iter::from_fn(move || {
            if rest.len() < 4 {
                return None;
            }
            let code = rd_u16(rest, 0, be);
            let len = usize::from(rd_u16(rest, 2, be));
            let padded = (len + 3) & !3;
            if code == 0 || rest.len() < 4 + padded {
                return None;
            }
            let value = &rest[4..4 + len];
            rest = &rest[4 + padded..];
            Some(PacketOption::read(code, value, be))
        })
    }
}

impl<'a> PacketOption<'a> {
    fn read(code: u16, value: &'a [u8], be: bool) -> PacketOption<'a> {
        let u64_of = |v: &[u8]| {
            let (hi, lo) = (u64::from(rd_u32(v, 0, be)), u64::from(rd_u32(v, 4, be)));
            if be {
                hi << 32 | lo
            } else {
                lo << 32 | hi
            }
        };
        match (code, value.len()) {
            (1, _) => PacketOption::Comment(value),
            (2, 4) => PacketOption::Flags(rd_u32(value, 0, be)),
            (3, _) => PacketOption::Hash(value),
            (4, 8) => PacketOption::DropCount(u64_of(value)),
            (5, 8) => PacketOption::PacketId(u64_of(value)),
            (6, 4) => PacketOption::Queue(rd_u32(value, 0, be)),
            (7, _) => PacketOption::Verdict(value),
            _ => PacketOption::Other(code, value),
        }
    }
}

impl Interface {
    fn info(&self) -> InterfaceInfo {
        InterfaceInfo {
            linktype: self.linktype,
            snaplen: self.snaplen,
            tsresol: u8::from(self.tsresol_pow2) << 7 | self.tsresol_exp,
            tsoffset_s: self.tsoffset_s,
            name: self.name.clone(),
            description: self.description.clone(),
        }
    }

    fn ts_ns(&self, units: u64) -> u64 {
        let ns: u128 = if self.tsresol_pow2 {
            let exp = u32::from(self.tsresol_exp.min(127));
            (u128::from(units) * 1_000_000_000) >> exp
        } else if self.tsresol_exp <= 9 {
            u128::from(units) * 10u128.pow(9 - u32::from(self.tsresol_exp))
        } else {
            u128::from(units) / 10u128.pow(u32::from(self.tsresol_exp.min(38)) - 9)
        };
        let offset = i128::from(self.tsoffset_s) * 1_000_000_000;
        (ns as i128 + offset).clamp(0, u64::MAX as i128) as u64
    }
}

/// Framing state of a capture: format, byte order, and for pcapng the interfaces of the current
/// section (reset at every section header).
#[derive(Debug, Clone)]
pub struct CaptureParser {
    format: Format,
    big_endian: bool,
    /// pcap: the file's link type and snap length.
    linktype: u32,
    snaplen: u32,
    interfaces: Vec<Interface>,
    sections: u32,
    /// pcap: file headers seen (more than one when captures were concatenated, `cat a b`).
    files: u32,
    /// Records returned so far: the number of the next one, less one.
    records: u64,
    /// Seconds of the latest record read (pcap, ERF): a record far from it is suspect.
    last_secs: Option<u64>,
    /// Past damage, looking for the next place records can be trusted.
    resyncing: bool,
    /// What `next` is given from now on is all the rest of the input (`input_ended`).
    input_ended: bool,
    damage: DamageLog,
}

/// The ERF record header: timestamp (u64 little-endian, seconds . binary fraction), type (bit
/// 7: extension headers follow), flags, record length (big-endian, header included), loss
/// counter, wire length.
const ERF_HEADER_LEN: usize = 16;

/// ERF record types: 1 (HDLC POS) to 48 (pad); the rest are unassigned.
const ERF_TYPES: std::ops::RangeInclusive<u8> = 1..=48;
/// Record types whose wire length says nothing of the record: metadata and padding.
const ERF_TYPE_META: u8 = 27;
const ERF_TYPE_PAD: u8 = 48;
/// Ethernet record types, whose frame follows two bytes of offset and padding.
const ERF_ETHERNET_TYPES: [u8; 4] = [2, 11, 16, 20];
/// Flags bit 2: variable-length record (padded to 8 bytes at most); bits 6-7 are reserved.
const ERF_FLAG_VLEN: u8 = 0x04;
const ERF_FLAGS_RESERVED: u8 = 0xc0;
/// How many of a file's first records must be ERF's for the file to be taken as ERF.
pub const ERF_RECORDS_CHECKED: usize = 4;
/// The first records' timestamps lie within this many seconds of each other.
const ERF_SPAN_S: u64 = 3600;

/// What is wrong with `rec` as an ERF record (its header and, if `rec` holds them, its
/// extension headers), or None: a known record type, reserved flags 0, a length that holds
/// the header, extension headers and padding and, for a packet of variable length, no more
/// than the frame on the wire besides (up to 8 bytes of alignment), a timestamp set.
fn erf_record_problem(rec: &[u8]) -> Option<&'static str> {
    if rec.len() < ERF_HEADER_LEN {
        return Some("a record shorter than the ERF header");
    }
    let ty = rec[8] & 0x7f;
    let flags = rec[9];
    let rlen = usize::from(u16::from_be_bytes([rec[10], rec[11]]));
    let wlen = usize::from(u16::from_be_bytes([rec[14], rec[15]]));
    let secs = u32::from_le_bytes([rec[4], rec[5], rec[6], rec[7]]);
    if !ERF_TYPES.contains(&ty) {
        return Some("an unknown record type");
    }
    if flags & ERF_FLAGS_RESERVED != 0 {
        return Some("reserved flags set");
    }
    if rlen < ERF_HEADER_LEN {
        return Some("a record length shorter than its header");
    }
    // Extension headers: 8 bytes each while the top bit of the previous type byte is set.
    let mut extensions = 0;
    let mut more = rec[8] & 0x80 != 0;
    while more {
        let at = ERF_HEADER_LEN + 8 * extensions;
        if at + 8 > rlen {
            return Some("extension headers beyond the record");
        }
        let Some(&next) = rec.get(at) else {
            break; // not read yet: the length check above is all that can be said
        };
        more = next & 0x80 != 0;
        extensions += 1;
    }
    let pad = if ERF_ETHERNET_TYPES.contains(&ty) {
        2
    } else {
        0
    };
    let Some(payload) = rlen.checked_sub(ERF_HEADER_LEN + 8 * extensions + pad) else {
        return Some("a record length shorter than its headers");
    };
    let sized = ty != ERF_TYPE_META && ty != ERF_TYPE_PAD;
    if sized && flags & ERF_FLAG_VLEN != 0 && payload > wlen + 8 {
        return Some("a record longer than the frame on the wire");
    }
    if sized && flags & ERF_FLAG_VLEN == 0 && rlen > wlen + 64 {
        return Some("a record longer than the frame on the wire");
    }
    if ty != ERF_TYPE_PAD && secs == 0 {
        return Some("a timestamp of 0");
    }
    None
}

/// Whether `head`, the first bytes of a file (`whole`: all of it), is ERF: its first
/// `ERF_RECORDS_CHECKED` records (or all, if fewer) each an ERF record, one right after the
/// other to the end of the file when it has fewer, their timestamps within an hour of each
/// other. ERF files have no magic number: a JSON report or a text file must not pass for
/// one. None while `head` is too short to tell.
pub fn erf_verdict(head: &[u8], whole: bool) -> Option<Result<(), CaptureError>> {
    let not_erf = |why: &'static str| {
        let mut magic = [0u8; 4];
        for (m, b) in magic.iter_mut().zip(head) {
            *m = *b;
        }
        Some(Err(CaptureError::NotErf { magic, why }))
    };
    let (mut at, mut first_secs) = (0usize, None);
    for _ in 0..ERF_RECORDS_CHECKED {
        if at == head.len() && whole && at > 0 {
            return Some(Ok(()));
        }
        let rest = &head[at..];
        if rest.len() < ERF_HEADER_LEN {
            return if whole {
                not_erf("the file ends inside a record header")
            } else {
                None
            };
        }
        let rlen = usize::from(u16::from_be_bytes([rest[10], rest[11]]));
        if let Some(why) = erf_record_problem(&rest[..rest.len().min(rlen.max(ERF_HEADER_LEN))]) {
            return not_erf(why);
        }
        if rest.len() < rlen {
            return if whole {
                not_erf("a record runs past the end of the file")
            } else {
                None
            };
        }
        if rest[8] & 0x7f != ERF_TYPE_PAD {
            let secs = u64::from(u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]));
            let first = *first_secs.get_or_insert(secs);
            if secs.abs_diff(first) > ERF_SPAN_S {
                return not_erf("timestamps more than an hour apart");
            }
        }
        at += rlen;
    }
    Some(Ok(()))
}

/// What is wrong with a pcapng block that is framed (its lengths agree): only it is skipped.
enum BlockFault {
    Malformed(String),
    /// A packet of an interface never described: its link type is not known.
    NoInterface(String),
}

/// A step that is not a packet: it has no raw form.
fn no_packet(next: Next<'_>) -> (Next<'_>, RawPacket<'_>) {
    (next, RawPacket::default())
}

/// ERF timestamps are 32.32 fixed-point seconds: pcapng's if_tsresol 2^-32.
pub const ERF_TSRESOL: u8 = 0x80 | 32;

fn rd_u16(b: &[u8], at: usize, be: bool) -> u16 {
    let v = [b[at], b[at + 1]];
    if be {
        u16::from_be_bytes(v)
    } else {
        u16::from_le_bytes(v)
    }
}

fn rd_u32(b: &[u8], at: usize, be: bool) -> u32 {
    let v = [b[at], b[at + 1], b[at + 2], b[at + 3]];
    if be {
        u32::from_be_bytes(v)
    } else {
        u32::from_le_bytes(v)
    }
}

impl CaptureParser {
    /// Recognises the file format from its first bytes and returns the parser and the number of
    /// header bytes consumed (a pcap file header; pcapng's section header is read by `next`).
    pub fn new(head: &[u8]) -> Result<(CaptureParser, usize), CaptureError> {
        if head.len() < 4 {
            return Err(CaptureError::TooShort { len: head.len() });
        }
        let magic_le = rd_u32(head, 0, false);
        let mut parser = CaptureParser {
            format: Format::Pcapng,
            big_endian: false,
            linktype: LINKTYPE_ETHERNET,
            snaplen: 0,
            interfaces: Vec::new(),
            sections: 0,
            files: 1,
            records: 0,
            last_secs: None,
            resyncing: false,
            input_ended: false,
            damage: DamageLog::default(),
        };
        let (big_endian, nanos) = match magic_le {
            PCAP_MAGIC_MICRO => (false, false),
            PCAP_MAGIC_NANO => (false, true),
            m if m == PCAP_MAGIC_MICRO.swap_bytes() => (true, false),
            m if m == PCAP_MAGIC_NANO.swap_bytes() => (true, true),
            PCAPNG_SHB => return Ok((parser, 0)),
            _ if erf_record_problem(&head[..head.len().min(ERF_HEADER_LEN)]).is_none() => {
                parser.format = Format::Erf;
                parser.linktype = crate::link::LINKTYPE_ERF;
                return Ok((parser, 0));
            }
            _ => {
                return Err(CaptureError::NotACapture {
                    magic: [head[0], head[1], head[2], head[3]],
                })
            }
        };
        if head.len() < PCAP_HEADER_LEN {
            return Err(CaptureError::TooShort { len: head.len() });
        }
        parser.format = Format::Pcap { big_endian, nanos };
        parser.big_endian = big_endian;
        parser.snaplen = rd_u32(head, 16, big_endian);
        // The upper bits of the link-type field carry FCS information (pcap spec).
        parser.linktype = rd_u32(head, 20, big_endian) & 0x0fff_ffff;
        Ok((parser, PCAP_HEADER_LEN))
    }

    pub fn format(&self) -> Format {
        self.format
    }

    /// Whether timestamps are finer than microseconds (a nanosecond pcap, or a pcapng
    /// interface with a finer resolution): how many digits times are worth showing.
    pub fn nanosecond_times(&self) -> bool {
        match self.format {
            Format::Pcap { nanos, .. } => nanos,
            Format::Erf => true,
            Format::Pcapng => self.interfaces.iter().any(|i| {
                i.tsresol_pow2 && i.tsresol_exp > 20 || !i.tsresol_pow2 && i.tsresol_exp > 6
            }),
        }
    }

    /// pcap files read so far: more than one when files were concatenated; pcapng sections.
    pub fn files(&self) -> u32 {
        match self.format {
            Format::Pcap { .. } | Format::Erf => self.files,
            Format::Pcapng => self.sections,
        }
    }

    /// Whether `buf` starts with a pcap file header (a magic and version 2.4) rather than a
    /// record: the start of the next file of a concatenated set.
    fn pcap_header_at(buf: &[u8]) -> bool {
        let magic = rd_u32(buf, 0, false);
        let be = match magic {
            PCAP_MAGIC_MICRO | PCAP_MAGIC_NANO => false,
            m if m == PCAP_MAGIC_MICRO.swap_bytes() || m == PCAP_MAGIC_NANO.swap_bytes() => true,
            _ => return false,
        };
        rd_u16(buf, 4, be) == 2 && rd_u16(buf, 6, be) == 4
    }

    /// The link type of a classic pcap file (pcapng: of its first interface, if any).
    pub fn linktype(&self) -> Option<u32> {
        match self.format {
            Format::Pcap { .. } | Format::Erf => Some(self.linktype),
            Format::Pcapng => self.interfaces.first().map(|i| i.linktype),
        }
    }

    /// The snap length of a classic pcap file, or of the first pcapng interface.
    pub fn snaplen(&self) -> u32 {
        match self.format {
            Format::Pcap { .. } | Format::Erf => self.snaplen,
            Format::Pcapng => self.interfaces.first().map_or(0, |i| i.snaplen),
        }
    }

    /// Decodes the next record from `buf` (the unread input). `offset` is `buf`'s position in
    /// the input, used in messages and in the damaged regions (`damage`).
    pub fn next<'a>(&mut self, buf: &'a [u8], offset: u64) -> Result<Next<'a>, CaptureError> {
        self.next_raw(buf, offset).map(|(next, _)| next)
    }

    /// Says that what `next` is given from now on is all the rest of the input: a suspect
    /// record that ends it exactly is read, and damage that runs to its end is skipped to it.
    /// Until then, a record that may be damage waits for the header after it.
    pub fn input_ended(&mut self) {
        self.input_ended = true;
    }

    /// The damaged regions skipped so far.
    pub fn damage(&self) -> &DamageLog {
        &self.damage
    }

    /// `next`, with how a record was written: its timestamp in its interface's units and its
    /// options, so that a writer can copy it exactly (`--annotate`).
    pub fn next_raw<'a>(
        &mut self,
        buf: &'a [u8],
        offset: u64,
    ) -> Result<(Next<'a>, RawPacket<'a>), CaptureError> {
        let skipped = self.damage.bytes_skipped;
        let (next, raw) = match self.resync(buf, offset, 0) {
            Some(step) => no_packet(step),
            None => match self.format {
                Format::Pcap { nanos, .. } => self.next_pcap(buf, nanos, offset),
                Format::Pcapng => self.next_pcapng(buf, offset),
                Format::Erf => self.next_erf(buf, offset),
            }?,
        };
        if matches!(next, Next::Record(..) | Next::Skip(_)) && self.damage.bytes_skipped == skipped
        {
            self.damage.read_on(offset);
        }
        let next = match next {
            Next::Record(r, used) => {
                self.records += 1;
                let numbered = Record {
                    frame: self.records,
                    input_frame: self.records,
                    file: self.files().saturating_sub(1).min(u32::from(u16::MAX)) as u16,
                    ..r
                };
                Next::Record(numbered, used)
            }
            other => other,
        };
        Ok((next, raw))
    }

    /// The interface record `interface` of the current section (pcap: the file) was taken
    /// on.
    pub fn interface_info(&self, interface: u32) -> Option<InterfaceInfo> {
        match self.format {
            Format::Pcap { nanos, .. } => Some(InterfaceInfo {
                linktype: self.linktype,
                snaplen: self.snaplen,
                tsresol: if nanos { 9 } else { 6 },
                tsoffset_s: 0,
                name: None,
                description: None,
            }),
            Format::Erf => Some(InterfaceInfo {
                linktype: self.linktype,
                snaplen: 0,
                tsresol: ERF_TSRESOL,
                tsoffset_s: 0,
                name: None,
                description: None,
            }),
            Format::Pcapng => self.interfaces.get(interface as usize).map(Interface::info),
        }
    }

    fn next_pcap<'a>(
        &mut self,
        buf: &'a [u8],
        nanos: bool,
        offset: u64,
    ) -> Result<(Next<'a>, RawPacket<'a>), CaptureError> {
        if buf.len() < PCAP_RECORD_HEADER_LEN {
            return Ok(no_packet(Next::Incomplete {
                need: PCAP_RECORD_HEADER_LEN,
            }));
        }
        if Self::pcap_header_at(buf) {
            // `cat a.pcap b.pcap`: the next file's header; read on with its byte order,
            // timestamp resolution and link type.
            if buf.len() < PCAP_HEADER_LEN {
                return Ok(no_packet(Next::Incomplete {
                    need: PCAP_HEADER_LEN,
                }));
            }
            self.next_pcap_file(&buf[..PCAP_HEADER_LEN])?;
            return Ok(no_packet(Next::Skip(PCAP_HEADER_LEN)));
        }
        let h = PcapHeader::read(buf, self.big_endian);
        if let Some(problem) = h.problem(self.snaplen, nanos, self.last_secs) {
            match self.suspect_pcap(buf, &h, nanos) {
                Judged::Read => {}
                Judged::Need(need) => return Ok(no_packet(Next::Incomplete { need })),
                Judged::Damage => {
                    let why = format!("record header at byte {offset} {problem}");
                    return Ok(no_packet(self.damaged(buf, offset, why)));
                }
            }
        }
        let caplen = h.caplen;
        let need = PCAP_RECORD_HEADER_LEN + caplen as usize;
        if buf.len() < need {
            return Ok(no_packet(Next::Incomplete { need }));
        }
        let (sec, frac) = (h.secs, h.frac);
        let ts_ns = sec * 1_000_000_000 + if nanos { frac } else { frac * 1000 };
        let raw = RawPacket {
            ts_units: sec * if nanos { 1_000_000_000 } else { 1_000_000 } + frac,
            options: PacketOptions::default(),
        };
        self.last_secs = Some(sec);
        let record = Next::Record(
            Record {
                ts_ns,
                caplen,
                len: h.len.max(caplen),
                linktype: self.linktype,
                interface: 0,
                input: 0,
                point: 0,
                frame: 0,
                input_frame: 0,
                file: 0,
                data: &buf[PCAP_RECORD_HEADER_LEN..need],
            },
            need,
        );
        Ok((record, raw))
    }

    /// The file header of a pcap concatenated after this one: its byte order, time units,
    /// link type and snap length from now on.
    fn next_pcap_file(&mut self, header: &[u8]) -> Result<(), CaptureError> {
        let (next, _) = CaptureParser::new(header)?;
        self.format = next.format;
        self.big_endian = next.big_endian;
        self.snaplen = next.snaplen;
        self.linktype = next.linktype;
        self.files += 1;
        self.last_secs = None;
        Ok(())
    }

    /// A pcap record whose header `h` is implausible: read when the header after it is
    /// plausible, damage when it is not. Beyond `MAX_BLOCK_LEN` nothing is waited for.
    fn suspect_pcap(&self, buf: &[u8], h: &PcapHeader, nanos: bool) -> Judged {
        if h.caplen as usize > MAX_BLOCK_LEN {
            return Judged::Damage;
        }
        let len = PCAP_RECORD_HEADER_LEN + h.caplen as usize;
        // The input cut inside the next header tells nothing against this record.
        self.follows(buf, len, PCAP_RECORD_HEADER_LEN, Judged::Read, |next| {
            self.pcap_after(next, nanos, h.secs)
        })
    }

    /// Whether `next` starts as a pcap record does after one at `secs` (or a file header).
    fn pcap_after(&self, next: &[u8], nanos: bool, secs: u64) -> bool {
        Self::pcap_header_at(next)
            || PcapHeader::read(next, self.big_endian)
                .problem(self.snaplen, nanos, Some(secs))
                .is_none()
    }

    /// What the bytes after a record of `len` bytes at the start of `b` say of it: it is read
    /// when the next header (`header` bytes) is `plausible` or when the record ends the input
    /// exactly; `cut` when the input ends inside the next header.
    fn follows(
        &self,
        b: &[u8],
        len: usize,
        header: usize,
        cut: Judged,
        plausible: impl Fn(&[u8]) -> bool,
    ) -> Judged {
        match b.get(len..) {
            Some(next) if next.len() >= header => {
                if plausible(next) {
                    Judged::Read
                } else {
                    Judged::Damage
                }
            }
            Some([]) if self.input_ended => Judged::Read,
            Some(_) if self.input_ended => cut,
            None if self.input_ended => Judged::Damage,
            _ => Judged::Need(len + header),
        }
    }

    /// Damage at the start of `buf`, for reason `why`: a region starts, and the bytes up to
    /// the next place records can be trusted are skipped (at least one, so reading moves).
    fn damaged<'a>(&mut self, buf: &[u8], offset: u64, why: String) -> Next<'a> {
        self.damage.skip(offset, 0, || why);
        self.resyncing = true;
        match self.resync(buf, offset, 1) {
            Some(step) => step,
            None => Next::Skip(1),
        }
    }

    /// While past damage: skips to the next place records can be trusted, looking from
    /// `from`. None when not past damage, or when such a place starts `buf`: read there.
    fn resync<'a>(&mut self, buf: &[u8], offset: u64, from: usize) -> Option<Next<'a>> {
        if !self.resyncing {
            return None;
        }
        // pcapng blocks start 4-aligned in the file.
        let (mut at, step) = match self.format {
            Format::Pcapng => ((offset + from as u64).next_multiple_of(4) - offset, 4),
            _ => (from as u64, 1),
        };
        let mut found = false;
        while (at as usize) < buf.len() {
            match self.sync_at(&buf[at as usize..]) {
                Sync::Yes => {
                    found = true;
                    break;
                }
                Sync::No => at += step,
                Sync::Need(need) if at == 0 => return Some(Next::Incomplete { need }),
                Sync::Need(_) => break,
            }
        }
        let at = (at as usize).min(buf.len());
        self.resyncing = !found;
        if at == 0 {
            return (!found).then_some(Next::Incomplete {
                need: PCAP_RECORD_HEADER_LEN,
            });
        }
        self.damage
            .skip(offset, at, || format!("damage at byte {offset}"));
        Some(Next::Skip(at))
    }

    /// Whether records can be trusted again from the start of `b` (`resync`).
    fn sync_at(&self, b: &[u8]) -> Sync {
        match self.format {
            Format::Pcap { nanos, .. } => self.pcap_sync_at(b, nanos),
            Format::Pcapng => self.pcapng_sync_at(b),
            Format::Erf => self.erf_sync_at(b),
        }
    }

    /// Not known until `n` bytes are there; no, if the input ends before.
    fn need(&self, n: usize) -> Sync {
        if self.input_ended {
            Sync::No
        } else {
            Sync::Need(n)
        }
    }

    /// The judgement of a record that would start here, as a place to read on from: two
    /// plausible headers in a row, or one that ends the input exactly.
    fn sync_of(judged: Judged) -> Sync {
        match judged {
            Judged::Read => Sync::Yes,
            Judged::Damage => Sync::No,
            Judged::Need(n) => Sync::Need(n),
        }
    }

    fn pcap_sync_at(&self, b: &[u8], nanos: bool) -> Sync {
        if b.len() < PCAP_RECORD_HEADER_LEN {
            return self.need(PCAP_RECORD_HEADER_LEN);
        }
        if Self::pcap_header_at(b) {
            return if b.len() >= PCAP_HEADER_LEN {
                Sync::Yes
            } else {
                self.need(PCAP_HEADER_LEN)
            };
        }
        let h = PcapHeader::read(b, self.big_endian);
        if h.problem(self.snaplen, nanos, self.last_secs).is_some() {
            return Sync::No;
        }
        let len = PCAP_RECORD_HEADER_LEN + h.caplen as usize;
        Self::sync_of(
            self.follows(b, len, PCAP_RECORD_HEADER_LEN, Judged::Damage, |next| {
                self.pcap_after(next, nanos, h.secs)
            }),
        )
    }

    /// A 4-aligned block whose two length fields agree, of any type (a section header read
    /// in its own byte order).
    fn pcapng_sync_at(&self, b: &[u8]) -> Sync {
        if b.len() < 12 {
            return self.need(12);
        }
        let be = if rd_u32(b, 0, false) == PCAPNG_SHB {
            match rd_u32(b, 8, false) {
                PCAPNG_BYTE_ORDER_MAGIC => false,
                m if m == PCAPNG_BYTE_ORDER_MAGIC.swap_bytes() => true,
                _ => return Sync::No,
            }
        } else {
            self.big_endian
        };
        let total = rd_u32(b, 4, be) as usize;
        if total < 12 || !total.is_multiple_of(4) || total > RESYNC_BLOCK_LEN {
            return Sync::No;
        }
        if b.len() < total {
            return self.need(total);
        }
        if rd_u32(b, total - 4, be) as usize == total {
            Sync::Yes
        } else {
            Sync::No
        }
    }

    /// A plausible ERF record (not padding, whose time says nothing) followed by another, or
    /// ending the input exactly.
    fn erf_sync_at(&self, b: &[u8]) -> Sync {
        if b.len() < ERF_HEADER_LEN {
            return self.need(ERF_HEADER_LEN);
        }
        let Some(secs) = erf_secs(b) else {
            return Sync::No;
        };
        if erf_problem(b, self.last_secs).is_some() {
            return Sync::No;
        }
        let rlen = usize::from(u16::from_be_bytes([b[10], b[11]]));
        Self::sync_of(
            self.follows(b, rlen, ERF_HEADER_LEN, Judged::Damage, |next| {
                erf_problem(next, Some(secs)).is_none()
            }),
        )
    }

    /// The next ERF record, whole (its header too: the ERF link type decodes it).
    fn next_erf<'a>(
        &mut self,
        buf: &'a [u8],
        offset: u64,
    ) -> Result<(Next<'a>, RawPacket<'a>), CaptureError> {
        if buf.len() < ERF_HEADER_LEN {
            return Ok(no_packet(Next::Incomplete {
                need: ERF_HEADER_LEN,
            }));
        }
        let rlen = usize::from(u16::from_be_bytes([buf[10], buf[11]]));
        if let Some(problem) = erf_problem(buf, self.last_secs) {
            let judged = if rlen < ERF_HEADER_LEN {
                Judged::Damage
            } else {
                let before = erf_secs(buf).or(self.last_secs);
                self.follows(buf, rlen, ERF_HEADER_LEN, Judged::Read, |next| {
                    erf_problem(next, before).is_none()
                })
            };
            match judged {
                Judged::Read => {}
                Judged::Need(need) => return Ok(no_packet(Next::Incomplete { need })),
                Judged::Damage => {
                    let why = format!("ERF record at byte {offset} {problem}");
                    return Ok(no_packet(self.damaged(buf, offset, why)));
                }
            }
        }
        if buf.len() < rlen {
            return Ok(no_packet(Next::Incomplete { need: rlen }));
        }
        if let Some(secs) = erf_secs(buf) {
            self.last_secs = Some(secs);
        }
        let ts = u64::from_le_bytes([
            buf[0], buf[1], buf[2], buf[3], buf[4], buf[5], buf[6], buf[7],
        ]);
        let frac_ns = ((ts & 0xffff_ffff) * 1_000_000_000) >> 32;
        let raw = RawPacket {
            ts_units: ts,
            options: PacketOptions::default(),
        };
        let record = Next::Record(
            Record {
                ts_ns: (ts >> 32) * 1_000_000_000 + frac_ns,
                caplen: rlen as u32,
                len: rlen as u32,
                linktype: crate::link::LINKTYPE_ERF,
                interface: 0,
                input: 0,
                point: 0,
                frame: 0,
                input_frame: 0,
                file: 0,
                data: &buf[..rlen],
            },
            rlen,
        );
        Ok((record, raw))
    }

    fn next_pcapng<'a>(
        &mut self,
        buf: &'a [u8],
        offset: u64,
    ) -> Result<(Next<'a>, RawPacket<'a>), CaptureError> {
        if buf.len() < 12 {
            return Ok(no_packet(Next::Incomplete { need: 12 }));
        }
        if rd_u32(buf, 0, false) == PCAPNG_SHB {
            if let Err(e) = self.section_header(buf, offset) {
                return Ok(no_packet(self.damaged(buf, offset, e.to_string())));
            }
        } else if self.sections == 0 {
            return Err(corrupt(format!(
                "pcapng block at byte {offset} comes before any section header"
            )));
        }
        let be = self.big_endian;
        let block_type = rd_u32(buf, 0, be);
        let total = rd_u32(buf, 4, be) as usize;
        if total < 12 || !total.is_multiple_of(4) || total > MAX_BLOCK_LEN {
            let why = format!(
                "pcapng block at byte {offset} (type {block_type:#x}) has an impossible length {total}"
            );
            return Ok(no_packet(self.damaged(buf, offset, why)));
        }
        if buf.len() < total {
            if self.input_ended && total > RESYNC_BLOCK_LEN {
                // Longer than any block a capture holds, and past the end: a damaged length.
                let why = format!(
                    "pcapng block at byte {offset} (type {block_type:#x}) claims {total} bytes, past the end of the input"
                );
                return Ok(no_packet(self.damaged(buf, offset, why)));
            }
            return Ok(no_packet(Next::Incomplete { need: total }));
        }
        if rd_u32(buf, total - 4, be) as usize != total {
            let why = format!(
                "pcapng block at byte {offset} (type {block_type:#x}): trailing length differs from leading length {total}"
            );
            return Ok(no_packet(self.damaged(buf, offset, why)));
        }
        let body = &buf[8..total - 4];
        let fault = match block_type {
            PCAPNG_SHB => return Ok(no_packet(Next::Skip(total))),
            PCAPNG_IDB => match self.add_interface(body, be, offset) {
                Ok(()) => return Ok(no_packet(Next::Skip(total))),
                Err(e) => BlockFault::Malformed(e.to_string()),
            },
            PCAPNG_EPB | PCAPNG_OBSOLETE_PB => {
                match self.packet_block(block_type, body, offset, total) {
                    Ok(record) => return Ok(record),
                    Err(fault) => fault,
                }
            }
            PCAPNG_SPB => match self.simple_packet_block(body, offset, total) {
                Ok(record) => return Ok(no_packet(record)),
                Err(fault) => fault,
            },
            PCAPNG_ISB => {
                self.interface_statistics(body, be);
                return Ok(no_packet(Next::Skip(total)));
            }
            // Name resolution, statistics, custom and unknown blocks carry no packet.
            _ => return Ok(no_packet(Next::Skip(total))),
        };
        // The block is framed (its lengths agree): only it is skipped.
        match fault {
            BlockFault::Malformed(why) => self.damage.skip(offset, total, || why),
            BlockFault::NoInterface(why) => self.damage.skip_packet(offset, total, || why),
        }
        Ok(no_packet(Next::Skip(total)))
    }

    /// An enhanced (or obsolete) packet block: a record of the interface it names.
    fn packet_block<'a>(
        &self,
        block_type: u32,
        body: &'a [u8],
        offset: u64,
        total: usize,
    ) -> Result<(Next<'a>, RawPacket<'a>), BlockFault> {
        let be = self.big_endian;
        if body.len() < 20 {
            return Err(BlockFault::Malformed(format!(
                "packet block at byte {offset} is too short ({total} bytes)"
            )));
        }
        let interface = if block_type == PCAPNG_EPB {
            rd_u32(body, 0, be)
        } else {
            u32::from(rd_u16(body, 0, be))
        };
        let ts = (u64::from(rd_u32(body, 4, be)) << 32) | u64::from(rd_u32(body, 8, be));
        let caplen = rd_u32(body, 12, be);
        let len = rd_u32(body, 16, be);
        let data = &body[20..];
        if caplen as usize > data.len() {
            return Err(BlockFault::Malformed(format!(
                "packet block at byte {offset} claims {caplen} captured bytes in a {total}-byte block"
            )));
        }
        let Some(iface) = self.interfaces.get(interface as usize) else {
            return Err(BlockFault::NoInterface(format!(
                "packet block at byte {offset} names interface {interface}, which has no description"
            )));
        };
        let padded = (caplen as usize + 3) & !3;
        let raw = RawPacket {
            ts_units: ts,
            options: PacketOptions {
                bytes: data.get(padded..).unwrap_or_default(),
                big_endian: be,
            },
        };
        let record = Next::Record(
            Record {
                ts_ns: iface.ts_ns(ts),
                caplen,
                len: len.max(caplen),
                linktype: iface.linktype,
                interface,
                input: 0,
                point: 0,
                frame: 0,
                input_frame: 0,
                file: 0,
                data: &data[..caplen as usize],
            },
            total,
        );
        Ok((record, raw))
    }

    /// A simple packet block: a record of the first interface, with no timestamp.
    fn simple_packet_block<'a>(
        &self,
        body: &'a [u8],
        offset: u64,
        total: usize,
    ) -> Result<Next<'a>, BlockFault> {
        let be = self.big_endian;
        let Some(iface) = self.interfaces.first() else {
            return Err(BlockFault::NoInterface(format!(
                "simple packet block at byte {offset} with no interface description"
            )));
        };
        if body.len() < 4 {
            return Err(BlockFault::Malformed(format!(
                "simple packet block at byte {offset} is too short"
            )));
        }
        let len = rd_u32(body, 0, be);
        let mut caplen = (body.len() - 4).min(len as usize);
        if iface.snaplen != 0 {
            caplen = caplen.min(iface.snaplen as usize);
        }
        Ok(Next::Record(
            Record {
                ts_ns: 0,
                caplen: caplen as u32,
                len,
                linktype: iface.linktype,
                interface: 0,
                input: 0,
                point: 0,
                frame: 0,
                input_frame: 0,
                file: 0,
                data: &body[4..4 + caplen],
            },
            total,
        ))
    }

    /// A section header starts a section: its byte-order magic decides how the section (and
    /// the header's own length) is read; interfaces are those of the section.
    fn section_header(&mut self, buf: &[u8], offset: u64) -> Result<(), CaptureError> {
        let bom = rd_u32(buf, 8, false);
        self.big_endian = match bom {
            PCAPNG_BYTE_ORDER_MAGIC => false,
            m if m == PCAPNG_BYTE_ORDER_MAGIC.swap_bytes() => true,
            _ => {
                return Err(corrupt(format!(
                    "section header at byte {offset} has an unknown byte-order magic {bom:#010x}"
                )))
            }
        };
        self.interfaces.clear();
        self.sections += 1;
        Ok(())
    }

    /// An Interface Statistics Block (as tshark, dumpcap and dpdk-dumpcap write at the end):
    /// the frames the interface and the capturing OS dropped. Counters are cumulative: the
    /// latest block of an interface counts.
    fn interface_statistics(&mut self, body: &[u8], be: bool) {
        if body.len() < 12 {
            return;
        }
        let id = rd_u32(body, 0, be) as usize;
        let mut drops = 0u64;
        let mut opts = &body[12..];
        while opts.len() >= 4 {
            let code = rd_u16(opts, 0, be);
            let len = usize::from(rd_u16(opts, 2, be));
            let padded = (len + 3) & !3;
            if code == 0 || opts.len() < 4 + padded {
                break;
            }
            // isb_ifdrop (5) and isb_osdrop (7), u64.
            if matches!(code, 5 | 7) && len == 8 {
                let hi = u64::from(rd_u32(opts, 4, be));
                let lo = u64::from(rd_u32(opts, 8, be));
                drops += if be { hi << 32 | lo } else { lo << 32 | hi };
            }
            opts = &opts[4 + padded..];
        }
        if let Some(iface) = self.interfaces.get_mut(id) {
            iface.drops = drops;
        }
    }

    /// Frames the capturing tool recorded as dropped (pcapng interface statistics), over
    /// every interface of the current section.
    pub fn recorded_drops(&self) -> u64 {
        self.interfaces.iter().map(|i| i.drops).sum()
    }

    fn add_interface(&mut self, body: &[u8], be: bool, offset: u64) -> Result<(), CaptureError> {
        if body.len() < 8 {
            return Err(corrupt(format!(
                "interface description at byte {offset} is too short"
            )));
        }
        if self.interfaces.len() >= MAX_INTERFACES {
            return Err(corrupt(format!(
                "more than {MAX_INTERFACES} interfaces in one section (byte {offset})"
            )));
        }
        let mut iface = Interface {
            linktype: u32::from(rd_u16(body, 0, be)),
            snaplen: rd_u32(body, 4, be),
            tsresol_pow2: false,
            tsresol_exp: 6,
            tsoffset_s: 0,
            drops: 0,
            name: None,
            description: None,
        };
        // Options: code u16, length u16, value padded to 4 bytes.
        let mut opts = &body[8..];
        while opts.len() >= 4 {
            let code = rd_u16(opts, 0, be);
            let len = usize::from(rd_u16(opts, 2, be));
            let padded = (len + 3) & !3;
            if opts.len() < 4 + padded {
                break;
            }
            let value = &opts[4..4 + len];
            match (code, len) {
                (0, _) => break,
                (2, _) => iface.name = Some(String::from_utf8_lossy(value).into_owned()),
                (3, _) => iface.description = Some(String::from_utf8_lossy(value).into_owned()),
                (9, 1) => {
                    iface.tsresol_pow2 = value[0] & 0x80 != 0;
                    iface.tsresol_exp = value[0] & 0x7f;
                }
                (14, 8) => {
                    let v = [
                        value[0], value[1], value[2], value[3], value[4], value[5], value[6],
                        value[7],
                    ];
                    iface.tsoffset_s = if be {
                        i64::from_be_bytes(v)
                    } else {
                        i64::from_le_bytes(v)
                    };
                }
                _ => {}
            }
            opts = &opts[4 + padded..];
        }
        self.interfaces.push(iface);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pcap_header(magic: u32, be: bool, linktype: u32) -> Vec<u8> {
        let w = |v: u32| if be { v.to_be_bytes() } else { v.to_le_bytes() };
        let mut h = Vec::new();
        h.extend_from_slice(&w(magic));
        h.extend_from_slice(&(if be { [0, 2, 0, 4] } else { [2, 0, 4, 0] }));
        h.extend_from_slice(&[0; 8]);
        h.extend_from_slice(&w(65535));
        h.extend_from_slice(&w(linktype));
        h
    }

    #[test]
    fn pcap_both_orders_and_resolutions() {
        for (magic, be, nanos) in [
            (PCAP_MAGIC_MICRO, false, false),
            (PCAP_MAGIC_MICRO, true, false),
            (PCAP_MAGIC_NANO, false, true),
            (PCAP_MAGIC_NANO, true, true),
        ] {
            let w = |v: u32| if be { v.to_be_bytes() } else { v.to_le_bytes() };
            let mut file = pcap_header(magic, be, 1);
            for v in [10u32, 500, 3, 60] {
                file.extend_from_slice(&w(v));
            }
            file.extend_from_slice(&[0xab, 0xcd, 0xef]);
            let (mut p, used) = CaptureParser::new(&file).unwrap();
            assert_eq!(
                p.format(),
                Format::Pcap {
                    big_endian: be,
                    nanos
                }
            );
            let Next::Record(r, n) = p.next(&file[used..], used as u64).unwrap() else {
                panic!("no record");
            };
            assert_eq!(n, 19);
            assert_eq!(r.ts_ns, 10_000_000_000 + if nanos { 500 } else { 500_000 });
            assert_eq!((r.caplen, r.len, r.linktype), (3, 60, 1));
            assert_eq!(r.data, &[0xab, 0xcd, 0xef]);
            // Cut anywhere inside the record: incomplete, never a panic.
            for cut in used..file.len() {
                assert!(matches!(
                    p.next(&file[used..cut], used as u64).unwrap(),
                    Next::Incomplete { .. }
                ));
            }
        }
    }

    #[test]
    fn concatenated_pcaps_number_on_and_keep_each_files_time_units() {
        // `cat a.pcap b.pcap`: a microsecond file, then a nanosecond one, a record each.
        let record = |sec: u32, frac: u32| {
            let mut r = Vec::new();
            for v in [sec, frac, 2, 2] {
                r.extend_from_slice(&v.to_le_bytes());
            }
            r.extend_from_slice(&[1, 2]);
            r
        };
        let mut file = pcap_header(PCAP_MAGIC_MICRO, false, 1);
        file.extend(record(5, 7));
        file.extend(pcap_header(PCAP_MAGIC_NANO, false, 1));
        file.extend(record(5, 7));
        let (mut p, mut at) = CaptureParser::new(&file).unwrap();
        let mut got = Vec::new();
        while at < file.len() {
            match p.next_raw(&file[at..], at as u64).unwrap() {
                (Next::Record(r, used), raw) => {
                    let resol = p.interface_info(r.interface).unwrap().tsresol;
                    got.push((r.frame, r.ts_ns, raw.ts_units, resol));
                    at += used;
                }
                (Next::Skip(used), _) => at += used,
                (Next::Incomplete { .. }, _) => break,
            }
        }
        assert_eq!(
            got,
            [
                (1, 5_000_007_000, 5_000_007, 6),
                (2, 5_000_000_007, 5_000_000_007, 9)
            ]
        );
    }

    /// A pcap record at `sec` seconds with `n` bytes of frame.
    fn pcap_record(sec: u32, caplen: u32, len: u32, n: usize) -> Vec<u8> {
        let mut r = Vec::new();
        for v in [sec, 1000, caplen, len] {
            r.extend_from_slice(&v.to_le_bytes());
        }
        r.extend((0..n).map(|i| (i * 7) as u8));
        r
    }

    /// A little-endian microsecond pcap of snap length `snaplen` holding `records`.
    fn pcap_file(snaplen: u32, records: &[Vec<u8>]) -> Vec<u8> {
        let mut file = pcap_header(PCAP_MAGIC_MICRO, false, 1);
        file[16..20].copy_from_slice(&snaplen.to_le_bytes());
        records.iter().for_each(|r| file.extend(r));
        file
    }

    /// `count` good 60-byte records, a second apart from 1,700,000,000 s.
    fn good_records(count: u32) -> Vec<Vec<u8>> {
        (0..count)
            .map(|i| pcap_record(1_700_000_000 + i, 60, 60, 60))
            .collect()
    }

    /// Every record of a whole input (frame number, seconds) and the damage log.
    fn read_whole(file: &[u8]) -> (Vec<(u64, u64)>, DamageLog) {
        let (mut p, mut at) = CaptureParser::new(file).unwrap();
        p.input_ended();
        let mut got = Vec::new();
        loop {
            match p.next(&file[at..], at as u64).unwrap() {
                Next::Record(r, used) => {
                    got.push((r.frame, r.ts_ns / 1_000_000_000));
                    at += used;
                }
                Next::Skip(used) => at += used,
                Next::Incomplete { .. } => break,
            }
        }
        (got, p.damage().clone())
    }

    /// The same input handed over `step` bytes at a time, as a stream is read: records,
    /// damage and numbering as when it is whole.
    fn read_streamed(file: &[u8], step: usize) -> (Vec<(u64, u64)>, DamageLog) {
        let (mut p, mut at) = CaptureParser::new(file).unwrap();
        let mut have = at;
        let mut got = Vec::new();
        loop {
            match p.next(&file[at..have], at as u64).unwrap() {
                Next::Record(r, used) => {
                    got.push((r.frame, r.ts_ns / 1_000_000_000));
                    at += used;
                }
                Next::Skip(used) => at += used,
                Next::Incomplete { need } => {
                    if have == file.len() {
                        break;
                    }
                    have = (have + step).max(at + need).min(file.len());
                    if have == file.len() {
                        p.input_ended();
                    }
                }
            }
        }
        (got, p.damage().clone())
    }

    fn secs(got: &[(u64, u64)]) -> Vec<u64> {
        got.iter().map(|&(_, s)| s - 1_700_000_000).collect()
    }

    #[test]
    fn a_hostile_record_length_is_skipped_and_reading_goes_on() {
        let mut records = good_records(6);
        // Record 3's header claims 0x7fffffff bytes; its 60 bytes of frame are still there.
        records[3][8..12].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
        let file = pcap_file(65535, &records);
        let (got, damage) = read_whole(&file);
        assert_eq!(secs(&got), [0, 1, 2, 4, 5]);
        // Frames are numbered as they are read.
        assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), [1, 2, 3, 4, 5]);
        let at = 24 + 3 * 76;
        assert_eq!(damage.region_count, 1);
        let r = &damage.regions[0];
        assert_eq!(
            (r.offset, r.bytes_skipped, r.resynced_at),
            (at as u64, 76, Some(at as u64 + 76))
        );
        assert!(
            r.why.starts_with(&format!(
                "record header at byte {at} claims 2147483647 captured bytes"
            )),
            "{}",
            r.why
        );
        for step in [1, 7, 64, 100] {
            assert_eq!(
                read_streamed(&file, step),
                (got.clone(), damage.clone()),
                "{step}"
            );
        }
    }

    #[test]
    fn a_caplen_above_the_snap_length_is_damage_only_when_the_next_header_is_implausible_too() {
        // Snap length 128: record 2 claims 5,000 bytes; it would swallow the records after it.
        // (Records of 77 bytes: 5,016 bytes on, no record starts.)
        let mut records: Vec<Vec<u8>> = (0..80)
            .map(|i| pcap_record(1_700_000_000 + i, 61, 61, 61))
            .collect();
        records[2][8..12].copy_from_slice(&5000u32.to_le_bytes());
        let (got, damage) = read_whole(&pcap_file(128, &records));
        assert_eq!(got.len(), 79);
        assert!(!secs(&got).contains(&2));
        assert_eq!(damage.regions[0].bytes_skipped, 77);
        assert!(
            damage.regions[0]
                .why
                .contains("claims 5000 captured bytes, above the snap length 128"),
            "{}",
            damage.regions[0].why
        );
        // A writer that records more than its snap length, with plausible records after:
        // read as it is, as is one that ends the file.
        let mut odd = good_records(4);
        odd[1] = pcap_record(1_700_000_001, 200, 200, 200);
        odd.push(pcap_record(1_700_000_004, 300, 300, 300));
        let (got, damage) = read_whole(&pcap_file(128, &odd));
        assert_eq!(secs(&got), [0, 1, 2, 3, 4]);
        assert_eq!(damage, DamageLog::default());
        // Read the same way when only part of it is there at a time.
        assert_eq!(read_streamed(&pcap_file(128, &odd), 50).0, got);
    }

    #[test]
    fn zeroed_bytes_and_noise_are_skipped_to_two_plausible_headers() {
        let mut file = pcap_file(65535, &good_records(3));
        let at = file.len();
        file.extend([0u8; 1000]);
        let mut x: u32 = 99;
        file.extend((0..3000).map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        }));
        let resync = file.len();
        for r in (3..6).map(|i| pcap_record(1_700_000_000 + i, 60, 60, 60)) {
            file.extend(r);
        }
        let (got, damage) = read_whole(&file);
        assert_eq!(secs(&got), [0, 1, 2, 3, 4, 5]);
        assert_eq!(damage.regions.len(), 1);
        let r = &damage.regions[0];
        assert_eq!(r.offset, at as u64);
        assert_eq!(r.resynced_at, Some(resync as u64));
        assert_eq!(r.bytes_skipped, (resync - at) as u64);
        assert_eq!(read_streamed(&file, 333), (got, damage));
    }

    #[test]
    fn damage_with_nothing_readable_after_it_runs_to_the_end() {
        let mut records = good_records(3);
        records[2][4..8].copy_from_slice(&2_000_000u32.to_le_bytes());
        records[2][12..16].copy_from_slice(&10u32.to_le_bytes());
        let mut file = pcap_file(65535, &records);
        // Ending the file exactly, it would be read; bytes after it show it is damage.
        assert_eq!(read_whole(&file).0.len(), 3);
        file.extend([0xee; 20]);
        let (got, damage) = read_whole(&file);
        assert_eq!(secs(&got), [0, 1]);
        let r = &damage.regions[0];
        assert_eq!((r.bytes_skipped, r.resynced_at), (96, None));
        assert!(
            r.why
                .contains("claims 60 captured bytes of a 10-byte frame"),
            "{}",
            r.why
        );
        // Not at the end yet: the record waits for the header after it.
        let (mut p, at) = CaptureParser::new(&file).unwrap();
        let last = at + 2 * 76;
        assert_eq!(
            p.next(&file[last..last + 76], last as u64).unwrap(),
            Next::Incomplete { need: 92 }
        );
    }

    #[test]
    fn a_clock_that_jumps_by_days_is_read_as_it_is() {
        let mut records = good_records(2);
        records.extend((0..3).map(|i| pcap_record(1_800_000_000 + i, 60, 60, 60)));
        let (got, damage) = read_whole(&pcap_file(65535, &records));
        assert_eq!(got.len(), 5);
        assert_eq!(damage, DamageLog::default());
    }

    #[test]
    fn concatenated_pcaps_after_damage_are_found() {
        let mut records = good_records(2);
        records[1][8..12].copy_from_slice(&0xffff_0000u32.to_le_bytes());
        let mut file = pcap_file(65535, &records);
        let second = file.len();
        file.extend(pcap_file(65535, &good_records(2)));
        let (got, damage) = read_whole(&file);
        assert_eq!(secs(&got), [0, 0, 1]);
        assert_eq!(damage.regions[0].resynced_at, Some(second as u64));
    }

    /// A pcapng of one Ethernet interface and `n` packet blocks of 60 bytes, a second apart;
    /// with the offset of each block.
    fn pcapng_file(n: u32) -> (Vec<u8>, Vec<usize>) {
        let mut f = Vec::new();
        let mut starts = Vec::new();
        let mut block = |f: &mut Vec<u8>, ty: u32, body: &[u8]| {
            starts.push(f.len());
            let total = (12 + body.len()) as u32;
            f.extend(ty.to_le_bytes());
            f.extend(total.to_le_bytes());
            f.extend(body);
            f.extend(total.to_le_bytes());
        };
        let shb = [
            &PCAPNG_BYTE_ORDER_MAGIC.to_le_bytes()[..],
            &[1, 0, 0, 0],
            &[0xff; 8],
        ]
        .concat();
        block(&mut f, PCAPNG_SHB, &shb);
        block(&mut f, PCAPNG_IDB, &[1, 0, 0, 0, 0, 0, 4, 0]);
        for i in 0..n {
            let us = u64::from(1_700_000_000 + i) * 1_000_000;
            let mut epb = Vec::new();
            for v in [0, (us >> 32) as u32, us as u32, 60, 60] {
                epb.extend(v.to_le_bytes());
            }
            epb.extend([0x5a; 60]);
            block(&mut f, PCAPNG_EPB, &epb);
        }
        (f, starts)
    }

    #[test]
    fn pcapng_resyncs_at_the_next_block_whose_lengths_agree() {
        let (mut file, starts) = pcapng_file(5);
        // The third packet block's leading length is damaged.
        file[starts[4] + 4..starts[4] + 8].copy_from_slice(&0x0100_0000u32.to_le_bytes());
        let (got, damage) = read_whole(&file);
        assert_eq!(secs(&got), [0, 1, 3, 4]);
        let r = &damage.regions[0];
        assert_eq!(r.offset, starts[4] as u64);
        assert_eq!(r.resynced_at, Some(starts[5] as u64));
        assert_eq!(r.bytes_skipped, (starts[5] - starts[4]) as u64);
        assert!(r.why.contains("claims 16777216 bytes"), "{}", r.why);
        assert_eq!(read_streamed(&file, 40), (got, damage));
    }

    #[test]
    fn pcapng_packets_whose_interface_was_lost_are_skipped_and_counted() {
        let (mut file, starts) = pcapng_file(3);
        // The interface description is damaged: every packet after it names a lost one.
        file[starts[1] + 4] ^= 0x01;
        let (got, damage) = read_whole(&file);
        assert!(got.is_empty());
        assert_eq!(damage.packets_skipped, 3);
        assert_eq!(damage.region_count, 1, "{damage:?}");
        let r = &damage.regions[0];
        assert_eq!((r.offset, r.resynced_at), (starts[1] as u64, None));
        assert_eq!(r.bytes_skipped, (file.len() - starts[1]) as u64);
        assert_eq!(r.packets_skipped, 3);
        // A packet block naming an interface never described, in a file with no other
        // damage: skipped and counted, not a region.
        let (mut file, starts) = pcapng_file(3);
        file[starts[3] + 8] = 7;
        let (got, damage) = read_whole(&file);
        assert_eq!(secs(&got), [0, 2]);
        assert_eq!((damage.region_count, damage.packets_skipped), (0, 1));
        assert_eq!(damage.bytes_skipped, (starts[4] - starts[3]) as u64);
        assert!(damage.packet_why.unwrap().contains("names interface 7"));
    }

    #[test]
    fn erf_resyncs_at_a_plausible_record() {
        let mut file: Vec<u8> = (0..6)
            .flat_map(|i| erf_record(1_700_000_000 + i, 64))
            .collect();
        // Record 3's length is damaged, with an unknown type.
        let at = 3 * 82;
        file[at + 8] = 0x7e;
        file[at + 10..at + 12].copy_from_slice(&4u16.to_be_bytes());
        let (mut p, _) = CaptureParser::new(&file).unwrap();
        assert_eq!(p.format(), Format::Erf);
        p.input_ended();
        let (mut got, mut off) = (Vec::new(), 0);
        while let Ok(next) = p.next(&file[off..], off as u64) {
            match next {
                Next::Record(r, used) => {
                    got.push(r.ts_ns / 1_000_000_000 - 1_700_000_000);
                    off += used;
                }
                Next::Skip(used) => off += used,
                Next::Incomplete { .. } => break,
            }
        }
        assert_eq!(got, [0, 1, 2, 4, 5]);
        let r = &p.damage().regions[0];
        assert_eq!(
            (r.offset, r.bytes_skipped, r.resynced_at),
            (246, 82, Some(328))
        );
        assert!(r.why.contains("an unknown record type"), "{}", r.why);
    }

    #[test]
    fn damaged_regions_beyond_the_listed_ones_are_counted() {
        let mut log = DamageLog::default();
        for i in 0..(MAX_REGIONS as u64 + 5) {
            log.skip(i * 100, 10, || format!("r{i}"));
            log.read_on(i * 100 + 10);
        }
        assert_eq!(log.regions.len(), MAX_REGIONS);
        assert_eq!(log.region_count, MAX_REGIONS as u64 + 5);
        assert_eq!(log.bytes_skipped, 10 * (MAX_REGIONS as u64 + 5));
        assert!(log
            .regions
            .iter()
            .all(|r| r.resynced_at == Some(r.offset + 10)));
    }

    /// An ERF record of type Ethernet (2), variable length, `payload` bytes of frame after the
    /// two bytes of padding, at `secs`.
    fn erf_record(secs: u32, payload: usize) -> Vec<u8> {
        let rlen = (ERF_HEADER_LEN + 2 + payload) as u16;
        let mut r = vec![0u8; usize::from(rlen)];
        r[4..8].copy_from_slice(&secs.to_le_bytes());
        r[8] = 2;
        r[9] = ERF_FLAG_VLEN;
        r[10..12].copy_from_slice(&rlen.to_be_bytes());
        r[14..16].copy_from_slice(&((payload + 4) as u16).to_be_bytes());
        r
    }

    #[test]
    fn erf_is_taken_only_when_its_first_records_tile_the_file() {
        let two: Vec<u8> = [
            erf_record(1_700_000_000, 60),
            erf_record(1_700_000_001, 100),
        ]
        .concat();
        assert_eq!(erf_verdict(&two, true), Some(Ok(())));
        // A prefix of a longer file: undecided until a record is whole.
        assert_eq!(erf_verdict(&two[..20], false), None);
        assert_eq!(erf_verdict(&two[..90], false), None);
        let many: Vec<u8> = (0..6)
            .flat_map(|i| erf_record(1_700_000_000 + i, 64))
            .collect();
        assert_eq!(erf_verdict(&many[..4 * 82], false), Some(Ok(())));
        let not = |head: &[u8], whole| match erf_verdict(head, whole) {
            Some(Err(CaptureError::NotErf { why, .. })) => why,
            other => panic!("{other:?}"),
        };
        // The file ends inside its second record.
        assert_eq!(
            not(&two[..two.len() - 1], true),
            "a record runs past the end of the file"
        );
        assert_eq!(
            not(&two[..84], true),
            "the file ends inside a record header"
        );
        // Timestamps two hours apart: text, not a capture.
        let apart = [erf_record(1_700_000_000, 60), erf_record(1_700_007_200, 60)].concat();
        assert_eq!(not(&apart, true), "timestamps more than an hour apart");
        // A record longer than its frame on the wire, an unknown type, reserved flags.
        let mut long = erf_record(1_700_000_000, 60);
        long[14..16].copy_from_slice(&20u16.to_be_bytes());
        assert_eq!(
            not(&long, true),
            "a record longer than the frame on the wire"
        );
        let mut unknown = erf_record(1_700_000_000, 60);
        unknown[8] = 0x7f;
        assert_eq!(not(&unknown, true), "an unknown record type");
        let mut flags = erf_record(1_700_000_000, 60);
        flags[9] |= 0x80;
        assert_eq!(not(&flags, true), "reserved flags set");
        // An extension header announced and not there.
        let mut ext = erf_record(1_700_000_000, 0);
        ext[8] |= 0x80;
        assert_eq!(not(&ext, true), "extension headers beyond the record");
        // A JSON report's first bytes.
        let json =
            br#"{"schema":"roce-sniff.timeline/1","bin_ns":1000,"flows":[{"id":1,"name":"x"}]}"#;
        assert!(CaptureParser::new(json).is_err() || erf_verdict(json, true) != Some(Ok(())));
    }

    #[test]
    fn not_a_capture() {
        assert!(matches!(
            CaptureParser::new(b"hello world, this is text"),
            Err(CaptureError::NotACapture { .. })
        ));
        assert!(matches!(
            CaptureParser::new(b"ab"),
            Err(CaptureError::TooShort { len: 2 })
        ));
    }

    #[test]
    fn tsresol() {
        let mut i = Interface {
            linktype: 1,
            snaplen: 0,
            tsresol_pow2: false,
            tsresol_exp: 9,
            tsoffset_s: 0,
            drops: 0,
            name: None,
            description: None,
        };
        assert_eq!(i.ts_ns(5), 5);
        i.tsresol_exp = 6;
        assert_eq!(i.ts_ns(5), 5000);
        i.tsresol_exp = 12;
        assert_eq!(i.ts_ns(5000), 5);
        i.tsresol_pow2 = true;
        i.tsresol_exp = 10;
        assert_eq!(i.ts_ns(1024), 1_000_000_000);
        i.tsoffset_s = 2;
        assert_eq!(i.ts_ns(1024), 3_000_000_000);
    }
}
