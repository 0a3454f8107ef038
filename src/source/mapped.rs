//! The one place with `unsafe`: a capture file's pages mapped into memory, so that records are
//! framed and decoded where the page cache holds them, without the bulk copy a read makes
//! (that copy was 40% of the CPU time of an offline analysis).
//!
//! The contract of a mapping: nobody may truncate the file while it is mapped. A file that
//! shrinks under the map makes the next access to a page past its new end raise SIGBUS, which
//! ends the process (ripgrep takes the same risk and guards it the same way). The guards:
//! - only regular files are mapped, and only the length they had when opened: a file that
//!   grows (tcpdump still writing) is mapped to that length and read on from there with plain
//!   reads, like a pipe;
//! - a file is mapped in windows released once read, so a truncation can only hit the window
//!   being read, and resident memory stays a few windows;
//! - small files are read, not mapped (the mapping costs more than it saves);
//! - `--no-mmap` reads every file with plain reads, for captures that something may truncate
//!   while they are read (logrotate's copytruncate).

#![allow(unsafe_code)]

use std::fs::File;
use std::ops::Deref;

/// Files smaller than this are read, not mapped.
pub const MIN_MAPPED_BYTES: u64 = 1 << 20;

/// A window of a file, mapped read-only.
pub struct MappedFile(memmap2::Mmap);

impl MappedFile {
    /// Maps `len` bytes of `file` from `offset`; None when the system will not map it (a
    /// special file, a length beyond the address space), and the caller reads it instead.
    /// Pages are mapped as they are touched, 16 at a time: mapping them all at once (populate)
    /// cost more CPU on the 2 GB benchmark (1.6-1.75 s against 1.3-1.6 s in all).
    pub fn map(file: &File, offset: u64, len: usize) -> Option<MappedFile> {
        // SAFETY: the mapping is read-only and private to this process. Its contract (the file
        // is not truncated while mapped) cannot be enforced; the module comment says how it is
        // guarded and that `--no-mmap` avoids it.
        let map = unsafe {
            memmap2::MmapOptions::new()
                .offset(offset)
                .len(len)
                .map(file)
        }
        .ok()?;
        Some(MappedFile(map))
    }
}

impl Deref for MappedFile {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// How far ahead of the record being framed its bytes are asked into the cache (measured on
/// the 2 GB benchmark: 1 KiB and 32 KiB helped less).
pub const PREFETCH_AHEAD: usize = 4 << 10;

/// Asks the CPU to bring `bytes[from..to]` into its caches. Framing records is a chain of
/// dependent loads (each header says where the next one is); without this each header waits
/// for memory: framing took 0.38 s of CPU on the 2 GB benchmark without, 0.18 s with.
#[inline]
pub fn prefetch(bytes: &[u8], from: usize, to: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let to = to.min(bytes.len());
        let mut at = from;
        while at < to {
            // SAFETY: `at < bytes.len()`, so the address is inside `bytes`; a prefetch never
            // faults and changes nothing the program can see.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(bytes.as_ptr().add(at).cast()) };
            at += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, from, to);
}
