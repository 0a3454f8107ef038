//! The hand-over from the analysis to an output's own thread: a queue bounded in bytes. On a
//! live capture the analysis never waits for it (a record that does not fit is the sender's to
//! count as dropped); reading a file, the sender waits for room, and nothing is dropped.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};

/// The bytes the items in a queue hold, against its limit.
struct Room {
    used: Mutex<Used>,
    freed: Condvar,
    limit: usize,
}

#[derive(Default)]
struct Used {
    bytes: usize,
    /// The receiver is gone: a waiting sender waits no more.
    closed: bool,
}

/// The sending end.
pub struct QueueSender<T> {
    items: Sender<(T, usize)>,
    room: Arc<Room>,
}

/// The receiving end: each item comes with the bytes it holds, which `release` gives back
/// once the item is done with.
pub struct QueueReceiver<T> {
    items: Receiver<(T, usize)>,
    room: Arc<Room>,
}

/// Why an item was not handed over.
#[derive(Debug, PartialEq, Eq)]
pub enum NotSent<T> {
    /// The queue holds its limit: the item is back.
    Full(T),
    /// The receiver is gone (its thread ended).
    Closed(T),
}

/// A queue whose items may hold at most `limit` bytes together (an item larger than the
/// limit goes into an empty queue).
pub fn queue<T>(limit: usize) -> (QueueSender<T>, QueueReceiver<T>) {
    let (tx, rx) = mpsc::channel();
    let room = Arc::new(Room {
        used: Mutex::new(Used::default()),
        freed: Condvar::new(),
        limit,
    });
    (
        QueueSender {
            items: tx,
            room: Arc::clone(&room),
        },
        QueueReceiver { items: rx, room },
    )
}

/// What a sender does with an item that does not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenFull {
    /// Drop it, never wait (a live capture: the analysis never waits for an output); the
    /// sender counts what it dropped.
    Drop,
    /// Wait for room (reading a file: nothing is dropped).
    Wait,
}

impl<T> QueueSender<T> {
    /// Hands `item` over as `when_full` says.
    pub fn hand(&self, item: T, bytes: usize, when_full: WhenFull) -> Result<(), NotSent<T>> {
        match when_full {
            WhenFull::Drop => self.try_send(item, bytes),
            WhenFull::Wait => self.send_waiting(item, bytes),
        }
    }

    /// Hands `item` (holding `bytes`) over if it fits; never waits.
    pub fn try_send(&self, item: T, bytes: usize) -> Result<(), NotSent<T>> {
        {
            let mut used = self.room.used.lock().unwrap_or_else(|e| e.into_inner());
            if used.closed {
                return Err(NotSent::Closed(item));
            }
            if used.bytes > 0 && used.bytes + bytes > self.room.limit {
                return Err(NotSent::Full(item));
            }
            used.bytes += bytes;
        }
        self.send(item, bytes)
    }

    /// Hands `item` over whatever the queue holds: what must never be dropped (findings, the
    /// end of an interval), small and rare.
    pub fn send_anyway(&self, item: T, bytes: usize) -> Result<(), NotSent<T>> {
        {
            let mut used = self.room.used.lock().unwrap_or_else(|e| e.into_inner());
            if used.closed {
                return Err(NotSent::Closed(item));
            }
            used.bytes += bytes;
        }
        self.send(item, bytes)
    }

    /// Waits until `item` fits, then hands it over (reading a file: nothing is dropped).
    pub fn send_waiting(&self, item: T, bytes: usize) -> Result<(), NotSent<T>> {
        {
            let mut used = self.room.used.lock().unwrap_or_else(|e| e.into_inner());
            while !used.closed && used.bytes > 0 && used.bytes + bytes > self.room.limit {
                used = self
                    .room
                    .freed
                    .wait(used)
                    .unwrap_or_else(|e| e.into_inner());
            }
            // The receiver says it is gone before its channel end is dropped: a send now
            // could still succeed, into a channel nobody reads.
            if used.closed {
                return Err(NotSent::Closed(item));
            }
            used.bytes += bytes;
        }
        self.send(item, bytes)
    }

    fn send(&self, item: T, bytes: usize) -> Result<(), NotSent<T>> {
        self.items.send((item, bytes)).map_err(|e| {
            release(&self.room, bytes);
            NotSent::Closed(e.0 .0)
        })
    }

    /// Whether the receiver has taken the queue down to half its limit: a queue found full
    /// counts as full until then, so that a sender does not go back and forth on every batch.
    pub fn drained_to_half(&self) -> bool {
        self.used() <= self.room.limit / 2
    }

    /// The bytes the queue holds now.
    pub fn used(&self) -> usize {
        self.room
            .used
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .bytes
    }
}

impl<T> QueueReceiver<T> {
    /// The next item and the bytes it holds; none once every sender is gone and the queue is
    /// empty.
    pub fn recv(&self) -> Option<(T, usize)> {
        self.items.recv().ok()
    }

    /// An item of `bytes` is done with: its room is free again.
    pub fn release(&self, bytes: usize) {
        release(&self.room, bytes);
    }
}

fn release(room: &Room, bytes: usize) {
    let mut used = room.used.lock().unwrap_or_else(|e| e.into_inner());
    used.bytes = used.bytes.saturating_sub(bytes);
    room.freed.notify_all();
}

/// A receiver that is gone (its thread stopped on an error) frees a sender waiting for room.
impl<T> Drop for QueueReceiver<T> {
    fn drop(&mut self) {
        self.room
            .used
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .closed = true;
        self.room.freed.notify_all();
    }
}

/// The hand-over of a state where only the latest matters (the live view's snapshots): a
/// newer one replaces one not taken yet, and the sender never waits.
pub struct Latest<T> {
    slot: Mutex<(Option<T>, bool)>,
}

impl<T> Default for Latest<T> {
    fn default() -> Self {
        Latest {
            slot: Mutex::new((None, false)),
        }
    }
}

impl<T> Latest<T> {
    /// Puts `value` in place of any not taken yet.
    pub fn offer(&self, value: T) {
        self.slot.lock().unwrap_or_else(|e| e.into_inner()).0 = Some(value);
    }

    /// The latest value not taken yet, if any.
    pub fn take(&self) -> Option<T> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner()).0.take()
    }

    /// No more values will come.
    pub fn close(&self) {
        self.slot.lock().unwrap_or_else(|e| e.into_inner()).1 = true;
    }

    /// Closed, and the last value taken.
    pub fn ended(&self) -> bool {
        let slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        slot.1 && slot.0.is_none()
    }
}

/// Starts `work` on a thread named `name` that runs at a lower priority than the capture and
/// the analysis (nice +19): when the machine is short of CPU, an output falls behind, not the
/// capture.
pub fn spawn_behind<R: Send + 'static>(
    name: &str,
    work: impl FnOnce() -> R + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<R>> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            lower_priority();
            work()
        })
}

/// How much lower than the capture an output's thread runs (nice increment).
const OUTPUT_NICE: i32 = 19;

/// This thread at nice +19 (Linux sets a nice value per thread): at +10, the outputs of a
/// churn replayed at top speed took enough of two cores for the kernel to drop frames.
fn lower_priority() {
    let tid = rustix::thread::gettid();
    let _ = rustix::process::setpriority_process(Some(tid), OUTPUT_NICE);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_queue_gives_the_item_back_and_takes_it_once_room_is_freed() {
        let (tx, rx) = queue::<u32>(100);
        assert_eq!(tx.try_send(1, 60), Ok(()));
        assert_eq!(tx.try_send(2, 60), Err(NotSent::Full(2)));
        // What must not be dropped goes in all the same.
        assert_eq!(tx.send_anyway(3, 60), Ok(()));
        assert_eq!(tx.used(), 120);
        let (item, bytes) = rx.recv().unwrap();
        assert_eq!((item, bytes), (1, 60));
        rx.release(bytes);
        let (item, bytes) = rx.recv().unwrap();
        rx.release(bytes);
        assert_eq!(item, 3);
        assert_eq!(tx.try_send(2, 60), Ok(()));
        // An item larger than the limit fits an empty queue only.
        let (big_tx, _big_rx) = queue::<u32>(10);
        assert_eq!(big_tx.try_send(7, 50), Ok(()));
        assert_eq!(big_tx.try_send(8, 1), Err(NotSent::Full(8)));
    }

    #[test]
    fn a_waiting_sender_goes_on_once_the_receiver_frees_room() {
        let (tx, rx) = queue::<u32>(100);
        tx.try_send(1, 100).unwrap();
        let receiver = std::thread::spawn(move || {
            let mut got = Vec::new();
            while let Some((item, bytes)) = rx.recv() {
                got.push(item);
                rx.release(bytes);
            }
            got
        });
        for k in 2..50 {
            tx.send_waiting(k, 100).unwrap();
        }
        drop(tx);
        assert_eq!(receiver.join().unwrap(), (1..50).collect::<Vec<u32>>());
    }

    #[test]
    fn a_sender_waiting_for_room_is_freed_when_the_receiver_goes() {
        let (tx, rx) = queue::<u32>(100);
        tx.try_send(1, 100).unwrap();
        let gone = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            drop(rx);
        });
        assert_eq!(tx.send_waiting(2, 100), Err(NotSent::Closed(2)));
        gone.join().unwrap();
    }

    #[test]
    fn the_latest_value_replaces_one_not_taken_and_the_last_is_taken_after_the_close() {
        let latest = Latest::default();
        latest.offer(1);
        latest.offer(2);
        assert_eq!(latest.take(), Some(2));
        assert_eq!(latest.take(), None);
        latest.offer(3);
        latest.close();
        assert!(!latest.ended());
        assert_eq!(latest.take(), Some(3));
        assert!(latest.ended());
    }

    #[test]
    fn a_queue_whose_receiver_is_gone_says_so() {
        let (tx, rx) = queue::<u32>(100);
        drop(rx);
        assert_eq!(tx.try_send(1, 10), Err(NotSent::Closed(1)));
        assert_eq!(tx.used(), 0);
    }
}
