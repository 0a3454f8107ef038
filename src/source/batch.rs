//! Frames copied out of a buffer they cannot stay in (libpcap's ring, another file's block),
//! handed on as one batch of records: what the live source and the merge of several files
//! share.

use roce_parsers::capture::Record;

use super::file::BATCH;

/// Most bytes of frames in one batch.
pub const BATCH_BYTES: usize = 2 << 20;

/// Copies of records, their bytes one after the other.
#[derive(Default)]
pub struct CopiedBatch {
    bytes: Vec<u8>,
    /// (timestamp, caplen, original length, link type, input, point, end offset in `bytes`).
    frames: Vec<(u64, u32, u32, u32, u16, u16, usize)>,
}

impl CopiedBatch {
    /// An empty batch with room for a full one: filling it neither reallocates nor copies
    /// (batches are recycled, so a live capture allocates only its first few).
    pub fn reserved() -> Self {
        CopiedBatch {
            bytes: Vec::with_capacity(BATCH_BYTES + 65_536),
            frames: Vec::with_capacity(BATCH),
        }
    }

    pub fn push(&mut self, r: &Record<'_>) {
        self.bytes.extend_from_slice(r.data);
        let end = self.bytes.len();
        self.frames
            .push((r.ts_ns, r.caplen, r.len, r.linktype, r.input, r.point, end));
    }

    pub fn len(&self) -> usize {
        self.frames.len()
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Full: hand it on.
    pub fn is_full(&self) -> bool {
        self.frames.len() >= BATCH || self.bytes.len() >= BATCH_BYTES
    }

    /// The `i`-th record, borrowing the batch.
    pub fn record(&self, i: usize) -> Record<'_> {
        let (ts_ns, caplen, len, linktype, input, point, end) = self.frames[i];
        let start = if i == 0 { 0 } else { self.frames[i - 1].6 };
        Record {
            ts_ns,
            caplen,
            len,
            linktype,
            interface: 0,
            input,
            point,
            data: &self.bytes[start..end],
        }
    }

    pub fn records(&self) -> Vec<Record<'_>> {
        (0..self.len()).map(|i| self.record(i)).collect()
    }

    pub fn clear(&mut self) {
        self.bytes.clear();
        self.frames.clear();
    }
}
