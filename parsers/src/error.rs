//! Where and why decoding stopped. Errors are data: they are counted per layer and shown per frame.

use core::fmt;

/// The protocol layer a decode error happened in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Layer {
    Link,
    Vlan,
    Ip,
    Udp,
    Grh,
    Bth,
    ExtHeader,
    MacControl,
    /// A mirror or tunnel header (GRE, ERSPAN, VXLAN, Geneve, MPLS).
    Encap,
}

impl Layer {
    pub const ALL: [Layer; 9] = [
        Layer::Link,
        Layer::Vlan,
        Layer::Ip,
        Layer::Udp,
        Layer::Grh,
        Layer::Bth,
        Layer::ExtHeader,
        Layer::MacControl,
        Layer::Encap,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Layer::Link => "link",
            Layer::Vlan => "vlan",
            Layer::Ip => "ip",
            Layer::Udp => "udp",
            Layer::Grh => "grh",
            Layer::Bth => "bth",
            Layer::ExtHeader => "ext_header",
            Layer::MacControl => "mac_control",
            Layer::Encap => "encap",
        }
    }
}

/// Why a frame could not be decoded completely.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// The header needs `need` bytes but only `have` were there. When the frame was cut by a
    /// snap length this is expected and the frame is counted as truncated, not malformed.
    Truncated {
        layer: Layer,
        need: usize,
        have: usize,
    },
    /// A header field holds a value that cannot be right (a length shorter than the header...).
    Invalid { layer: Layer, what: &'static str },
    /// The capture's link type is not one this decoder understands.
    UnsupportedLinkType(u32),
}

impl DecodeError {
    pub fn layer(&self) -> Layer {
        match *self {
            DecodeError::Truncated { layer, .. } | DecodeError::Invalid { layer, .. } => layer,
            DecodeError::UnsupportedLinkType(_) => Layer::Link,
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DecodeError::Truncated { layer, need, have } => write!(
                f,
                "{} header cut short: needs {need} bytes, {have} present",
                layer.name()
            ),
            DecodeError::Invalid { layer, what } => write!(f, "invalid {}: {what}", layer.name()),
            DecodeError::UnsupportedLinkType(lt) => write!(f, "unsupported link type {lt}"),
        }
    }
}
