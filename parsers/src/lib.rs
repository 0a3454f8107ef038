//! Zero-copy decoders for RoCE (v1 and v2), PFC / 802.3x PAUSE frames and the pcap / pcapng
//! record containers they arrive in.
//!
//! # Contract
//!
//! * Nothing here does I/O and nothing allocates per packet: every view borrows from the
//!   caller's buffer and every decoded value is a small `Copy` struct.
//! * No function in this crate panics on any input. Every length read from the input is checked
//!   before it is used; a header that does not fit in the bytes given is reported as a
//!   [`DecodeError`] naming the [`Layer`] and the lengths involved, and everything decoded
//!   before that point is kept (lax decoding, so snap-length captures still decode their headers).
//! * Unknown values (opcodes, link types, MAC Control opcodes) are kept and reported, never
//!   rejected.
//!
//! Ethernet to UDP is sliced by `etherparse` (lax mode); the InfiniBand transport headers and the
//! MAC Control frames are parsed with `nom`. `pcapng_write` encodes the blocks of a pcapng copy of
//! a capture into the caller's buffer.
#![forbid(unsafe_code)]

pub mod aeth;
pub mod atomic;
pub mod bth;
pub mod capture;
pub mod cnp;
pub mod deth;
pub mod encap;
pub mod error;
pub mod frame;
pub mod grh;
pub mod icmp;
pub mod icrc;
pub mod immdt;
pub mod link;
pub mod mad;
pub mod opcode;
pub mod pcapng_write;
pub mod pfc;
pub mod psn;
pub mod qos;
pub mod reth;
pub mod transport;

pub use aeth::{Aeth, AethKind, NakCode};
pub use atomic::{AtomicAckEth, AtomicEth};
pub use bth::Bth;
pub use deth::Deth;
pub use encap::{Encap, EncapKind};
pub use error::{DecodeError, Layer};
pub use frame::{
    decode_frame, decode_frame_with, DecodeOptions, Frame, IpInfo, RoceInfo, RoceVersion, VlanTag,
};
pub use icmp::IcmpError;
pub use icrc::{IcrcCheck, IcrcStatus};
pub use mad::CmMessage;
pub use opcode::{Opcode, Operation, Position, Transport};
pub use pfc::MacControl;
pub use psn::Psn;
pub use qos::{Ecn, MacAddr, Qpn, TrafficClass};
pub use reth::Reth;
pub use transport::ExtHeaders;

/// UDP destination port that identifies RoCEv2.
pub const ROCEV2_UDP_PORT: u16 = 4791;
/// Ethertype of RoCEv1 (GRH follows the Ethernet header).
pub const ETHERTYPE_ROCEV1: u16 = 0x8915;
/// Ethertype of MAC Control frames (PAUSE, PFC).
pub const ETHERTYPE_MAC_CONTROL: u16 = 0x8808;

/// Maps a nom error on a fixed-size header to the truncation error of that layer.
pub(crate) fn truncated(layer: Layer, need: usize, have: usize) -> DecodeError {
    DecodeError::Truncated { layer, need, have }
}
