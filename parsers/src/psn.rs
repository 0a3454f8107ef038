//! Packet sequence numbers: 24 bits that wrap (0xffffff -> 0), compared modulo 2^24 with a
//! window of 2^23, the way smoltcp's `tcp::SeqNumber` compares TCP sequence numbers.

use std::cmp::Ordering;
use std::fmt;
use std::ops::{Add, Sub};

/// A 24-bit PSN. `a - b` is the signed distance from `b` to `a`; `a < b` means `a` comes
/// before `b` within half the sequence space. There is no total order (the space is a circle),
/// so `Psn` is `PartialOrd` only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Psn(u32);

impl Psn {
    pub const MODULUS: u32 = 1 << 24;
    const MASK: u32 = Self::MODULUS - 1;

    /// The PSN of a raw value; bits above the 24th are dropped.
    pub const fn new(raw: u32) -> Psn {
        Psn(raw & Self::MASK)
    }

    pub const fn value(self) -> u32 {
        self.0
    }

    /// The PSN just before this one.
    pub fn prev(self) -> Psn {
        self + (Self::MODULUS - 1)
    }
}

impl Add<u32> for Psn {
    type Output = Psn;
    fn add(self, n: u32) -> Psn {
        Psn::new(self.0.wrapping_add(n))
    }
}

impl Sub for Psn {
    /// Signed distance in PSN space, in -2^23..2^23.
    type Output = i32;
    fn sub(self, other: Psn) -> i32 {
        let d = self.0.wrapping_sub(other.0) & Self::MASK;
        if d >= Self::MODULUS / 2 {
            d as i32 - Self::MODULUS as i32
        } else {
            d as i32
        }
    }
}

impl PartialOrd for Psn {
    fn partial_cmp(&self, other: &Psn) -> Option<Ordering> {
        Some((*self - *other).cmp(&0))
    }
}

impl fmt::Display for Psn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_wraps() {
        assert_eq!(Psn::new(0) - Psn::new(0xffffff), 1);
        assert_eq!(Psn::new(0xffffff) - Psn::new(0), -1);
        assert_eq!(Psn::new(5) - Psn::new(3), 2);
        assert_eq!(Psn::new(0xffffff) + 2, Psn::new(1));
        assert_eq!(Psn::new(0).prev(), Psn::new(0xffffff));
        assert_eq!(Psn::new(0x1_000_005), Psn::new(5));
    }

    #[test]
    fn order_within_the_window() {
        assert!(Psn::new(0xfffffe) < Psn::new(1));
        assert!(Psn::new(10) > Psn::new(9));
        assert!(Psn::new(0) <= Psn::new(0));
        // Half the space away is "behind" (the window is -2^23..2^23).
        assert!(Psn::new(0x800000) < Psn::new(0));
    }
}
