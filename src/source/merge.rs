//! Several capture files read as one (`-r a.pcap -r b.pcap`, or a directory): a rotated set
//! (`tcpdump -C/-G`) or the captures of several points, merged by timestamp as mergecap does,
//! so that flows and PSN tracking go on across the files. Each file is read on a thread of its
//! own; its records are copied into batches, and the batches merged frame by frame.

use std::io;
use std::sync::mpsc;

use roce_parsers::capture::Record;

use super::file::{FileSource, BATCH};
use super::{SourceEnd, SourceProblem, SourceStatus};
use crate::error::Error;

/// Bytes of frames in one merged batch.
const BATCH_BYTES: usize = 2 << 20;

/// Records copied out of a file's block: (ts, caplen, len, linktype, end offset) per frame.
#[derive(Default)]
struct OwnedBatch {
    bytes: Vec<u8>,
    frames: Vec<(u64, u32, u32, u32, usize)>,
}

impl OwnedBatch {
    fn push(&mut self, r: &Record<'_>) {
        self.bytes.extend_from_slice(r.data);
        self.frames
            .push((r.ts_ns, r.caplen, r.len, r.linktype, self.bytes.len()));
    }

    fn start(&self, i: usize) -> usize {
        if i == 0 {
            0
        } else {
            self.frames[i - 1].4
        }
    }

    fn is_full(&self) -> bool {
        self.frames.len() >= BATCH || self.bytes.len() >= BATCH_BYTES
    }
}

enum Message {
    Batch(OwnedBatch, SourceStatus),
    End(Result<SourceEnd, Error>),
}

/// One input being merged: its channel and the batch being taken from.
struct Cursor {
    rx: mpsc::Receiver<Message>,
    batch: OwnedBatch,
    at: usize,
    status: SourceStatus,
    end: Option<Result<SourceEnd, Error>>,
}

impl Cursor {
    /// The timestamp of the next frame, reading the next batch when this one is used up;
    /// None when the input has ended.
    fn head(&mut self) -> Option<u64> {
        while self.at == self.batch.frames.len() {
            if self.end.is_some() {
                return None;
            }
            match self.rx.recv() {
                Ok(Message::Batch(b, status)) => {
                    self.batch = b;
                    self.at = 0;
                    self.status = status;
                }
                Ok(Message::End(end)) => self.end = Some(end),
                Err(_) => self.end = Some(Ok(SourceEnd::default())),
            }
        }
        Some(self.batch.frames[self.at].0)
    }
}

/// Several files, read as one capture in timestamp order.
pub struct MergedFiles {
    pub names: Vec<String>,
    files: Vec<FileSource>,
}

impl MergedFiles {
    pub fn new(files: Vec<FileSource>) -> Self {
        MergedFiles {
            names: files.iter().map(|f| f.name.clone()).collect(),
            files,
        }
    }

    /// Reads every file, calling `consume` with batches of records in timestamp order (the
    /// order of the inputs breaks ties); each record's `input` says which file it is from.
    pub fn for_each_batch(
        self,
        mut consume: impl FnMut(&[Record<'_>], &SourceStatus) -> io::Result<()>,
    ) -> Result<SourceEnd, Error> {
        let mut cursors: Vec<Cursor> = self.files.into_iter().map(spawn_reader).collect();
        let mut out = OwnedBatch::default();
        let mut inputs: Vec<u16> = Vec::new();
        let output_err = |source| Error::Output {
            path: "<output>".into(),
            source,
        };
        loop {
            let next = (0..cursors.len())
                .filter_map(|i| cursors[i].head().map(|ts| (ts, i)))
                .min();
            let Some((_, i)) = next else { break };
            let c = &mut cursors[i];
            let (ts, caplen, len, linktype, end) = c.batch.frames[c.at];
            let record = Record {
                ts_ns: ts,
                caplen,
                len,
                linktype,
                interface: 0,
                input: i as u16,
                data: &c.batch.bytes[c.batch.start(c.at)..end],
            };
            out.push(&record);
            inputs.push(i as u16);
            c.at += 1;
            if out.is_full() {
                hand_on(&mut out, &mut inputs, &cursors, &mut consume).map_err(output_err)?;
            }
        }
        hand_on(&mut out, &mut inputs, &cursors, &mut consume).map_err(output_err)?;
        combine(cursors, &self.names)
    }
}

/// Hands the merged batch on, and empties it.
fn hand_on(
    out: &mut OwnedBatch,
    inputs: &mut Vec<u16>,
    cursors: &[Cursor],
    consume: &mut impl FnMut(&[Record<'_>], &SourceStatus) -> io::Result<()>,
) -> io::Result<()> {
    let status = SourceStatus {
        nanosecond_times: cursors.iter().any(|c| c.status.nanosecond_times),
        capture_drops: None,
    };
    let records: Vec<Record<'_>> = (0..out.frames.len())
        .map(|i| {
            let (ts_ns, caplen, len, linktype, end) = out.frames[i];
            Record {
                ts_ns,
                caplen,
                len,
                linktype,
                interface: 0,
                input: inputs[i],
                data: &out.bytes[out.start(i)..end],
            }
        })
        .collect();
    consume(&records, &status)?;
    out.bytes.clear();
    out.frames.clear();
    inputs.clear();
    Ok(())
}

/// Reads `file` on a thread, sending copies of its records in batches.
fn spawn_reader(file: FileSource) -> Cursor {
    let (tx, rx) = mpsc::sync_channel(2);
    std::thread::spawn(move || {
        let mut batch = OwnedBatch::default();
        let mut last_status = SourceStatus::default();
        let end = file.for_each_batch(|records, status| {
            last_status = *status;
            for r in records {
                batch.push(r);
                if batch.is_full() {
                    let full = std::mem::take(&mut batch);
                    tx.send(Message::Batch(full, *status))
                        .map_err(|_| io::Error::other("the merge stopped"))?;
                }
            }
            Ok(())
        });
        let _ = tx.send(Message::Batch(batch, last_status));
        let _ = tx.send(Message::End(end));
    });
    Cursor {
        rx,
        batch: OwnedBatch::default(),
        at: 0,
        status: SourceStatus::default(),
        end: None,
    }
}

/// What the files learned together: the first file's format, the largest snap length, and
/// every problem, named by its file.
fn combine(cursors: Vec<Cursor>, names: &[String]) -> Result<SourceEnd, Error> {
    let mut all = SourceEnd::default();
    for (c, name) in cursors.into_iter().zip(names) {
        let end = c.end.unwrap_or_else(|| Ok(SourceEnd::default()))?;
        all.format = all.format.or(end.format);
        all.snaplen = all.snaplen.max(end.snaplen);
        all.problems
            .extend(end.problems.into_iter().map(|p| SourceProblem {
                message: format!("{}: {}", crate::error::shown(name), p.message),
                ..p
            }));
    }
    Ok(all)
}
