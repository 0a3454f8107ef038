//! pcapng blocks, encoded into the caller's buffer (no I/O): the writing side of
//! [`crate::capture`], for a copy of a capture that keeps every record exactly (its bytes,
//! its time in its interface's units, its interface) and adds comments (`--annotate`).
//!
//! Everything is written little-endian, one section, one interface description block per
//! input interface. A record's options are copied from its input where their meaning is
//! known whatever the input's byte order (comments, flags, hash, drop count, packet id,
//! queue, verdict); other options are copied only from a little-endian input, where their
//! bytes mean the same.

use crate::capture::{InterfaceInfo, PacketOption, PacketOptions};

const SHB: u32 = 0x0a0d_0d0a;
const IDB: u32 = 0x0000_0001;
const EPB: u32 = 0x0000_0006;
const BYTE_ORDER_MAGIC: u32 = 0x1a2b_3c4d;

const OPT_END: u16 = 0;
const OPT_COMMENT: u16 = 1;
const SHB_USERAPPL: u16 = 4;
const IF_NAME: u16 = 2;
const IF_DESCRIPTION: u16 = 3;
const IF_TSRESOL: u16 = 9;
const IF_TSOFFSET: u16 = 14;

/// One record to write.
#[derive(Debug, Clone, Copy)]
pub struct OutPacket<'a> {
    /// The interface, as numbered by the `interface_description` calls (from 0).
    pub interface: u32,
    /// The time in the interface's units (`InterfaceInfo::tsresol`).
    pub ts_units: u64,
    /// The frame's length on the wire.
    pub len: u32,
    /// The bytes captured.
    pub data: &'a [u8],
    /// The input's own options, copied.
    pub options: PacketOptions<'a>,
}

/// Appends a section header block naming the application that wrote the file (shb_userappl).
pub fn section_header(out: &mut Vec<u8>, application: &str) {
    let start = begin_block(out, SHB);
    out.extend_from_slice(&BYTE_ORDER_MAGIC.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    // Section length: not given (-1), as writers that stream do.
    out.extend_from_slice(&(-1i64).to_le_bytes());
    option(out, SHB_USERAPPL, application.as_bytes());
    end_options(out);
    end_block(out, start);
}

/// Appends an interface description block: link type, snap length, name, description,
/// timestamp resolution and offset as the input gave them.
pub fn interface_description(out: &mut Vec<u8>, iface: &InterfaceInfo) {
    let start = begin_block(out, IDB);
    // The link type is 16 bits in pcapng; a pcap's upper FCS bits were already dropped.
    out.extend_from_slice(&(iface.linktype as u16).to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&iface.snaplen.to_le_bytes());
    if let Some(name) = &iface.name {
        option(out, IF_NAME, name.as_bytes());
    }
    if let Some(description) = &iface.description {
        option(out, IF_DESCRIPTION, description.as_bytes());
    }
    if iface.tsresol != 6 {
        option(out, IF_TSRESOL, &[iface.tsresol]);
    }
    if iface.tsoffset_s != 0 {
        option(out, IF_TSOFFSET, &iface.tsoffset_s.to_le_bytes());
    }
    end_options(out);
    end_block(out, start);
}

/// Appends an enhanced packet block: the record, its own options, then one opt_comment per
/// entry of `comments`.
pub fn enhanced_packet<S: AsRef<str>>(out: &mut Vec<u8>, packet: &OutPacket<'_>, comments: &[S]) {
    let start = begin_block(out, EPB);
    out.extend_from_slice(&packet.interface.to_le_bytes());
    out.extend_from_slice(&((packet.ts_units >> 32) as u32).to_le_bytes());
    out.extend_from_slice(&(packet.ts_units as u32).to_le_bytes());
    out.extend_from_slice(&(packet.data.len() as u32).to_le_bytes());
    out.extend_from_slice(&packet.len.to_le_bytes());
    out.extend_from_slice(packet.data);
    pad(out);
    let copied = copy_options(out, packet.options);
    for c in comments {
        option(out, OPT_COMMENT, clipped(c.as_ref()).as_bytes());
    }
    if copied || !comments.is_empty() {
        end_options(out);
    }
    end_block(out, start);
}

/// Copies the input's options that can be written little-endian; whether any was.
fn copy_options(out: &mut Vec<u8>, options: PacketOptions<'_>) -> bool {
    let mut any = false;
    for o in options.iter() {
        match o {
            PacketOption::Comment(v) => option(out, OPT_COMMENT, v),
            PacketOption::Flags(v) => option(out, 2, &v.to_le_bytes()),
            PacketOption::Hash(v) => option(out, 3, v),
            PacketOption::DropCount(v) => option(out, 4, &v.to_le_bytes()),
            PacketOption::PacketId(v) => option(out, 5, &v.to_le_bytes()),
            PacketOption::Queue(v) => option(out, 6, &v.to_le_bytes()),
            PacketOption::Verdict(v) => option(out, 7, v),
            PacketOption::Other(code, v) if !options.big_endian() => option(out, code, v),
            PacketOption::Other(..) => continue,
        }
        any = true;
    }
    any
}

/// An option value is at most 65535 bytes: a longer comment is cut at a character boundary.
fn clipped(text: &str) -> &str {
    let mut end = text.len().min(usize::from(u16::MAX));
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn begin_block(out: &mut Vec<u8>, block_type: u32) -> usize {
    let start = out.len();
    out.extend_from_slice(&block_type.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    start
}

/// Writes the block's total length at both ends.
fn end_block(out: &mut Vec<u8>, start: usize) {
    let total = (out.len() - start + 4) as u32;
    out.extend_from_slice(&total.to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&total.to_le_bytes());
}

fn option(out: &mut Vec<u8>, code: u16, value: &[u8]) {
    let value = &value[..value.len().min(usize::from(u16::MAX))];
    out.extend_from_slice(&code.to_le_bytes());
    out.extend_from_slice(&(value.len() as u16).to_le_bytes());
    out.extend_from_slice(value);
    pad(out);
}

fn end_options(out: &mut Vec<u8>) {
    out.extend_from_slice(&OPT_END.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
}

fn pad(out: &mut Vec<u8>) {
    while !out.len().is_multiple_of(4) {
        out.push(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{CaptureParser, Next};

    /// What the reader gets back of one record of a written file.
    struct ReadBack {
        interface: u32,
        ts_ns: u64,
        len: u32,
        data: Vec<u8>,
        comments: Vec<String>,
    }

    fn read_back(file: &[u8]) -> Vec<ReadBack> {
        let (mut parser, mut at) = CaptureParser::new(file).unwrap();
        let mut out = Vec::new();
        loop {
            match parser.next_raw(&file[at..], at as u64).unwrap() {
                (Next::Record(r, used), raw) => {
                    let comments = raw
                        .options
                        .iter()
                        .filter_map(|o| match o {
                            PacketOption::Comment(c) => Some(String::from_utf8_lossy(c).into()),
                            _ => None,
                        })
                        .collect();
                    out.push(ReadBack {
                        interface: r.interface,
                        ts_ns: r.ts_ns,
                        len: r.len,
                        data: r.data.to_vec(),
                        comments,
                    });
                    at += used;
                }
                (Next::Skip(used), _) => at += used,
                (Next::Incomplete { .. }, _) => return out,
            }
        }
    }

    fn interface(tsresol: u8, tsoffset_s: i64) -> InterfaceInfo {
        InterfaceInfo {
            linktype: 1,
            snaplen: 9216,
            tsresol,
            tsoffset_s,
            name: Some("eth0".into()),
            description: None,
        }
    }

    #[test]
    fn records_come_back_with_their_time_bytes_and_comments() {
        let mut file = Vec::new();
        section_header(&mut file, "roce-sniff test");
        interface_description(&mut file, &interface(6, 0));
        interface_description(&mut file, &interface(0x80 | 32, 10));
        let odd = [1u8, 2, 3, 4, 5];
        let packet = |interface, ts_units, data| OutPacket {
            interface,
            ts_units,
            len: 60,
            data,
            options: PacketOptions::default(),
        };
        let none: [&str; 0] = [];
        enhanced_packet(&mut file, &packet(0, 1_700_000_000_123_456, &odd), &none);
        enhanced_packet(
            &mut file,
            &packet(1, (1_700_000_000u64 << 32) | (1 << 31), &odd[..4]),
            &["roce-sniff: psn_loss", "é"],
        );
        let back = read_back(&file);
        assert_eq!(back.len(), 2);
        assert_eq!(back[0].ts_ns, 1_700_000_000_123_456_000);
        assert_eq!(back[0].data, odd);
        assert!(back[0].comments.is_empty());
        // 2^-32 units and a 10 s offset.
        assert_eq!(back[1].interface, 1);
        assert_eq!(back[1].ts_ns, 1_700_000_010_500_000_000);
        assert_eq!(back[1].len, 60);
        assert_eq!(back[1].comments, ["roce-sniff: psn_loss", "é"]);
    }

    #[test]
    fn a_big_endian_inputs_options_are_rewritten_in_order() {
        // An EPB options area as a big-endian section holds it: a comment, flags, a drop
        // count, a custom option (not copied: its bytes' order is unknown), the end.
        let mut opts = Vec::new();
        opts.extend_from_slice(&[0, 1, 0, 3, b'a', b'b', b'c', 0]);
        opts.extend_from_slice(&[0, 2, 0, 4, 0, 0, 0, 1]);
        opts.extend_from_slice(&[0, 4, 0, 8, 0, 0, 0, 0, 0, 0, 0, 7]);
        opts.extend_from_slice(&[0x0b, 0xac, 0, 4, 1, 2, 3, 4]);
        opts.extend_from_slice(&[0, 0, 0, 0]);
        let be = PacketOptions::for_tests(&opts, true);
        let mut out = Vec::new();
        assert!(copy_options(&mut out, be));
        let le = PacketOptions::for_tests(&out, false);
        let got: Vec<_> = le.iter().collect();
        assert_eq!(
            got,
            [
                PacketOption::Comment(b"abc"),
                PacketOption::Flags(1),
                PacketOption::DropCount(7)
            ]
        );
    }

    #[test]
    fn a_comment_longer_than_an_option_is_cut_at_a_character() {
        let long = "é".repeat(40_000);
        assert!(clipped(&long).len() <= usize::from(u16::MAX));
        assert!(clipped(&long).chars().all(|c| c == 'é'));
    }
}
