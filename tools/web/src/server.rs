// SPDX-License-Identifier: MIT
//! The many-domain server: one listening socket per address, one thread per connection with
//! blocking I/O (a few hundred connections at most in the lab, so threads are the lightest
//! correct design). `GET /<anything>?bytes=N` answers with exactly N bytes of body. A
//! connection that opens with HTTP/2's preface is handed to the HTTP/2 side (h2server.rs).

use crate::h2server::{self, PREFACE};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

/// An HTTP/1.1 connection idle this long is closed, so that a vanished client does not pin a
/// thread; an HTTP/2 one is then probed, and closed if the client is gone (h2server.rs).
pub const DEFAULT_IDLE: Duration = Duration::from_secs(60);
/// Larger request heads are refused (a browser's are a few hundred bytes).
const MAX_HEAD: usize = 16 * 1024;
const MAX_HEADERS: usize = 64;
const THREAD_STACK: usize = 128 * 1024;
static BODY_CHUNK: [u8; 64 * 1024] = [b'x'; 64 * 1024];

pub struct Config {
    pub addresses: Vec<SocketAddr>,
    pub cca: Option<String>,
    pub idle: Duration,
}

/// Binds every address first (so a bad one fails the start, not a later request), then serves.
pub fn run(config: &Config) -> Result<(), String> {
    if config.addresses.is_empty() {
        return Err("nothing to listen on: give --listen ADDRESS or --hosts FILE".to_string());
    }
    let listeners = config
        .addresses
        .iter()
        .map(|a| crate::sock::listen(*a, config.cca.as_deref()))
        .collect::<Result<Vec<_>, _>>()?;
    let http2 = Arc::new(h2server::Runtime::start()?);
    eprintln!("web-server: listening on {} addresses", listeners.len());
    let threads: Vec<_> = listeners
        .into_iter()
        .map(|l| {
            let http2 = http2.clone();
            let idle = config.idle;
            spawn(move || accept_loop(l, http2, idle))
        })
        .collect::<Result<_, _>>()?;
    for t in threads {
        let _ = t.join();
    }
    Ok(())
}

fn spawn<F: FnOnce() + Send + 'static>(f: F) -> Result<std::thread::JoinHandle<()>, String> {
    std::thread::Builder::new()
        .stack_size(THREAD_STACK)
        .spawn(f)
        .map_err(|e| format!("cannot start a thread: {e}"))
}

fn accept_loop(listener: TcpListener, http2: Arc<h2server::Runtime>, idle: Duration) {
    for stream in listener.incoming() {
        match stream {
            Ok(s) => {
                let http2 = http2.clone();
                if let Err(e) = spawn(move || serve_connection(s, &http2, idle)) {
                    eprintln!("web-server: {e}");
                }
            }
            Err(e) => eprintln!("web-server: accept: {e}"),
        }
    }
}

/// What one request asks for.
#[derive(Debug, PartialEq)]
enum Answer {
    Body {
        bytes: u64,
        keep_alive: bool,
    },
    Refuse {
        status: &'static str,
        reason: String,
        keep_alive: bool,
    },
}

fn serve_connection(mut stream: TcpStream, http2: &h2server::Runtime, idle: Duration) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(idle));
    let mut buffer: Vec<u8> = Vec::with_capacity(4096);
    match opens_http2(&mut stream, &mut buffer) {
        None => return,
        Some(true) => return http2.serve(stream, buffer, idle),
        Some(false) => {}
    }
    loop {
        let (answer, used) = match read_request(&mut stream, &mut buffer) {
            Some(r) => r,
            None => return,
        };
        buffer.drain(..used);
        let keep_alive = match &answer {
            Answer::Body { keep_alive, .. } | Answer::Refuse { keep_alive, .. } => *keep_alive,
        };
        if write_answer(&mut stream, &answer).is_err() || !keep_alive {
            return;
        }
    }
}

/// Reads until the first bytes tell HTTP/2's preface from an HTTP/1.1 request (they stay in
/// `buffer`); None when the peer closed or went silent first.
fn opens_http2(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<bool> {
    let mut chunk = [0u8; 4096];
    loop {
        let seen = buffer.len().min(PREFACE.len());
        if buffer[..seen] != PREFACE[..seen] {
            return Some(false);
        }
        if seen == PREFACE.len() {
            return Some(true);
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Reads until one request head is complete; None when the peer closed or went silent.
fn read_request(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<(Answer, usize)> {
    let mut chunk = [0u8; 4096];
    loop {
        if !buffer.is_empty() {
            if let Some(parsed) = parse_request(buffer) {
                return Some(parsed);
            }
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
}

/// None while the head is incomplete; otherwise the answer and the bytes the request used.
fn parse_request(buffer: &[u8]) -> Option<(Answer, usize)> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(buffer) {
        Ok(httparse::Status::Partial) if buffer.len() <= MAX_HEAD => None,
        Ok(httparse::Status::Partial) => {
            Some((bad_request("request head too large".into()), buffer.len()))
        }
        Err(e) => Some((bad_request(format!("malformed request: {e}")), buffer.len())),
        Ok(httparse::Status::Complete(used)) => Some((answer_for(&request), used)),
    }
}

fn bad_request(reason: String) -> Answer {
    Answer::Refuse {
        status: "400 Bad Request",
        reason,
        keep_alive: false,
    }
}

fn answer_for(request: &httparse::Request) -> Answer {
    let keep_alive = wants_keep_alive(request);
    if request.headers.iter().any(|h| {
        h.name.eq_ignore_ascii_case("transfer-encoding")
            || (h.name.eq_ignore_ascii_case("content-length") && h.value != b"0")
    }) {
        return bad_request("request bodies are not accepted".into());
    }
    if request.method != Some("GET") {
        return Answer::Refuse {
            status: "405 Method Not Allowed",
            reason: "only GET is served".into(),
            keep_alive,
        };
    }
    match requested_bytes(request.path.unwrap_or("")) {
        Ok(bytes) => Answer::Body { bytes, keep_alive },
        Err(reason) => Answer::Refuse {
            status: "400 Bad Request",
            reason,
            keep_alive,
        },
    }
}

/// HTTP/1.1 keeps the connection unless told to close; HTTP/1.0 closes unless told otherwise.
fn wants_keep_alive(request: &httparse::Request) -> bool {
    let connection = request
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("connection"))
        .map(|h| String::from_utf8_lossy(h.value).to_ascii_lowercase());
    match (request.version, connection.as_deref()) {
        (_, Some("close")) => false,
        (Some(0), Some("keep-alive")) => true,
        (Some(0), _) => false,
        _ => true,
    }
}

pub(crate) fn requested_bytes(path: &str) -> Result<u64, String> {
    let query = path.split_once('?').map(|(_, q)| q).unwrap_or("");
    let value = query
        .split('&')
        .find_map(|pair| pair.strip_prefix("bytes="))
        .ok_or_else(|| format!("no size in {path:?}: ask for /<name>?bytes=N"))?;
    value
        .parse::<u64>()
        .map_err(|_| format!("bytes={value:?} is not a whole number of bytes"))
}

fn write_answer(stream: &mut TcpStream, answer: &Answer) -> std::io::Result<()> {
    match answer {
        Answer::Body { bytes, .. } => write_body(stream, *bytes),
        Answer::Refuse {
            status,
            reason,
            keep_alive,
        } => {
            let body = format!("{reason}\n");
            let close = if *keep_alive {
                ""
            } else {
                "Connection: close\r\n"
            };
            let allow = if status.starts_with("405") {
                "Allow: GET\r\n"
            } else {
                ""
            };
            let head = format!(
                "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n{allow}{close}\r\n",
                body.len()
            );
            stream.write_all(format!("{head}{body}").as_bytes())
        }
    }
}

/// The head and the start of the body leave in one write, so a small object is one segment train.
fn write_body(stream: &mut TcpStream, bytes: u64) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nCache-Control: no-store\r\nContent-Length: {bytes}\r\n\r\n"
    );
    let first = bytes.min(BODY_CHUNK.len() as u64) as usize;
    let mut message = Vec::with_capacity(head.len() + first);
    message.extend_from_slice(head.as_bytes());
    message.extend_from_slice(&BODY_CHUNK[..first]);
    stream.write_all(&message)?;
    let mut left = bytes - first as u64;
    while left > 0 {
        let n = left.min(BODY_CHUNK.len() as u64) as usize;
        stream.write_all(&BODY_CHUNK[..n])?;
        left -= n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(text: &str) -> Option<Answer> {
        parse_request(text.as_bytes()).map(|(a, _)| a)
    }

    #[test]
    fn answers_sizes_and_keeps_alive() {
        assert_eq!(
            answer("GET /o1?bytes=15360 HTTP/1.1\r\nHost: a\r\n\r\n"),
            Some(Answer::Body {
                bytes: 15360,
                keep_alive: true
            })
        );
        assert_eq!(
            answer("GET /x?a=1&bytes=0 HTTP/1.0\r\n\r\n"),
            Some(Answer::Body {
                bytes: 0,
                keep_alive: false
            })
        );
        assert_eq!(
            answer("GET /x?bytes=5 HTTP/1.1\r\nConnection: close\r\n\r\n"),
            Some(Answer::Body {
                bytes: 5,
                keep_alive: false
            })
        );
        assert_eq!(answer("GET /x?bytes=5 HTTP/1.1\r\nHost"), None);
    }

    #[test]
    fn refuses_bad_requests() {
        let status = |text: &str| match answer(text) {
            Some(Answer::Refuse { status, .. }) => status,
            other => panic!("{other:?}"),
        };
        assert_eq!(status("GET /x HTTP/1.1\r\n\r\n"), "400 Bad Request");
        assert_eq!(
            status("GET /x?bytes=-4 HTTP/1.1\r\n\r\n"),
            "400 Bad Request"
        );
        assert_eq!(
            status("POST /x?bytes=4 HTTP/1.1\r\n\r\n"),
            "405 Method Not Allowed"
        );
        assert_eq!(
            status("GET /x?bytes=4 HTTP/1.1\r\nContent-Length: 3\r\n\r\n"),
            "400 Bad Request"
        );
        assert_eq!(status("\x01\x02 nonsense\r\n\r\n"), "400 Bad Request");
    }
}
