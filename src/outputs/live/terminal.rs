//! The live view's own thread, as bandwhich's display loop: it takes the snapshots the
//! capture loop offers (the latest: a snapshot the display has not taken yet is replaced by a
//! newer one, never waited for), reads keys, and draws. It runs at a lower priority (nice) than
//! the capture, and restores the terminal on the way out. `q` and Ctrl-C (a key in raw mode)
//! end the capture through the same flag as SIGINT, and so does a terminal that goes away
//! (a closed SSH session, a killed tmux pane).

use std::io::{self, IsTerminal};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};

use super::snapshot::{Snapshot, SortBy};
use super::view::{self, ViewState};
use crate::common::queue::{spawn_behind, Latest};

/// How often keys are looked for.
const KEY_POLL: Duration = Duration::from_millis(100);

pub struct LiveView {
    snapshots: Arc<Latest<Snapshot>>,
    sort: Arc<AtomicU8>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl LiveView {
    /// Takes over the terminal (raw mode, alternate screen) and starts the display thread.
    pub fn start(stop: &'static AtomicBool) -> io::Result<LiveView> {
        let terminal = ratatui::try_init()?;
        let snapshots = Arc::new(Latest::default());
        let sort = Arc::new(AtomicU8::new(0));
        let (shared, taken) = (Arc::clone(&sort), Arc::clone(&snapshots));
        let thread = spawn_behind("live-view", move || {
            let mut terminal = terminal;
            let r = display_loop(&mut terminal, &taken, stop, &shared);
            if matches!(r, Ok(Ending::Finished)) {
                drop(terminal);
            } else {
                // The terminal is gone or failing: its drop would write to it once more,
                // and report the failure with a panicking eprintln.
                std::mem::forget(terminal);
            }
            let _ = ratatui::try_restore();
            r.map(|_| ())
        })?;
        Ok(LiveView {
            snapshots,
            sort,
            thread: Some(thread),
        })
    }

    /// The order the person chose for the QP table.
    pub fn sort(&self) -> SortBy {
        sort_of(self.sort.load(Ordering::Relaxed))
    }

    /// Offers a snapshot in place of one the display has not taken yet; never waits.
    pub fn offer(&self, s: Snapshot) {
        self.snapshots.offer(s);
    }

    /// Ends the display (once it drew the last snapshot) and gives the normal screen back.
    pub fn finish(mut self) -> io::Result<()> {
        self.snapshots.close();
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(io::Error::other("the live view's thread failed")),
            None => Ok(()),
        }
    }
}

impl Drop for LiveView {
    /// On an early return (a capture error), the terminal is given back before the error is
    /// printed.
    fn drop(&mut self) {
        self.snapshots.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn sort_of(v: u8) -> SortBy {
    match v {
        1 => SortBy::Rate,
        2 => SortBy::Packets,
        _ => SortBy::Trouble,
    }
}

fn sort_code(s: SortBy) -> u8 {
    match s {
        SortBy::Trouble => 0,
        SortBy::Rate => 1,
        SortBy::Packets => 2,
    }
}

/// The terminal the keys come from, as crossterm reads them: standard input when it is one,
/// else /dev/tty.
fn key_source() -> Option<OwnedFd> {
    let stdin = io::stdin();
    if stdin.is_terminal() {
        return stdin.as_fd().try_clone_to_owned().ok();
    }
    std::fs::File::open("/dev/tty").ok().map(OwnedFd::from)
}

/// What waiting up to `KEY_POLL` for a key found.
#[derive(Debug, PartialEq, Eq)]
enum Keys {
    Ready,
    None,
    /// The terminal hung up.
    Gone,
}

/// Waits for keys ourselves before crossterm reads them: on a terminal that went away,
/// crossterm's poll spins on a read of 0 bytes forever, timeout or not (crossterm issue
/// #793), which kept the capture from ending and burnt a core.
fn wait_for_keys(keys: &OwnedFd) -> io::Result<Keys> {
    use rustix::event::{PollFd, PollFlags, Timespec};
    let timeout = Timespec {
        tv_sec: 0,
        tv_nsec: KEY_POLL.as_nanos() as _,
    };
    let mut fds = [PollFd::new(keys, PollFlags::IN)];
    match rustix::event::poll(&mut fds, Some(&timeout)) {
        Ok(0) => Ok(Keys::None),
        Ok(_) => Ok(hangup_or_keys(fds[0].revents())),
        Err(rustix::io::Errno::INTR) => Ok(Keys::None),
        Err(e) => Err(e.into()),
    }
}

fn hangup_or_keys(revents: rustix::event::PollFlags) -> Keys {
    use rustix::event::PollFlags;
    if revents.intersects(PollFlags::HUP | PollFlags::ERR | PollFlags::NVAL) {
        Keys::Gone
    } else if revents.contains(PollFlags::IN) {
        Keys::Ready
    } else {
        Keys::None
    }
}

/// How the display ended.
enum Ending {
    /// The capture ended.
    Finished,
    /// The terminal hung up; the capture was told to end.
    TerminalGone,
}

fn display_loop(
    terminal: &mut ratatui::DefaultTerminal,
    snapshots: &Latest<Snapshot>,
    stop: &AtomicBool,
    sort: &AtomicU8,
) -> io::Result<Ending> {
    let mut state = ViewState {
        color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        ..ViewState::default()
    };
    let keys = key_source();
    let mut shown = Snapshot::default();
    let mut dirty = true;
    loop {
        if snapshots.ended() {
            return Ok(Ending::Finished);
        }
        if let Some(s) = snapshots.take() {
            if !state.paused {
                shown = s;
                dirty = true;
            }
        }
        if dirty {
            state.scroll = state.scroll.min(shown.qps.len().saturating_sub(1));
            terminal.draw(|f| view::draw(f, &shown, &state))?;
            dirty = false;
        }
        let ready = match keys.as_ref().map(wait_for_keys).transpose()? {
            Some(Keys::Gone) => {
                // Nobody is watching: the capture ends as on SIGHUP, its report and outputs
                // written.
                stop.store(true, Ordering::SeqCst);
                return Ok(Ending::TerminalGone);
            }
            Some(Keys::None) => false,
            Some(Keys::Ready) => event::poll(Duration::ZERO)?,
            None => event::poll(KEY_POLL)?,
        };
        if !ready {
            continue;
        }
        match event::read()? {
            Event::Key(k) if k.kind != KeyEventKind::Release => {
                let ctrl_c =
                    k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                match k.code {
                    KeyCode::Char('q') => stop.store(true, Ordering::SeqCst),
                    _ if ctrl_c => stop.store(true, Ordering::SeqCst),
                    KeyCode::Down | KeyCode::Char('j') => state.scroll += 1,
                    KeyCode::Up | KeyCode::Char('k') => {
                        state.scroll = state.scroll.saturating_sub(1)
                    }
                    KeyCode::PageDown => state.scroll += 10,
                    KeyCode::PageUp => state.scroll = state.scroll.saturating_sub(10),
                    KeyCode::Char('s') => {
                        let next = sort_of(sort.load(Ordering::Relaxed)).next();
                        sort.store(sort_code(next), Ordering::Relaxed);
                        shown.sort = next;
                    }
                    KeyCode::Char('p') => state.paused = !state.paused,
                    _ => {}
                }
                dirty = true;
            }
            Event::Resize(..) => dirty = true,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::event::PollFlags;

    #[test]
    fn a_hung_up_terminal_is_told_from_a_key() {
        assert_eq!(hangup_or_keys(PollFlags::IN), Keys::Ready);
        // A closed terminal is readable too (a read of 0 bytes): the hang-up decides.
        assert_eq!(hangup_or_keys(PollFlags::IN | PollFlags::HUP), Keys::Gone);
        assert_eq!(hangup_or_keys(PollFlags::ERR), Keys::Gone);
        assert_eq!(hangup_or_keys(PollFlags::NVAL), Keys::Gone);
        assert_eq!(hangup_or_keys(PollFlags::empty()), Keys::None);
    }
}
