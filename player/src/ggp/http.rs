//! A small HTTP/1.1 server for the GGP protocol, on `std::net`: a thread
//! per connection up to a bound (the next connections get 503 at once),
//! every read under an idle timeout and the whole request under a
//! deadline, limits on the head's size, its header count and the body's
//! size (`Content-Length` or chunked), one request per connection
//! (`Connection: close`). The server crate used before (tiny_http 0.12)
//! had none of these: 3000 stalled connections held 3000 threads.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tracing::{debug, warn};

/// What the server accepts.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Connections served at once.
    pub connections: usize,
    /// Bytes in the request line and headers.
    pub head_bytes: usize,
    pub headers: usize,
    pub body_bytes: usize,
    /// Longest wait for the next bytes of a request (and for a write).
    pub idle: Duration,
    /// Longest time to receive a whole request.
    pub request: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            connections: 128,
            head_bytes: 64 << 10,
            headers: 64,
            body_bytes: 16 << 20,
            idle: Duration::from_secs(10),
            request: Duration::from_secs(60),
        }
    }
}

/// A request as the handler sees it.
pub struct Request {
    pub method: String,
    pub path: String,
    pub body: Vec<u8>,
    /// When its first byte came.
    pub received: Instant,
}

/// An answer: status and body (`text/acl`).
pub struct Response {
    pub status: u16,
    pub body: String,
}

impl Response {
    pub fn new(status: u16, body: impl Into<String>) -> Response {
        Response { status, body: body.into() }
    }
}

pub type Handler = dyn Fn(Request) -> Response + Send + Sync;

/// A listening server; dropping it stops accepting.
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Server {
    /// Listens on `addr` (port 0: any free port).
    pub fn bind(addr: &str, limits: Limits, handler: Arc<Handler>) -> std::io::Result<Server> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let accept = std::thread::Builder::new()
            .name("http".into())
            .spawn(move || accept_loop(listener, limits, handler, flag))?;
        Ok(Server { addr, stop, accept: Some(accept) })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves until the process ends.
    pub fn wait(mut self) {
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // SeqCst, and the connection below wakes the accept loop, which
        // reads the flag after every accept; should it ever miss it, the
        // loop serves one more connection and reads it again.
        self.stop.store(true, Ordering::SeqCst);
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(if wake.is_ipv4() { [127, 0, 0, 1].into() } else { std::net::Ipv6Addr::LOCALHOST.into() });
        }
        let _ = TcpStream::connect_timeout(&wake, Duration::from_secs(1));
    }
}

/// Decrements the count of open connections when a connection ends.
struct Open(Arc<AtomicUsize>);

impl Drop for Open {
    fn drop(&mut self) {
        // Relaxed: the count only bounds how many threads run; it guards no data.
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

fn accept_loop(listener: TcpListener, limits: Limits, handler: Arc<Handler>, stop: Arc<AtomicBool>) {
    let open = Arc::new(AtomicUsize::new(0));
    let limits = Arc::new(limits);
    for conn in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let stream = match conn {
            Ok(s) => s,
            Err(e) => {
                // Out of file descriptors, most likely: wait for some to close.
                warn!("accept: {e}");
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        // Relaxed: see `Open`; only this thread increments.
        if open.load(Ordering::Relaxed) >= limits.connections {
            refuse(stream);
            continue;
        }
        open.fetch_add(1, Ordering::Relaxed);
        let guard = Open(open.clone());
        let (h, l) = (handler.clone(), limits.clone());
        // A failed spawn drops the closure, and with it the guard.
        if let Err(e) = std::thread::Builder::new().name("http-conn".into()).spawn(move || {
            let _guard = guard;
            connection(stream, &l, &*h);
        }) {
            warn!("cannot start a connection thread: {e}");
        }
    }
}

/// Answers 503 to a connection over the bound, without reading it.
fn refuse(mut s: TcpStream) {
    let _ = s.set_write_timeout(Some(Duration::from_secs(1)));
    write_response(&mut s, &Response::new(503, "error: too many connections"));
    let _ = s.shutdown(Shutdown::Both);
}

/// Why no request could be read: an answer to send, or nothing (the
/// client went away).
enum Fail {
    Answer(Response),
    Gone,
}

fn fail(status: u16, msg: impl std::fmt::Display) -> Fail {
    Fail::Answer(Response::new(status, format!("error: {msg}")))
}

/// Where a request's bytes come from: a client's connection, or bytes in
/// memory ([`parse_request`]).
trait Wire: Read + Write {
    /// Sets how long the next read may wait.
    fn set_wait(&mut self, wait: Duration) -> std::io::Result<()>;
}

impl Wire for TcpStream {
    fn set_wait(&mut self, wait: Duration) -> std::io::Result<()> {
        self.set_read_timeout(Some(wait))
    }
}

/// A whole request already in memory; what the server would write back
/// (`100 Continue`) is dropped.
#[allow(dead_code, reason = "used by the tests and by the fuzz target, which includes this file")]
struct InMemory<'a>(&'a [u8]);

impl Read for InMemory<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

impl Write for InMemory<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Wire for InMemory<'_> {
    fn set_wait(&mut self, _: Duration) -> std::io::Result<()> {
        Ok(())
    }
}

/// Reads one request from `bytes` as the server reads one from a
/// connection that sends them and then closes: the request, the error
/// answer the server would send, or `None` when it would answer nothing
/// (no bytes at all). For tests and the fuzz target (`fuzz/`).
#[allow(dead_code, reason = "used by the tests and by the fuzz target, which includes this file")]
pub fn parse_request(bytes: &[u8], limits: &Limits) -> Result<Request, Option<Response>> {
    read_request(&mut InMemory(bytes), limits).map_err(|f| match f {
        Fail::Answer(r) => Some(r),
        Fail::Gone => None,
    })
}

fn connection(mut s: TcpStream, limits: &Limits, handler: &Handler) {
    let _ = s.set_nodelay(true);
    let _ = s.set_write_timeout(Some(limits.idle));
    let resp = match read_request(&mut s, limits) {
        Ok(rq) => handler(rq),
        Err(Fail::Gone) => return,
        Err(Fail::Answer(r)) => r,
    };
    write_response(&mut s, &resp);
    // Reads what the client still sends (a body refused unread) for a
    // moment, so that closing does not reset the connection before the
    // client has read the answer.
    let _ = s.shutdown(Shutdown::Write);
    let until = Instant::now() + Duration::from_secs(2);
    let mut sink = [0u8; 16 << 10];
    let mut left: usize = 64 << 20;
    while left > 0 {
        let now = Instant::now();
        if now >= until || s.set_read_timeout(Some(until - now)).is_err() {
            break;
        }
        match s.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(n) => left = left.saturating_sub(n),
        }
    }
}

/// A request's head, as far as the server needs it.
struct Head {
    method: String,
    path: String,
    length: Option<usize>,
    chunked: bool,
    expect_continue: bool,
    /// Bytes of the head (the body's first bytes may follow in the buffer).
    len: usize,
}

/// The head in `buf`, if complete.
fn parse_head(buf: &[u8], limits: &Limits) -> Result<Option<Head>, Fail> {
    let mut headers = vec![httparse::EMPTY_HEADER; limits.headers];
    let mut rq = httparse::Request::new(&mut headers);
    let len = match rq.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(fail(431, format!("more than {} headers", limits.headers))),
        Err(e) => return Err(fail(400, format!("malformed HTTP request: {e}"))),
    };
    let mut head = Head {
        method: rq.method.unwrap_or_default().to_string(),
        path: rq.path.unwrap_or_default().to_string(),
        length: None,
        chunked: false,
        expect_continue: false,
        len,
    };
    for h in rq.headers.iter() {
        let value = std::str::from_utf8(h.value).unwrap_or("").trim();
        if h.name.eq_ignore_ascii_case("content-length") {
            let n = value.parse::<usize>().map_err(|_| fail(400, "bad Content-Length"))?;
            if head.length.is_some_and(|m| m != n) {
                return Err(fail(400, "conflicting Content-Length headers"));
            }
            head.length = Some(n);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            if !value.eq_ignore_ascii_case("chunked") {
                return Err(fail(501, format!("transfer encoding `{value}` not supported")));
            }
            head.chunked = true;
        } else if h.name.eq_ignore_ascii_case("expect") {
            head.expect_continue = value.eq_ignore_ascii_case("100-continue");
        }
    }
    if head.chunked && head.length.is_some() {
        return Err(fail(400, "both Content-Length and chunked encoding"));
    }
    Ok(Some(head))
}

/// Reads more bytes into `buf` (at most `max` more), within the idle
/// timeout and the request's deadline.
fn read_more(s: &mut impl Wire, buf: &mut Vec<u8>, max: usize, deadline: Instant, idle: Duration) -> Result<(), Fail> {
    let now = Instant::now();
    if now >= deadline {
        return Err(fail(408, "the request took too long"));
    }
    s.set_wait(idle.min(deadline - now)).map_err(|_| Fail::Gone)?;
    let mut chunk = [0u8; 16 << 10];
    let want = max.clamp(1, chunk.len());
    match s.read(&mut chunk[..want]) {
        Ok(0) if buf.is_empty() => Err(Fail::Gone),
        Ok(0) => Err(fail(400, "the connection closed in the middle of the request")),
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            Ok(())
        }
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            if buf.is_empty() {
                // Nothing ever came: no one to answer.
                Err(Fail::Gone)
            } else {
                Err(fail(408, "timed out waiting for the rest of the request"))
            }
        }
        Err(_) => Err(Fail::Gone),
    }
}

fn read_request(s: &mut impl Wire, limits: &Limits) -> Result<Request, Fail> {
    let mut buf = Vec::with_capacity(4096);
    let mut deadline = Instant::now() + limits.request;
    let mut received = None;
    let head = loop {
        if let Some(h) = parse_head(&buf, limits)? {
            break h;
        }
        if buf.len() >= limits.head_bytes {
            return Err(fail(431, format!("request head over {} bytes", limits.head_bytes)));
        }
        let room = limits.head_bytes - buf.len();
        read_more(s, &mut buf, room, deadline, limits.idle)?;
        if received.is_none() {
            let now = Instant::now();
            received = Some(now);
            deadline = now + limits.request;
        }
    };
    let received = received.unwrap_or_else(Instant::now);
    if head.length.is_some_and(|n| n > limits.body_bytes) {
        return Err(fail(413, format!("request body over {} bytes", limits.body_bytes)));
    }
    if head.expect_continue {
        let _ = s.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
    }
    let mut rest = buf.split_off(head.len);
    let body = if head.chunked {
        dechunk(s, rest, limits, deadline)?
    } else {
        let n = head.length.unwrap_or(0);
        while rest.len() < n {
            let want = n - rest.len();
            read_more(s, &mut rest, want, deadline, limits.idle)?;
        }
        rest.truncate(n);
        rest
    };
    debug!("{} {} ({} bytes)", head.method, head.path, body.len());
    Ok(Request { method: head.method, path: head.path, body, received })
}

/// Decodes a chunked body; `raw` holds what came after the head.
fn dechunk(s: &mut impl Wire, mut raw: Vec<u8>, limits: &Limits, deadline: Instant) -> Result<Vec<u8>, Fail> {
    let mut body = Vec::new();
    let mut pos = 0;
    // Room for the encoding around the body's bytes.
    let max_raw = limits.body_bytes + limits.head_bytes;
    let mut more = |raw: &mut Vec<u8>| {
        if raw.len() >= max_raw {
            return Err(fail(413, format!("request body over {} bytes", limits.body_bytes)));
        }
        let room = max_raw - raw.len();
        read_more(s, raw, room, deadline, limits.idle)
    };
    loop {
        let (used, size) = match httparse::parse_chunk_size(&raw[pos..]) {
            Ok(httparse::Status::Complete(c)) => c,
            Ok(httparse::Status::Partial) => {
                more(&mut raw)?;
                continue;
            }
            Err(_) => return Err(fail(400, "malformed chunked body")),
        };
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        if size > limits.body_bytes.saturating_sub(body.len()) {
            return Err(fail(413, format!("request body over {} bytes", limits.body_bytes)));
        }
        if size == 0 {
            // Trailers, if any, up to the empty line.
            loop {
                let tail = &raw[pos + used..];
                if tail.starts_with(b"\r\n") || tail.windows(4).any(|w| w == b"\r\n\r\n") {
                    return Ok(body);
                }
                more(&mut raw)?;
            }
        }
        while raw.len() < pos + used + size + 2 {
            more(&mut raw)?;
        }
        let start = pos + used;
        if &raw[start + size..start + size + 2] != b"\r\n" {
            return Err(fail(400, "malformed chunked body"));
        }
        body.extend_from_slice(&raw[start..start + size]);
        pos = start + size + 2;
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn write_response(s: &mut TcpStream, r: &Response) {
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: text/acl\r\nContent-Length: {}\r\n\
         Access-Control-Allow-Origin: *\r\nAccess-Control-Allow-Methods: POST, GET, OPTIONS\r\n\
         Access-Control-Allow-Headers: Content-Type\r\nAccess-Control-Max-Age: 86400\r\nConnection: close\r\n\r\n",
        r.status,
        reason(r.status),
        r.body.len()
    );
    if let Err(e) = s.write_all(head.as_bytes()).and_then(|_| s.write_all(r.body.as_bytes())).and_then(|_| s.flush()) {
        debug!("response lost: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufRead;

    fn echo(connections: usize, idle_ms: u64) -> Server {
        let limits = Limits { idle: Duration::from_millis(idle_ms), connections, ..Limits::default() };
        let h: Arc<Handler> = Arc::new(|rq: Request| {
            Response::new(200, format!("{} {} {}", rq.method, rq.path, String::from_utf8_lossy(&rq.body)))
        });
        Server::bind("127.0.0.1:0", limits, h).unwrap()
    }

    /// Sends raw bytes, returns the status line and body.
    fn exchange(addr: SocketAddr, raw: &[u8]) -> (String, String) {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(raw).unwrap();
        let mut r = std::io::BufReader::new(s);
        let mut status = String::new();
        r.read_line(&mut status).unwrap();
        let mut rest = String::new();
        let _ = r.read_to_string(&mut rest);
        let body = rest.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
        (status.trim().to_string(), body)
    }

    #[test]
    fn bodies_by_length_and_chunks() {
        let s = echo(16, 300);
        let (st, body) = exchange(s.addr(), b"POST /x HTTP/1.1\r\nContent-Length: 6\r\n\r\n(info)");
        assert_eq!((st.as_str(), body.as_str()), ("HTTP/1.1 200 OK", "POST /x (info)"));
        let raw = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n(in\r\n3;x=1\r\nfo)\r\n0\r\n\r\n";
        assert_eq!(exchange(s.addr(), raw).1, "POST / (info)");
        let raw = b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nab";
        let (st, _) = exchange(s.addr(), raw);
        assert!(st.contains("100"), "{st}");
    }

    /// The status `parse_request` answers `raw` with (200 and the body
    /// for a request read whole; 0 for no answer).
    fn in_memory(raw: &[u8]) -> (u16, String) {
        match parse_request(raw, &Limits::default()) {
            Ok(rq) => (200, String::from_utf8_lossy(&rq.body).into_owned()),
            Err(Some(r)) => (r.status, r.body),
            Err(None) => (0, String::new()),
        }
    }

    #[test]
    fn requests_read_from_memory() {
        assert_eq!(in_memory(b"POST /x HTTP/1.1\r\nContent-Length: 6\r\n\r\n(info)"), (200, "(info)".into()));
        let raw = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n(in\r\n3;x=1\r\nfo)\r\n0\r\n\r\n";
        assert_eq!(in_memory(raw), (200, "(info)".into()));
        assert_eq!(in_memory(b"").0, 0);
        assert_eq!(in_memory(b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n").0, 400);
        assert_eq!(in_memory(b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nab").0, 400);
        assert_eq!(in_memory(b"GET / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n").0, 501);
    }

    #[test]
    fn limits_and_timeouts() {
        let s = echo(16, 300);
        let big = format!("POST / HTTP/1.1\r\nContent-Length: {}\r\n\r\n", 17 << 20);
        assert!(exchange(s.addr(), big.as_bytes()).0.contains(" 413 "));
        let long = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(70 << 10));
        assert!(exchange(s.addr(), long.as_bytes()).0.contains(" 431 "));
        let many = format!("GET / HTTP/1.1\r\n{}\r\n", "X-A: b\r\n".repeat(100));
        assert!(exchange(s.addr(), many.as_bytes()).0.contains(" 431 "));
        assert!(exchange(s.addr(), b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n").0.contains(" 400 "));
        // A request that stops halfway gets 408 after the idle timeout.
        let t = Instant::now();
        assert!(exchange(s.addr(), b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nab").0.contains(" 408 "));
        assert!(t.elapsed() < Duration::from_secs(3));
    }

    #[test]
    fn stalled_connections_are_bounded_and_dropped() {
        let s = echo(2, 1000);
        // Two silent connections fill the bound: the third is refused at once.
        let a = TcpStream::connect(s.addr()).unwrap();
        let b = TcpStream::connect(s.addr()).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        assert!(exchange(s.addr(), b"").0.contains(" 503 "));
        // After the idle timeout they are closed, and requests go through again.
        std::thread::sleep(Duration::from_millis(2000));
        assert!(exchange(s.addr(), b"GET / HTTP/1.1\r\n\r\n").0.contains(" 200 "));
        drop((a, b));
    }
}
