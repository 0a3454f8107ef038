//! The signals that end a read, live or from a file or pipe, with the report of what was
//! read and every output still written:
//!
//! - Ctrl-C (SIGINT) and SIGTERM: the first ends the read; a second one ends the program at
//!   once (exit 130), for a user who does not want to wait for the report.
//! - SIGHUP, the terminal gone (a closed SSH session, a killed tmux pane): ends the read,
//!   never at once, because a hang-up comes more than once (from the terminal and again from
//!   the shell) and nobody is there to want it faster. Under `nohup` (SIGHUP ignored when the
//!   program starts) it stays ignored: the capture goes on.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

/// Exit status of a second Ctrl-C (128 + SIGINT, as shells report it).
const SECOND_SIGNAL_EXIT: i32 = 130;

/// The flag the signals set, with their handlers installed on the first call (one per
/// process).
pub fn flag() -> &'static AtomicBool {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        for signal in [SIGINT, SIGTERM] {
            // Registered first, it sees the flag as it stood before this signal: a second
            // signal ends the program.
            let _ = signal_hook::flag::register_conditional_shutdown(
                signal,
                SECOND_SIGNAL_EXIT,
                Arc::clone(&flag),
            );
            let _ = signal_hook::flag::register(signal, Arc::clone(&flag));
        }
        if !hangup_ignored() {
            let _ = signal_hook::flag::register(SIGHUP, Arc::clone(&flag));
        }
        flag
    })
}

/// SIGHUP was ignored when the program started (`nohup`): the `SigIgn` mask of
/// /proc/self/status, where SIGHUP is bit 0.
fn hangup_ignored() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| ignored_mask(&s))
        .is_some_and(|mask| mask & (1 << (SIGHUP - 1)) != 0)
}

fn ignored_mask(status: &str) -> Option<u64> {
    let line = status.lines().find_map(|l| l.strip_prefix("SigIgn:"))?;
    u64::from_str_radix(line.trim(), 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ignored_signals_are_read_from_the_process_status() {
        let status = "Name:\troce-sniff\nSigBlk:\t0000000000000000\nSigIgn:\t0000000000001001\n";
        assert_eq!(ignored_mask(status), Some(0x1001));
        assert_eq!(ignored_mask("Name:\tx\n"), None);
        // This test process does not ignore SIGHUP, unless run under nohup.
        let ours = ignored_mask(&std::fs::read_to_string("/proc/self/status").unwrap()).unwrap();
        assert_eq!(hangup_ignored(), ours & 1 != 0);
    }
}
