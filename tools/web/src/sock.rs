// SPDX-License-Identifier: MIT
//! Sockets with the options both programs need: a chosen congestion control (TCP_CONGESTION)
//! set before the connection starts, and TCP_NODELAY as browsers and servers use it.

use socket2::{Domain, Protocol, SockAddr, SockRef, Socket, TcpKeepalive, Type};
use std::net::SocketAddr;
use std::time::Duration;

/// Keepalive probes unanswered before the kernel ends a connection.
const PROBES: u32 = 3;

fn tcp_socket(addr: &SocketAddr, cca: Option<&str>) -> Result<Socket, String> {
    let socket = Socket::new(
        Domain::for_address(*addr),
        Type::STREAM,
        Some(Protocol::TCP),
    )
    .map_err(|e| format!("cannot create a TCP socket: {e}"))?;
    if let Some(name) = cca {
        socket.set_tcp_congestion(name.as_bytes()).map_err(|e| {
            format!(
                "cannot use congestion control {name:?}: {e} (available: {})",
                available_ccas()
            )
        })?;
    }
    Ok(socket)
}

fn available_ccas() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".to_string())
}

/// Fails early, with a clear message, if the congestion control cannot be used.
pub fn check_cca(name: &str) -> Result<(), String> {
    tcp_socket(&"127.0.0.1:0".parse().unwrap(), Some(name)).map(|_| ())
}

/// A listening socket; accepted connections inherit its congestion control.
pub fn listen(addr: SocketAddr, cca: Option<&str>) -> Result<std::net::TcpListener, String> {
    let socket = tcp_socket(&addr, cca)?;
    socket
        .set_reuse_address(true)
        .map_err(|e| format!("SO_REUSEADDR on {addr}: {e}"))?;
    socket
        .bind(&SockAddr::from(addr))
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    socket
        .listen(1024)
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    Ok(socket.into())
}

/// TCP keepalive on an accepted connection: after `idle` with nothing received the kernel
/// probes the client every sixth of `idle` (at least 1 s) and ends the connection when
/// `PROBES` in a row go unanswered (60 s: closed 90 s after a client vanished).
pub fn probe_when_idle(stream: &std::net::TcpStream, idle: Duration) -> std::io::Result<()> {
    let interval = (idle / 6).max(Duration::from_secs(1));
    SockRef::from(stream).set_tcp_keepalive(
        &TcpKeepalive::new()
            .with_time(idle)
            .with_interval(interval)
            .with_retries(PROBES),
    )
}

/// A client's socket: TCP_NODELAY, non-blocking, not yet connected.
fn client_socket(addr: SocketAddr, cca: Option<&str>) -> Result<Socket, String> {
    let socket = tcp_socket(&addr, cca)?;
    socket
        .set_nodelay(true)
        .map_err(|e| format!("TCP_NODELAY: {e}"))?;
    socket
        .set_nonblocking(true)
        .map_err(|e| format!("O_NONBLOCK: {e}"))?;
    Ok(socket)
}

/// Starts a non-blocking connection; completion is reported by the event loop.
pub fn connect_nonblocking(
    addr: SocketAddr,
    cca: Option<&str>,
) -> Result<mio::net::TcpStream, String> {
    let socket = client_socket(addr, cca)?;
    match socket.connect(&SockAddr::from(addr)) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(format!("cannot connect to {addr}: {e}")),
    }
    Ok(mio::net::TcpStream::from_std(socket.into()))
}

/// A socket for tokio's connect (web-client's HTTP/2 transport), with the same options.
pub fn connecting_socket(
    addr: SocketAddr,
    cca: Option<&str>,
) -> Result<tokio::net::TcpSocket, String> {
    Ok(tokio::net::TcpSocket::from_std_stream(
        client_socket(addr, cca)?.into(),
    ))
}
