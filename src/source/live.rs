//! Live capture through libpcap: each frame is decoded where the kernel put it (its ring), on
//! a thread of its own, and the decoded chunks are handed to a callback with the kernel's drop
//! counters; errors say what to do.

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use pcap::{Active, Capture, Device, Precision, Savefile};
use roce_parsers::capture::Record;

use super::pace::{Backlog, Pacer, Wait};
use super::{SourceEnd, SourceProblem, SourceStatus};
use crate::common::error::Error;
use crate::common::exit;
use crate::model::{LiveStats, WarningKind};
use crate::pipeline::diagnostics::Diagnostics;

/// The ICMP errors that can quote a RoCEv2 packet (`roce_parsers::icmp`): destination
/// unreachable and time exceeded, and ICMPv6's packet too big.
const ICMP_ERRORS: &str = "icmp[icmptype] == icmp-unreach or icmp[icmptype] == icmp-timxceed or icmp6[icmp6type] == icmp6-destinationunreach or icmp6[icmp6type] == icmp6-packettoobig or icmp6[icmp6type] == icmp6-timeexceeded";
/// The kernel's capture buffer without -B.
const DEFAULT_BUFFER_BYTES: i32 = 64 << 20;
/// The kernel's counters are read at most this often: libpcap opens and reads two sysfs files
/// for each reading (the interface's drops), 4% of a live analysis's CPU when read per chunk.
const STATS_EVERY: Duration = Duration::from_millis(250);
/// A chunk is handed on at least this often, even when small or empty, so that the status
/// view and -c/--duration stay responsive at low rates.
const CHUNK_AGE: Duration = Duration::from_millis(50);
/// Frames decoded into one chunk handed to another thread (about 1 MB of summaries).
const CHUNK_FRAMES: usize = 4096;
/// Frames decoded into one chunk analysed by the thread that decoded them: few enough that
/// the summaries are still in the core's cache when analysed (128 KB).
const INLINE_CHUNK_FRAMES: usize = 512;
/// Chunks waiting between the capture thread and the analysis. Few: when the analysis lags,
/// frames wait in the kernel's ring (allocated once) rather than in chunks allocated for the
/// burst (8 batches of copied frames put a monitor with every output at 143-148 MiB, over its
/// 150 MB).
const QUEUED_CHUNKS: usize = 4;
/// Most frames taken from the ring in one call, between looks at the clock (the chunk's
/// age, --duration) and at Ctrl-C.
const FRAMES_PER_CALL: usize = 64;

/// Decodes frames on the capture thread, while they are still in the kernel's ring: copying
/// each frame out for another thread cost 13% of a live analysis's CPU (`memmove`).
pub trait FrameDecode: Send {
    /// What frames decode into.
    type Chunk: Send;
    /// An empty chunk with room for `frames`.
    fn chunk(&self, frames: usize) -> Self::Chunk;
    /// Empties a consumed chunk, its room kept: chunks are reused (fresh ones cost as much
    /// in page faults as the copies they replaced).
    fn clear(chunk: &mut Self::Chunk);
    /// Decodes `record` onto `chunk`.
    fn decode(&mut self, record: &Record<'_>, chunk: &mut Self::Chunk);
}

/// A chunk of decoded frames, the frames in it, and the source's counters when it was handed on.
type Handed<C> = (C, usize, SourceStatus);

/// What to capture: from the flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveConfig {
    pub interface: String,
    /// A user filter replacing the default one.
    pub filter: Option<String>,
    /// `--vxlan-port`: the default filter takes VXLAN on it too.
    pub vxlan_port: Option<u16>,
    pub count: Option<u64>,
    pub duration: Option<Duration>,
    pub write: Option<PathBuf>,
    /// -B: the kernel's capture buffer in KiB.
    pub buffer_kib: Option<u32>,
    /// --no-tui: status lines even on a terminal.
    pub no_tui: bool,
    /// --capture-thread: capture and decode on a thread of their own from the start.
    pub capture_thread: bool,
}

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
    Ok(exit::OK)
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

/// An open capture on an interface.
pub struct LiveSource {
    pub interface: String,
    pub filter: String,
    pub linktype: u32,
    /// Set when the interface is a VLAN sub-interface, whose tags the kernel strips.
    pub vlan_subinterface: Option<String>,
    cap: Capture<Active>,
    savefile: Option<Savefile>,
    count: Option<u64>,
    duration: Option<Duration>,
    /// The ring's size, for pacing.
    ring_bytes: u64,
    /// The kernel's counters as last read, and when.
    kernel: Option<(super::KernelCounters, Instant)>,
    /// When the capture started (for --duration), and the frames captured so far.
    started: Instant,
    captured: u64,
    /// --capture-thread: the capture and the decoding run on a thread of their own from the
    /// start (else once the one thread falls behind).
    capture_thread: bool,
    /// The first frame captured on that thread, if one ran.
    capture_thread_from_frame: Option<u64>,
}

/// Why the capture loop returned.
enum LoopEnd {
    /// The capture ended (-c, --duration, Ctrl-C, a consumer that failed), or failed: why.
    Stopped(Option<String>),
    /// The thread that also consumes fell behind: the capture goes on on a thread of its own.
    Behind,
}

/// A captured packet as frame `frame` of this capture (frames are numbered from 1, as in the
/// -w file).
fn record_of<'p>(packet: &'p pcap::Packet<'_>, linktype: u32, frame: u64) -> Record<'p> {
    let h = packet.header;
    // With nanosecond precision libpcap puts nanoseconds in tv_usec.
    Record {
        ts_ns: (h.ts.tv_sec as u64) * 1_000_000_000 + h.ts.tv_usec as u64,
        caplen: h.caplen,
        len: h.len,
        linktype,
        interface: 0,
        input: 0,
        point: 0,
        frame,
        input_frame: frame,
        file: 0,
        data: packet.data,
    }
}

impl LiveSource {
    /// Opened with nanosecond precision: times are shown to the nanosecond.
    pub const NANOSECOND_TIMES: bool = true;

    /// Opens `live.interface` with the filter; warnings about the capture point go to `diag`.
    pub fn open(live: &LiveConfig, diag: &mut Diagnostics) -> Result<LiveSource, Error> {
        let iface = live.interface.as_str();
        let device = find_device(iface)?;
        let vlan_subinterface = vlan_parent(iface).map(|parent| {
            diag.warn(
                WarningKind::Notice,
                format!("a VLAN sub-interface: the kernel strips the VLAN tag, so PCP cannot be seen; capture on {parent} to see it"),
            );
            iface.to_string()
        });
        let buffer = live
            .buffer_kib
            .map_or(DEFAULT_BUFFER_BYTES, |k| k as i32 * 1024);
        let mut cap = open_capture(iface, device, buffer)?;
        let linktype = cap.get_datalink().0 as u32;
        let filter = live
            .filter
            .clone()
            .unwrap_or_else(|| default_filter(linktype, live.vxlan_port));
        cap.filter(&filter, true)
            .map_err(|e| Error::Live(format!("bad capture filter `{filter}`: {e}")))?;
        let savefile = match &live.write {
            Some(path) => Some(
                cap.savefile(path)
                    .map_err(|e| Error::Live(format!("{}: cannot write: {e}", path.display())))?,
            ),
            None => None,
        };
        Ok(LiveSource {
            interface: live.interface.clone(),
            linktype,
            filter,
            vlan_subinterface,
            cap,
            savefile,
            count: live.count,
            duration: live.duration,
            ring_bytes: buffer as u64,
            kernel: None,
            started: Instant::now(),
            captured: 0,
            capture_thread: live.capture_thread,
            capture_thread_from_frame: None,
        })
    }

    /// The source's counters; the kernel's are read again when `fresh` or `STATS_EVERY` old.
    fn status(&mut self, now: Instant, fresh: bool) -> SourceStatus {
        let stale = self
            .kernel
            .is_none_or(|(_, read)| fresh || now.duration_since(read) >= STATS_EVERY);
        if stale {
            if let Ok(s) = self.cap.stats() {
                let counters = super::KernelCounters {
                    received: u64::from(s.received),
                    dropped: u64::from(s.dropped),
                    if_dropped: u64::from(s.if_dropped),
                };
                self.kernel = Some((counters, now));
            }
        }
        let kernel = self.kernel.map(|(k, _)| k);
        SourceStatus {
            nanosecond_times: Self::NANOSECOND_TIMES,
            capture_drops: kernel.map(|k| k.dropped + k.if_dropped),
            kernel,
            handed_ns: Some(crate::common::clock::now_ns()),
        }
    }

    /// Blocks until the kernel hands a block of frames over, `timeout` at most.
    #[allow(unsafe_code)]
    fn poll_ring(&self, timeout: Duration) {
        use std::os::fd::AsRawFd;
        let mut fd = libc::pollfd {
            fd: self.cap.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let millis = timeout.as_millis().clamp(1, 1000) as libc::c_int;
        // SAFETY: one valid pollfd, for the call's duration. An error (EINTR at Ctrl-C) only
        // ends the wait early; the next dispatch reports a broken capture.
        unsafe { libc::poll(&mut fd, 1, millis) };
    }

    /// Captures until -c, --duration or `stop` (Ctrl-C), calling `consume` with chunks of
    /// frames `decoder` decoded, in capture order, with how many frames each holds, at least
    /// every `CHUNK_AGE`. When `consume` fails (an output that cannot be written), the capture
    /// stops: the end, with the consumer's error (which the caller tells).
    ///
    /// One thread captures, decodes and consumes while it keeps up (the kernel's ring is the
    /// buffer), as it costs least. Once it falls behind (see `Backlog`), or from the start with
    /// `capture_thread`, the capture and the decoding go on on a thread of their own, so that a
    /// busy analysis does not keep the ring from being emptied; at most `QUEUED_CHUNKS` chunks
    /// wait between the two.
    pub fn for_each_chunk<D: FrameDecode>(
        mut self,
        stop: &AtomicBool,
        mut decoder: D,
        mut consume: impl FnMut(&mut D::Chunk, usize, &SourceStatus) -> io::Result<()>,
    ) -> (SourceEnd, io::Result<()>) {
        let mut consumed = Ok(());
        let consumer_failed = AtomicBool::new(false);
        if !self.capture_thread {
            let backlog = Backlog::new(Instant::now());
            let end = self.capture_loop(
                stop,
                &consumer_failed,
                &mut decoder,
                INLINE_CHUNK_FRAMES,
                Some(backlog),
                |mut handed| {
                    let (chunk, frames, status) = &mut handed;
                    consumed = consume(chunk, *frames, status);
                    if consumed.is_err() {
                        consumer_failed.store(true, Ordering::SeqCst);
                        return None;
                    }
                    Some(handed.0)
                },
            );
            if let LoopEnd::Stopped(failure) = end {
                return (self.end(failure), consumed);
            }
        }
        self.capture_thread_from_frame = Some(self.captured + 1);
        let (tx, rx) = mpsc::sync_channel::<Handed<D::Chunk>>(QUEUED_CHUNKS);
        // Chunks go back to be filled again.
        let (recycle_tx, recycle_rx) = mpsc::channel::<D::Chunk>();
        let (source, failure, consumed) = std::thread::scope(|scope| {
            let failed = &consumer_failed;
            let capture = scope.spawn(move || {
                let mut source = self;
                let hand = |handed| {
                    tx.send(handed).ok()?;
                    recycle_rx.try_recv().ok()
                };
                let end = source.capture_loop(stop, failed, &mut decoder, CHUNK_FRAMES, None, hand);
                drop(tx);
                // Without a backlog to watch, the loop only stops.
                let failure = match end {
                    LoopEnd::Stopped(failure) => failure,
                    LoopEnd::Behind => None,
                };
                (source, failure)
            });
            for (mut chunk, frames, status) in rx.iter() {
                if consumed.is_ok() {
                    consumed = consume(&mut chunk, frames, &status);
                    if consumed.is_err() {
                        consumer_failed.store(true, Ordering::SeqCst);
                    }
                }
                let _ = recycle_tx.send(chunk);
            }
            let (source, failure) = capture.join().expect("the capture thread panicked");
            (source, failure, consumed)
        });
        (source.end(failure), consumed)
    }

    /// Captures and decodes frames into chunks handed on with `hand`, which gives back an
    /// emptied chunk to fill when it has one. Frames are taken with `pcap_dispatch`, which
    /// hands each one where it lies in the ring: `pcap_next_ex` copies every frame first
    /// (libpcap's one-shot buffer), 6-14% of a live analysis's CPU. With a `backlog`, it
    /// returns `Behind` (its frames all handed on) once it falls behind.
    fn capture_loop<D: FrameDecode>(
        &mut self,
        stop: &AtomicBool,
        consumer_failed: &AtomicBool,
        decoder: &mut D,
        chunk_frames: usize,
        mut backlog: Option<Backlog>,
        mut hand: impl FnMut(Handed<D::Chunk>) -> Option<D::Chunk>,
    ) -> LoopEnd {
        let resumed = Instant::now();
        let mut chunk = decoder.chunk(chunk_frames);
        let mut in_chunk = 0;
        let mut last_handed = resumed;
        let mut pacer = Pacer::new(self.ring_bytes, resumed);
        loop {
            let now = Instant::now();
            let left = self
                .count
                .map_or(u64::MAX, |n| n.saturating_sub(self.captured));
            let done = left == 0
                || self.duration.is_some_and(|d| now - self.started >= d)
                || stop.load(Ordering::Relaxed)
                || consumer_failed.load(Ordering::Relaxed);
            if done || in_chunk >= chunk_frames || now - last_handed >= CHUNK_AGE {
                let status = self.status(now, done);
                let drops = status.capture_drops;
                let full = std::mem::replace(&mut chunk, decoder.chunk(0));
                match hand((full, in_chunk, status)) {
                    Some(mut back) => {
                        D::clear(&mut back);
                        chunk = back;
                    }
                    None if consumer_failed.load(Ordering::Relaxed) => {
                        return LoopEnd::Stopped(None)
                    }
                    None => chunk = decoder.chunk(chunk_frames),
                }
                in_chunk = 0;
                last_handed = now;
                if done {
                    return LoopEnd::Stopped(None);
                }
                if backlog
                    .as_mut()
                    .is_some_and(|b| b.behind(Instant::now(), drops))
                {
                    return LoopEnd::Behind;
                }
            }
            let want = (chunk_frames - in_chunk).min(FRAMES_PER_CALL);
            let want = want.min(usize::try_from(left).unwrap_or(usize::MAX));
            let LiveSource {
                cap,
                savefile,
                linktype,
                captured,
                ..
            } = self;
            let taken = cap.dispatch(Some(want), |packet| {
                if let Some(sf) = savefile.as_mut() {
                    sf.write(&packet);
                }
                *captured += 1;
                pacer.taken(u64::from(packet.header.caplen));
                decoder.decode(&record_of(&packet, *linktype, *captured), &mut chunk);
                in_chunk += 1;
            });
            match taken {
                // Fewer than asked for: the ring is empty.
                Ok(n) if n < want => {
                    let now = Instant::now();
                    if let Some(b) = backlog.as_mut() {
                        b.emptied(now);
                    }
                    match pacer.wait(now) {
                        Wait::Sleep(pause) => std::thread::sleep(pause),
                        Wait::Poll => {
                            self.poll_ring(CHUNK_AGE.saturating_sub(last_handed.elapsed()))
                        }
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    let _ = hand((chunk, in_chunk, self.status(Instant::now(), true)));
                    return LoopEnd::Stopped(Some(format!("capture stopped: {e}")));
                }
            }
        }
    }

    fn end(mut self, failure: Option<String>) -> SourceEnd {
        if let Some(sf) = self.savefile.as_mut() {
            let _ = sf.flush();
        }
        let live = self.cap.stats().ok().map(|s| LiveStats {
            interface: self.interface.clone(),
            filter: self.filter.clone(),
            received: u64::from(s.received),
            dropped: u64::from(s.dropped),
            if_dropped: u64::from(s.if_dropped),
            capture_thread_from_frame: self.capture_thread_from_frame,
            // The outputs' count is the sink's: set where the report is made.
            records_dropped: Default::default(),
        });
        let mut problems = Vec::new();
        if let Some(message) = failure {
            problems.push(SourceProblem {
                kind: WarningKind::CaptureStopped,
                message,
                hint: "everything captured before it is analysed".into(),
            });
        }
        if let Some(s) = live.as_ref().filter(|s| s.dropped + s.if_dropped > 0) {
            problems.push(SourceProblem {
                kind: WarningKind::CaptureDrops,
                message: format!(
                    "the capture dropped {} frames ({} for lack of buffer, {} at the interface): PSN gaps may be capture drops, not network loss",
                    s.dropped + s.if_dropped,
                    s.dropped,
                    s.if_dropped
                ),
                hint: "a larger capture buffer or a capture filter helps".into(),
            });
        }
        SourceEnd {
            format: Some("live"),
            snaplen: 65535,
            problems,
            live,
            origins: None,
            selection: None,
            damaged: Default::default(),
        }
    }
}

/// What the offline decoder reads, so that a mirror port captured live gives the report of
/// its capture read with -r: RoCEv2, RoCEv1, MAC Control (PFC, PAUSE), the mirror sessions and
/// tunnels it opens over IPv4 or IPv6 (GRE with ERSPAN I/II/III, bridged Ethernet or IP;
/// VXLAN on 4789 and `vxlan_port`; Geneve; IP-in-IP; MPLS) and ICMP errors.
fn decoded_protocols(vxlan_port: Option<u16>) -> String {
    use roce_parsers::encap::{self, GENEVE_PORT, VXLAN_PORT};
    let mut ports = vec![roce_parsers::ROCEV2_UDP_PORT, VXLAN_PORT, GENEVE_PORT];
    ports.extend(vxlan_port.filter(|p| !ports.contains(p)));
    let mut parts: Vec<String> = ports.iter().map(|p| format!("udp dst port {p}")).collect();
    for ethertype in [
        roce_parsers::ETHERTYPE_ROCEV1,
        roce_parsers::ETHERTYPE_MAC_CONTROL,
        encap::ETHERTYPE_MPLS,
        encap::ETHERTYPE_MPLS_MULTICAST,
    ] {
        parts.push(format!("ether proto {ethertype:#06x}"));
    }
    for proto in [
        encap::IP_PROTO_GRE,
        encap::IP_PROTO_IPIP,
        encap::IP_PROTO_IPV6,
    ] {
        parts.push(format!("ip proto {proto} or ip6 proto {proto}"));
    }
    parts.push(ICMP_ERRORS.into());
    parts.join(" or ")
}

/// The filter without one on the command line: what the decoder reads, untagged or under up
/// to as many VLAN tags (802.1Q, 802.1ad) as it reads. Each `vlan` shifts the offsets for the
/// rest of the expression, hence the nesting; libpcap's `vlan` also matches tags the NIC
/// stripped into packet metadata. Linux cooked links (`-i any`) have no `vlan` in libpcap (the
/// kernel strips the tags there anyway).
fn default_filter(linktype: u32, vxlan_port: Option<u16>) -> String {
    let protocols = decoded_protocols(vxlan_port);
    if roce_parsers::link::is_cooked(linktype) {
        return protocols;
    }
    let mut filter = format!("({protocols})");
    for _ in 0..roce_parsers::frame::MAX_VLAN_TAGS {
        filter = format!("({protocols}) or (vlan and ({filter}))");
    }
    filter
}

fn find_device(iface: &str) -> Result<Device, Error> {
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
    Ok(device)
}

fn open_capture(iface: &str, device: Device, buffer_bytes: i32) -> Result<Capture<Active>, Error> {
    let inactive = Capture::from_device(device)
        .map_err(|e| open_error(iface, e))?
        .promisc(true)
        .immediate_mode(false)
        .buffer_size(buffer_bytes)
        .snaplen(65535)
        .timeout(100)
        .precision(Precision::Nano);
    // Non-blocking: libpcap's read timeout is not honoured on every Linux setup (it can block
    // forever on an idle interface), and -c, --duration and Ctrl-C must end the capture.
    inactive
        .open()
        .map_err(|e| open_error(iface, e))?
        .setnonblock()
        .map_err(|e| open_error(iface, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    use roce_parsers::link::{
        is_cooked, LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2,
    };
    use roce_testgen::encap::{self as wrap, Outer};
    use roce_testgen::frames::{self, FrameSpec, Net, RoceSpec, TPID_8021AD, TPID_8021Q};

    /// The default filter compiled for a link type, as `-i` sets it.
    fn compiled(linktype: u32, vxlan_port: Option<u16>) -> pcap::BpfProgram {
        pcap::Capture::dead(pcap::Linktype(linktype as i32))
            .unwrap()
            .compile(&default_filter(linktype, vxlan_port), true)
            .unwrap()
    }

    /// Whether the offline report reads a frame: RoCE (malformed too), MAC Control, an ICMP
    /// error quoting RoCE, or anything inside a mirror session or tunnel.
    fn decoder_reads(linktype: u32, data: &[u8], vxlan_port: Option<u16>) -> bool {
        let options = roce_parsers::DecodeOptions { vxlan_port };
        reads(&roce_parsers::decode_frame_with(
            linktype,
            data,
            data.len() as u32,
            options,
        ))
    }

    fn reads(f: &roce_parsers::Frame<'_>) -> bool {
        f.roce.is_some()
            || f.mac_control.is_some()
            || f.icmp.is_some()
            || !f.encaps().is_empty()
            || f.udp
                .is_some_and(|u| u.dport == roce_parsers::ROCEV2_UDP_PORT)
    }

    /// `frame` with `tpids` tags inserted after its MAC addresses, outermost first.
    fn tagged(frame: &[u8], tpids: &[u16]) -> Vec<u8> {
        let mut out = frame[..12].to_vec();
        for (i, tpid) in tpids.iter().enumerate() {
            out.extend_from_slice(&tpid.to_be_bytes());
            out.extend_from_slice(&(200 + i as u16).to_be_bytes());
        }
        out.extend_from_slice(&frame[12..]);
        out
    }

    fn test_link() -> FrameSpec {
        FrameSpec::new([2, 0, 0, 0, 0, 0xa], [2, 0, 0, 0, 0, 0xb])
    }

    fn test_write() -> RoceSpec {
        RoceSpec::new(0x0a, 0x100, 7)
            .payload(64)
            .reth(0x1000, 7, 64)
    }

    /// A RoCEv2 WRITE from 10.0.0.1 to 10.0.0.2.
    fn test_rocev2() -> Vec<u8> {
        let net = Net::v4([10, 0, 0, 1], [10, 0, 0, 2], 0x68);
        frames::rocev2(&test_link(), net, 50000, &test_write())
    }

    /// A RoCEv2 WRITE in every mirror session and tunnel the decoder opens, over IPv4 and
    /// IPv6, and bare RoCEv2, RoCEv1, PFC and PAUSE.
    fn decoded_kinds() -> Vec<(String, Vec<u8>)> {
        let (link, write, roce) = (test_link(), test_write(), test_rocev2());
        let gids = ("fe80::1".parse().unwrap(), "fe80::2".parse().unwrap());
        let mut out = vec![
            ("rocev2".to_string(), roce.clone()),
            (
                "rocev1".into(),
                frames::rocev1(&link, gids.0, gids.1, 0, &write),
            ),
            (
                "pfc".into(),
                frames::pfc([2, 0, 0, 0, 0, 0xa], 0x08, [0xffff; 8]),
            ),
            ("pause".into(), frames::pause([2, 0, 0, 0, 0, 0xa], 0xffff)),
            ("mpls".into(), wrap::mpls(&[16, 1000], &roce)),
        ];
        for v6 in [false, true] {
            let o = Outer { vlan: None, v6 };
            let ip = if v6 { "ipv6" } else { "ipv4" };
            for (name, frame) in [
                ("erspan1", wrap::erspan1(o, &roce)),
                ("erspan2", wrap::erspan2(o, 1, 5, 9, false, &roce)),
                ("erspan3", wrap::erspan3(o, 1, 6, 1000, None, &roce)),
                ("gre_teb", wrap::gre_teb(o, &roce)),
                ("gre_ip", wrap::gre_ip(o, &roce)),
                ("ipip", wrap::ipip(o, &roce)),
                ("vxlan", wrap::vxlan(o, 42, &roce)),
                ("geneve", wrap::geneve(o, 42, &roce)),
            ] {
                out.push((format!("{name} over {ip}"), frame));
            }
        }
        out
    }

    #[test]
    fn the_default_filter_takes_every_encapsulation_the_decoder_reads_tagged_or_not() {
        let program = compiled(LINKTYPE_ETHERNET, None);
        let tags: [&[u16]; 4] = [
            &[],
            &[TPID_8021Q],
            &[TPID_8021AD, TPID_8021Q],
            &[TPID_8021AD, TPID_8021Q, TPID_8021Q],
        ];
        for (name, frame) in decoded_kinds() {
            for t in tags {
                let frame = tagged(&frame, t);
                assert!(
                    decoder_reads(LINKTYPE_ETHERNET, &frame, None),
                    "{name} under {} tags: not decoded",
                    t.len()
                );
                assert!(program.filter(&frame), "{name} under {} tags", t.len());
            }
            // `-i any` has no tags.
            let cooked = frames::to_sll(&frame);
            assert!(
                compiled(LINKTYPE_LINUX_SLL, None).filter(&cooked),
                "{name} on SLL"
            );
            let cooked = frames::to_sll2(&frame, 3);
            assert!(
                compiled(LINKTYPE_LINUX_SLL2, None).filter(&cooked),
                "{name} on SLL2"
            );
        }
        // What the decoder does not read stays out: other UDP, TCP, ARP.
        let link = test_link();
        let dns = frames::udp_v4(&link, [10, 0, 0, 1], [10, 0, 0, 2], 5353, 53, &[0; 20]);
        let mut tcp = dns.clone();
        tcp[23] = 6;
        let mut arp = dns.clone();
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        for (name, frame) in [("dns", dns), ("tcp", tcp), ("arp", arp)] {
            assert!(!decoder_reads(LINKTYPE_ETHERNET, &frame, None), "{name}");
            assert!(!program.filter(&frame), "{name} taken");
            assert!(
                !program.filter(&tagged(&frame, &[TPID_8021Q])),
                "tagged {name} taken"
            );
        }
    }

    /// `--vxlan-port`: the decoder opens VXLAN on that port too, and so does the filter.
    #[test]
    fn the_default_filter_takes_vxlan_on_the_vxlan_port() {
        let roce = test_rocev2();
        let mut vxlan = vec![0x08, 0, 0, 0, 0, 0, 42, 0];
        vxlan.extend_from_slice(&roce);
        let frame = Outer {
            vlan: Some((300, 0)),
            v6: true,
        }
        .udp(8472, &vxlan);
        assert!(!decoder_reads(LINKTYPE_ETHERNET, &frame, None));
        assert!(!compiled(LINKTYPE_ETHERNET, None).filter(&frame));
        assert!(decoder_reads(LINKTYPE_ETHERNET, &frame, Some(8472)));
        assert!(compiled(LINKTYPE_ETHERNET, Some(8472)).filter(&frame));
        // The port of a standard encapsulation is not repeated.
        assert_eq!(
            default_filter(LINKTYPE_ETHERNET, Some(4789)),
            default_filter(LINKTYPE_ETHERNET, None)
        );
    }

    /// Every frame of testdata/'s captures that the offline report reads passes the default
    /// filter of its link type: a capture replayed into an interface gives the same report.
    #[test]
    fn the_default_filter_takes_every_frame_of_testdata_the_report_reads() {
        use roce_parsers::capture::{CaptureParser, Next};
        let mut dirs = vec![std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata")];
        let mut checked = 0;
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                let bytes = std::fs::read(&path).unwrap();
                let Ok((mut parser, mut at)) = CaptureParser::new(&bytes) else {
                    continue;
                };
                let mut programs = std::collections::HashMap::new();
                while let Ok(next) = parser.next(&bytes[at..], at as u64) {
                    let rec = match next {
                        Next::Record(rec, used) => {
                            at += used;
                            rec
                        }
                        Next::Skip(used) => {
                            at += used;
                            continue;
                        }
                        Next::Incomplete { .. } => break,
                    };
                    let live = [LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2];
                    let frame = roce_parsers::decode_frame(rec.linktype, rec.data, rec.len);
                    // libpcap puts back in a cooked frame the tag the kernel stripped, after
                    // the kernel's filter saw the frame without it.
                    let tag_put_back = is_cooked(rec.linktype) && !frame.vlans().is_empty();
                    if !live.contains(&rec.linktype) || !reads(&frame) || tag_put_back {
                        continue;
                    }
                    let program = programs
                        .entry(rec.linktype)
                        .or_insert_with(|| compiled(rec.linktype, None));
                    assert!(
                        program.filter(rec.data),
                        "{}: the record ending at byte {at} is read offline, not live",
                        path.display()
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 10_000, "{checked} frames checked");
    }

    #[test]
    fn cooked_links_get_a_default_filter_without_vlan() {
        for lt in [LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2] {
            assert!(!default_filter(lt, None).contains("vlan"));
            // Every filter compiles for its link type (the `vlan` one failed on `-i any`).
            compiled(lt, Some(8472));
        }
        compiled(LINKTYPE_ETHERNET, Some(8472));
        assert!(
            pcap::Capture::dead(pcap::Linktype(LINKTYPE_LINUX_SLL as i32))
                .unwrap()
                .compile(&default_filter(LINKTYPE_ETHERNET, None), true)
                .is_err()
        );
    }

    #[test]
    fn vlan_subinterfaces_are_found_with_their_parent() {
        let config = "VLAN Dev name    | VLAN ID\nName-Type: VLAN_NAME_TYPE_RAW_PLUS_VID_NO_PAD\neth0.100       | 100  | eth0\nbond0.7        | 7  | bond0\n";
        assert_eq!(parse_vlan_config(config, "eth0.100"), Some("eth0".into()));
        assert_eq!(parse_vlan_config(config, "bond0.7"), Some("bond0".into()));
        assert_eq!(parse_vlan_config(config, "eth0"), None);
    }
}
