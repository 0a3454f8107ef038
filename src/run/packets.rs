//! `--packets`: the sink that prints every frame (formatted on the decoding threads, written
//! in order) and, with `--parquet`, analyses it and hands what the analysis made of it to the
//! export.

use std::io::{self, Write};

use roce_parsers::capture::Record;

use crate::analysis::Analyzer;
use crate::decode::summary::PacketSummary;
use crate::decode::FrameCounts;
use crate::model::FrameDone;
use crate::outputs::packets::{PrintSettings, PrintedChunk};
use crate::outputs::parquet::Exporter;
use crate::outputs::Output;
use crate::pipeline::{Position, Sink};

pub struct PacketPrinter<W> {
    settings: PrintSettings,
    out: W,
    /// `--parquet`: the analysis, and the export it feeds.
    export: Option<(Analyzer, Exporter)>,
}

impl<W: Write + Send> PacketPrinter<W> {
    pub fn new(settings: PrintSettings, out: W) -> Self {
        PacketPrinter {
            settings,
            out,
            export: None,
        }
    }

    /// Analyses the frames too, and exports them.
    pub fn with_export(mut self, mut analyzer: Analyzer, exporter: Exporter) -> Self {
        if exporter.wants().ended_pauses {
            analyzer.keep_closed_pauses();
        }
        self.export = Some((analyzer, exporter));
        self
    }

    /// Flushes the output and hands it back, with the analysis and export when there is one.
    pub fn into_parts(mut self) -> io::Result<(W, Option<(Analyzer, Exporter)>)> {
        self.out.flush()?;
        Ok((self.out, self.export))
    }
}

impl<W: Write + Send> Sink for PacketPrinter<W> {
    type Chunk = PrintedChunk;
    type Decoder = PrintSettings;

    fn decoder(&self) -> PrintSettings {
        self.settings.clone()
    }

    fn chunk(frames: usize) -> PrintedChunk {
        PrintedChunk::with_capacity(frames)
    }

    fn decode_into(
        settings: &PrintSettings,
        at: Position,
        rec: &Record<'_>,
        chunk: &mut PrintedChunk,
    ) {
        chunk.print(settings, rec, at.capture_start_ns, at.nanosecond_times);
    }

    fn summaries(chunk: &PrintedChunk) -> &[PacketSummary] {
        &chunk.summaries
    }

    fn clear(chunk: &mut PrintedChunk) {
        chunk.clear();
    }

    fn consume(&mut self, chunk: &mut PrintedChunk, _counted: &FrameCounts) -> io::Result<()> {
        self.out.write_all(&chunk.text)?;
        if let Some((analyzer, exporter)) = self.export.as_mut() {
            for s in &chunk.summaries {
                analyzer.feed(s);
                let pauses_ended = analyzer.take_closed_pauses();
                let done = FrameDone {
                    outcome: analyzer.last_outcome(),
                    pauses_ended: &pauses_ended,
                };
                exporter
                    .frame(s, &done)
                    .map_err(|e| io::Error::other(e.to_string()))?;
            }
        }
        Ok(())
    }
}
