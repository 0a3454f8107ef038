//! Capture files and standard input, read in 2 MiB blocks on a reader thread. Records are
//! framed in place and handed out in batches that borrow the block, so packets are never
//! copied one by one; memory stays at the block size whatever the capture size.
//!
//! Block reads rather than a memory map: the cost is one bulk copy from the page cache (the same
//! as `cat`), and in exchange there is no `unsafe`, no SIGBUS when a file shrinks under us, and a
//! file still being written is read to its current end like a pipe.

use std::fs::File;
use std::io::{self, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use roce_parsers::capture::{CaptureError, CaptureParser, Format, Next, Record, PCAP_HEADER_LEN};

use super::{SourceEnd, SourceProblem, SourceStatus};
use crate::error::Error;
use crate::model::WarningKind;

/// Size of one read: 2 MiB blocks stay in the shared cache between the reader thread that
/// fills them and the threads that decode them (measured: 8 MiB blocks were 20-30% slower).
const BLOCK: usize = 2 << 20;
/// Most records handed to the consumer at once.
pub const BATCH: usize = 16 * 1024;
/// How often a wait for data looks at the stop flag (Ctrl-C).
const STOP_POLL: Duration = Duration::from_millis(100);
/// A stop flag that is never set (inputs read to their end).
static NEVER: AtomicBool = AtomicBool::new(false);

/// An opened input: a file path or `-` for standard input.
pub struct FileSource {
    pub name: String,
    /// File size, when the input is a regular file.
    pub size: Option<u64>,
    reader: Box<dyn Read + Send>,
    progress: Option<indicatif::ProgressBar>,
    /// Set by Ctrl-C: the read ends there, and what was read is reported.
    stop: &'static AtomicBool,
}

impl FileSource {
    pub fn open(path: &str) -> Result<Self, Error> {
        let input_err = |source| Error::Input {
            path: path.to_string(),
            source,
        };
        if path == "-" {
            let (reader, _) = decompressed(io::stdin()).map_err(input_err)?;
            return Ok(Self::from_reader("<stdin>", reader));
        }
        let file = File::open(path).map_err(input_err)?;
        let meta = file.metadata().map_err(input_err)?;
        if meta.is_dir() {
            return Err(input_err(io::Error::from(io::ErrorKind::IsADirectory)));
        }
        let (reader, compressed) = decompressed(file).map_err(input_err)?;
        let mut source = Self::from_reader(path, reader);
        // The progress bar counts bytes of the capture: only known for a plain file.
        source.size = (!compressed).then_some(meta.len());
        Ok(source)
    }

    /// An input from any reader (tests, fuzzing).
    pub fn from_reader(name: &str, reader: Box<dyn Read + Send>) -> Self {
        FileSource {
            name: name.to_string(),
            size: None,
            reader,
            progress: None,
            stop: &NEVER,
        }
    }

    /// Ends the read early when `stop` is set (Ctrl-C).
    pub fn stop_on(mut self, stop: &'static AtomicBool) -> Self {
        self.stop = stop;
        self
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
        mut consume: impl FnMut(&[Record<'_>], &SourceStatus) -> io::Result<()>,
    ) -> Result<SourceEnd, Error> {
        let mut framer = Framer::start(self)?;
        let output_err = |source| Error::Output {
            path: "<output>".into(),
            source,
        };
        while framer.stop.is_none() {
            let Some((block, start, n)) = framer.next_block()? else {
                break;
            };
            let status = SourceStatus {
                nanosecond_times: framer.parser.nanosecond_times(),
                capture_drops: None,
            };
            let mut consume = |records: &[Record<'_>]| consume(records, &status);
            let pos = framer
                .complete_carry(&block[..n], start, &mut consume)
                .map_err(output_err)?;
            if framer.carry.is_empty() && framer.stop.is_none() {
                framer
                    .frame_block(&block[..n], pos, &mut consume)
                    .map_err(output_err)?;
            }
            framer.blocks.recycle(block);
        }
        Ok(framer.end())
    }
}

/// The state of framing records across blocks.
struct Framer {
    name: String,
    blocks: BlockReader,
    progress: Option<indicatif::ProgressBar>,
    parser: CaptureParser,
    /// A record that straddles blocks, being completed.
    carry: Vec<u8>,
    /// Bytes the record in `carry` needs.
    need: usize,
    /// File offset of the first byte of `carry` (or of the next record).
    offset: u64,
    stop_flag: &'static AtomicBool,
    interrupted: bool,
    /// A block read while looking for the header, with the bytes of it already used.
    pending: Option<(Vec<u8>, usize, usize)>,
    eof: bool,
    /// Why framing broke down, if it did.
    stop: Option<String>,
    records: u64,
}

impl Framer {
    /// Reads enough to recognise the format and parses the file header.
    fn start(src: FileSource) -> Result<Framer, Error> {
        let blocks = BlockReader::spawn(src.reader);
        let mut head: Vec<u8> = Vec::new();
        let mut eof = false;
        let mut pending = None;
        while head.len() < PCAP_HEADER_LEN && !eof {
            let Some((block, n)) = blocks.next(&src.name, src.stop)? else {
                break;
            };
            if let Some(p) = &src.progress {
                p.inc(n as u64);
            }
            eof = n == 0;
            let take = n.min(PCAP_HEADER_LEN - head.len());
            head.extend_from_slice(&block[..take]);
            if take < n {
                pending = Some((block, take, n));
                break;
            }
            blocks.recycle(block);
        }
        let capture_err = |source| Error::Capture {
            path: src.name.clone(),
            source,
        };
        if head.is_empty() {
            return Err(capture_err(CaptureError::TooShort { len: 0 }));
        }
        let (parser, header_len) = CaptureParser::new(&head).map_err(capture_err)?;
        head.drain(..header_len);
        Ok(Framer {
            name: src.name,
            blocks,
            progress: src.progress,
            parser,
            carry: head,
            need: 0,
            offset: header_len as u64,
            pending,
            eof,
            stop: None,
            records: 0,
            interrupted: false,
            stop_flag: src.stop,
        })
    }

    /// The next block and where its unread bytes start; None at the end of the input, once
    /// nothing is left to complete.
    fn next_block(&mut self) -> Result<Option<(Vec<u8>, usize, usize)>, Error> {
        if let Some(p) = self.pending.take() {
            return Ok(Some(p));
        }
        if self.eof {
            // One last pass with no new bytes, so that a header-only carry is framed.
            return Ok((!self.carry.is_empty() && self.need == 0).then(|| (Vec::new(), 0, 0)));
        }
        let next = match self.blocks.next(&self.name, self.stop_flag) {
            Ok(next) => next,
            // A read error past the header (a damaged compressed stream, a failing disk) ends
            // the read like damage: what came before it is reported.
            Err(Error::Input { source, .. }) => {
                self.stop = Some(format!(
                    "reading failed after {} bytes: {}",
                    self.offset,
                    crate::error::describe(&source)
                ));
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let Some((block, n)) = next else {
            self.interrupted = true;
            return Ok(None);
        };
        if let Some(p) = &self.progress {
            p.inc(n as u64);
        }
        self.eof = n == 0;
        if self.eof && (self.carry.is_empty() || self.need > 0) {
            return Ok(None);
        }
        Ok(Some((block, 0, n)))
    }

    /// Completes the record in `carry` from `data[pos..]` and hands it out alone; returns
    /// where the unread bytes of `data` start.
    fn complete_carry(
        &mut self,
        data: &[u8],
        mut pos: usize,
        consume: &mut impl FnMut(&[Record<'_>]) -> io::Result<()>,
    ) -> io::Result<usize> {
        while !self.carry.is_empty() && self.stop.is_none() {
            match self.parser.next(&self.carry, self.offset) {
                Ok(Next::Incomplete { need }) => {
                    self.need = need;
                    let take = need.saturating_sub(self.carry.len()).min(data.len() - pos);
                    self.carry.extend_from_slice(&data[pos..pos + take]);
                    pos += take;
                    if self.carry.len() < need {
                        break;
                    }
                }
                Ok(Next::Record(rec, used)) => {
                    consume(&[rec])?;
                    self.records += 1;
                    self.carry.drain(..used);
                    self.offset += used as u64;
                    self.need = 0;
                }
                Ok(Next::Skip(used)) => {
                    self.carry.drain(..used);
                    self.offset += used as u64;
                    self.need = 0;
                }
                Err(e) => self.stop = Some(e.to_string()),
            }
        }
        Ok(pos)
    }

    /// Frames every complete record of `data[pos..]` in place, in batches; keeps an incomplete
    /// last record in `carry`.
    fn frame_block(
        &mut self,
        data: &[u8],
        mut pos: usize,
        consume: &mut impl FnMut(&[Record<'_>]) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut batch: Vec<Record<'_>> = Vec::with_capacity(BATCH);
        loop {
            match self.parser.next(&data[pos..], self.offset) {
                Ok(Next::Record(rec, used)) => {
                    batch.push(rec);
                    pos += used;
                    self.offset += used as u64;
                    if batch.len() == BATCH {
                        self.records += batch.len() as u64;
                        consume(&batch)?;
                        batch.clear();
                    }
                }
                Ok(Next::Skip(used)) => {
                    pos += used;
                    self.offset += used as u64;
                }
                Ok(Next::Incomplete { need }) => {
                    self.need = need;
                    self.carry.extend_from_slice(&data[pos..]);
                    break;
                }
                Err(e) => {
                    self.stop = Some(e.to_string());
                    break;
                }
            }
        }
        self.records += batch.len() as u64;
        if !batch.is_empty() {
            consume(&batch)?;
        }
        Ok(())
    }

    /// What the read learned, with the damage it met.
    fn end(self) -> SourceEnd {
        if let Some(p) = &self.progress {
            p.finish_and_clear();
        }
        let mut problems = Vec::new();
        if self.interrupted {
            problems.push(SourceProblem {
                kind: WarningKind::Interrupted,
                message: format!(
                    "interrupted (Ctrl-C) after {} frames: the rest of the input was not read",
                    self.records
                ),
                hint: "the report covers what was read".into(),
            });
        } else if let Some(msg) = self.stop {
            problems.push(SourceProblem {
                kind: WarningKind::FileDamaged,
                message: format!("{msg}; reading stopped there"),
                hint: format!("{} frames read before it", self.records),
            });
        } else if !self.carry.is_empty() {
            problems.push(SourceProblem {
                kind: WarningKind::FileDamaged,
                message: format!(
                    "capture ends inside a record at byte {}: {} of {} bytes present",
                    self.offset,
                    self.carry.len(),
                    self.need
                ),
                hint: "every complete frame before it was read".into(),
            });
        }
        let recorded = self.parser.recorded_drops();
        if recorded > 0 {
            problems.push(SourceProblem {
                kind: WarningKind::CaptureDrops,
                message: format!(
                    "the capturing tool recorded {recorded} dropped frames (pcapng interface statistics): PSN gaps may be capture drops, not network loss"
                ),
                hint: "a larger capture buffer or a capture filter helps".into(),
            });
        }
        let files = self.parser.files();
        if matches!(self.parser.format(), Format::Pcap { .. }) && files > 1 {
            problems.push(SourceProblem {
                kind: WarningKind::Notice,
                message: format!("{files} pcap files one after the other (`cat a.pcap b.pcap`): read as one capture"),
                hint: "each file's header was recognised".into(),
            });
        }
        SourceEnd {
            format: Some(self.parser.format().name()),
            snaplen: self.parser.snaplen(),
            problems,
            ..SourceEnd::default()
        }
    }
}

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// The capture inside `input`: gzip (one or several members) and zstd are recognised by their
/// first bytes, whatever the file is called, and inflated as they are read; anything else is
/// read as it is. Says whether it was compressed.
pub fn decompressed(input: impl Read + Send + 'static) -> io::Result<(Box<dyn Read + Send>, bool)> {
    let mut buffered = io::BufReader::with_capacity(64 << 10, input);
    let head = io::BufRead::fill_buf(&mut buffered)?;
    if head.starts_with(&GZIP_MAGIC) {
        let gz = flate2::bufread::MultiGzDecoder::new(buffered);
        return Ok((Box::new(gz), true));
    }
    if head.starts_with(&ZSTD_MAGIC) {
        let zst = ruzstd::decoding::StreamingDecoder::new(buffered)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("zstd: {e}")))?;
        return Ok((Box::new(zst), true));
    }
    Ok((Box::new(buffered), false))
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

    /// The next block and how many of its bytes are data (0 at the end of the input); None
    /// when `stop` was set while waiting.
    fn next(&self, name: &str, stop: &AtomicBool) -> Result<Option<(Vec<u8>, usize)>, Error> {
        loop {
            if stop.load(Ordering::SeqCst) {
                return Ok(None);
            }
            match self.filled.recv_timeout(STOP_POLL) {
                Ok(Ok(block)) => return Ok(Some(block)),
                Ok(Err(source)) => {
                    return Err(Error::Input {
                        path: name.to_string(),
                        source,
                    })
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                // The reader stopped after the end: behave as at the end.
                Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(Some((Vec::new(), 0))),
            }
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
