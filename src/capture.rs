//! Capture sources: a file or standard input, read in 2 MiB blocks on a reader thread.
//! Records are framed in place and handed out in batches that borrow the buffer, so packets are
//! never copied one by one; memory stays at the buffer size whatever the capture size.
//!
//! Block reads rather than a memory map: the cost is one bulk copy from the page cache (the same
//! as `cat`), and in exchange there is no `unsafe`, no SIGBUS when a file shrinks under us, and a
//! file still being written is read to its current end like a pipe.

use std::fs::File;
use std::io::{self, Read};
use std::sync::mpsc;

use roce_parsers::capture::{CaptureError, CaptureParser, Next, Record, PCAP_HEADER_LEN};

use crate::error::Error;

/// Size of one read: 2 MiB blocks stay in the shared cache between the reader thread that
/// fills them and the threads that decode them (measured: 8 MiB blocks were 20-30% slower).
const BLOCK: usize = 2 << 20;
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

    /// An input from any reader (tests, fuzzing).
    pub fn from_reader(name: &str, reader: Box<dyn Read + Send>) -> Self {
        CaptureInput {
            name: name.to_string(),
            size: None,
            reader,
            progress: None,
        }
    }

    /// Shows a progress bar (bytes done, rate, time left) while reading; it costs one update
    /// per block.
    pub fn with_progress(mut self, bar: indicatif::ProgressBar) -> Self {
        self.progress = Some(bar);
        self
    }

    /// Reads the whole input, calling `consume` with batches of records in capture order.
    /// A header that is not a capture is an error; damage after a good header ends the read
    /// with the damage described in the outcome, after every good record was delivered.
    pub fn for_each_batch(
        self,
        mut consume: impl FnMut(&[Record<'_>]) -> io::Result<()>,
    ) -> Result<ReadOutcome, Error> {
        let name = self.name.clone();
        let progress = self.progress.clone();
        let blocks = BlockReader::spawn(self.reader);
        let mut out = ReadOutcome::default();
        let output_err = |source| Error::Output {
            path: "<output>".into(),
            source,
        };
        // The file header: enough bytes to recognise the format.
        let mut carry: Vec<u8> = Vec::new();
        let mut eof = false;
        let mut pending: Option<(Vec<u8>, usize, usize)> = None;
        while carry.len() < PCAP_HEADER_LEN && !eof {
            let (block, n) = blocks.next(&name)?;
            if let Some(p) = &progress {
                p.inc(n as u64);
            }
            eof = n == 0;
            let take = n.min(PCAP_HEADER_LEN - carry.len());
            carry.extend_from_slice(&block[..take]);
            if take < n {
                pending = Some((block, take, n));
                break;
            }
            blocks.recycle(block);
        }
        if carry.is_empty() {
            return Err(Error::Capture {
                path: name,
                source: CaptureError::TooShort { len: 0 },
            });
        }
        let (mut parser, header_len) =
            CaptureParser::new(&carry).map_err(|source| Error::Capture {
                path: name.clone(),
                source,
            })?;
        out.format = Some(parser.format().name());
        carry.drain(..header_len);
        // File offset of the first byte of `carry`.
        let mut offset = header_len as u64;
        let mut need = 0usize;
        let mut stop: Option<String> = None;
        loop {
            let (block, start, n) = match pending.take() {
                Some(p) => p,
                None if eof => (Vec::new(), 0, 0),
                None => {
                    let (b, n) = blocks.next(&name)?;
                    if let Some(p) = &progress {
                        p.inc(n as u64);
                    }
                    eof = n == 0;
                    (b, 0, n)
                }
            };
            let data = &block[..n];
            let mut pos = start;
            // A record that straddles blocks is completed in `carry` and handled alone.
            while !carry.is_empty() && stop.is_none() {
                match parser.next(&carry, offset) {
                    Ok(Next::Incomplete { need: want }) => {
                        need = want;
                        let take = want.saturating_sub(carry.len()).min(n - pos);
                        carry.extend_from_slice(&data[pos..pos + take]);
                        pos += take;
                        if carry.len() < want {
                            break;
                        }
                    }
                    Ok(Next::Record(rec, used)) => {
                        consume(&[rec]).map_err(output_err)?;
                        carry.drain(..used);
                        offset += used as u64;
                    }
                    Ok(Next::Skip(used)) => {
                        carry.drain(..used);
                        offset += used as u64;
                    }
                    Err(e) => stop = Some(e.to_string()),
                }
            }
            if carry.is_empty() && stop.is_none() {
                // Frame every complete record of the block in place.
                let mut batch: Vec<Record<'_>> = Vec::with_capacity(BATCH);
                loop {
                    match parser.next(&data[pos..], offset) {
                        Ok(Next::Record(rec, used)) => {
                            batch.push(rec);
                            pos += used;
                            offset += used as u64;
                            if batch.len() == BATCH {
                                consume(&batch).map_err(output_err)?;
                                batch.clear();
                            }
                        }
                        Ok(Next::Skip(used)) => {
                            pos += used;
                            offset += used as u64;
                        }
                        Ok(Next::Incomplete { need: want }) => {
                            need = want;
                            carry.extend_from_slice(&data[pos..]);
                            break;
                        }
                        Err(e) => {
                            stop = Some(e.to_string());
                            break;
                        }
                    }
                }
                if !batch.is_empty() {
                    consume(&batch).map_err(output_err)?;
                }
            }
            if out.linktype.is_none() {
                out.linktype = parser.linktype();
                out.snaplen = parser.snaplen();
            }
            blocks.recycle(block);
            if let Some(msg) = stop {
                out.corrupt = Some(msg);
                break;
            }
            if eof && n == 0 {
                if !carry.is_empty() {
                    out.truncated_tail = Some(format!(
                        "capture ends inside a record at byte {offset}: {} of {} bytes present",
                        carry.len(),
                        need
                    ));
                }
                break;
            }
        }
        if let Some(p) = &progress {
            p.finish_and_clear();
        }
        out.bytes_read = offset + carry.len() as u64;
        if out.linktype.is_none() {
            out.linktype = parser.linktype();
            out.snaplen = parser.snaplen();
        }
        Ok(out)
    }
}

/// Reads blocks on a thread of its own, so that the next block is read from the page cache
/// while the current one is decoded. Buffers go back and forth; none is allocated per block
/// once the pipeline is primed.
struct BlockReader {
    filled: mpsc::Receiver<io::Result<(Vec<u8>, usize)>>,
    free: mpsc::Sender<Vec<u8>>,
}

impl BlockReader {
    fn spawn(mut reader: Box<dyn Read + Send>) -> Self {
        let (filled_tx, filled) = mpsc::sync_channel(2);
        let (free, free_rx) = mpsc::channel::<Vec<u8>>();
        std::thread::spawn(move || loop {
            let mut buf = free_rx.try_recv().unwrap_or_else(|_| vec![0; BLOCK]);
            let result = read_some(&mut *reader, &mut buf).map(|n| (buf, n));
            let done = !matches!(result, Ok((_, n)) if n > 0);
            if filled_tx.send(result).is_err() || done {
                return;
            }
        });
        BlockReader { filled, free }
    }

    /// The next block and how many of its bytes are data (0 at the end of the input).
    fn next(&self, name: &str) -> Result<(Vec<u8>, usize), Error> {
        match self.filled.recv() {
            Ok(Ok(block)) => Ok(block),
            Ok(Err(source)) => Err(Error::Input {
                path: name.to_string(),
                source,
            }),
            // The reader stopped after the end: behave as at the end.
            Err(_) => Ok((Vec::new(), 0)),
        }
    }

    fn recycle(&self, block: Vec<u8>) {
        if block.len() == BLOCK {
            let _ = self.free.send(block);
        }
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
