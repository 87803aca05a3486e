// SPDX-License-Identifier: MIT
//! web-client's HTTP/2 transport: one connection per domain that speaks it, every request a
//! stream on it, over the `h2` crate on a single-threaded tokio runtime in a thread of its own.
//!
//! The page's logic (what is requestable, the report) stays in the loader's event loop
//! (client.rs); this side only carries requests and says what happened, with the time it
//! happened, through a channel and the loop's waker. Flow-control windows are Chrome's (6 MiB
//! a stream, 15 MiB the connection), so that they never limit a transfer on the lab's links.

use crate::{h2io, sock};
use bytes::Bytes;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc as tmpsc;

const STREAM_WINDOW: u32 = 6 * 1024 * 1024;
const CONNECTION_WINDOW: u32 = 15 * 1024 * 1024;

/// What the loader asks of the transport.
pub enum Command {
    /// Open connection `conn` to `server`; its received bytes (headers and framing included) are counted in `bytes`.
    Open {
        conn: usize,
        server: SocketAddr,
        bytes: Arc<AtomicU64>,
    },
    /// Request `object` (`size` bytes at `path`) from `authority` on connection `conn`.
    Request {
        conn: usize,
        object: usize,
        authority: String,
        path: String,
        size: u64,
    },
}

/// What happened, each with the time since the load's start.
pub enum Event {
    Connected {
        conn: usize,
        local_port: Option<u16>,
        at_us: u64,
    },
    ConnectionFailed {
        conn: usize,
        reason: String,
    },
    Requested {
        object: usize,
        at_us: u64,
    },
    FirstByte {
        object: usize,
        at_us: u64,
    },
    Data {
        object: usize,
        bytes: u64,
    },
    Done {
        object: usize,
        at_us: u64,
    },
    Failed {
        object: usize,
        reason: String,
    },
}

/// The transport's end the loader holds: commands in, events out (the waker rings on each).
pub struct Transport {
    commands: tmpsc::UnboundedSender<Command>,
    pub events: mpsc::Receiver<Event>,
}

impl Transport {
    /// Starts the transport's thread; `start` is the load's t = 0.
    pub fn start(
        cca: Option<String>,
        start: Instant,
        waker: mio::Waker,
    ) -> Result<Transport, String> {
        let (commands, mut received) = tmpsc::unbounded_channel();
        let (events, out) = mpsc::channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .map_err(|e| format!("cannot start the HTTP/2 transport: {e}"))?;
        let notify = Notify {
            events,
            waker: Arc::new(waker),
            start,
        };
        std::thread::Builder::new()
            .name("h2".into())
            .spawn(move || {
                let local = tokio::task::LocalSet::new();
                local.block_on(&runtime, async move {
                    let mut connections: Vec<Option<tmpsc::UnboundedSender<Command>>> = Vec::new();
                    while let Some(command) = received.recv().await {
                        dispatch(command, &mut connections, &cca, &notify);
                    }
                });
            })
            .map_err(|e| format!("cannot start the HTTP/2 transport: {e}"))?;
        Ok(Transport {
            commands,
            events: out,
        })
    }

    pub fn send(&self, command: Command) {
        // The transport outlives every load; a closed channel means its thread panicked.
        let _ = self.commands.send(command);
    }
}

#[derive(Clone)]
struct Notify {
    events: mpsc::Sender<Event>,
    waker: Arc<mio::Waker>,
    start: Instant,
}

impl Notify {
    fn now_us(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }

    fn tell(&self, event: Event) {
        if self.events.send(event).is_ok() {
            let _ = self.waker.wake();
        }
    }
}

fn dispatch(
    command: Command,
    connections: &mut Vec<Option<tmpsc::UnboundedSender<Command>>>,
    cca: &Option<String>,
    notify: &Notify,
) {
    match command {
        Command::Open {
            conn,
            server,
            bytes,
        } => {
            let (requests, queued) = tmpsc::unbounded_channel();
            if connections.len() <= conn {
                connections.resize(conn + 1, None);
            }
            connections[conn] = Some(requests);
            tokio::task::spawn_local(connection(
                conn,
                server,
                bytes,
                cca.clone(),
                queued,
                notify.clone(),
            ));
        }
        Command::Request { conn, .. } => {
            if let Some(Some(requests)) = connections.get(conn) {
                let _ = requests.send(command);
            }
        }
    }
}

/// One connection: connect, HTTP/2's handshake, then each request as a stream as it comes.
async fn connection(
    conn: usize,
    server: SocketAddr,
    bytes: Arc<AtomicU64>,
    cca: Option<String>,
    mut requests: tmpsc::UnboundedReceiver<Command>,
    notify: Notify,
) {
    let sender = match open(server, bytes, cca.as_deref(), conn, &notify).await {
        Ok(sender) => sender,
        Err(reason) => return notify.tell(Event::ConnectionFailed { conn, reason }),
    };
    while let Some(Command::Request {
        object,
        authority,
        path,
        size,
        ..
    }) = requests.recv().await
    {
        match ask(&sender, &authority, &path).await {
            Ok(response) => {
                notify.tell(Event::Requested {
                    object,
                    at_us: notify.now_us(),
                });
                tokio::task::spawn_local(receive(object, size, response, notify.clone()));
            }
            Err(reason) => notify.tell(Event::Failed { object, reason }),
        }
    }
}

/// Sends the GET for `path` on the connection: the response to come, or why not.
async fn ask(
    sender: &h2::client::SendRequest<Bytes>,
    authority: &str,
    path: &str,
) -> Result<h2::client::ResponseFuture, String> {
    let request = http::Request::get(format!("http://{authority}{path}"))
        .body(())
        .map_err(|e| format!("cannot ask {authority} for {path}: {e}"))?;
    let mut sender = sender
        .clone()
        .ready()
        .await
        .map_err(|e| format!("the connection failed: {e}"))?;
    sender
        .send_request(request, true)
        .map(|(response, _)| response)
        .map_err(|e| format!("sending the request failed: {e}"))
}

async fn open(
    server: SocketAddr,
    bytes: Arc<AtomicU64>,
    cca: Option<&str>,
    conn: usize,
    notify: &Notify,
) -> Result<h2::client::SendRequest<Bytes>, String> {
    let socket = sock::connecting_socket(server, cca)?;
    let stream = socket
        .connect(server)
        .await
        .map_err(|e| format!("cannot connect to {server}: {e}"))?;
    let local_port = stream.local_addr().ok().map(|a| a.port());
    notify.tell(Event::Connected {
        conn,
        local_port,
        at_us: notify.now_us(),
    });
    let (sender, connection) = h2::client::Builder::new()
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .handshake(h2io::Stream::counted(stream, bytes))
        .await
        .map_err(|e| format!("HTTP/2 handshake with {server} failed: {e}"))?;
    let failed = notify.clone();
    tokio::task::spawn_local(async move {
        let reason = match connection.await {
            Ok(()) => "the server closed the connection".to_string(),
            Err(e) => format!("the connection failed: {e}"),
        };
        failed.tell(Event::ConnectionFailed { conn, reason });
    });
    Ok(sender)
}

/// One response: its head must be 200 with the object's size, then exactly that many bytes.
async fn receive(object: usize, size: u64, response: h2::client::ResponseFuture, notify: Notify) {
    let failed = |reason: String| notify.tell(Event::Failed { object, reason });
    let response = match response.await {
        Ok(response) => response,
        Err(e) => return failed(format!("no response: {e}")),
    };
    notify.tell(Event::FirstByte {
        object,
        at_us: notify.now_us(),
    });
    if response.status() != http::StatusCode::OK {
        return failed(format!("HTTP {}", response.status()));
    }
    let length = response
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    match length {
        Some(n) if n == size => {}
        Some(n) => {
            return failed(format!(
                "the server announced {n} bytes, the page says {size}"
            ))
        }
        None => return failed("response without a valid Content-Length".to_string()),
    }
    let mut body = response.into_body();
    let mut received = 0u64;
    while let Some(chunk) = body.data().await {
        let chunk = match chunk {
            Ok(chunk) => chunk,
            Err(e) => return failed(format!("receiving failed: {e}")),
        };
        let n = chunk.len();
        let _ = body.flow_control().release_capacity(n);
        received += n as u64;
        if received > size {
            return failed(format!(
                "the server sent {} bytes more than announced",
                received - size
            ));
        }
        notify.tell(Event::Data {
            object,
            bytes: n as u64,
        });
    }
    if received < size {
        return failed(format!("the stream ended {} bytes short", size - received));
    }
    notify.tell(Event::Done {
        object,
        at_us: notify.now_us(),
    });
}
