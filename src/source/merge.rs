//! Several capture files read as one (`-r a.pcap -r b.pcap`, or a directory): a rotated set
//! (`tcpdump -C/-G`) or the captures of several points, merged by timestamp as mergecap does,
//! so that flows and PSN tracking go on across the files. Each file is read on a thread of its
//! own; its records are copied into batches, and the batches merged frame by frame. A file is
//! only opened for reading when the merge reaches its first frame (told by peeking at it), so a
//! rotated set of hundreds of files reads one file at a time: memory and threads stay those of
//! the files that overlap in time (a set of 100 files read at once took 14x the memory of the
//! same frames in one file).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

use roce_parsers::capture::Record;

use super::batch::CopiedBatch;
use super::file::FileSource;
use super::origins::FrameOrigins;
use super::{SourceEnd, SourceProblem, SourceStatus};
use crate::common::error::Error;

enum Message {
    Batch(CopiedBatch, SourceStatus),
    /// Boxed: sent once, and larger than a batch's message.
    End(Box<Result<SourceEnd, Error>>),
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
                Ok(Message::End(end)) => {
                    self.end = Some(*end);
                    // Done: give back the batch's memory.
                    self.batch = CopiedBatch::default();
                    self.at = 0;
                }
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
    /// order of the inputs breaks ties); each record's `input` says which file it is from. A
    /// failure of `consume` ends the read of every file, with what the files learned handed
    /// back beside it (`FileSource::read`).
    pub fn read(
        self,
        consume: impl FnMut(&[Record<'_>], &SourceStatus) -> io::Result<()>,
    ) -> Result<(SourceEnd, io::Result<()>), Error> {
        self.merge(consume).map(|(end, merged, _)| (end, merged))
    }

    /// `read`, telling also the most files that were being read at once.
    fn merge(
        self,
        mut consume: impl FnMut(&[Record<'_>], &SourceStatus) -> io::Result<()>,
    ) -> Result<(SourceEnd, io::Result<()>, usize), Error> {
        let halt = Arc::new(AtomicBool::new(false));
        let mut cursors: Vec<Option<Cursor>> = self.files.iter().map(|_| None).collect();
        // Files not started yet, the earliest last.
        let mut nanosecond = false;
        let mut waiting: Vec<(u64, usize, FileSource)> = Vec::new();
        for (i, f) in self.files.into_iter().enumerate() {
            let first = f.first_timestamp();
            nanosecond |= first.is_some_and(|(_, ns)| ns);
            waiting.push((first.map_or(0, |(ts, _)| ts), i, f.halt_with(halt.clone())));
        }
        waiting.sort_by_key(|&(ts, i, _)| std::cmp::Reverse((ts, i)));
        // The files started and not ended.
        let mut reading: Vec<usize> = Vec::new();
        let mut most_open = 0;
        let mut out = CopiedBatch::default();
        let mut origins = FrameOrigins::new(self.names.clone());
        let mut merged = Ok(());
        while merged.is_ok() {
            let mut next = earliest(&mut cursors, &mut reading);
            // A file whose first frame comes no later than the next one starts now.
            while let Some(&(first, j, _)) = waiting.last() {
                if next.is_some_and(|n| n < (first, j)) {
                    break;
                }
                let Some((_, j, file)) = waiting.pop() else {
                    break;
                };
                let c = cursors[j].insert(spawn_reader(file));
                if let Some(ts) = c.head() {
                    next = Some(next.map_or((ts, j), |n| n.min((ts, j))));
                    reading.push(j);
                    most_open = most_open.max(reading.len());
                }
            }
            let Some((ts, i)) = next else { break };
            if cursors[i].as_ref().is_some_and(|c| c.point.is_none()) {
                let point = point_of_new_input(&mut cursors, i);
                if let Some(c) = cursors[i].as_mut() {
                    c.point = Some(point);
                }
            }
            let Some(c) = cursors[i].as_mut() else { break };
            let input_frame = origins.push(i as u16);
            let record = Record {
                input: i as u16,
                point: c.point.unwrap_or(0),
                frame: origins.frames(),
                input_frame,
                ..c.batch.record(c.at)
            };
            out.push(&record);
            c.at += 1;
            c.last_ts = ts;
            if out.is_full() {
                merged = hand_on(&mut out, &cursors, nanosecond, &mut consume);
            }
        }
        if merged.is_ok() {
            merged = hand_on(&mut out, &cursors, nanosecond, &mut consume);
        } else {
            // Every file being read ends at its next block; their ends say what they learned.
            halt.store(true, Ordering::Relaxed);
            for c in cursors.iter_mut().flatten() {
                while c.head().is_some() {
                    c.at = c.batch.len();
                }
            }
        }
        let mut end = combine(cursors, &self.names)?;
        end.origins = Some(origins);
        Ok((end, merged, most_open))
    }
}

/// The next frame of the files being `reading` (its time and input); the files that ended
/// are dropped from `reading`, so that a set of hundreds of files costs nothing per frame.
fn earliest(cursors: &mut [Option<Cursor>], reading: &mut Vec<usize>) -> Option<(u64, usize)> {
    let mut next: Option<(u64, usize)> = None;
    reading.retain(|&i| {
        let Some(ts) = cursors[i].as_mut().and_then(Cursor::head) else {
            return false;
        };
        next = Some(next.map_or((ts, i), |n| n.min((ts, i))));
        true
    });
    next
}

/// The capture point of input `new`, whose first frame is next: a file that starts while
/// another is still going was taken elsewhere at the same time; one that starts after every
/// file of a point has ended continues that point (the next file of a rotated set, the latest
/// to end when several could be).
fn point_of_new_input(cursors: &mut [Option<Cursor>], new: usize) -> u16 {
    let mut busy = Vec::new();
    for c in cursors.iter_mut().flatten() {
        if let Some(p) = c.point {
            if c.head().is_some() {
                busy.push(p);
            }
        }
    }
    let continued = cursors
        .iter()
        .enumerate()
        .filter_map(|(j, c)| Some((j, c.as_ref()?)))
        .filter(|&(j, c)| j != new && c.point.is_some_and(|p| !busy.contains(&p)))
        .max_by_key(|(_, c)| c.last_ts)
        .and_then(|(_, c)| c.point);
    let points = cursors.iter().flatten().filter_map(|c| c.point).max();
    continued.unwrap_or_else(|| points.map_or(0, |p| p + 1))
}

/// Hands the merged batch on, and empties it.
/// `nanosecond`: some file has timestamps finer than microseconds (known from the start, so
/// that times are shown the same way throughout).
fn hand_on(
    out: &mut CopiedBatch,
    cursors: &[Option<Cursor>],
    nanosecond: bool,
    consume: &mut impl FnMut(&[Record<'_>], &SourceStatus) -> io::Result<()>,
) -> io::Result<()> {
    let status = SourceStatus {
        nanosecond_times: nanosecond || cursors.iter().flatten().any(|c| c.status.nanosecond_times),
        capture_drops: None,
        kernel: None,
        handed_ns: None,
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
        let end = file.read(|records, status| {
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
        // Its consumer fails only when the merge is gone: no one to tell.
        let _ = tx.send(Message::End(Box::new(end.map(|(end, _)| end))));
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
fn combine(cursors: Vec<Option<Cursor>>, names: &[String]) -> Result<SourceEnd, Error> {
    let mut all = SourceEnd::default();
    for (c, name) in cursors.into_iter().zip(names) {
        let end = c
            .and_then(|c| c.end)
            .unwrap_or_else(|| Ok(SourceEnd::default()))?;
        all.format = all.format.or(end.format);
        all.snaplen = all.snaplen.max(end.snaplen);
        all.damaged.add(end.damaged);
        all.problems
            .extend(end.problems.into_iter().map(|p| SourceProblem {
                message: format!("{}: {}", crate::common::error::shown(name), p.message),
                ..p
            }));
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::file::ReadMethod;
    use roce_parsers::capture::{CaptureParser, Next, PCAP_HEADER_LEN};

    /// `sample.pcap` cut into `parts` files of consecutive records (a rotated set), in a
    /// directory of its own.
    fn rotated_set(parts: usize, tag: &str) -> Vec<String> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/sample.pcap");
        let data = std::fs::read(path).unwrap();
        let (mut parser, mut at) = CaptureParser::new(&data).unwrap();
        assert_eq!(at, PCAP_HEADER_LEN);
        let mut ends = Vec::new();
        while let Ok(Next::Record(_, used)) = parser.next(&data[at..], at as u64) {
            at += used;
            ends.push(at);
        }
        let dir = std::env::temp_dir().join(format!("roce-sniff-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let per = ends.len().div_ceil(parts);
        let mut start = PCAP_HEADER_LEN;
        let mut files = Vec::new();
        for (k, chunk) in ends.chunks(per).enumerate() {
            let end = *chunk.last().unwrap();
            let mut bytes = data[..PCAP_HEADER_LEN].to_vec();
            bytes.extend_from_slice(&data[start..end]);
            let file = dir.join(format!("part{k:03}.pcap"));
            std::fs::write(&file, bytes).unwrap();
            files.push(file.to_str().unwrap().to_string());
            start = end;
        }
        files
    }

    /// Every record's time and length, and the most files read at once.
    fn merged(files: &[String]) -> (Vec<(u64, u32)>, usize) {
        let sources = files
            .iter()
            .map(|f| FileSource::open(f, ReadMethod::Auto).unwrap())
            .collect();
        let mut seen = Vec::new();
        let (_, _, most_open) = MergedFiles::new(sources)
            .merge(|batch, _| {
                seen.extend(batch.iter().map(|r| (r.ts_ns, r.len)));
                Ok(())
            })
            .unwrap();
        (seen, most_open)
    }

    #[test]
    fn a_rotated_set_is_read_one_file_at_a_time() {
        let files = rotated_set(12, "rotated");
        let (seen, most_open) = merged(&files);
        let whole = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/sample.pcap");
        let (one, _) = merged(&[whole.to_string(), files[0].clone()]);
        // The whole capture and its first part: the part's frames twice, merged in.
        assert_eq!(seen.len() + seen.len().div_ceil(12), one.len());
        assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0));
        assert_eq!(most_open, 1, "a file is opened when the merge reaches it");
        // Given in reverse order, the files are still merged by time, one at a time.
        let reversed: Vec<String> = files.iter().rev().cloned().collect();
        let (seen_reversed, most_open) = merged(&reversed);
        assert_eq!(
            seen_reversed, seen,
            "the same frames in the same order, whatever the order of the files"
        );
        assert_eq!(most_open, 1);
        let (_, overlapping) = merged(&[files[0].clone(), whole.to_string()]);
        assert_eq!(
            overlapping, 2,
            "files that overlap in time are read together"
        );
        std::fs::remove_dir_all(std::path::Path::new(&files[0]).parent().unwrap()).unwrap();
    }
}
