//! Exit codes (documented in --help and README): what a test script can rely on.

/// The run succeeded (and a verification passed).
pub const OK: u8 = 0;
/// A verification failed or could not be made, the capture held no frame at all, or a
/// finding that `--fail-on` names was raised.
pub const VERIFY_FAILED: u8 = 1;
/// An error: unreadable input, bad flags, an output that cannot be written.
pub const ERROR: u8 = 2;
