//! Live capture through libpcap: the same pipeline as files, a status view once a second, the
//! kernel's drop counters, and errors that say what to do.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pcap::{Capture, Device, Precision};
use roce_parsers::capture::Record;

use crate::analysis::Totals;
use crate::cli::{Config, LiveConfig};
use crate::error::Error;
use crate::model::LiveStats;
use crate::pipeline::{Pipeline, SourceInfo};
use crate::verify::CaptureContext;
use crate::EXIT_OK;

/// RoCEv2, RoCEv1 and MAC Control (PFC, PAUSE), untagged, tagged (802.1Q or 802.1ad) or
/// double-tagged. Each `vlan` shifts the offsets for the rest of the expression, hence the
/// nesting. libpcap's `vlan` also matches tags the NIC stripped into packet metadata.
pub const DEFAULT_FILTER: &str = "(udp dst port 4791 or ether proto 0x8915 or ether proto 0x8808) or (vlan and ((udp dst port 4791 or ether proto 0x8915 or ether proto 0x8808) or (vlan and (udp dst port 4791 or ether proto 0x8915))))";
/// Seconds without any RoCE before saying why that may be.
const NO_ROCE_HINT_AFTER: Duration = Duration::from_secs(5);
const STATUS_EVERY: Duration = Duration::from_secs(1);
/// Pause when the capture buffer is empty (the kernel keeps buffering meanwhile).
const IDLE_SLEEP: Duration = Duration::from_millis(1);

/// `-D`: the interfaces libpcap can open, numbered like `tcpdump -D`.
pub fn list_devices() -> Result<u8, Error> {
    let devices =
        Device::list().map_err(|e| Error::Live(format!("cannot list interfaces: {e}")))?;
    let mut out = std::io::stdout().lock();
    for (i, d) in devices.iter().enumerate() {
        let mut flags = Vec::new();
        if d.flags.is_loopback() {
            flags.push("Loopback");
        }
        flags.push(if d.flags.is_up() { "Up" } else { "Down" });
        if d.flags.is_running() {
            flags.push("Running");
        }
        let desc = d
            .desc
            .as_deref()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default();
        let vlan = vlan_parent(&d.name)
            .map(|p| format!(" VLAN sub-interface of {p}"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{}.{}{desc} [{}]{vlan}",
            i + 1,
            d.name,
            flags.join(", ")
        );
    }
    Ok(EXIT_OK)
}

/// The parent of a Linux VLAN sub-interface (from /proc/net/vlan/config), if `iface` is one.
pub fn vlan_parent(iface: &str) -> Option<String> {
    parse_vlan_config(
        &std::fs::read_to_string("/proc/net/vlan/config").ok()?,
        iface,
    )
}

/// Finds `iface` in the text of /proc/net/vlan/config ("eth0.100 | 100 | eth0" lines).
fn parse_vlan_config(config: &str, iface: &str) -> Option<String> {
    config.lines().find_map(|line| {
        let parts: Vec<&str> = line.split('|').map(str::trim).collect();
        (parts.len() == 3 && parts[0] == iface).then(|| parts[2].to_string())
    })
}

fn open_error(iface: &str, e: pcap::Error) -> Error {
    let msg = e.to_string();
    let lower = msg.to_ascii_lowercase();
    if lower.contains("permission") || lower.contains("not permitted") {
        Error::Live(format!(
            "{iface}: permission denied: live capture needs root, or the CAP_NET_RAW and CAP_NET_ADMIN capabilities (sudo setcap cap_net_raw,cap_net_admin=eip $(command -v roce-sniff))"
        ))
    } else if lower.contains("no such device") || lower.contains("doesn't exist") {
        Error::Live(format!(
            "{iface}: no such interface (`roce-sniff -D` lists them)"
        ))
    } else {
        Error::Live(format!("{iface}: cannot capture: {msg}"))
    }
}

struct Status {
    bar: Option<ProgressBar>,
    last: Instant,
    last_packets: u64,
    last_bytes: u64,
    last_totals: Totals,
}

impl Status {
    fn new() -> Self {
        // A live view when a person is watching; plain lines on stderr otherwise.
        let bar = (std::io::stdout().is_terminal() && std::io::stderr().is_terminal()).then(|| {
            let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
                    .expect("static template"),
            );
            b
        });
        Status {
            bar,
            last: Instant::now(),
            last_packets: 0,
            last_bytes: 0,
            last_totals: Totals::default(),
        }
    }

    fn due(&self) -> bool {
        self.last.elapsed() >= STATUS_EVERY
    }

    fn tick(&mut self, p: &Pipeline<'_>, stats: Option<pcap::Stat>) {
        let now = Instant::now();
        let dt = now.duration_since(self.last);
        let c = p.analyzer().counts();
        let t = p.analyzer().totals;
        let secs = dt.as_secs_f64().max(1e-3);
        let pps = (c.packets - self.last_packets) as f64 / secs;
        let gbps = (c.bytes - self.last_bytes) as f64 * 8.0 / secs / 1e9;
        let mut pfc = String::new();
        for prio in 0..8 {
            let n = t.pfc_xoff[prio] - self.last_totals.pfc_xoff[prio];
            if n > 0 {
                pfc.push_str(&format!(" p{prio}:{n}"));
            }
        }
        if pfc.is_empty() {
            pfc.push_str(" -");
        }
        let drops = stats.map_or("?".into(), |s| {
            format!("{}", u64::from(s.dropped) + u64::from(s.if_dropped))
        });
        let msg = format!(
            "{:.0} pkt/s {:.3} Gb/s | RoCE {} in {} flows | new: gaps {} retx {} CE {} CNP {} | PFC XOFF{} | capture drops {}",
            pps,
            gbps,
            c.roce,
            p.analyzer().flow_count(),
            t.psn_gaps - self.last_totals.psn_gaps,
            t.retransmitted - self.last_totals.retransmitted,
            t.ce - self.last_totals.ce,
            t.cnps - self.last_totals.cnps,
            pfc,
            drops
        );
        match &self.bar {
            Some(b) => b.set_message(msg),
            None => eprintln!("roce-sniff: {msg}"),
        }
        self.last = now;
        self.last_packets = c.packets;
        self.last_bytes = c.bytes;
        self.last_totals = t;
    }

    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// Captures on `live.interface` until -c, --duration or Ctrl-C, then renders the report.
pub fn run(config: &Config, live: &LiveConfig, out: &mut dyn Write) -> Result<u8, Error> {
    let iface = live.interface.as_str();
    let devices =
        Device::list().map_err(|e| Error::Live(format!("cannot list interfaces: {e}")))?;
    let Some(device) = devices.into_iter().find(|d| d.name == iface) else {
        return Err(Error::Live(format!(
            "{iface}: no such interface (`roce-sniff -D` lists them)"
        )));
    };
    if !device.flags.is_up() && iface != "any" {
        return Err(Error::Live(format!(
            "{iface}: the interface is down (ip link set {iface} up)"
        )));
    }
    let mut context = CaptureContext::default();
    if let Some(parent) = vlan_parent(iface) {
        eprintln!(
            "roce-sniff: warning: {iface} is a VLAN sub-interface: the kernel strips the VLAN tag, so PCP cannot be seen; capture on {parent} to see it"
        );
        context.vlan_subinterface = Some(iface.to_string());
    }
    let inactive = Capture::from_device(device)
        .map_err(|e| open_error(iface, e))?
        .promisc(true)
        .immediate_mode(true)
        .buffer_size(64 << 20)
        .snaplen(65535)
        .timeout(100)
        .precision(Precision::Nano);
    // Non-blocking: libpcap's read timeout is not honoured on every Linux setup (it can block
    // forever on an idle interface), and -c, --duration and Ctrl-C must end the capture.
    let mut cap = inactive
        .open()
        .map_err(|e| open_error(iface, e))?
        .setnonblock()
        .map_err(|e| open_error(iface, e))?;
    let filter = live
        .filter
        .clone()
        .unwrap_or_else(|| DEFAULT_FILTER.to_string());
    cap.filter(&filter, true)
        .map_err(|e| Error::Live(format!("bad capture filter `{filter}`: {e}")))?;
    let linktype = cap.get_datalink().0 as u32;
    let mut savefile = match &live.write {
        Some(path) => Some(
            cap.savefile(path)
                .map_err(|e| Error::Live(format!("{}: cannot write: {e}", path.display())))?,
        ),
        None => None,
    };

    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        // Only one handler per process; a second registration (tests) keeps the first.
        let _ = ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst));
    }
    eprintln!(
        "roce-sniff: listening on {iface}, link type {} ({}), filter: {filter}",
        linktype,
        roce_parsers::link::linktype_name(linktype)
    );

    let mut pipeline = Pipeline::new(config, iface);
    let mut status = Status::new();
    let started = Instant::now();
    let mut hinted = false;
    let mut failure: Option<String> = None;
    while !stop.load(Ordering::SeqCst) {
        if live.count.is_some_and(|n| pipeline.frame_no >= n) {
            break;
        }
        if live.duration.is_some_and(|d| started.elapsed() >= d) {
            break;
        }
        match cap.next_packet() {
            Ok(packet) => {
                if let Some(sf) = savefile.as_mut() {
                    sf.write(&packet);
                }
                let h = packet.header;
                // With nanosecond precision libpcap puts nanoseconds in tv_usec.
                let ts_ns = (h.ts.tv_sec as u64) * 1_000_000_000 + h.ts.tv_usec as u64;
                let rec = Record {
                    ts_ns,
                    caplen: h.caplen,
                    len: h.len,
                    linktype,
                    interface: 0,
                    data: packet.data,
                };
                pipeline.record(&rec, out).map_err(|source| Error::Output {
                    path: "<output>".into(),
                    source,
                })?;
            }
            Err(pcap::Error::TimeoutExpired) => std::thread::sleep(IDLE_SLEEP),
            Err(e) => {
                failure = Some(format!("{iface}: capture stopped: {e}"));
                break;
            }
        }
        if !config.packets && status.due() {
            let stats = cap.stats().ok();
            status.tick(&pipeline, stats);
        }
        if !hinted
            && started.elapsed() >= NO_ROCE_HINT_AFTER
            && pipeline.analyzer().counts().roce == 0
        {
            hinted = true;
            status.finish();
            eprintln!(
                "roce-sniff: no RoCE seen on {iface} yet: RDMA NICs bypass the kernel, so their traffic is not visible here; capture on a switch mirror port, with ibdump, or with a libpcap built with RDMA sniffing on the RDMA device (e.g. mlx5_0). Soft-RoCE (rxe) traffic is visible on the netdev."
            );
        }
    }
    let stats = cap.stats().ok();
    if !config.packets {
        status.tick(&pipeline, stats);
    }
    status.finish();
    if let Some(sf) = savefile.as_mut() {
        let _ = sf.flush();
    }
    drop(savefile);
    let mut warnings = Vec::new();
    if let Some(f) = &failure {
        eprintln!("roce-sniff: warning: {f}");
        warnings.push(f.clone());
    }
    let live_stats = stats.map(|s| LiveStats {
        interface: iface.to_string(),
        filter: filter.clone(),
        received: u64::from(s.received),
        dropped: u64::from(s.dropped),
        if_dropped: u64::from(s.if_dropped),
    });
    if let Some(s) = &live_stats {
        if s.dropped + s.if_dropped > 0 {
            let msg = format!(
                "the capture dropped {} frames ({} for lack of buffer, {} at the interface): PSN gaps may be capture drops, not network loss",
                s.dropped + s.if_dropped,
                s.dropped,
                s.if_dropped
            );
            eprintln!("roce-sniff: warning: {msg}");
            warnings.push(msg);
        }
    }
    pipeline.finish(
        SourceInfo {
            name: format!("live capture on {iface}"),
            format: Some("live"),
            snaplen: 65535,
            warnings,
            context,
            live: live_stats,
        },
        out,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vlan_subinterfaces_are_found_with_their_parent() {
        let config = "VLAN Dev name    | VLAN ID\nName-Type: VLAN_NAME_TYPE_RAW_PLUS_VID_NO_PAD\neth0.100       | 100  | eth0\nbond0.7        | 7  | bond0\n";
        assert_eq!(parse_vlan_config(config, "eth0.100"), Some("eth0".into()));
        assert_eq!(parse_vlan_config(config, "bond0.7"), Some("bond0".into()));
        assert_eq!(parse_vlan_config(config, "eth0"), None);
    }
}
