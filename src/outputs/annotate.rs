//! `--annotate=FILE`: a pcapng copy of the frames read (or of those a filter, `--qp` or
//! `--finding` kept), every frame byte for byte at its own time and on its own interface,
//! with comments on the frames a finding cites and on the frames of the analysis's events.
//! The findings are known only at the end, so the run reads the input again
//! (`run::annotate`) and hands this output each kept record with its comments.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use roce_parsers::capture::{CaptureParser, Format, RawPacket, Record, ERF_TSRESOL};
use roce_parsers::link::LINKTYPE_ERF;
use roce_parsers::pcapng_write::{self, OutPacket};

use crate::common::error::Error;

/// The output, created before the work so that a path that cannot be written fails at once.
pub struct AnnotateOutput {
    path: PathBuf,
    file: File,
}

impl AnnotateOutput {
    pub fn create(path: &Path) -> Result<Self, Error> {
        let file = File::create(path).map_err(|source| Error::Output {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(AnnotateOutput {
            path: path.to_path_buf(),
            file,
        })
    }

    /// Begins the copy; `several_inputs`: frames come from several files (each file's
    /// interfaces are told apart).
    pub fn start(self, several_inputs: bool) -> Result<AnnotatedCopy, Error> {
        let AnnotateOutput { path, file } = self;
        let mut copy = AnnotatedCopy {
            out: BufWriter::with_capacity(1 << 20, file),
            path,
            block: Vec::with_capacity(1 << 16),
            interfaces: HashMap::new(),
            several_inputs,
            stats: CopyStats::default(),
        };
        pcapng_write::section_header(
            &mut copy.block,
            &format!("roce-sniff {}", env!("CARGO_PKG_VERSION")),
        );
        copy.flush_block()?;
        Ok(copy)
    }
}

/// What the copy holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CopyStats {
    pub frames: u64,
    pub comments: u64,
}

/// A pcap of link type ERF: Wireshark shows each record's own ERF timestamp (32.32
/// fixed-point seconds) as its time, of which the pcap record keeps only microseconds; the
/// copy keeps the ERF time, in its own units (a pcapng's packet block time is its own).
fn pcap_of_erf(parser: &CaptureParser, rec: &Record<'_>) -> bool {
    rec.linktype == LINKTYPE_ERF && matches!(parser.format(), Format::Pcap { .. })
}

fn erf_time(rec: &Record<'_>) -> Option<u64> {
    let head: [u8; 8] = rec.data.get(..8)?.try_into().ok()?;
    Some(u64::from_le_bytes(head))
}

/// The copy being written.
pub struct AnnotatedCopy {
    out: BufWriter<File>,
    path: PathBuf,
    /// The block being encoded.
    block: Vec<u8>,
    /// Output interface of each (input, section, interface in that section).
    interfaces: HashMap<(usize, u32, u32), u32>,
    several_inputs: bool,
    stats: CopyStats,
}

impl AnnotatedCopy {
    /// Copies record `rec` of input `input` (as `parser` read it: `raw`) with `comments`.
    pub fn frame(
        &mut self,
        input: usize,
        rec: &Record<'_>,
        raw: &RawPacket<'_>,
        parser: &CaptureParser,
        comments: &[String],
    ) -> Result<(), Error> {
        let key = (input, parser.files(), rec.interface);
        let interface = match self.interfaces.get(&key) {
            Some(&i) => i,
            None => {
                let mut info = parser
                    .interface_info(rec.interface)
                    .expect("the parser returned a record of this interface");
                if pcap_of_erf(parser, rec) {
                    info.tsresol = ERF_TSRESOL;
                    info.tsoffset_s = 0;
                }
                if self.several_inputs && info.description.is_none() {
                    info.description = Some(format!("roce-sniff input {}", input + 1));
                }
                pcapng_write::interface_description(&mut self.block, &info);
                let i = self.interfaces.len() as u32;
                self.interfaces.insert(key, i);
                i
            }
        };
        let packet = OutPacket {
            interface,
            ts_units: match pcap_of_erf(parser, rec) {
                true => erf_time(rec).unwrap_or(raw.ts_units),
                false => raw.ts_units,
            },
            len: rec.len,
            data: rec.data,
            options: raw.options,
        };
        pcapng_write::enhanced_packet(&mut self.block, &packet, comments);
        self.stats.frames += 1;
        self.stats.comments += comments.len() as u64;
        self.flush_block()
    }

    /// Writes what is left: what the copy holds.
    pub fn finish(mut self) -> Result<CopyStats, Error> {
        self.out.flush().map_err(|source| Error::Output {
            path: self.path.clone(),
            source,
        })?;
        Ok(self.stats)
    }

    fn flush_block(&mut self) -> Result<(), Error> {
        let written = self.out.write_all(&self.block);
        self.block.clear();
        written.map_err(|source| Error::Output {
            path: self.path.clone(),
            source,
        })
    }
}
