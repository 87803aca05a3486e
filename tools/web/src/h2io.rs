// SPDX-License-Identifier: MIT
//! The TCP stream HTTP/2 runs over, in both programs: the bytes already read from it put back
//! in front (the server read the preface to tell HTTP/2 from HTTP/1.1), and what it receives
//! counted (the client reports each connection's bytes, frames and headers included).

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

pub struct Stream {
    stream: TcpStream,
    read_first: Vec<u8>,
    received: Option<Arc<AtomicU64>>,
}

impl Stream {
    /// The server's side: `read` came off the socket before HTTP/2 took it.
    pub fn rewound(stream: TcpStream, read: Vec<u8>) -> Stream {
        Stream {
            stream,
            read_first: read,
            received: None,
        }
    }

    /// The client's side: every byte received is added to `received`.
    pub fn counted(stream: TcpStream, received: Arc<AtomicU64>) -> Stream {
        Stream {
            stream,
            read_first: Vec::new(),
            received: Some(received),
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if !self.read_first.is_empty() {
            let n = self.read_first.len().min(buf.remaining());
            buf.put_slice(&self.read_first[..n]);
            self.read_first.drain(..n);
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if let Some(received) = &self.received {
            received.fetch_add((buf.filled().len() - before) as u64, Ordering::Relaxed);
        }
        polled
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, data)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
