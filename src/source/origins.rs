//! Which file each frame of a merged set came from (`-r a -r b`, a directory), so that a
//! frame the report cites by its merged number can also be named by its number in its own
//! file (findings' `frame_refs`, `a.pcap:23`). Two bytes a frame, and every `CHECKPOINT`
//! frames each file's count so far: naming a frame scans at most that many.

use crate::model::FrameRef;

/// Frames between two checkpoints.
const CHECKPOINT: usize = 1 << 16;

#[derive(Debug, Clone, Default)]
pub struct FrameOrigins {
    /// The files, as named on the command line.
    names: Vec<String>,
    /// The input of each frame, in merged order.
    inputs: Vec<u16>,
    /// Frames of each input before frame `k * CHECKPOINT + 1`.
    checkpoints: Vec<Vec<u64>>,
    /// Frames of each input so far.
    counts: Vec<u64>,
}

impl FrameOrigins {
    pub fn new(names: Vec<String>) -> Self {
        FrameOrigins {
            inputs: Vec::new(),
            checkpoints: Vec::new(),
            counts: vec![0; names.len()],
            names,
        }
    }

    /// The next merged frame is from `input`; returns its number in that input.
    pub fn push(&mut self, input: u16) -> u64 {
        if self.inputs.len().is_multiple_of(CHECKPOINT) {
            self.checkpoints.push(self.counts.clone());
        }
        self.inputs.push(input);
        let n = &mut self.counts[usize::from(input)];
        *n += 1;
        *n
    }

    /// Frames merged so far: the number of the latest.
    pub fn frames(&self) -> u64 {
        self.inputs.len() as u64
    }

    /// The files, as named on the command line.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The input merged frame `frame` (from 1) came from.
    pub fn input_of(&self, frame: u64) -> Option<usize> {
        let at = usize::try_from(frame.checked_sub(1)?).ok()?;
        self.inputs.get(at).map(|&i| usize::from(i))
    }

    /// Frames merged from `input`.
    pub fn frames_of(&self, input: usize) -> u64 {
        self.counts.get(input).copied().unwrap_or(0)
    }

    /// Merged frame `frame` (from 1): its file and its number there.
    pub fn frame_ref(&self, frame: u64) -> Option<FrameRef> {
        let (input, n) = self.locate(frame)?;
        Some(FrameRef {
            file: self.names.get(input)?.clone(),
            frame: n,
        })
    }

    /// Each of `frames` named in its file.
    pub fn frame_refs(&self, frames: &[u64]) -> Vec<FrameRef> {
        frames.iter().filter_map(|&f| self.frame_ref(f)).collect()
    }

    /// Merged frame `frame` (from 1): its input and its number there.
    pub fn locate(&self, frame: u64) -> Option<(usize, u64)> {
        let at = usize::try_from(frame.checked_sub(1)?).ok()?;
        let input = *self.inputs.get(at)?;
        let from = at / CHECKPOINT * CHECKPOINT;
        let before = self.checkpoints[at / CHECKPOINT][usize::from(input)];
        let since = self.inputs[from..=at]
            .iter()
            .filter(|&&i| i == input)
            .count() as u64;
        Some((usize::from(input), before + since))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_merged_frame_is_named_by_its_number_in_its_file() {
        // Two files interleaved unevenly across several checkpoints.
        let mut o = FrameOrigins::new(vec!["a".into(), "b".into(), "c".into()]);
        let mut expected = Vec::new();
        for k in 0..(3 * CHECKPOINT + 17) {
            let input = if k % 5 == 0 { 2 } else { (k % 2) as u16 };
            expected.push((usize::from(input), o.push(input)));
        }
        for (k, &e) in expected.iter().enumerate() {
            assert_eq!(o.locate(k as u64 + 1), Some(e), "frame {}", k + 1);
        }
        let third = expected.iter().position(|&(i, _)| i == 2).unwrap() as u64 + 1;
        assert_eq!(
            o.frame_refs(&[third]),
            [FrameRef {
                file: "c".into(),
                frame: 1
            }]
        );
        assert_eq!(o.locate(0), None);
        assert_eq!(o.locate(expected.len() as u64 + 1), None);
    }
}
