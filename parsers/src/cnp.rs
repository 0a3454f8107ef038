//! RoCEv2 Congestion Notification Packet: BTH opcode 0x81 with BECN set, DestQP = the QP of the
//! sender of the congested data, then 16 reserved bytes before the ICRC.

pub const CNP_RESERVED_LEN: usize = 16;

use crate::Bth;

/// Whether a CNP looks like the specification says (BECN set). NICs differ in the PSN and
/// P_Key they put in, so those are not checked.
pub fn is_well_formed(bth: &Bth) -> bool {
    bth.becn
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Opcode;

    #[test]
    fn becn_marks_a_well_formed_cnp() {
        let (mut bth, _) =
            Bth::parse(&[0x81, 0, 0xff, 0xff, 0x40, 0, 0, 0x45, 0, 0, 0, 0]).unwrap();
        assert_eq!(bth.opcode, Opcode::CNP);
        assert!(is_well_formed(&bth));
        bth.becn = false;
        assert!(!is_well_formed(&bth));
    }
}
