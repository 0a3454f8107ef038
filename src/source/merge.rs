//! Several capture files read as one (`-r a.pcap -r b.pcap`, or a directory): a rotated set
//! (`tcpdump -C/-G`) or the captures of several points, merged by timestamp as mergecap does,
//! so that flows and PSN tracking go on across the files. Each file is read on a thread of its
//! own; its records are copied into batches, and the batches merged frame by frame.

use std::io;
use std::sync::mpsc;

use roce_parsers::capture::Record;

use super::batch::CopiedBatch;
use super::file::FileSource;
use super::{SourceEnd, SourceProblem, SourceStatus};
use crate::error::Error;

enum Message {
    Batch(CopiedBatch, SourceStatus),
    End(Result<SourceEnd, Error>),
}

/// One input being merged: its channel and the batch being taken from.
struct Cursor {
    rx: mpsc::Receiver<Message>,
    batch: CopiedBatch,
    at: usize,
    status: SourceStatus,
    end: Option<Result<SourceEnd, Error>>,
    /// The capture point, once the input's first frame is merged.
    point: Option<u16>,
    /// Time of the input's latest frame merged.
    last_ts: u64,
}

impl Cursor {
    /// The timestamp of the next frame, reading the next batch when this one is used up;
    /// None when the input has ended.
    fn head(&mut self) -> Option<u64> {
        while self.at == self.batch.len() {
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
        Some(self.batch.record(self.at).ts_ns)
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
        let mut out = CopiedBatch::default();
        let output_err = |source| Error::Output {
            path: "<output>".into(),
            source,
        };
        loop {
            let next = (0..cursors.len())
                .filter_map(|i| cursors[i].head().map(|ts| (ts, i)))
                .min();
            let Some((ts, i)) = next else { break };
            if cursors[i].point.is_none() {
                cursors[i].point = Some(point_of_new_input(&mut cursors, i));
            }
            let c = &mut cursors[i];
            let record = Record {
                input: i as u16,
                point: c.point.unwrap_or(0),
                ..c.batch.record(c.at)
            };
            out.push(&record);
            c.at += 1;
            c.last_ts = ts;
            if out.is_full() {
                hand_on(&mut out, &cursors, &mut consume).map_err(output_err)?;
            }
        }
        hand_on(&mut out, &cursors, &mut consume).map_err(output_err)?;
        combine(cursors, &self.names)
    }
}

/// The capture point of input `new`, whose first frame is next: a file that starts while
/// another is still going was taken elsewhere at the same time; one that starts after every
/// file of a point has ended continues that point (the next file of a rotated set, the latest
/// to end when several could be).
fn point_of_new_input(cursors: &mut [Cursor], new: usize) -> u16 {
    let mut busy = Vec::new();
    for c in cursors.iter_mut() {
        if let Some(p) = c.point {
            if c.head().is_some() {
                busy.push(p);
            }
        }
    }
    let continued = cursors
        .iter()
        .enumerate()
        .filter(|&(j, c)| j != new && c.point.is_some_and(|p| !busy.contains(&p)))
        .max_by_key(|(_, c)| c.last_ts)
        .and_then(|(_, c)| c.point);
    let points = cursors.iter().filter_map(|c| c.point).max();
    continued.unwrap_or_else(|| points.map_or(0, |p| p + 1))
}

/// Hands the merged batch on, and empties it.
fn hand_on(
    out: &mut CopiedBatch,
    cursors: &[Cursor],
    consume: &mut impl FnMut(&[Record<'_>], &SourceStatus) -> io::Result<()>,
) -> io::Result<()> {
    let status = SourceStatus {
        nanosecond_times: cursors.iter().any(|c| c.status.nanosecond_times),
        capture_drops: None,
    };
    consume(&out.records(), &status)?;
    out.clear();
    Ok(())
}

/// Reads `file` on a thread, sending copies of its records in batches.
fn spawn_reader(file: FileSource) -> Cursor {
    let (tx, rx) = mpsc::sync_channel(2);
    std::thread::spawn(move || {
        let mut batch = CopiedBatch::default();
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
        batch: CopiedBatch::default(),
        at: 0,
        status: SourceStatus::default(),
        end: None,
        point: None,
        last_ts: 0,
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
