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
