//! The wall clock.

/// The wall clock in ns since the epoch (a live capture's packet times are on it).
pub fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}
