//! The BTH opcode: transport (upper 3 bits) and operation (lower 5 bits), with readable names
//! and the extension headers each opcode carries.

/// The transport service of an opcode (upper 3 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    Rc,
    Uc,
    Rd,
    Ud,
    Cnp,
    Xrc,
    Unknown(u8),
}

impl Transport {
    pub fn name(self) -> &'static str {
        match self {
            Transport::Rc => "RC",
            Transport::Uc => "UC",
            Transport::Rd => "RD",
            Transport::Ud => "UD",
            Transport::Cnp => "CNP",
            Transport::Xrc => "XRC",
            Transport::Unknown(_) => "UNKNOWN",
        }
    }

    /// Whether the transport acknowledges and resends (RC, XRC, RD); UC and UD never do, so
    /// a gap there is loss nobody repairs.
    pub fn is_reliable(self) -> bool {
        matches!(self, Transport::Rc | Transport::Xrc | Transport::Rd)
    }
}

/// What an opcode does, independent of the transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    Send,
    Write,
    ReadRequest,
    ReadResponse,
    Ack,
    AtomicAck,
    Atomic,
    Cnp,
    Unknown,
}

/// Where a packet sits in a multi-packet message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Position {
    First,
    Middle,
    Last,
    Only,
    /// ACKs, READ requests, atomics, CNPs: single packets that are not message data.
    NotApplicable,
}

/// Which extension headers follow the BTH, in wire order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExtLayout {
    pub xrceth: bool,
    pub deth: bool,
    pub reth: bool,
    pub atomic_eth: bool,
    pub aeth: bool,
    pub atomic_ack_eth: bool,
    pub immdt: bool,
    pub ieth: bool,
    /// CNP: 16 reserved bytes.
    pub cnp_reserved: bool,
}

#[derive(Clone, Copy)]
struct OpInfo {
    operation: Operation,
    position: Position,
    layout: ExtLayout,
}

const NONE: ExtLayout = ExtLayout {
    xrceth: false,
    deth: false,
    reth: false,
    atomic_eth: false,
    aeth: false,
    atomic_ack_eth: false,
    immdt: false,
    ieth: false,
    cnp_reserved: false,
};
const IMM: ExtLayout = ExtLayout {
    immdt: true,
    ..NONE
};
const RETH: ExtLayout = ExtLayout { reth: true, ..NONE };
const RETH_IMM: ExtLayout = ExtLayout {
    reth: true,
    immdt: true,
    ..NONE
};
const AETH: ExtLayout = ExtLayout { aeth: true, ..NONE };
const AETH_ATOMIC: ExtLayout = ExtLayout {
    aeth: true,
    atomic_ack_eth: true,
    ..NONE
};
const ATOMIC: ExtLayout = ExtLayout {
    atomic_eth: true,
    ..NONE
};
const IETH: ExtLayout = ExtLayout { ieth: true, ..NONE };

macro_rules! op {
    ($name:literal, $op:ident, $pos:ident, $layout:expr) => {
        // The name documents the row; full names live in the per-transport tables below.
        Some(OpInfo {
            operation: Operation::$op,
            position: Position::$pos,
            layout: $layout,
        })
    };
}

/// The operation table of RC (and, with a transport prefix, UC and XRC), indexed by the lower 5 bits.
const OPERATIONS: [Option<OpInfo>; 24] = [
    op!("SEND_FIRST", Send, First, NONE),
    op!("SEND_MIDDLE", Send, Middle, NONE),
    op!("SEND_LAST", Send, Last, NONE),
    op!("SEND_LAST_WITH_IMMEDIATE", Send, Last, IMM),
    op!("SEND_ONLY", Send, Only, NONE),
    op!("SEND_ONLY_WITH_IMMEDIATE", Send, Only, IMM),
    op!("RDMA_WRITE_FIRST", Write, First, RETH),
    op!("RDMA_WRITE_MIDDLE", Write, Middle, NONE),
    op!("RDMA_WRITE_LAST", Write, Last, NONE),
    op!("RDMA_WRITE_LAST_WITH_IMMEDIATE", Write, Last, IMM),
    op!("RDMA_WRITE_ONLY", Write, Only, RETH),
    op!("RDMA_WRITE_ONLY_WITH_IMMEDIATE", Write, Only, RETH_IMM),
    op!("RDMA_READ_REQUEST", ReadRequest, NotApplicable, RETH),
    op!("RDMA_READ_RESPONSE_FIRST", ReadResponse, First, AETH),
    op!("RDMA_READ_RESPONSE_MIDDLE", ReadResponse, Middle, NONE),
    op!("RDMA_READ_RESPONSE_LAST", ReadResponse, Last, AETH),
    op!("RDMA_READ_RESPONSE_ONLY", ReadResponse, Only, AETH),
    op!("ACKNOWLEDGE", Ack, NotApplicable, AETH),
    op!("ATOMIC_ACKNOWLEDGE", AtomicAck, NotApplicable, AETH_ATOMIC),
    op!("CMP_SWAP", Atomic, NotApplicable, ATOMIC),
    op!("FETCH_ADD", Atomic, NotApplicable, ATOMIC),
    None,
    op!("SEND_LAST_WITH_INVALIDATE", Send, Last, IETH),
    op!("SEND_ONLY_WITH_INVALIDATE", Send, Only, IETH),
];

/// Full names, so that `name()` returns a `&'static str` without allocating.
const RC_NAMES: [&str; 24] = [
    "RC_SEND_FIRST",
    "RC_SEND_MIDDLE",
    "RC_SEND_LAST",
    "RC_SEND_LAST_WITH_IMMEDIATE",
    "RC_SEND_ONLY",
    "RC_SEND_ONLY_WITH_IMMEDIATE",
    "RC_RDMA_WRITE_FIRST",
    "RC_RDMA_WRITE_MIDDLE",
    "RC_RDMA_WRITE_LAST",
    "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
    "RC_RDMA_WRITE_ONLY",
    "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
    "RC_RDMA_READ_REQUEST",
    "RC_RDMA_READ_RESPONSE_FIRST",
    "RC_RDMA_READ_RESPONSE_MIDDLE",
    "RC_RDMA_READ_RESPONSE_LAST",
    "RC_RDMA_READ_RESPONSE_ONLY",
    "RC_ACKNOWLEDGE",
    "RC_ATOMIC_ACKNOWLEDGE",
    "RC_CMP_SWAP",
    "RC_FETCH_ADD",
    "",
    "RC_SEND_LAST_WITH_INVALIDATE",
    "RC_SEND_ONLY_WITH_INVALIDATE",
];
const UC_NAMES: [&str; 12] = [
    "UC_SEND_FIRST",
    "UC_SEND_MIDDLE",
    "UC_SEND_LAST",
    "UC_SEND_LAST_WITH_IMMEDIATE",
    "UC_SEND_ONLY",
    "UC_SEND_ONLY_WITH_IMMEDIATE",
    "UC_RDMA_WRITE_FIRST",
    "UC_RDMA_WRITE_MIDDLE",
    "UC_RDMA_WRITE_LAST",
    "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
    "UC_RDMA_WRITE_ONLY",
    "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
];
const XRC_NAMES: [&str; 24] = [
    "XRC_SEND_FIRST",
    "XRC_SEND_MIDDLE",
    "XRC_SEND_LAST",
    "XRC_SEND_LAST_WITH_IMMEDIATE",
    "XRC_SEND_ONLY",
    "XRC_SEND_ONLY_WITH_IMMEDIATE",
    "XRC_RDMA_WRITE_FIRST",
    "XRC_RDMA_WRITE_MIDDLE",
    "XRC_RDMA_WRITE_LAST",
    "XRC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
    "XRC_RDMA_WRITE_ONLY",
    "XRC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
    "XRC_RDMA_READ_REQUEST",
    "XRC_RDMA_READ_RESPONSE_FIRST",
    "XRC_RDMA_READ_RESPONSE_MIDDLE",
    "XRC_RDMA_READ_RESPONSE_LAST",
    "XRC_RDMA_READ_RESPONSE_ONLY",
    "XRC_ACKNOWLEDGE",
    "XRC_ATOMIC_ACKNOWLEDGE",
    "XRC_CMP_SWAP",
    "XRC_FETCH_ADD",
    "",
    "XRC_SEND_LAST_WITH_INVALIDATE",
    "XRC_SEND_ONLY_WITH_INVALIDATE",
];

/// What an opcode byte means for its transport.
struct Decoded {
    known: bool,
    operation: Operation,
    position: Position,
    layout: ExtLayout,
}

const UNKNOWN: Decoded = Decoded {
    known: false,
    operation: Operation::Unknown,
    position: Position::NotApplicable,
    layout: NONE,
};

/// Every opcode byte's meaning.
static DECODED: [Decoded; 256] = {
    let mut table = [UNKNOWN; 256];
    let mut byte = 0;
    while byte < 256 {
        table[byte] = decode(byte as u8);
        byte += 1;
    }
    table
};

const fn decode(byte: u8) -> Decoded {
    if byte == Opcode::CNP.0 {
        return Decoded {
            known: true,
            operation: Operation::Cnp,
            position: Position::NotApplicable,
            layout: ExtLayout {
                cnp_reserved: true,
                ..NONE
            },
        };
    }
    let op = (byte & 0x1f) as usize;
    let transport = byte >> 5;
    let info = match transport {
        // RC and XRC.
        0 | 5 if op < OPERATIONS.len() => OPERATIONS[op],
        // UC: SEND and RDMA WRITE only.
        1 if op <= 0x0b => OPERATIONS[op],
        // UD: SEND Only (0x64) and SEND Only with Immediate (0x65).
        3 if op == 0x04 || op == 0x05 => OPERATIONS[op],
        _ => None,
    };
    let Some(info) = info else {
        return UNKNOWN;
    };
    let mut layout = info.layout;
    if transport == 3 {
        layout.deth = true;
    }
    // XRC requests carry the XRCETH (the responder's SRQ); responses and ACKs do not.
    if transport == 5 {
        layout.xrceth = !matches!(
            info.operation,
            Operation::ReadResponse | Operation::Ack | Operation::AtomicAck
        );
    }
    Decoded {
        known: true,
        operation: info.operation,
        position: info.position,
        layout,
    }
}

/// A BTH opcode byte. Every value is representable; unknown ones keep their raw value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Opcode(pub u8);

/// The label of an opcode in every report and listing: its name, or `UNKNOWN_0xNN` with the raw
/// value when the opcode is not defined for its transport.
impl std::fmt::Display for Opcode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_known() {
            f.write_str(self.name())
        } else {
            write!(f, "UNKNOWN_{:#04x}", self.0)
        }
    }
}

impl Opcode {
    pub const CNP: Opcode = Opcode(0x81);

    pub fn transport(self) -> Transport {
        match self.0 >> 5 {
            0 => Transport::Rc,
            1 => Transport::Uc,
            2 => Transport::Rd,
            3 => Transport::Ud,
            4 => Transport::Cnp,
            5 => Transport::Xrc,
            t => Transport::Unknown(t),
        }
    }

    /// What the opcode byte means, from the table built at compile time: the analysis asks
    /// several times per packet (a third of the decode's instructions before the table).
    fn decoded(self) -> &'static Decoded {
        &DECODED[usize::from(self.0)]
    }

    /// Whether this opcode is defined for its transport (CNP included).
    pub fn is_known(self) -> bool {
        self.decoded().known
    }

    /// The readable name, e.g. `RC_RDMA_WRITE_FIRST`, `UD_SEND_ONLY`, `CNP`; `UNKNOWN` for
    /// opcodes with no definition (the raw value is kept in `self.0`).
    pub fn name(self) -> &'static str {
        let op = (self.0 & 0x1f) as usize;
        if self == Opcode::CNP {
            return "CNP";
        }
        if !self.is_known() {
            return "UNKNOWN";
        }
        match self.transport() {
            Transport::Rc => RC_NAMES[op],
            Transport::Uc => UC_NAMES[op],
            Transport::Xrc => XRC_NAMES[op],
            Transport::Ud if op == 0x04 => "UD_SEND_ONLY",
            Transport::Ud => "UD_SEND_ONLY_WITH_IMMEDIATE",
            _ => "UNKNOWN",
        }
    }

    pub fn operation(self) -> Operation {
        self.decoded().operation
    }

    pub fn position(self) -> Position {
        self.decoded().position
    }

    /// The extension headers that follow the BTH for this opcode. Unknown opcodes have none
    /// (their bytes after the BTH are shown as payload).
    pub fn ext_layout(self) -> ExtLayout {
        self.decoded().layout
    }

    /// Requests consume PSNs on the requester's side; responses and ACKs echo them.
    pub fn is_request(self) -> bool {
        matches!(
            self.operation(),
            Operation::Send | Operation::Write | Operation::ReadRequest | Operation::Atomic
        )
    }

    /// Responses travel from responder to requester and carry request PSNs.
    pub fn is_response(self) -> bool {
        matches!(
            self.operation(),
            Operation::ReadResponse | Operation::Ack | Operation::AtomicAck
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cover_every_defined_opcode() {
        assert_eq!(Opcode(0x06).name(), "RC_RDMA_WRITE_FIRST");
        assert_eq!(Opcode(0x11).name(), "RC_ACKNOWLEDGE");
        assert_eq!(Opcode(0x17).name(), "RC_SEND_ONLY_WITH_INVALIDATE");
        assert_eq!(Opcode(0x2a).name(), "UC_RDMA_WRITE_ONLY");
        assert_eq!(Opcode(0x64).name(), "UD_SEND_ONLY");
        assert_eq!(Opcode(0x65).name(), "UD_SEND_ONLY_WITH_IMMEDIATE");
        assert_eq!(Opcode(0x81).name(), "CNP");
        assert_eq!(Opcode(0xa4).name(), "XRC_SEND_ONLY");
        let known_rc = (0u8..=0x17).filter(|&o| Opcode(o).is_known()).count();
        assert_eq!(known_rc, 23, "RC defines 0x00..0x17 except 0x15");
    }

    #[test]
    fn unknown_opcodes_are_kept() {
        for raw in [0x15u8, 0x18, 0x1f, 0x2c, 0x60, 0x66, 0x80, 0x82, 0xe0, 0xff] {
            let op = Opcode(raw);
            assert!(!op.is_known(), "{raw:#x}");
            assert_eq!(op.name(), "UNKNOWN");
            assert_eq!(op.0, raw);
            assert_eq!(op.ext_layout(), ExtLayout::default());
        }
    }

    #[test]
    fn extension_layouts_follow_the_table() {
        assert!(Opcode(0x06).ext_layout().reth);
        assert!(!Opcode(0x07).ext_layout().reth);
        let wo_imm = Opcode(0x0b).ext_layout();
        assert!(wo_imm.reth && wo_imm.immdt);
        assert!(Opcode(0x0c).ext_layout().reth);
        assert!(Opcode(0x0d).ext_layout().aeth);
        assert!(!Opcode(0x0e).ext_layout().aeth);
        assert!(Opcode(0x0f).ext_layout().aeth && Opcode(0x10).ext_layout().aeth);
        let aack = Opcode(0x12).ext_layout();
        assert!(aack.aeth && aack.atomic_ack_eth);
        assert!(Opcode(0x13).ext_layout().atomic_eth && Opcode(0x14).ext_layout().atomic_eth);
        assert!(Opcode(0x16).ext_layout().ieth);
        let ud_imm = Opcode(0x65).ext_layout();
        assert!(ud_imm.deth && ud_imm.immdt);
        assert!(Opcode(0x81).ext_layout().cnp_reserved);
        assert!(Opcode(0xa4).ext_layout().xrceth);
        assert!(!Opcode(0xb1).ext_layout().xrceth);
    }

    #[test]
    fn positions_and_operations() {
        assert_eq!(Opcode(0x00).position(), Position::First);
        assert_eq!(Opcode(0x0e).position(), Position::Middle);
        assert_eq!(Opcode(0x09).position(), Position::Last);
        assert_eq!(Opcode(0x64).position(), Position::Only);
        assert_eq!(Opcode(0x11).position(), Position::NotApplicable);
        assert_eq!(Opcode(0x0c).operation(), Operation::ReadRequest);
        assert!(Opcode(0x0c).is_request() && !Opcode(0x10).is_request());
        assert!(Opcode(0x10).is_response() && Opcode(0x11).is_response());
        assert_eq!(Opcode(0x81).operation(), Operation::Cnp);
    }

    #[test]
    fn labels_spell_unknown_opcodes_one_way() {
        assert_eq!(Opcode(0x04).to_string(), "RC_SEND_ONLY");
        assert_eq!(Opcode(0x81).to_string(), "CNP");
        assert_eq!(Opcode(0x1f).to_string(), "UNKNOWN_0x1f");
        assert_eq!(Opcode(0x66).to_string(), "UNKNOWN_0x66");
    }

    #[test]
    fn the_table_knows_exactly_the_defined_opcodes() {
        let known: Vec<u8> = (0..=255u8).filter(|&b| Opcode(b).is_known()).collect();
        // RC and XRC 0x00-0x17 but 0x15, UC 0x20-0x2b, UD 0x64-0x65, CNP.
        assert_eq!(known.len(), 23 + 23 + 12 + 2 + 1);
        for b in 0..=255u8 {
            let op = Opcode(b);
            assert_eq!(op.is_known(), op.name() != "UNKNOWN", "{b:#x}");
            assert_eq!(
                op.is_known(),
                op.operation() != Operation::Unknown,
                "{b:#x}"
            );
            if op.transport() == Transport::Ud && op.is_known() {
                assert!(op.ext_layout().deth, "{b:#x}");
            }
        }
    }

    #[test]
    fn reliable_transports() {
        assert!(Transport::Rc.is_reliable() && Transport::Xrc.is_reliable());
        assert!(!Transport::Uc.is_reliable() && !Transport::Ud.is_reliable());
    }
}
