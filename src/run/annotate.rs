//! `--annotate=FILE`'s second pass: the findings are known only at the end, so the input is
//! read again, the frames the first pass read (up to the last one kept, even if a file grew
//! since), in the same order (a merged set in the merged order, which the first pass
//! recorded), never decoded again; each kept record goes to the copy with the comments the
//! analysis's notes give it.

use std::fs::File;
use std::io::{self, Read};

use roce_parsers::capture::{CaptureError, CaptureParser, Next, RawPacket, Record};

use crate::analysis::notes::Notes;
use crate::common::error::Error;
use crate::outputs::annotate::{AnnotateOutput, CopyStats};
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

/// Writes the annotated copy.
pub fn write_copy(out: AnnotateOutput, plan: CopyPlan<'_>) -> Result<CopyStats, Error> {
    let several_inputs = plan.inputs.len() > 1;
    let mut copy = out.start(several_inputs)?;
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
                if let Some(whose) = whose_frame(several_inputs, subset, in_input, name) {
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
    copy.finish()
}

/// What a comment adds when the copy's frame numbers are not the input's: the frame's number
/// in its own file (several files read as one), or in the input (a subset kept).
fn whose_frame(several_inputs: bool, subset: bool, in_input: u64, name: &str) -> Option<String> {
    if several_inputs {
        let name = crate::common::error::shown(name);
        Some(format!(" (frame {in_input} of {name})"))
    } else if subset {
        Some(format!(" (frame {in_input} of the input)"))
    } else {
        None
    }
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

/// One input file read record by record, as it is on disk (inflated if compressed).
struct RawReader {
    name: String,
    input: Box<dyn Read + Send>,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    /// The parser was told that the input ended.
    ended: bool,
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
            ended: false,
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
                    if self.eof && self.ended {
                        return Ok(false);
                    }
                    if self.eof {
                        // What is buffered is the rest: judged as the first pass judged it.
                        self.ended = true;
                        parser.input_ended();
                        continue;
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
