//! What every part of roce-sniff may use, and which uses none of them: errors and exit codes,
//! where an output goes (a file or standard output), units and words, signals, the wall
//! clock, `Rare`, colour on a terminal, and giving freed memory back.

pub mod clock;
pub mod destination;
pub mod error;
pub mod exit;
pub mod memory;
pub mod paint;
pub mod queue;
pub mod rare;
pub mod signals;
pub mod units;
pub mod words;
