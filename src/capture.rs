//! Capture sources: a file or standard input, read in large blocks into one reusable buffer.
//! Records are framed in place and handed out in batches that borrow the buffer, so packets are
//! never copied one by one; memory stays at the buffer size whatever the capture size.
//!
//! Block reads rather than a memory map: the cost is one bulk copy from the page cache (the same
//! as `cat`), and in exchange there is no `unsafe`, no SIGBUS when a file shrinks under us, and a
//! file still being written is read to its current end like a pipe.

use std::fs::File;
use std::io::{self, Read};

use roce_parsers::capture::{CaptureError, CaptureParser, Next, Record};

use crate::error::Error;

/// Size of one read. Large enough that syscalls cost nothing measurable.
const BLOCK: usize = 8 << 20;
/// Most records handed to the consumer at once.
pub const BATCH: usize = 16 * 1024;

/// What the reader learned about the file besides its records.
#[derive(Debug, Clone, Default)]
pub struct ReadOutcome {
    pub format: Option<&'static str>,
    pub linktype: Option<u32>,
    pub snaplen: u32,
    pub bytes_read: u64,
    /// The input ended inside a record (a cut or still-growing capture): what was lost.
    pub truncated_tail: Option<String>,
    /// Framing broke down in the middle (a corrupt length): where and why; the records
    /// before it were delivered.
    pub corrupt: Option<String>,
}

/// An opened input: a file path or `-` for standard input.
pub struct CaptureInput {
    pub name: String,
    /// File size, when the input is a regular file.
    pub size: Option<u64>,
    reader: Box<dyn Read + Send>,
    progress: Option<indicatif::ProgressBar>,
}

impl CaptureInput {
    pub fn open(path: &str) -> Result<Self, Error> {
        let mut size = None;
        let reader: Box<dyn Read + Send> = if path == "-" {
            Box::new(io::stdin())
        } else {
            let file = File::open(path).map_err(|source| Error::Input {
                path: path.to_string(),
                source,
            })?;
            let meta = file.metadata().map_err(|source| Error::Input {
                path: path.to_string(),
                source,
            })?;
            if meta.is_dir() {
                return Err(Error::Input {
                    path: path.to_string(),
                    source: io::Error::from(io::ErrorKind::IsADirectory),
                });
            }
            size = Some(meta.len());
            Box::new(file)
        };
        Ok(CaptureInput {
            name: if path == "-" {
                "<stdin>".to_string()
            } else {
                path.to_string()
            },
            size,
            reader,
            progress: None,
        })
    }

    /// Shows a progress bar (bytes done, rate, time left) while reading; it costs one update
    /// per 8 MiB block.
    pub fn with_progress(mut self, bar: indicatif::ProgressBar) -> Self {
        self.progress = Some(bar);
        self
    }

    fn read_more(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        let n = read_some(&mut self.reader, buf).map_err(|source| Error::Input {
            path: self.name.clone(),
            source,
        })?;
        if let Some(p) = &self.progress {
            p.inc(n as u64);
        }
        Ok(n)
    }

    /// Reads the whole input, calling `consume` with batches of records in capture order.
    /// A header that is not a capture is an error; damage after a good header ends the read
    /// with the damage described in the outcome, after every good record was delivered.
    pub fn for_each_batch(
        mut self,
        mut consume: impl FnMut(&[Record<'_>]) -> io::Result<()>,
    ) -> Result<ReadOutcome, Error> {
        let mut out = ReadOutcome::default();
        let mut buf: Vec<u8> = vec![0; BLOCK];
        let mut filled = 0usize;
        let mut eof = false;
        // File header.
        while filled < 24 && !eof {
            let n = self.read_more(&mut buf[filled..])?;
            eof = n == 0;
            filled += n;
        }
        if filled == 0 {
            return Err(Error::Capture {
                path: self.name,
                source: CaptureError::TooShort { len: 0 },
            });
        }
        let (mut parser, header_len) =
            CaptureParser::new(&buf[..filled]).map_err(|source| Error::Capture {
                path: self.name.clone(),
                source,
            })?;
        out.format = Some(parser.format().name());
        let mut pos = header_len;
        let mut file_offset = header_len as u64; // file offset of buf[pos]
        let mut first_batch_done = false;

        loop {
            // Frame every complete record in buf[pos..filled].
            let mut need = 0usize;
            let mut stop: Option<String> = None;
            {
                let mut cursor = pos;
                let mut offset = file_offset;
                let mut batch: Vec<Record<'_>> = Vec::with_capacity(BATCH);
                loop {
                    match parser.next(&buf[cursor..filled], offset) {
                        Ok(Next::Record(rec, used)) => {
                            batch.push(rec);
                            cursor += used;
                            offset += used as u64;
                            if batch.len() == BATCH {
                                consume(&batch).map_err(|e| Error::Output {
                                    path: "<output>".into(),
                                    source: e,
                                })?;
                                batch.clear();
                            }
                        }
                        Ok(Next::Skip(used)) => {
                            cursor += used;
                            offset += used as u64;
                        }
                        Ok(Next::Incomplete { need: n }) => {
                            need = n;
                            break;
                        }
                        Err(e) => {
                            stop = Some(e.to_string());
                            break;
                        }
                    }
                }
                if !batch.is_empty() {
                    consume(&batch).map_err(|e| Error::Output {
                        path: "<output>".into(),
                        source: e,
                    })?;
                }
                if !first_batch_done {
                    out.linktype = parser.linktype();
                    out.snaplen = parser.snaplen();
                    first_batch_done = parser.linktype().is_some();
                }
                file_offset = offset;
                pos = cursor;
            }
            if let Some(msg) = stop {
                out.corrupt = Some(msg);
                break;
            }
            if eof {
                if pos < filled {
                    out.truncated_tail = Some(format!(
                        "capture ends inside a record at byte {file_offset}: {} of {} bytes present",
                        filled - pos,
                        need
                    ));
                }
                break;
            }
            // Keep the partial record, make room for what it needs, read more.
            buf.copy_within(pos..filled, 0);
            filled -= pos;
            pos = 0;
            if buf.len() < need {
                buf.resize(need, 0);
            }
            let n = self.read_more(&mut buf[filled..])?;
            eof = n == 0;
            filled += n;
        }
        if let Some(p) = &self.progress {
            p.finish_and_clear();
        }
        out.bytes_read = file_offset + (filled - pos) as u64;
        if out.linktype.is_none() {
            out.linktype = parser.linktype();
            out.snaplen = parser.snaplen();
        }
        Ok(out)
    }
}

/// One read (a pipe returns what is there, so records are seen as soon as they arrive);
/// 0 only at the end of the input.
fn read_some(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match r.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            other => return other,
        }
    }
}
