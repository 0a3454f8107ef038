//! The bytes of an input, fetched ahead on a thread of their own: windows of a mapped file, or
//! blocks read into buffers (pipes, compressed captures, small files, `--no-mmap`, and what a
//! mapped file grew by after it was opened). Buffers go back and forth; none is allocated per
//! block once the pipeline is primed.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use super::mapped::MappedFile;
use crate::common::error::Error;

/// Size of one read: 2 MiB blocks stay in the shared cache between the thread that fills them
/// and the threads that decode them (measured: 8 MiB blocks were 20-30% slower).
const BLOCK: usize = 2 << 20;
/// Size of one mapped window. Windows are mapped and released one after the other, so the
/// pages mapped at once (resident memory) stay a few windows whatever the file size: 25 MB
/// peak on the 2 GB benchmark with 4 MiB windows, 40 MB with 8 MiB ones, in the same time.
pub const WINDOW: usize = 4 << 20;
/// How often a wait for data looks at the stop flag (Ctrl-C).
const STOP_POLL: Duration = Duration::from_millis(100);

/// Where the bytes come from.
pub enum Feed {
    Read(Box<dyn Read + Send>),
    /// A regular file mapped window by window up to `len` (its size when opened), then read on.
    Mapped {
        file: File,
        len: u64,
        window: usize,
    },
}

/// Bytes of the input: a block read, or a mapped window of the file.
pub enum Bytes {
    Read(Vec<u8>),
    Mapped(MappedFile),
}

impl Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Read(block) => block,
            Bytes::Mapped(map) => map,
        }
    }
}

type Filled = io::Result<(Bytes, usize)>;

pub struct BlockReader {
    filled: mpsc::Receiver<Filled>,
    free: mpsc::Sender<Vec<u8>>,
}

impl BlockReader {
    pub fn spawn(feed: Feed) -> Self {
        // One block ready ahead is enough: mapping a window is one system call, and a block
        // read comes from the page cache.
        let (filled_tx, filled) = mpsc::sync_channel(1);
        let (free, free_rx) = mpsc::channel::<Vec<u8>>();
        std::thread::spawn(move || {
            let reader = match feed {
                Feed::Read(reader) => reader,
                Feed::Mapped { file, len, window } => {
                    match map_windows(file, len, window, &filled_tx) {
                        Some(reader) => reader,
                        None => return,
                    }
                }
            };
            read_blocks(reader, &filled_tx, &free_rx);
        });
        BlockReader { filled, free }
    }

    /// The next bytes and how many of them are data (0 at the end of the input); None when
    /// `stop` was set while waiting.
    pub fn next(&self, name: &str, stop: &AtomicBool) -> Result<Option<(Bytes, usize)>, Error> {
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
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Ok(Some((Bytes::Read(Vec::new()), 0)))
                }
            }
        }
    }

    /// Gives bytes back once their records are decoded: a buffer is read into again, a window
    /// is unmapped.
    pub fn recycle(&self, bytes: Bytes) {
        if let Bytes::Read(block) = bytes {
            if block.len() == BLOCK {
                let _ = self.free.send(block);
            }
        }
    }
}

/// Sends the windows of a mapped file; the file positioned after them for reading on, or None
/// when the consumer is gone. A window the system will not map is read instead, from there.
fn map_windows(
    mut file: File,
    len: u64,
    window: usize,
    filled: &mpsc::SyncSender<Filled>,
) -> Option<Box<dyn Read + Send>> {
    let mut offset = 0u64;
    while offset < len {
        let n = (len - offset).min(window as u64) as usize;
        let Some(map) = MappedFile::map(&file, offset, n) else {
            break;
        };
        filled.send(Ok((Bytes::Mapped(map), n))).ok()?;
        offset += n as u64;
    }
    if let Err(e) = file.seek(SeekFrom::Start(offset)) {
        let _ = filled.send(Err(e));
        return None;
    }
    Some(Box::new(file))
}

fn read_blocks(
    mut reader: Box<dyn Read + Send>,
    filled: &mpsc::SyncSender<Filled>,
    free: &mpsc::Receiver<Vec<u8>>,
) {
    loop {
        let mut buf = free.try_recv().unwrap_or_else(|_| vec![0; BLOCK]);
        let result = read_some(&mut *reader, &mut buf).map(|n| (Bytes::Read(buf), n));
        let done = !matches!(result, Ok((_, n)) if n > 0);
        if filled.send(result).is_err() || done {
            return;
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
