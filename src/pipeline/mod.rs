//! The work shared by every source and every mode: records are numbered and decoded in
//! parallel (in chunks, on a thread pool), every frame is counted once and its problems go to
//! the diagnostics, then a `Sink` consumes the decoded chunks in capture order, the way
//! ripgrep's searcher drives its printers. The sinks: the per-frame printer (`--packets`) and
//! the report (analysis and verification). Results are the same at any thread count.

pub mod diagnostics;

use rayon::prelude::*;
use rayon::ThreadPool;
use roce_parsers::capture::Record;

use crate::decode::summary::PacketSummary;
use crate::decode::FrameCounts;
use crate::model::WarningKind;
use crate::pipeline::diagnostics::Diagnostics;
use crate::source::live::FrameDecode;
use crate::source::SourceStatus;

/// Records decoded per parallel task.
const CHUNK: usize = 1024;

/// Where a chunk of records sits in the capture.
#[derive(Debug, Clone, Copy)]
pub struct Position {
    /// Timestamp of the capture's first frame (for relative times).
    pub capture_start_ns: u64,
    /// Timestamps finer than microseconds.
    pub nanosecond_times: bool,
}

/// A consumer of decoded frames in capture order.
pub trait Sink: Send {
    /// What a chunk of records decodes into.
    type Chunk: Send;
    /// What decoding needs to know of the sink (its settings), shared by the decoding threads.
    type Decoder: Sync + Send + Clone;

    fn decoder(&self) -> Self::Decoder;
    /// An empty chunk with room for `frames`.
    fn chunk(frames: usize) -> Self::Chunk;
    /// Decodes `record` onto `chunk`; runs on a decoding thread.
    fn decode_into(
        decoder: &Self::Decoder,
        at: Position,
        record: &Record<'_>,
        chunk: &mut Self::Chunk,
    );
    /// Decodes `records`.
    fn decode(decoder: &Self::Decoder, at: Position, records: &[Record<'_>]) -> Self::Chunk {
        let mut chunk = Self::chunk(records.len());
        for record in records {
            Self::decode_into(decoder, at, record, &mut chunk);
        }
        chunk
    }
    /// The frames of a decoded chunk, for the counters and the diagnostics.
    fn summaries(chunk: &Self::Chunk) -> &[PacketSummary];
    /// Takes a decoded chunk, in capture order; `counted` holds the frames before it.
    fn consume(&mut self, chunk: &mut Self::Chunk, counted: &FrameCounts) -> std::io::Result<()>;
    /// Empties a consumed chunk, its room kept for the next.
    fn clear(chunk: &mut Self::Chunk);
}

/// A timestamp this far from the previous frame's is not a capture's: a damaged record, or
/// unrelated captures put together.
const TS_JUMP_NS: u64 = 10 * 365 * 24 * 3600 * 1_000_000_000;

/// The frame counter, the diagnostics and a sink, fed in capture order.
struct Consumer<S: Sink> {
    sink: S,
    counts: FrameCounts,
    diagnostics: Diagnostics,
    ts_jump_seen: bool,
    mirror_clock_warned: bool,
}

impl<S: Sink> Consumer<S> {
    /// Warns once about a timestamp decades away from the previous frame's.
    fn check_time(&mut self, s: &PacketSummary) {
        let Some(prev) = self.counts.last_frame_ts else {
            return;
        };
        if !self.ts_jump_seen && s.ts_ns.abs_diff(prev) > TS_JUMP_NS {
            self.ts_jump_seen = true;
            let years = s.ts_ns.abs_diff(prev) as f64 / (365.25 * 24.0 * 3600.0 * 1e9);
            self.diagnostics.warn(
                WarningKind::Notice,
                format!(
                    "frame {}: its timestamp is {years:.0} years from the previous frame's (a damaged record, or unrelated captures put together); times and rates around it mean little",
                    s.frame_no
                ),
            );
        }
    }

    /// Warns once about ERSPAN III timestamps from a switch clock that is not on the epoch.
    fn check_mirror_clock(&mut self, s: &PacketSummary) {
        if s.mirror_clock_off_epoch && !self.mirror_clock_warned {
            self.mirror_clock_warned = true;
            self.diagnostics.warn(
                WarningKind::Notice,
                format!(
                    "frame {}: its ERSPAN III timestamp carries only the low 32 bits and lies far from the capture's time whatever the upper bits: the switch's clock is not on the Unix epoch, so its ts_ns is left out (the raw timestamp is kept) and --time erspan keeps the capture's time",
                    s.frame_no
                ),
            );
        }
    }

    fn take(&mut self, chunk: &mut S::Chunk) -> std::io::Result<()> {
        // The sink is told the counts before the chunk, so that one counter serves both.
        let consumed = self.sink.consume(chunk, &self.counts);
        for s in S::summaries(chunk) {
            self.check_time(s);
            self.check_mirror_clock(s);
            self.counts.add(s);
            if let Some(e) = s.error {
                self.diagnostics.frame_problem(s.frame_no, e, s.malformed);
            }
        }
        consumed
    }
}

/// Consumes every chunk, even after one failed (the frames were read: an output that
/// failed must not lose them from the report); the first failure.
fn take_all<S: Sink>(consumer: &mut Consumer<S>, chunks: Vec<S::Chunk>) -> std::io::Result<()> {
    let mut taken = Ok(());
    for mut chunk in chunks {
        let result = consumer.take(&mut chunk);
        taken = taken.and(result);
    }
    taken
}

/// Decodes frames one at a time where they are read; see `Pipeline::frame_decoder`.
pub struct FrameDecoder<S: Sink> {
    decoder: S::Decoder,
    capture_start_ns: Option<u64>,
    nanosecond_times: bool,
}

impl<S: Sink> FrameDecode for FrameDecoder<S> {
    type Chunk = S::Chunk;

    fn chunk(&self, frames: usize) -> S::Chunk {
        S::chunk(frames)
    }

    fn clear(chunk: &mut S::Chunk) {
        S::clear(chunk);
    }

    fn decode(&mut self, record: &Record<'_>, chunk: &mut S::Chunk) {
        let at = Position {
            capture_start_ns: *self.capture_start_ns.get_or_insert(record.ts_ns),
            nanosecond_times: self.nanosecond_times,
        };
        S::decode_into(&self.decoder, at, record, chunk);
    }
}

pub struct Pipeline<S: Sink> {
    /// Decoding threads when more than one (results are identical either way).
    pool: Option<ThreadPool>,
    decoder: S::Decoder,
    consumer: Consumer<S>,
    /// Chunks decoded but not yet consumed: with threads, batch N is consumed while batch
    /// N+1 is decoded.
    pending: Vec<S::Chunk>,
    capture_start_ns: Option<u64>,
}

/// What a pipeline leaves when it ends.
pub struct Finished<S> {
    pub sink: S,
    pub counts: FrameCounts,
    pub diagnostics: Diagnostics,
}

impl<S: Sink> Pipeline<S> {
    /// `threads`: decoding threads (already bounded by the configuration).
    pub fn new(sink: S, diagnostics: Diagnostics, threads: usize) -> Self {
        let pool = (threads > 1)
            .then(|| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .ok()
            })
            .flatten();
        Pipeline {
            pool,
            decoder: sink.decoder(),
            consumer: Consumer {
                sink,
                counts: FrameCounts::default(),
                diagnostics,
                ts_jump_seen: false,
                mirror_clock_warned: false,
            },
            pending: Vec::new(),
            capture_start_ns: None,
        }
    }

    /// The sink, for live status views.
    pub fn sink(&self) -> &S {
        &self.consumer.sink
    }

    pub fn sink_mut(&mut self) -> &mut S {
        &mut self.consumer.sink
    }

    /// The sink, and the frames counted so far.
    pub fn sink_and_counts(&mut self) -> (&mut S, &FrameCounts) {
        (&mut self.consumer.sink, &self.consumer.counts)
    }

    /// The frames counted so far (those consumed).
    pub fn counts(&self) -> &FrameCounts {
        &self.consumer.counts
    }

    /// Times are relative to the capture's first frame read, `ts_ns`, even where a
    /// selection leaves that frame out (as in Wireshark). Without it, the first consumed.
    pub fn capture_starts_at(&mut self, ts_ns: u64) {
        self.capture_start_ns.get_or_insert(ts_ns);
    }

    /// A batch of records in capture order, with what the source says of them.
    pub fn records(&mut self, batch: &[Record<'_>], status: &SourceStatus) -> std::io::Result<()> {
        let Some(first) = batch.first() else {
            return Ok(());
        };
        let at = Position {
            capture_start_ns: *self.capture_start_ns.get_or_insert(first.ts_ns),
            nanosecond_times: status.nanosecond_times,
        };
        let Pipeline {
            pool,
            decoder,
            consumer,
            pending,
            ..
        } = self;
        let Some(pool) = pool.as_ref() else {
            for mut chunk in std::mem::take(pending) {
                consumer.take(&mut chunk)?;
            }
            return consumer.take(&mut S::decode(decoder, at, batch));
        };
        let previous = std::mem::take(pending);
        let (decoded, consumed) = pool.install(|| {
            rayon::join(
                || {
                    batch
                        .par_chunks(CHUNK)
                        .map(|records| S::decode(decoder, at, records))
                        .collect::<Vec<_>>()
                },
                || take_all(consumer, previous),
            )
        });
        *pending = decoded;
        consumed
    }

    /// A decoder for a source that decodes each frame as it reads it (a live capture, straight
    /// from the kernel's ring, on its own thread): its chunks go to `decoded`.
    pub fn frame_decoder(&self, nanosecond_times: bool) -> FrameDecoder<S> {
        FrameDecoder {
            decoder: self.decoder.clone(),
            capture_start_ns: self.capture_start_ns,
            nanosecond_times,
        }
    }

    /// A chunk a `FrameDecoder` made, in capture order.
    pub fn decoded(&mut self, chunk: &mut S::Chunk) -> std::io::Result<()> {
        self.drain()?;
        self.consumer.take(chunk)
    }

    /// Consumes what was decoded ahead (`finish` does too): a sink whose output failed (kept
    /// by the sink) still analyses every frame that was read; its failure is returned.
    pub fn drain(&mut self) -> std::io::Result<()> {
        take_all(&mut self.consumer, std::mem::take(&mut self.pending))
    }

    /// Consumes what was decoded ahead and hands back the sink, the counts and the diagnostics.
    pub fn finish(mut self) -> std::io::Result<Finished<S>> {
        self.drain()?;
        Ok(Finished {
            sink: self.consumer.sink,
            counts: self.consumer.counts,
            diagnostics: self.consumer.diagnostics,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outputs::packets::{PacketFormat, PrintSettings};
    use crate::run::packets::PacketPrinter;
    use roce_parsers::capture::{CaptureParser, Next};

    /// The records of a capture file of testdata/.
    fn records(data: &[u8]) -> Vec<Record<'_>> {
        let (mut parser, mut at) = CaptureParser::new(data).unwrap();
        let mut out = Vec::new();
        while let Ok(next) = parser.next(&data[at..], at as u64) {
            match next {
                Next::Record(r, used) => {
                    out.push(r);
                    at += used;
                }
                Next::Skip(used) => at += used,
                Next::Incomplete { .. } => break,
            }
        }
        out
    }

    #[test]
    fn the_printer_fills_the_one_frame_counter_at_any_thread_count() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/decode_all.pcap");
        let data = std::fs::read(path).unwrap();
        let recs = records(&data);
        for threads in [1, 2] {
            let settings = PrintSettings {
                format: PacketFormat::Text,
                roce_only: false,
                inputs: Vec::new(),
                decode: Default::default(),
            };
            let printer = PacketPrinter::new(settings, Vec::new());
            let diag = Diagnostics::new("t", 0).silent();
            let mut p = Pipeline::new(printer, diag, threads);
            p.records(&recs, &SourceStatus::default()).unwrap();
            let done = p.finish().unwrap();
            // The live "no RoCE seen yet" hint reads this counter in --packets mode too.
            assert_eq!(done.counts.frames, recs.len() as u64, "{threads}");
            assert!(done.counts.roce > 40, "{threads}: {}", done.counts.roce);
        }
    }
}
