//! Framing: walking a capture's record headers, on a thread of its own so that it runs while
//! the records framed before are decoded. Framing is a chain of dependent loads (each header
//! says where the next one is), so it waits on memory; done inline it held up the decoding
//! threads for a quarter of an offline analysis.
//!
//! A block's records are sent with the block, by their place in it; a record that straddles
//! two blocks is copied and sent alone. Damage is skipped by the parser, which is told when the
//! input has ended (a suspect last record is judged then); what it skipped, and where a read
//! failed (a compressed stream cut short), are the damaged regions of the read's end.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

use roce_parsers::capture::{
    erf_verdict, CaptureError, CaptureParser, Format, Next, Record, PCAP_HEADER_LEN,
};

use super::blocks::{BlockReader, Bytes, Feed};
use super::mapped::{prefetch, PREFETCH_AHEAD};
use super::{SourceEnd, SourceProblem};
use crate::common::error::Error;
use crate::model::{CaptureDamage, DamagedRegion, WarningKind};

/// Record lists kept for reuse: as many as blocks can be in flight.
const SPARE_LISTS: usize = 4;

/// What the framing thread sends: blocks with their records, then how the read ended.
pub enum Message {
    Framed(Framed),
    /// Boxed: sent once, and as large as five blocks' messages.
    End(Box<Result<SourceEnd, Error>>),
}

/// The records framed in one block of bytes.
pub struct Framed {
    pub bytes: Bytes,
    pub records: Vec<Placed>,
    /// Timestamps finer than microseconds.
    pub nanosecond_times: bool,
}

impl Framed {
    /// The records, borrowing the block.
    pub fn records(&self) -> impl Iterator<Item = Record<'_>> + '_ {
        self.records.iter().map(|p| p.record(&self.bytes))
    }
}

/// A record framed in a block: its fields (without its bytes), and where its bytes are.
#[derive(Debug, Clone, Copy)]
pub struct Placed {
    record: Record<'static>,
    start: usize,
    end: usize,
}

impl Placed {
    fn of(rec: &Record<'_>, block: &[u8]) -> Placed {
        let start = rec.data.as_ptr() as usize - block.as_ptr() as usize;
        Placed {
            record: Record { data: &[], ..*rec },
            start,
            end: start + rec.data.len(),
        }
    }

    fn record<'a>(&self, block: &'a [u8]) -> Record<'a> {
        Record {
            data: &block[self.start..self.end],
            ..self.record
        }
    }
}

/// What the framing thread starts from.
pub struct FramingInput {
    pub name: String,
    pub feed: Feed,
    pub progress: Option<indicatif::ProgressBar>,
    /// Set by Ctrl-C: the read ends there, and what was read is reported.
    pub stop: &'static AtomicBool,
    /// Set when the consumer failed (an output): the read ends at the next block, with no
    /// warning of its own (the consumer tells why).
    pub halt: Arc<AtomicBool>,
}

/// Frames `input` on a thread. Blocks sent come back on the returned sender once their records
/// are consumed (to be read into again); dropping the receiver stops the thread.
pub fn spawn(input: FramingInput) -> (mpsc::Receiver<Message>, mpsc::Sender<Framed>) {
    let (framed_tx, framed) = mpsc::sync_channel(1);
    let (done, done_rx) = mpsc::channel::<Framed>();
    std::thread::spawn(move || {
        let end = Framer::start(input).and_then(|framer| framer.run(&framed_tx, &done_rx));
        let _ = framed_tx.send(Message::End(Box::new(end)));
    });
    (framed, done)
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
    halt: Arc<AtomicBool>,
    halted: bool,
    /// Bytes read while looking for the header, with the bytes of them already used and their
    /// length.
    pending: Option<(Bytes, usize, usize)>,
    eof: bool,
    /// The last pass over `carry`, at the end of the input, is done.
    final_pass: bool,
    /// Why framing broke down, if it did.
    stop: Option<String>,
    /// Why reading failed, if it did (a compressed stream cut short): the input ends there.
    read_failed: Option<String>,
    records: u64,
    /// Record lists given back, to be filled again.
    spare: Vec<Vec<Placed>>,
}

impl Framer {
    /// Reads enough to recognise the format and parses the file header.
    fn start(input: FramingInput) -> Result<Framer, Error> {
        let blocks = BlockReader::spawn(input.feed);
        let mut head: Vec<u8> = Vec::new();
        let mut eof = false;
        let mut pending = None;
        while head.len() < PCAP_HEADER_LEN && !eof {
            let Some((block, n)) = blocks.next(&input.name, input.stop)? else {
                break;
            };
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
            path: input.name.clone(),
            source,
        };
        if head.is_empty() {
            return Err(capture_err(CaptureError::TooShort { len: 0 }));
        }
        let (mut parser, header_len) = CaptureParser::new(&head).map_err(capture_err)?;
        if parser.format() == Format::Erf {
            // ERF has no magic number: its first records are read and checked before the
            // file is taken as ERF (a JSON report is not).
            if let Some((block, from, n)) = pending.take() {
                head.extend_from_slice(&block[from..n]);
                blocks.recycle(block);
            }
            loop {
                match erf_verdict(&head, eof) {
                    Some(Ok(())) => break,
                    Some(Err(e)) => return Err(capture_err(e)),
                    None => {}
                }
                let Some((block, n)) = blocks.next(&input.name, input.stop)? else {
                    break;
                };
                eof = n == 0;
                head.extend_from_slice(&block[..n]);
                blocks.recycle(block);
            }
        }
        head.drain(..header_len);
        if eof {
            parser.input_ended();
        }
        Ok(Framer {
            name: input.name,
            blocks,
            progress: input.progress,
            parser,
            carry: head,
            need: 0,
            offset: header_len as u64,
            pending,
            eof,
            final_pass: false,
            stop: None,
            read_failed: None,
            records: 0,
            interrupted: false,
            stop_flag: input.stop,
            halt: input.halt,
            halted: false,
            spare: Vec::new(),
        })
    }

    /// Frames every block, sending each with its records; ends when the input does, when
    /// framing breaks down, or when the consumer is gone.
    fn run(
        mut self,
        out: &mpsc::SyncSender<Message>,
        done: &mpsc::Receiver<Framed>,
    ) -> Result<SourceEnd, Error> {
        let send = |framer: &mut Framer, framed: Framed| {
            for back in done.try_iter() {
                // Each carried record brings a list of its own: keep a few lists, not all.
                if framer.spare.len() < SPARE_LISTS {
                    framer.spare.push(back.records);
                }
                framer.blocks.recycle(back.bytes);
            }
            out.send(Message::Framed(framed)).is_ok()
        };
        while self.stop.is_none() {
            if self.halt.load(Ordering::Relaxed) {
                self.halted = true;
                break;
            }
            let Some((block, start, n)) = self.next_block()? else {
                break;
            };
            let (pos, carried) = self.complete_carry(&block[..n], start);
            if let Some(c) = carried {
                if !send(&mut self, c) {
                    break;
                }
            }
            let records = if self.carry.is_empty() && self.stop.is_none() {
                self.frame_block(&block[..n], pos)
            } else {
                Vec::new()
            };
            if let Some(p) = &self.progress {
                p.set_position(self.offset);
            }
            if records.is_empty() {
                self.blocks.recycle(block);
                continue;
            }
            let framed = self.framed(block, records);
            if !send(&mut self, framed) {
                break;
            }
        }
        Ok(self.end())
    }

    fn framed(&self, bytes: Bytes, records: Vec<Placed>) -> Framed {
        Framed {
            bytes,
            records,
            nanosecond_times: self.parser.nanosecond_times(),
        }
    }

    /// The next block and where its unread bytes start; None at the end of the input, once
    /// nothing is left to complete.
    fn next_block(&mut self) -> Result<Option<(Bytes, usize, usize)>, Error> {
        if let Some(p) = self.pending.take() {
            return Ok(Some(p));
        }
        if !self.eof {
            let next = match self.blocks.next(&self.name, self.stop_flag) {
                Ok(next) => next,
                // A read error past the header (a damaged compressed stream, a failing disk)
                // ends the input there: what came before it is framed and reported.
                Err(Error::Input { source, .. }) => {
                    self.read_failed = Some(format!(
                        "reading failed after {} bytes: {}",
                        self.offset + self.carry.len() as u64,
                        crate::common::error::describe(&source)
                    ));
                    Some((Bytes::Read(Vec::new()), 0))
                }
                Err(e) => return Err(e),
            };
            let Some((block, n)) = next else {
                self.interrupted = true;
                return Ok(None);
            };
            if n > 0 {
                return Ok(Some((block, 0, n)));
            }
            self.eof = true;
            self.parser.input_ended();
        }
        // One last pass with no new bytes, so that what is carried is framed knowing that
        // nothing follows it.
        if self.final_pass || self.carry.is_empty() {
            return Ok(None);
        }
        self.final_pass = true;
        Ok(Some((Bytes::Read(Vec::new()), 0, 0)))
    }

    /// Completes the records in `carry` from `data[pos..]`, copied together into a block of
    /// their own; returns where the unread bytes of `data` start.
    fn complete_carry(&mut self, data: &[u8], mut pos: usize) -> (usize, Option<Framed>) {
        let mut copied: Vec<u8> = Vec::new();
        let mut records = Vec::new();
        // Where the unread bytes of `carry` start: they are drained once, at the end (damage
        // skipped in the carry is many steps).
        let mut at = 0;
        while at < self.carry.len() && self.stop.is_none() {
            match self.parser.next(&self.carry[at..], self.offset) {
                Ok(Next::Incomplete { need }) => {
                    self.need = need;
                    let have = self.carry.len() - at;
                    let take = need.saturating_sub(have).min(data.len() - pos);
                    self.carry.extend_from_slice(&data[pos..pos + take]);
                    pos += take;
                    if self.carry.len() - at < need {
                        break;
                    }
                }
                Ok(Next::Record(rec, used)) => {
                    let mut placed = Placed::of(&rec, &self.carry[at..]);
                    placed.start += copied.len();
                    placed.end += copied.len();
                    records.push(placed);
                    copied.extend_from_slice(&self.carry[at..at + used]);
                    self.records += 1;
                    at += used;
                    self.offset += used as u64;
                    self.need = 0;
                }
                Ok(Next::Skip(used)) => {
                    at += used;
                    self.offset += used as u64;
                    self.need = 0;
                }
                Err(e) => self.stop = Some(e.to_string()),
            }
        }
        self.carry.drain(..at);
        let carried = (!records.is_empty()).then(|| self.framed(Bytes::Read(copied), records));
        (pos, carried)
    }

    /// Frames every complete record of `data[pos..]` in place; keeps an incomplete last record
    /// in `carry`.
    fn frame_block(&mut self, data: &[u8], mut pos: usize) -> Vec<Placed> {
        let mut records = self.spare.pop().unwrap_or_default();
        records.clear();
        let mut prefetched = pos;
        loop {
            // The bytes a few records ahead are asked for while this header is read.
            if pos + PREFETCH_AHEAD > prefetched {
                let to = pos + PREFETCH_AHEAD + 256;
                prefetch(data, prefetched.max(pos), to);
                prefetched = to;
            }
            match self.parser.next(&data[pos..], self.offset) {
                Ok(Next::Record(rec, used)) => {
                    records.push(Placed::of(&rec, data));
                    pos += used;
                    self.offset += used as u64;
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
        self.records += records.len() as u64;
        records
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
        }
        let mut damaged = self.damage();
        problems.extend(damage_problems(
            &damaged,
            self.parser.damage().packet_why.as_deref(),
        ));
        let stopped = self.stop.as_ref().or(self.read_failed.as_ref());
        if self.interrupted {
            // Not damage: the rest was not read.
        } else if let Some(msg) = stopped {
            // Nothing after it was read: a region that runs on to the end.
            damaged.region_count += 1;
            damaged.bytes_skipped += self.carry.len() as u64;
            damaged.regions.push(DamagedRegion {
                file: self.name.clone(),
                offset: self.offset,
                bytes_skipped: self.carry.len() as u64,
                resynced_at: None,
                packets_skipped: 0,
                why: msg.clone(),
            });
            problems.push(SourceProblem {
                kind: WarningKind::FileDamaged,
                message: format!("{msg}; reading stopped there"),
                hint: format!("{} frames read before it", self.records),
            });
        } else if !self.carry.is_empty() && !self.halted {
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
                message: format!("{files} pcap files one after the other (`cat a.pcap b.pcap`): read as one capture, each file a segment of its own"),
                hint: "each file's header was recognised".into(),
            });
        }
        SourceEnd {
            format: Some(self.parser.format().name()),
            snaplen: self.parser.snaplen(),
            problems,
            damaged,
            ..SourceEnd::default()
        }
    }

    /// The regions the parser skipped, named by the input.
    fn damage(&self) -> CaptureDamage {
        let log = self.parser.damage();
        CaptureDamage {
            bytes_skipped: log.bytes_skipped,
            region_count: log.region_count,
            packets_skipped: log.packets_skipped,
            regions: log
                .regions
                .iter()
                .map(|r| DamagedRegion {
                    file: self.name.clone(),
                    offset: r.offset,
                    bytes_skipped: r.bytes_skipped,
                    resynced_at: r.resynced_at,
                    packets_skipped: r.packets_skipped,
                    why: r.why.clone(),
                })
                .collect(),
        }
    }
}

/// Damaged regions told one by one, up to this many; the rest in one line.
const REGIONS_TOLD: usize = 5;

/// A warning for each of the first damaged regions, and one for the rest.
fn damage_problems(d: &CaptureDamage, packet_why: Option<&str>) -> Vec<SourceProblem> {
    let mut problems: Vec<SourceProblem> = d
        .regions
        .iter()
        .take(REGIONS_TOLD)
        .map(|r| SourceProblem {
            kind: WarningKind::FileDamaged,
            message: region_text(r),
            hint: "the frames after it are numbered on from the last one before it".into(),
        })
        .collect();
    let told = problems.len() as u64;
    let in_regions: u64 = d.regions.iter().map(|r| r.packets_skipped).sum();
    if let Some(first) = packet_why.filter(|_| d.packets_skipped > in_regions) {
        problems.push(SourceProblem {
            kind: WarningKind::FileDamaged,
            message: format!(
                "{} skipped: the interface they name was never described (the first: {first})",
                crate::common::words::plural(d.packets_skipped - in_regions, "packet block")
            ),
            hint: "their interface description was lost, or never written".into(),
        });
    }
    if d.region_count > told {
        let shown: u64 = d
            .regions
            .iter()
            .take(REGIONS_TOLD)
            .map(|r| r.bytes_skipped)
            .sum();
        problems.push(SourceProblem {
            kind: WarningKind::FileDamaged,
            message: format!(
                "{} more damaged regions, {} bytes skipped in them",
                d.region_count - told,
                d.bytes_skipped - shown
            ),
            hint: "the JSON report lists them (capture.damaged)".into(),
        });
    }
    problems
}

/// A damaged region in words: what was wrong, what was skipped, where reading went on.
pub fn region_text(r: &DamagedRegion) -> String {
    let lost = match r.packets_skipped {
        0 => String::new(),
        n => format!(
            ", {} whose interface description was lost",
            crate::common::words::plural(n, "packet block")
        ),
    };
    match r.resynced_at {
        Some(at) => format!(
            "{}: {} bytes skipped{lost}, read on at byte {at}",
            r.why, r.bytes_skipped
        ),
        None => format!(
            "{}: {} bytes skipped{lost}, nothing readable after it",
            r.why, r.bytes_skipped
        ),
    }
}
