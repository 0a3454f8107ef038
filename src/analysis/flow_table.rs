//! The open flows, by index: chunks of a fixed size instead of one vector, so that many flows
//! never cost a vector's spare half (a vector of 100,000 flows holds room for 131,072) nor
//! the copy of every flow each time it doubles.

use std::ops::{Index, IndexMut};

use super::flow::Flow;

/// Flows per chunk.
const CHUNK: usize = 1024;

#[derive(Debug, Clone, Default)]
pub struct FlowTable {
    chunks: Vec<Vec<Flow>>,
    len: usize,
}

impl FlowTable {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn push(&mut self, flow: Flow) {
        match self.chunks.last_mut() {
            Some(c) if c.len() < CHUNK => c.push(flow),
            _ => {
                let mut c = Vec::with_capacity(CHUNK);
                c.push(flow);
                self.chunks.push(c);
            }
        }
        self.len += 1;
    }

    /// Removes flow `i`; the last flow takes its index.
    pub fn swap_remove(&mut self, i: usize) -> Flow {
        assert!(i < self.len, "flow {i} of {}", self.len);
        let last = self
            .chunks
            .last_mut()
            .and_then(Vec::pop)
            .expect("not empty");
        if self.chunks.last().is_some_and(Vec::is_empty) {
            self.chunks.pop();
        }
        self.len -= 1;
        if i == self.len {
            return last;
        }
        std::mem::replace(&mut self[i], last)
    }

    pub fn get(&self, i: usize) -> Option<&Flow> {
        self.chunks.get(i / CHUNK)?.get(i % CHUNK)
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Flow> + '_ {
        self.chunks.iter().flatten()
    }
}

/// The flows in index order, each chunk freed as soon as its flows are taken: a report made
/// from the flows as they leave never holds both at once.
impl IntoIterator for FlowTable {
    type Item = Flow;
    type IntoIter = std::iter::Flatten<std::vec::IntoIter<Vec<Flow>>>;
    fn into_iter(self) -> Self::IntoIter {
        self.chunks.into_iter().flatten()
    }
}

impl Index<usize> for FlowTable {
    type Output = Flow;
    fn index(&self, i: usize) -> &Flow {
        &self.chunks[i / CHUNK][i % CHUNK]
    }
}

impl IndexMut<usize> for FlowTable {
    fn index_mut(&mut self, i: usize) -> &mut Flow {
        &mut self.chunks[i / CHUNK][i % CHUNK]
    }
}

impl<'a> IntoIterator for &'a FlowTable {
    type Item = &'a Flow;
    type IntoIter = std::iter::Flatten<std::slice::Iter<'a, Vec<Flow>>>;
    fn into_iter(self) -> Self::IntoIter {
        self.chunks.iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::flow::FlowKey;

    fn flow(id: u64) -> Flow {
        let key = FlowKey {
            src: "10.0.0.1".parse().unwrap(),
            dst: "10.0.0.2".parse().unwrap(),
            dqpn: roce_parsers::Qpn(id as u32),
            vlan: None,
        };
        Flow::new(id, key, 0, 0)
    }

    #[test]
    fn flows_keep_their_index_across_chunks_and_the_last_fills_a_removed_one() {
        let mut t = FlowTable::default();
        for id in 0..(2 * CHUNK as u64 + 5) {
            t.push(flow(id));
        }
        assert_eq!(t.len(), 2 * CHUNK + 5);
        assert_eq!(t[CHUNK + 3].id, CHUNK as u64 + 3);
        assert_eq!(t.swap_remove(7).id, 7);
        assert_eq!(t[7].id, 2 * CHUNK as u64 + 4, "the last took its place");
        // Down to the chunk boundary and below: empty chunks leave.
        while t.len() > CHUNK - 1 {
            let last = t.len() - 1;
            t.swap_remove(last);
        }
        assert_eq!(t.chunks.len(), 1);
        assert_eq!(t.iter().count(), CHUNK - 1);
        assert!(t.get(CHUNK - 1).is_none());
        let ids: Vec<u64> = t.iter().map(|f| f.id).collect();
        assert_eq!(ids.len(), CHUNK - 1);
        assert_eq!(ids[7], 2 * CHUNK as u64 + 4);
    }
}
