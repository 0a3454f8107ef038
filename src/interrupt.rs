//! Ctrl-C (SIGINT): the first one ends the read, live or from a file or pipe, and the report
//! of what was read is still produced; a second one ends the program at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

/// Set by the first Ctrl-C once `flag` installed the handler.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// The Ctrl-C flag, with its handler installed on the first call (one per process).
pub fn flag() -> &'static AtomicBool {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            if INTERRUPTED.swap(true, Ordering::SeqCst) {
                // The second Ctrl-C: the user does not want to wait for the report.
                std::process::exit(130);
            }
        });
    });
    &INTERRUPTED
}
