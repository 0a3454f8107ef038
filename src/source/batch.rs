//! Frames copied out of a buffer they cannot stay in (another file's block), handed on as one
//! batch of records: how the merge of several files hands on what each file's reader read.

use roce_parsers::capture::Record;

use super::file::BATCH;

/// Most bytes of frames in one batch.
pub const BATCH_BYTES: usize = 2 << 20;

/// Copies of records, their bytes one after the other.
#[derive(Default)]
pub struct CopiedBatch {
    bytes: Vec<u8>,
    /// Each record without its bytes, and where its bytes end in `bytes`.
    frames: Vec<(Record<'static>, usize)>,
}

impl CopiedBatch {
    pub fn push(&mut self, r: &Record<'_>) {
        self.bytes.extend_from_slice(r.data);
        let end = self.bytes.len();
        self.frames.push((Record { data: &[], ..*r }, end));
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
        let (record, end) = self.frames[i];
        let start = if i == 0 { 0 } else { self.frames[i - 1].1 };
        Record {
            data: &self.bytes[start..end],
            ..record
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
