//! Capture files and standard input. A large regular file is memory-mapped window by window
//! (see `mapped` for the contract and its guards); anything else, and what a file grew by after
//! it was opened, is read in blocks (`blocks`). Records are framed in place on a thread of
//! their own (`framing`) and handed out in batches that borrow the window or the block, so
//! packets are never copied one by one; memory stays a few blocks whatever the capture size.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use roce_parsers::capture::{CaptureParser, Next, Record};

use super::blocks::{Feed, WINDOW};
use super::framing::{self, Framed, FramingInput, Message};
use super::mapped::MIN_MAPPED_BYTES;
use super::{SourceEnd, SourceStatus};
use crate::common::error::Error;

/// Most records handed to the consumer at once.
pub const BATCH: usize = 16 * 1024;
/// A stop flag that is never set (inputs read to their end).
static NEVER: AtomicBool = AtomicBool::new(false);

/// How a regular file is read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ReadMethod {
    /// Memory-mapped when large enough, else read.
    #[default]
    Auto,
    /// Always read (`--no-mmap`): safe with a file that something may truncate.
    Read,
}

/// Which files are mapped, in windows of what size.
#[derive(Debug, Clone, Copy)]
struct Mapping {
    window: usize,
    min_bytes: u64,
}

impl Mapping {
    const DEFAULT: Mapping = Mapping {
        window: WINDOW,
        min_bytes: MIN_MAPPED_BYTES,
    };
}

/// An opened input: a file path or `-` for standard input.
pub struct FileSource {
    pub name: String,
    /// File size, when the input is a regular file.
    pub size: Option<u64>,
    feed: Feed,
    progress: Option<indicatif::ProgressBar>,
    /// Set by Ctrl-C: the read ends there, and what was read is reported.
    stop: &'static AtomicBool,
    /// Set when the consumer fails: the read ends at the next block (shared by the files of
    /// a merge, so that all of them end).
    halt: Arc<AtomicBool>,
}

impl FileSource {
    pub fn open(path: &str, method: ReadMethod) -> Result<Self, Error> {
        Self::open_with(path, method, Mapping::DEFAULT)
    }

    /// `open`, with which files are mapped and how.
    fn open_with(path: &str, method: ReadMethod, mapping: Mapping) -> Result<Self, Error> {
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
        if method == ReadMethod::Auto
            && meta.is_file()
            && meta.len() >= mapping.min_bytes
            && !starts_compressed(&file)
        {
            let feed = Feed::Mapped {
                file,
                len: meta.len(),
                window: mapping.window,
            };
            return Ok(Self::new(path, feed, Some(meta.len())));
        }
        let (reader, compressed) = decompressed(file).map_err(input_err)?;
        // The progress bar counts bytes of the capture: only known for a plain file.
        let size = (!compressed).then_some(meta.len());
        Ok(Self::new(path, Feed::Read(reader), size))
    }

    /// An input from any reader (tests, fuzzing).
    pub fn from_reader(name: &str, reader: Box<dyn Read + Send>) -> Self {
        Self::new(name, Feed::Read(reader), None)
    }

    fn new(name: &str, feed: Feed, size: Option<u64>) -> Self {
        FileSource {
            name: name.to_string(),
            size,
            feed,
            progress: None,
            stop: &NEVER,
            halt: Arc::default(),
        }
    }

    /// Ends the read at the next block when `halt` is set, by this read's consumer or another.
    pub fn halt_with(mut self, halt: Arc<AtomicBool>) -> Self {
        self.halt = halt;
        self
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

    /// The timestamp of the input's first record and whether times are finer than
    /// microseconds, read from the start of the file opened again (the input itself is not
    /// consumed); None when it cannot be told.
    pub fn first_timestamp(&self) -> Option<(u64, bool)> {
        if self.name == "<stdin>" {
            return None;
        }
        let (mut reader, _) = decompressed(File::open(&self.name).ok()?).ok()?;
        let mut head = Vec::new();
        // A first record is usually within the first few hundred bytes; pcapng may put
        // blocks before it.
        for more in [4 << 10, 60 << 10, 960 << 10] {
            let before = head.len();
            Read::by_ref(&mut reader)
                .take(more)
                .read_to_end(&mut head)
                .ok()?;
            if let Some(ts) = first_record_time(&head) {
                return Some(ts);
            }
            if head.len() - before < more as usize {
                return None;
            }
        }
        None
    }

    /// Reads the whole input, calling `consume` with batches of records in capture order.
    /// A header that is not a capture is an error; damage after a good header ends the read
    /// with the damage described in the outcome, after every good record was delivered. A
    /// failure of `consume` ends the read as its end would, with what the read learned
    /// (format, snap length, damage before it) handed back beside it: the report of what was
    /// read can still be written.
    pub fn read(
        self,
        mut consume: impl FnMut(&[Record<'_>], &SourceStatus) -> io::Result<()>,
    ) -> Result<(SourceEnd, io::Result<()>), Error> {
        let name = self.name.clone();
        let halt = self.halt.clone();
        let (framed, done) = framing::spawn(FramingInput {
            name: self.name,
            feed: self.feed,
            progress: self.progress,
            stop: self.stop,
            halt: self.halt,
        });
        let mut delivered = Ok(());
        for message in framed {
            match message {
                Message::Framed(block) => {
                    // Blocks framed before the framer saw `halt` are given back unread.
                    if delivered.is_ok() {
                        delivered = deliver(&block, &mut consume);
                        if delivered.is_err() {
                            halt.store(true, Ordering::Relaxed);
                        }
                    }
                    let _ = done.send(block);
                }
                Message::End(end) => return (*end).map(|end| (end, delivered)),
            }
        }
        Err(Error::Input {
            path: name,
            source: io::Error::other("the framing thread ended without a word"),
        })
    }
}

/// The time of the first record in `head`, if it holds one whole, and the resolution.
fn first_record_time(head: &[u8]) -> Option<(u64, bool)> {
    let (mut parser, mut at) = CaptureParser::new(head).ok()?;
    loop {
        match parser.next(&head[at..], at as u64).ok()? {
            Next::Record(r, _) => return Some((r.ts_ns, parser.nanosecond_times())),
            Next::Skip(used) => at += used,
            Next::Incomplete { .. } => return None,
        }
    }
}

/// Hands a framed block's records to `consume`, in batches.
fn deliver(
    block: &Framed,
    consume: &mut impl FnMut(&[Record<'_>], &SourceStatus) -> io::Result<()>,
) -> io::Result<()> {
    let status = SourceStatus {
        nanosecond_times: block.nanosecond_times,
        capture_drops: None,
        kernel: None,
        handed_ns: None,
    };
    let records: Vec<Record<'_>> = block.records().collect();
    records
        .chunks(BATCH)
        .try_for_each(|batch| consume(batch, &status))
}

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Whether a file starts as gzip or zstd does (those are inflated as they are read, never
/// mapped).
fn starts_compressed(file: &File) -> bool {
    let mut head = [0u8; 4];
    let n = file.read_at(&mut head, 0).unwrap_or(0);
    let head = &head[..n];
    head.starts_with(&GZIP_MAGIC) || head.starts_with(&ZSTD_MAGIC)
}

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
        let zst = zstd::stream::read::Decoder::with_buffer(buffered)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("zstd: {e}")))?;
        return Ok((Box::new(zst), true));
    }
    Ok((Box::new(buffered), false))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every record (time, lengths, bytes) and how the read ended.
    type Read = (Vec<(u64, u32, u32, Vec<u8>)>, Vec<String>);

    fn read_all(source: FileSource) -> Read {
        let mut records = Vec::new();
        let end = source.read(|batch, _| {
            records.extend(
                batch
                    .iter()
                    .map(|r| (r.ts_ns, r.caplen, r.len, r.data.to_vec())),
            );
            Ok(())
        });
        let end = match end.and_then(crate::source::consumed) {
            Ok(end) => end.problems.into_iter().map(|p| p.message).collect(),
            Err(e) => vec![e.to_string()],
        };
        (records, end)
    }

    fn testdata(name: &str) -> String {
        format!("{}/testdata/{name}", env!("CARGO_MANIFEST_DIR"))
    }

    /// Windows of one page: almost every record straddles two of them.
    const PAGE_WINDOWS: Mapping = Mapping {
        window: 4096,
        min_bytes: 0,
    };

    #[test]
    fn a_mapped_file_reads_as_a_read_one() {
        for name in [
            "sample.pcap",
            "decode_all.pcap",
            "damaged.pcap",
            "snaplen128.pcap",
            "formats/multi_interface.pcapng",
            "formats/pcap_ns_be.pcap",
            "formats/linux_sll.pcap",
            "real/oferby_roce.pcap",
        ] {
            let path = testdata(name);
            let mapped = FileSource::open_with(&path, ReadMethod::Auto, PAGE_WINDOWS).unwrap();
            assert!(matches!(mapped.feed, Feed::Mapped { .. }), "{name}");
            let read = FileSource::open(&path, ReadMethod::Read).unwrap();
            assert!(matches!(read.feed, Feed::Read(_)), "{name}");
            let (mapped, read) = (read_all(mapped), read_all(read));
            assert!(!read.0.is_empty(), "{name}");
            assert_eq!(mapped, read, "{name}");
        }
    }

    /// `data` written to a file and read mapped in page windows, then with plain reads.
    fn mapped_and_read(tag: &str, data: &[u8]) -> (Read, Read) {
        let path =
            std::env::temp_dir().join(format!("roce-sniff-{tag}-{}.pcap", std::process::id()));
        std::fs::write(&path, data).unwrap();
        let path_str = path.to_str().unwrap();
        let mapped =
            read_all(FileSource::open_with(path_str, ReadMethod::Auto, PAGE_WINDOWS).unwrap());
        let read = read_all(FileSource::open(path_str, ReadMethod::Read).unwrap());
        std::fs::remove_file(&path).unwrap();
        (mapped, read)
    }

    #[test]
    fn a_file_cut_inside_a_record_ends_the_same_mapped_or_read() {
        let whole = std::fs::read(testdata("sample.pcap")).unwrap();
        let (mapped, read) = mapped_and_read("cut", &whole[..whole.len() - 100]);
        assert_eq!(mapped, read);
        assert!(
            read.1[0].contains("capture ends inside a record"),
            "{:?}",
            read.1
        );
    }

    #[test]
    fn a_damaged_file_reads_the_same_mapped_or_read() {
        // sample.pcap with damage every few hundred records: a record claiming 2^31 bytes, a
        // run of zeros, noise; with page windows, most of it is skipped in the carry.
        let mut data = std::fs::read(testdata("sample.pcap")).unwrap();
        let mut starts = Vec::new();
        let mut at = 24;
        while at + 16 <= data.len() {
            starts.push(at);
            at += 16 + u32::from_le_bytes(data[at + 8..at + 12].try_into().unwrap()) as usize;
        }
        for (k, &at) in starts.iter().enumerate().skip(50).step_by(700) {
            match k % 3 {
                0 => data[at + 8..at + 12].copy_from_slice(&0x7fff_ffffu32.to_le_bytes()),
                1 => data[at..at + 400].fill(0),
                _ => data[at..at + 300]
                    .iter_mut()
                    .enumerate()
                    .for_each(|(i, b)| {
                        *b = (i * 131 % 251) as u8;
                    }),
            }
        }
        let (mapped, read) = mapped_and_read("damaged", &data);
        assert_eq!(mapped, read);
        // Each site is one region, costing its record and those its bytes overwrote (a
        // record is 144 bytes at most): every other record is read.
        let sites = starts.iter().skip(50).step_by(700).count();
        let lost = starts.len() - read.0.len();
        assert!((sites..=3 * sites).contains(&lost), "{lost} of {sites}");
        assert_eq!(read.1.len(), 6, "{:?}", read.1);
        assert!(
            read.1[5].starts_with(&format!("{} more damaged regions", sites - 5)),
            "{:?}",
            read.1
        );
    }

    #[test]
    fn a_file_that_grows_after_opening_is_read_to_its_new_end() {
        let whole = std::fs::read(testdata("sample.pcap")).unwrap();
        let path =
            std::env::temp_dir().join(format!("roce-sniff-grow-{}.pcap", std::process::id()));
        // Cut inside a record: the mapped part ends in the middle of one.
        let cut = whole.len() / 2 + 7;
        std::fs::write(&path, &whole[..cut]).unwrap();
        let path_str = path.to_str().unwrap();
        let source = FileSource::open_with(path_str, ReadMethod::Auto, PAGE_WINDOWS).unwrap();
        assert!(matches!(source.feed, Feed::Mapped { len, .. } if len == cut as u64));
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        io::Write::write_all(&mut file, &whole[cut..]).unwrap();
        let grown = read_all(source);
        let expected = read_all(FileSource::open(path_str, ReadMethod::Read).unwrap());
        std::fs::remove_file(&path).unwrap();
        assert_eq!(grown, expected);
        assert!(expected.1.is_empty(), "{:?}", expected.1);
    }

    #[test]
    fn compressed_and_small_files_are_read() {
        let whole = std::fs::read(testdata("sample.pcap")).unwrap();
        let path =
            std::env::temp_dir().join(format!("roce-sniff-gz-{}.pcap.gz", std::process::id()));
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        io::Write::write_all(&mut gz, &whole).unwrap();
        std::fs::write(&path, gz.finish().unwrap()).unwrap();
        let path_str = path.to_str().unwrap();
        let source = FileSource::open_with(path_str, ReadMethod::Auto, PAGE_WINDOWS).unwrap();
        assert!(matches!(source.feed, Feed::Read(_)));
        let inflated = read_all(source);
        std::fs::remove_file(&path).unwrap();
        let plain = read_all(FileSource::open(&testdata("sample.pcap"), ReadMethod::Read).unwrap());
        assert_eq!(inflated, plain);
        // Below the size worth mapping.
        let small = FileSource::open(&testdata("decode_all.pcap"), ReadMethod::Auto).unwrap();
        assert!(matches!(small.feed, Feed::Read(_)));
    }
}
