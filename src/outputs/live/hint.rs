//! Why a live capture may see no RoCE: said once, after a while without any.

use std::time::{Duration, Instant};

/// Time without any RoCE in a live capture before saying why that may be.
pub const NO_ROCE_HINT_AFTER: Duration = Duration::from_secs(5);

/// Says once, after a while without RoCE, why a live capture may see none.
pub struct NoRoceHint {
    started: Instant,
    given: bool,
}

impl Default for NoRoceHint {
    fn default() -> Self {
        NoRoceHint {
            started: Instant::now(),
            given: false,
        }
    }
}

impl NoRoceHint {
    /// The hint, once, when no RoCE came in the first seconds on `iface` (`roce`: RoCE
    /// frames so far).
    pub fn check(&mut self, iface: &str, roce: u64) -> Option<String> {
        if self.given || roce > 0 || self.started.elapsed() < NO_ROCE_HINT_AFTER {
            return None;
        }
        self.given = true;
        Some(format!(
            "no RoCE seen on {iface} yet: the RDMA traffic may not have started; a hardware RDMA NIC bypasses the kernel, so its traffic is not visible here: capture on a switch mirror port, with ibdump, or with a libpcap built with RDMA sniffing on the RDMA device (e.g. mlx5_0). Soft-RoCE (rxe) traffic is visible on the netdev it is bound to."
        ))
    }
}
