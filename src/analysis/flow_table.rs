//! The open flows, by index: chunks of a fixed size instead of one vector, so that many flows
//! never cost a vector's spare half (a vector of 100,000 flows holds room for 131,072) nor
//! the copy of every flow each time it doubles. The report entries of ended flows are kept
//! the same way (a churn's 600,000 entries doubling held the old and the new copy at once).

use std::ops::{Index, IndexMut};

use super::flow::Flow;

/// Items per chunk.
const CHUNK: usize = 1024;
/// Chunks moved by `into_vec` between two releases of the freed pages.
const RELEASE_EVERY_CHUNKS: usize = 4;

/// A vector in chunks of `CHUNK` items.
#[derive(Debug, Clone)]
pub struct Chunked<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

/// The open flows, each boxed: a flow is about 1 KB, and a churn swap-removes 100,000 a second,
/// moving the last into the hole; boxed, that moves a pointer (the monitor's analysis of a churn
/// took a third more time copying flows).
pub type FlowTable = Chunked<Box<Flow>>;

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Chunked<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn push(&mut self, flow: T) {
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
    pub fn swap_remove(&mut self, i: usize) -> T {
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

    pub fn get(&self, i: usize) -> Option<&T> {
        self.chunks.get(i / CHUNK)?.get(i % CHUNK)
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + '_ {
        self.chunks.iter().flatten()
    }

    /// The items from index `first` on.
    pub fn iter_from(&self, first: usize) -> impl Iterator<Item = &T> + '_ {
        let chunk = first / CHUNK;
        let skip = if chunk < self.chunks.len() {
            first % CHUNK
        } else {
            0
        };
        self.chunks.iter().skip(chunk).flatten().skip(skip)
    }

    /// One vector with room for `more` items after these, the chunks freed and their pages
    /// given back as they are moved: the peak is the vector and a few chunks, not two copies.
    pub fn into_vec(self, more: usize) -> Vec<T> {
        let mut v = Vec::with_capacity(self.len + more);
        for (n, chunk) in self.chunks.into_iter().enumerate() {
            v.extend(chunk);
            if n % RELEASE_EVERY_CHUNKS == RELEASE_EVERY_CHUNKS - 1 {
                crate::common::memory::release_free_memory();
            }
        }
        v
    }
}

/// The flows in index order, each chunk freed as soon as its flows are taken: a report made
/// from the flows as they leave never holds both at once.
impl<T> IntoIterator for Chunked<T> {
    type Item = T;
    type IntoIter = std::iter::Flatten<std::vec::IntoIter<Vec<T>>>;
    fn into_iter(self) -> Self::IntoIter {
        self.chunks.into_iter().flatten()
    }
}

impl<T> Index<usize> for Chunked<T> {
    type Output = T;
    fn index(&self, i: usize) -> &T {
        &self.chunks[i / CHUNK][i % CHUNK]
    }
}

impl<T> IndexMut<usize> for Chunked<T> {
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self.chunks[i / CHUNK][i % CHUNK]
    }
}

impl<'a, T> IntoIterator for &'a Chunked<T> {
    type Item = &'a T;
    type IntoIter = std::iter::Flatten<std::slice::Iter<'a, Vec<T>>>;
    fn into_iter(self) -> Self::IntoIter {
        self.chunks.iter().flatten()
    }
}

/// Data flows of one host pair in flow order (by id), each with its index in the open flows:
/// where a response or a CNP looks for the request flow it answers. Kept by id, not by index,
/// so that a new flow (the highest id) is appended without a search, and a flow renumbered
/// when another leaves keeps its place.
#[derive(Debug, Clone, Default)]
pub struct FlowsInOrder {
    by_id: Vec<(u64, usize)>,
}

impl FlowsInOrder {
    /// Adds flow `id`, at `index` in the open flows.
    pub fn insert(&mut self, id: u64, index: usize) {
        match self.by_id.last() {
            Some(&(last, _)) if last > id => {
                let at = self.by_id.partition_point(|&(j, _)| j < id);
                self.by_id.insert(at, (id, index));
            }
            _ => self.by_id.push((id, index)),
        }
    }

    /// Removes flow `id`, if listed.
    pub fn remove(&mut self, id: u64) {
        if let Ok(at) = self.find(id) {
            self.by_id.remove(at);
        }
    }

    /// Flow `id`, if listed, is now at `index` in the open flows.
    pub fn renumber(&mut self, id: u64, index: usize) {
        if let Ok(at) = self.find(id) {
            self.by_id[at].1 = index;
        }
    }

    fn find(&self, id: u64) -> Result<usize, usize> {
        self.by_id.binary_search_by_key(&id, |&(j, _)| j)
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// The flows' indices in the open flows, in flow order.
    pub fn indices(&self) -> impl Iterator<Item = usize> + '_ {
        self.by_id.iter().map(|&(_, i)| i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::flow::FlowKey;

    fn flow(id: u64) -> Box<Flow> {
        let key = FlowKey {
            src: "10.0.0.1".parse().unwrap(),
            dst: "10.0.0.2".parse().unwrap(),
            dqpn: roce_parsers::Qpn(id as u32),
            vlan: None,
        };
        Box::new(Flow::new(id, key, 0, 0))
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

    #[test]
    fn iter_from_starts_anywhere_in_any_chunk() {
        let mut c = Chunked::default();
        for i in 0..(2 * CHUNK + 5) {
            c.push(i);
        }
        for first in [
            0,
            1,
            CHUNK - 1,
            CHUNK,
            CHUNK + 3,
            2 * CHUNK + 4,
            2 * CHUNK + 5,
            9 * CHUNK,
        ] {
            let got: Vec<usize> = c.iter_from(first).copied().collect();
            let want: Vec<usize> = (first.min(2 * CHUNK + 5)..2 * CHUNK + 5).collect();
            assert_eq!(got, want, "from {first}");
        }
    }

    #[test]
    fn flows_in_order_stay_in_id_order_whatever_order_they_come_and_leave() {
        let mut l = FlowsInOrder::default();
        // Ids mostly rising (appended), one older flow making its first request late.
        for (id, index) in [(3, 30), (5, 50), (9, 90), (4, 40), (12, 120)] {
            l.insert(id, index);
        }
        assert_eq!(l.indices().collect::<Vec<_>>(), [30, 40, 50, 90, 120]);
        l.remove(5);
        l.remove(77); // not listed: nothing changes
        l.renumber(12, 50); // the last flow took the removed one's index
        l.renumber(78, 1);
        assert_eq!(l.indices().collect::<Vec<_>>(), [30, 40, 90, 50]);
        assert_eq!(l.len(), 4);
        for id in [3, 4, 9, 12] {
            l.remove(id);
        }
        assert!(l.is_empty());
    }
}
