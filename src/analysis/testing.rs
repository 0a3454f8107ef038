//! For tests: a capture held in memory fed to an analyzer frame by frame.

use roce_parsers::capture::{CaptureParser, Next};

use super::Analyzer;
use crate::decode::FrameCounts;

/// Feeds every frame of `data` to `an`; `each` sees it, and the frame counts so far, after
/// every frame. Returns both at the end.
pub fn feed(
    data: &[u8],
    mut an: Analyzer,
    mut each: impl FnMut(&mut Analyzer, &FrameCounts),
) -> (Analyzer, FrameCounts) {
    let (mut parser, mut at) = CaptureParser::new(data).unwrap();
    let mut counts = FrameCounts::default();
    let mut n = 0;
    loop {
        match parser.next(&data[at..], at as u64).unwrap() {
            Next::Record(rec, used) => {
                n += 1;
                let s = crate::decode::summarize(n, &rec, Default::default());
                counts.add(&s);
                an.feed(&s);
                each(&mut an, &counts);
                at += used;
            }
            Next::Skip(used) => at += used,
            Next::Incomplete { .. } => break,
        }
    }
    (an, counts)
}

/// The capture `testdata/NAME` analysed with the default configuration: the analyzer, and the
/// frames counted.
pub fn analysed(name: &str) -> (Analyzer, FrameCounts) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name);
    let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    feed(&data, Analyzer::new(Default::default()), |_, _| {})
}

/// The report of `testdata/NAME` with the default configuration.
pub fn report_of(name: &str) -> crate::model::Report {
    let (an, counts) = analysed(name);
    an.finish(super::report_build::CaptureMeta {
        counts,
        ..Default::default()
    })
}

/// A diagnose scenario of the generator (testgen/src/diagnose.rs), as a capture in memory.
pub fn scenario(name: &str) -> Vec<u8> {
    use roce_testgen::writer::{pcap_bytes, PcapFlavor};
    let s = roce_testgen::diagnose::scenarios()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no scenario {name}"));
    pcap_bytes(&s.frames, PcapFlavor::NANO_LE, 1, 65535)
}
