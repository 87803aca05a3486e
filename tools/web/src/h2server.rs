// SPDX-License-Identifier: MIT
//! web-server's HTTP/2 side: a connection that opens with HTTP/2's preface is served by the
//! `h2` crate on one tokio runtime shared by all such connections (a thread of its own).
//!
//! Responses leave one at a time, in the order they were asked for: RFC 9218's default
//! priority (urgency 3, not incremental) for every request, which is what Chrome's priority
//! chain asks of a server too. The simulator's page model answers the same way
//! (sim/ns3/apps/page-load.cc), so both engines load a multiplexed page alike. h2 sends the
//! frames of every stream it holds data for in turn, so a stream is given at most one
//! frame's worth at a time (`max_send_buffer_size`), and the next response starts when the
//! last frame of the one before is in h2's hands: they overlap by one frame at most.

use crate::h2io;
use bytes::Bytes;
use std::future::poll_fn;
use tokio::net::TcpStream;
use tokio::sync::mpsc;

/// The bytes an HTTP/2 connection opens with (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// One DATA frame at HTTP/2's default SETTINGS_MAX_FRAME_SIZE.
const FRAME: usize = 16 * 1024;
static BODY: [u8; FRAME] = [b'x'; FRAME];

/// The runtime every HTTP/2 connection runs on.
pub struct Runtime {
    handle: tokio::runtime::Handle,
}

impl Runtime {
    pub fn start() -> Result<Runtime, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .map_err(|e| format!("cannot start the HTTP/2 runtime: {e}"))?;
        let handle = runtime.handle().clone();
        std::thread::Builder::new()
            .name("h2".into())
            .spawn(move || runtime.block_on(std::future::pending::<()>()))
            .map_err(|e| format!("cannot start the HTTP/2 runtime: {e}"))?;
        Ok(Runtime { handle })
    }

    /// Serves `stream`, whose first bytes (`read`, the preface at least) were already read.
    /// Once it has been `idle`, the kernel probes the client (TCP keepalive) and ends a
    /// connection whose client is gone, which ends its task: a browser keeps an HTTP/2
    /// connection open while idle, and a timer of the runtime's own would change the lab's
    /// timing in UML's virtual time (the demo's figures moved with one).
    pub fn serve(&self, stream: std::net::TcpStream, read: Vec<u8>, idle: std::time::Duration) {
        if stream.set_nonblocking(true).is_err() || crate::sock::probe_when_idle(&stream, idle).is_err() {
            return;
        }
        self.handle.spawn(async move {
            if let Ok(stream) = TcpStream::from_std(stream) {
                connection(h2io::Stream::rewound(stream, read)).await;
            }
        });
    }
}

type Asked = (
    http::Request<h2::RecvStream>,
    h2::server::SendResponse<Bytes>,
);

async fn connection(stream: h2io::Stream) {
    let Ok(mut conn) = h2::server::Builder::new()
        .max_send_buffer_size(FRAME)
        .handshake(stream)
        .await
    else {
        return;
    };
    let (queue, queued) = mpsc::unbounded_channel::<Asked>();
    tokio::spawn(respond_in_order(queued));
    // Accepting drives the connection, so the responses' frames leave while it waits here.
    while let Some(Ok(asked)) = conn.accept().await {
        if queue.send(asked).is_err() {
            break;
        }
    }
}

async fn respond_in_order(mut queued: mpsc::UnboundedReceiver<Asked>) {
    while let Some((request, mut respond)) = queued.recv().await {
        let path = request
            .uri()
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("");
        let (status, bytes, text) =
            match answer(request.method(), path, request.body().is_end_stream()) {
                Ok(bytes) => (http::StatusCode::OK, bytes, None),
                Err((status, reason)) => {
                    (status, reason.len() as u64 + 1, Some(format!("{reason}\n")))
                }
            };
        let mut head = http::Response::builder()
            .status(status)
            .header(http::header::CONTENT_LENGTH, bytes);
        head = match &text {
            None => head
                .header(http::header::CONTENT_TYPE, "application/octet-stream")
                .header(http::header::CACHE_CONTROL, "no-store"),
            Some(_) if status == http::StatusCode::METHOD_NOT_ALLOWED => head
                .header(http::header::CONTENT_TYPE, "text/plain")
                .header(http::header::ALLOW, "GET"),
            Some(_) => head.header(http::header::CONTENT_TYPE, "text/plain"),
        };
        let Ok(mut send) = respond.send_response(head.body(()).expect("a valid head"), bytes == 0)
        else {
            continue;
        };
        let sent = match text {
            None => send_body(&mut send, bytes).await,
            Some(text) => send.send_data(Bytes::from(text), true).is_ok(),
        };
        if !sent {
            send.send_reset(h2::Reason::INTERNAL_ERROR);
        }
    }
}

/// The body's size, or the status and reason of a refusal (as the HTTP/1.1 side's), for a
/// request of `method` and `path` whose stream ended with its head (`body_ends`) or not.
fn answer(
    method: &http::Method,
    path: &str,
    body_ends: bool,
) -> Result<u64, (http::StatusCode, String)> {
    if method != http::Method::GET {
        return Err((
            http::StatusCode::METHOD_NOT_ALLOWED,
            "only GET is served".into(),
        ));
    }
    if !body_ends {
        return Err((
            http::StatusCode::BAD_REQUEST,
            "request bodies are not accepted".into(),
        ));
    }
    crate::server::requested_bytes(path).map_err(|reason| (http::StatusCode::BAD_REQUEST, reason))
}

/// Sends `left` bytes as the peer's flow control allows; false when the stream went away.
async fn send_body(send: &mut h2::SendStream<Bytes>, mut left: u64) -> bool {
    while left > 0 {
        send.reserve_capacity(left.min(FRAME as u64) as usize);
        let granted = match poll_fn(|cx| send.poll_capacity(cx)).await {
            Some(Ok(n)) => n,
            _ => return false,
        };
        let n = (granted as u64).min(left);
        if n == 0 {
            continue;
        }
        if send
            .send_data(Bytes::from_static(&BODY[..n as usize]), n == left)
            .is_err()
        {
            return false;
        }
        left -= n;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_as_the_http11_side() {
        assert_eq!(
            answer(&http::Method::GET, "/o1?bytes=15360", true),
            Ok(15360)
        );
        let status = |method: http::Method, path: &str, ends: bool| {
            answer(&method, path, ends).unwrap_err().0
        };
        assert_eq!(
            status(http::Method::GET, "/x", true),
            http::StatusCode::BAD_REQUEST
        );
        assert_eq!(
            status(http::Method::GET, "/x?bytes=4", false),
            http::StatusCode::BAD_REQUEST
        );
        assert_eq!(
            status(http::Method::POST, "/x?bytes=4", true),
            http::StatusCode::METHOD_NOT_ALLOWED
        );
    }
}
