//! The `/metrics` endpoint: HTTP/1.1, GET only, one response per connection. It serves the
//! latest exposition text the analysis published and nothing else, and it never holds up the
//! capture or grows without bound: at most `MAX_CONNECTIONS` are served at once (more are
//! closed at once), a request must arrive whole within `READ_TIMEOUT` and `MAX_REQUEST` bytes,
//! and anything but `GET /metrics` gets a short error.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Connections served at the same time; beyond them a connection is closed unanswered.
const MAX_CONNECTIONS: usize = 16;
/// A client that sends nothing is closed after this long.
const READ_TIMEOUT: Duration = Duration::from_secs(2);
/// A request's head larger than this is refused.
pub const MAX_REQUEST: usize = 8 * 1024;
/// How often the accept loop looks at the stop flag.
const ACCEPT_POLL: Duration = Duration::from_millis(50);

/// The latest exposition text, shared between the analysis and the server.
pub type Published = Arc<Mutex<Arc<String>>>;

pub struct MetricsServer {
    pub addr: SocketAddr,
    published: Published,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Binds `addr` (before any work, so a bad address fails at once) and starts serving.
    pub fn bind(addr: &str) -> io::Result<MetricsServer> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let published: Published = Arc::new(Mutex::new(Arc::new(String::new())));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s) = (Arc::clone(&published), Arc::clone(&stop));
        let thread = std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || accept_loop(listener, p, s))?;
        Ok(MetricsServer {
            addr,
            published,
            stop,
            thread: Some(thread),
        })
    }

    /// What the analysis publishes through, while the server serves.
    pub fn publisher(&self) -> Publisher {
        Publisher(Arc::clone(&self.published))
    }
}

/// Makes the text the next scrape gets.
#[derive(Clone)]
pub struct Publisher(Published);

impl Publisher {
    pub fn publish(&self, text: String) {
        if let Ok(mut p) = self.0.lock() {
            *p = Arc::new(text);
        }
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn accept_loop(listener: TcpListener, published: Published, stop: Arc<AtomicBool>) {
    let busy = Arc::new(AtomicUsize::new(0));
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, _)) => {
                if busy.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
                    drop(stream);
                    continue;
                }
                busy.fetch_add(1, Ordering::SeqCst);
                let (p, b) = (Arc::clone(&published), Arc::clone(&busy));
                let spawned = std::thread::Builder::new()
                    .name("metrics-conn".into())
                    .spawn(move || {
                        let _ = serve(stream, &p);
                        b.fetch_sub(1, Ordering::SeqCst);
                    });
                if spawned.is_err() {
                    busy.fetch_sub(1, Ordering::SeqCst);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(ACCEPT_POLL),
            Err(_) => std::thread::sleep(ACCEPT_POLL),
        }
    }
}

/// What a request head asks for, as far as it came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// The head has not ended yet (no empty line), and is within `MAX_REQUEST` bytes.
    Incomplete,
    /// No empty line within `MAX_REQUEST` bytes.
    TooLarge,
    /// A request line that is not HTTP/1.
    NotHttp,
    /// Any method but GET.
    NotGet,
    /// GET of anything but `/metrics`.
    NotFound,
    /// `GET /metrics` (a query is ignored).
    Metrics,
}

impl Request {
    /// Status, content type and body of the answer to anything but `Metrics`.
    fn refusal(self) -> (&'static str, &'static [u8]) {
        match self {
            Request::TooLarge => (
                "431 Request Header Fields Too Large",
                b"request too large\n",
            ),
            Request::NotHttp => ("400 Bad Request", b"not an HTTP/1 request\n"),
            Request::NotGet => ("405 Method Not Allowed", b"GET /metrics\n"),
            _ => ("404 Not Found", b"the metrics are at /metrics\n"),
        }
    }
}

/// Judges the bytes of a request received so far: a pure function of them, so that it can be
/// fuzzed (the server listens on management networks). Only the head's first
/// `MAX_REQUEST` bytes are looked at.
pub fn parse_request(received: &[u8]) -> Request {
    let window = &received[..received.len().min(MAX_REQUEST)];
    let Some(end) = window.windows(4).position(|w| w == b"\r\n\r\n") else {
        return match received.len() > MAX_REQUEST {
            true => Request::TooLarge,
            false => Request::Incomplete,
        };
    };
    let head = &window[..end];
    let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let mut words = line.split(|&b| b == b' ');
    let (method, path, version) = (words.next(), words.next(), words.next());
    if !version.is_some_and(|v| v.starts_with(b"HTTP/1.")) {
        return Request::NotHttp;
    }
    if method != Some(b"GET".as_slice()) {
        return Request::NotGet;
    }
    let path = path.unwrap_or_default();
    match path.split(|&b| b == b'?').next() == Some(b"/metrics".as_slice()) {
        true => Request::Metrics,
        false => Request::NotFound,
    }
}

/// Reads one request head and answers it.
fn serve(mut stream: TcpStream, published: &Published) -> io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(READ_TIMEOUT))?;
    stream.set_write_timeout(Some(READ_TIMEOUT))?;
    let mut received = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    let request = loop {
        match parse_request(&received) {
            Request::Incomplete => {}
            judged => break judged,
        }
        let n = stream.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        received.extend_from_slice(&buf[..n]);
    };
    if request != Request::Metrics {
        let (status, body) = request.refusal();
        return respond(&mut stream, status, "text/plain", body);
    }
    let text = published.lock().map(|p| Arc::clone(&p)).unwrap_or_default();
    respond(
        &mut stream,
        "200 OK",
        "text/plain; version=0.0.4; charset=utf-8",
        text.as_bytes(),
    )
}

fn respond(stream: &mut TcpStream, status: &str, kind: &str, body: &[u8]) -> io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(addr: SocketAddr, request: &[u8]) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(request).unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    #[test]
    fn serves_metrics_and_refuses_the_rest() {
        let server = MetricsServer::bind("127.0.0.1:0").unwrap();
        server
            .publisher()
            .publish("roce_sniff_flows_active 3\n".into());
        let ok = get(server.addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200 OK"), "{ok}");
        assert!(ok.ends_with("roce_sniff_flows_active 3\n"), "{ok}");
        assert!(get(server.addr, b"GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(get(server.addr, b"POST /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
        assert!(get(server.addr, b"\x16\x03\x01garbage\r\n\r\n").starts_with("HTTP/1.1 400"));
        let big = vec![b'a'; MAX_REQUEST * 2];
        assert!(get(server.addr, &big).starts_with("HTTP/1.1 431"));
    }

    #[test]
    fn a_request_is_judged_from_its_head_alone() {
        use Request::*;
        let cases: [(&[u8], Request); 9] = [
            (b"", Incomplete),
            (b"GET /metrics HTTP/1.1\r\nHost: x\r\n", Incomplete),
            (b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", Metrics),
            (b"GET /metrics?x=1 HTTP/1.0\r\n\r\nbody", Metrics),
            (b"GET /metricsx HTTP/1.1\r\n\r\n", NotFound),
            (b"get /metrics HTTP/1.1\r\n\r\n", NotGet),
            (b"GET /metrics HTTP/2\r\n\r\n", NotHttp),
            (b"GET /metrics\r\n\r\n", NotHttp),
            (b"\r\n\r\n", NotHttp),
        ];
        for (head, want) in cases {
            assert_eq!(
                parse_request(head),
                want,
                "{:?}",
                String::from_utf8_lossy(head)
            );
        }
        // The empty line past the limit: too large, however the request goes on.
        let mut long = b"GET /metrics HTTP/1.1\r\nX: ".to_vec();
        long.resize(MAX_REQUEST, b'a');
        assert_eq!(parse_request(&long), Incomplete);
        long.extend_from_slice(b"\r\n\r\n");
        assert_eq!(parse_request(&long), TooLarge);
    }

    #[test]
    fn silent_and_crowding_clients_do_not_stop_it() {
        let server = MetricsServer::bind("127.0.0.1:0").unwrap();
        server.publisher().publish("x 1\n".into());
        // Connections that send nothing: the first ones hold a slot until the read timeout,
        // the rest are closed at once; a scrape after the timeout is answered.
        let idle: Vec<TcpStream> = (0..100)
            .filter_map(|_| TcpStream::connect(server.addr).ok())
            .collect();
        std::thread::sleep(READ_TIMEOUT + Duration::from_millis(500));
        let ok = get(server.addr, b"GET /metrics HTTP/1.0\r\n\r\n");
        assert!(ok.ends_with("x 1\n"), "{ok}");
        drop(idle);
    }
}
