//! `--annotate=FILE`: a pcapng copy of the frames read (or of those a filter, `--qp` or
//! `--finding` kept), every frame byte for byte at its own time and on its own interface,
//! with a comment on each frame a finding cites and on the frames of the analysis's events
//! (`analysis::notes`). The findings are known only at the end, so the copy is a second pass
//! over the input files: it reads the frames the first pass read (up to the last one kept,
//! even if a file grew since), in the same order (a merged set in the merged order, which
//! the first pass recorded), and never decodes them again.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use roce_parsers::capture::{
    CaptureError, CaptureParser, Format, Next, RawPacket, Record, ERF_TSRESOL,
};
use roce_parsers::link::LINKTYPE_ERF;
use roce_parsers::pcapng_write::{self, OutPacket};

use crate::analysis::notes::Notes;
use crate::common::error::Error;
use crate::source::origins::FrameOrigins;

/// Frame numbers kept, one bit each.
#[derive(Debug, Default, Clone)]
pub struct FrameSet {
    bits: Vec<u64>,
    count: u64,
    last: u64,
}

impl FrameSet {
    pub fn insert(&mut self, frame: u64) {
        let (word, bit) = ((frame / 64) as usize, frame % 64);
        if word >= self.bits.len() {
            self.bits.resize(word + 1, 0);
        }
        if self.bits[word] & (1 << bit) == 0 {
            self.bits[word] |= 1 << bit;
            self.count += 1;
            self.last = self.last.max(frame);
        }
    }

    pub fn contains(&self, frame: u64) -> bool {
        self.bits
            .get((frame / 64) as usize)
            .is_some_and(|w| w & (1 << (frame % 64)) != 0)
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// The highest frame number kept (0: none).
    pub fn last(&self) -> u64 {
        self.last
    }
}

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
}

/// What the first pass learned that the copy needs.
pub struct CopyPlan<'a> {
    /// The input files, in the order the first pass numbered them (`Record::input`).
    pub inputs: &'a [String],
    /// Several files merged: which input each merged frame came from.
    pub origins: Option<&'a FrameOrigins>,
    pub kept: &'a FrameSet,
    /// Frames the first pass read (kept or not).
    pub frames_read: u64,
    pub notes: Notes,
}

/// What the copy holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CopyStats {
    pub frames: u64,
    pub comments: u64,
}

/// Writes the annotated copy.
pub fn write_copy(out: AnnotateOutput, plan: CopyPlan<'_>) -> Result<CopyStats, Error> {
    let AnnotateOutput { path, file } = out;
    let mut copy = Copy {
        out: BufWriter::with_capacity(1 << 20, file),
        path,
        block: Vec::with_capacity(1 << 16),
        interfaces: HashMap::new(),
        several_inputs: plan.inputs.len() > 1,
        stats: CopyStats::default(),
    };
    pcapng_write::section_header(
        &mut copy.block,
        &format!("roce-sniff {}", env!("CARGO_PKG_VERSION")),
    );
    copy.flush_block()?;
    let subset = plan.kept.count() < plan.frames_read;
    let mut notes = plan.notes.into_sorted();
    let mut readers: Vec<Option<RawReader>> = plan.inputs.iter().map(|_| None).collect();
    let mut read_of: Vec<u64> = vec![0; plan.inputs.len()];
    for frame in 1..=plan.kept.last() {
        let input = match plan.origins {
            Some(o) => o
                .input_of(frame)
                .ok_or_else(|| changed(&plan.inputs[0], frame))?,
            None => 0,
        };
        let name = &plan.inputs[input];
        if readers[input].is_none() {
            readers[input] = Some(RawReader::open(name)?);
        }
        let reader = readers[input].as_mut().expect("opened above");
        read_of[input] += 1;
        let in_input = read_of[input];
        let keep = plan.kept.contains(frame);
        let mut wrote = Ok(());
        let found = reader.next_record(|rec, raw, parser| {
            if keep {
                let mut comments = notes.comments_of(frame);
                if copy.several_inputs || subset {
                    let whose = if copy.several_inputs {
                        format!(
                            " (frame {in_input} of {})",
                            crate::common::error::shown(name)
                        )
                    } else {
                        format!(" (frame {in_input} of the input)")
                    };
                    comments.iter_mut().for_each(|c| c.push_str(&whose));
                }
                wrote = copy.frame(input, rec, raw, parser, &comments);
            }
        })?;
        wrote?;
        if !found {
            return Err(changed(name, in_input));
        }
        // Done with a file of a merged set: its memory goes.
        if plan.origins.is_some_and(|o| o.frames_of(input) == in_input) {
            readers[input] = None;
        }
    }
    copy.out.flush().map_err(|source| Error::Output {
        path: copy.path.clone(),
        source,
    })?;
    Ok(copy.stats)
}

/// A frame the first pass read is not there any more.
fn changed(name: &str, frame: u64) -> Error {
    Error::Input {
        path: name.to_string(),
        source: io::Error::other(format!(
            "frame {frame} is gone: the file changed after it was read, so it cannot be copied for --annotate"
        )),
    }
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
struct Copy {
    out: BufWriter<File>,
    path: PathBuf,
    /// The block being encoded.
    block: Vec<u8>,
    /// Output interface of each (input, section, interface in that section).
    interfaces: HashMap<(usize, u32, u32), u32>,
    several_inputs: bool,
    stats: CopyStats,
}

impl Copy {
    fn frame(
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

    fn flush_block(&mut self) -> Result<(), Error> {
        let written = self.out.write_all(&self.block);
        self.block.clear();
        written.map_err(|source| Error::Output {
            path: self.path.clone(),
            source,
        })
    }
}

/// One input file read record by record, as it is on disk (inflated if compressed).
struct RawReader {
    name: String,
    input: Box<dyn Read + Send>,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    /// Input bytes before `buf[start]`, for error messages.
    offset: u64,
    parser: Option<CaptureParser>,
}

/// Bytes read at once.
const READ_BLOCK: usize = 1 << 20;

impl RawReader {
    fn open(name: &str) -> Result<Self, Error> {
        let err = |source| Error::Input {
            path: name.to_string(),
            source,
        };
        let file = File::open(name).map_err(err)?;
        let (input, _) = crate::source::file::decompressed(file).map_err(err)?;
        Ok(RawReader {
            name: name.to_string(),
            input,
            buf: Vec::new(),
            start: 0,
            end: 0,
            eof: false,
            offset: 0,
            parser: None,
        })
    }

    /// Hands the next record to `visit`; false at the end of the input (or where it is cut).
    fn next_record(
        &mut self,
        visit: impl FnOnce(&Record<'_>, &RawPacket<'_>, &CaptureParser),
    ) -> Result<bool, Error> {
        if self.parser.is_none() {
            self.fill(READ_BLOCK)?;
            let (parser, used) =
                CaptureParser::new(&self.buf[self.start..self.end]).map_err(|e| self.bad(e))?;
            self.consume(used);
            self.parser = Some(parser);
        }
        loop {
            let parser = self.parser.as_mut().expect("made above");
            let next = parser.next_raw(&self.buf[self.start..self.end], self.offset);
            match next {
                Ok((Next::Record(rec, used), raw)) => {
                    visit(&rec, &raw, parser);
                    self.consume(used);
                    return Ok(true);
                }
                Ok((Next::Skip(used), _)) => self.consume(used),
                Ok((Next::Incomplete { need }, _)) => {
                    if self.eof {
                        return Ok(false);
                    }
                    self.fill(need.max(READ_BLOCK))?;
                }
                Err(e) => return Err(self.bad(e)),
            }
        }
    }

    fn consume(&mut self, used: usize) {
        self.start += used;
        self.offset += used as u64;
    }

    /// Reads until `need` bytes are buffered or the input ends.
    fn fill(&mut self, need: usize) -> Result<(), Error> {
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        if self.buf.len() < need {
            self.buf.resize(need, 0);
        }
        while self.end < need && !self.eof {
            match self.input.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(Error::Input {
                        path: self.name.clone(),
                        source,
                    })
                }
            }
        }
        Ok(())
    }

    fn bad(&self, e: CaptureError) -> Error {
        Error::Input {
            path: self.name.clone(),
            source: io::Error::other(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_set_counts_each_frame_once() {
        let mut s = FrameSet::default();
        for f in [3, 64, 3, 1000, 65] {
            s.insert(f);
        }
        assert_eq!(s.count(), 4);
        assert_eq!(s.last(), 1000);
        assert!(s.contains(64) && s.contains(65) && s.contains(3));
        assert!(!s.contains(4) && !s.contains(1001) && !s.contains(0));
    }
}
