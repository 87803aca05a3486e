// SPDX-License-Identifier: MIT
//! The few operating-system calls the standard library lacks: the monotonic clock in
//! nanoseconds, waiting on several sockets with a fine timeout, shutdown signals, and
//! TCP socket options (congestion control, not-sent low-water mark, TCP_INFO).

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

/// CLOCK_MONOTONIC in nanoseconds. Every timestamp in rtflow's packets and logs uses this
/// clock: network namespaces share it, so sender and receiver on one machine (or one VM)
/// measure frame delay on the same time line, and Python's `time.monotonic_ns()` reads it too.
pub fn now_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

static SHUTDOWN: AtomicBool = AtomicBool::new(false);

extern "C" fn on_shutdown_signal(_: libc::c_int) {
    SHUTDOWN.store(true, Ordering::Relaxed);
}

/// SIGINT and SIGTERM ask the main loop to stop; the loop then flushes its logs. The
/// handler is installed without SA_RESTART so that a blocked ppoll returns at once.
pub fn install_shutdown_handler() -> io::Result<()> {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction with a plain handler and an empty mask is valid; the
        // handler only stores to an atomic, which is async-signal-safe.
        let rc = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_shutdown_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

pub fn shutdown_requested() -> bool {
    SHUTDOWN.load(Ordering::Relaxed)
}

/// One descriptor to wait on and what to wait for.
pub struct Interest {
    pub fd: RawFd,
    pub readable: bool,
    pub writable: bool,
}

/// What `wait` found for each interest, in the same order.
#[derive(Clone, Copy, Default)]
pub struct Ready {
    pub readable: bool,
    pub writable: bool,
}

/// Longest sleep of a loop, so that a signal that slips in before its wait is seen soon.
pub const MAX_SLEEP_NS: u64 = 100_000_000;

/// Waits until one of the descriptors is ready, a signal arrives, or `timeout_ns` passes.
pub fn wait(interests: &[Interest], timeout_ns: u64) -> io::Result<Vec<Ready>> {
    let mut fds: Vec<libc::pollfd> = interests
        .iter()
        .map(|i| libc::pollfd {
            fd: i.fd,
            events: (if i.readable { libc::POLLIN } else { 0 }) | (if i.writable { libc::POLLOUT } else { 0 }),
            revents: 0,
        })
        .collect();
    let timeout = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: fds points to fds.len() valid pollfd entries; the timespec lives on the stack.
    let rc = unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, &timeout, std::ptr::null()) };
    if rc < 0 {
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
        fds.iter_mut().for_each(|f| f.revents = 0);
    }
    // Errors and hang-ups count as readable so that the next read reports them.
    let bad = libc::POLLERR | libc::POLLHUP | libc::POLLNVAL;
    Ok(fds
        .iter()
        .map(|f| Ready {
            readable: f.revents & (libc::POLLIN | bad) != 0,
            writable: f.revents & (libc::POLLOUT | bad) != 0,
        })
        .collect())
}

fn set_option<T>(fd: RawFd, level: libc::c_int, name: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: value points to a live T of the size we pass.
    let rc = unsafe {
        libc::setsockopt(fd, level, name, value as *const T as *const libc::c_void,
                         std::mem::size_of::<T>() as libc::socklen_t)
    };
    if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

pub fn set_send_buffer(socket: &impl AsRawFd, bytes: u32) -> io::Result<()> {
    set_option(socket.as_raw_fd(), libc::SOL_SOCKET, libc::SO_SNDBUF, &(bytes as libc::c_int))
}

pub fn set_receive_buffer(socket: &impl AsRawFd, bytes: u32) -> io::Result<()> {
    set_option(socket.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF, &(bytes as libc::c_int))
}

/// Selects the kernel congestion control algorithm of a TCP socket by name.
pub fn set_congestion_control(socket: &impl AsRawFd, name: &str) -> io::Result<()> {
    let fd = socket.as_raw_fd();
    // SAFETY: the option value is the name's bytes, of the length we pass.
    let rc = unsafe {
        libc::setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION,
                         name.as_ptr() as *const libc::c_void, name.len() as libc::socklen_t)
    };
    if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// The congestion control algorithm a TCP socket actually uses.
pub fn congestion_control(socket: &impl AsRawFd) -> io::Result<String> {
    let mut name = [0u8; 32];
    let mut len = name.len() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into the buffer.
    let rc = unsafe {
        libc::getsockopt(socket.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_CONGESTION,
                         name.as_mut_ptr() as *mut libc::c_void, &mut len)
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let name = &name[..len as usize];
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    Ok(String::from_utf8_lossy(&name[..end]).into_owned())
}

/// Bounds how many bytes may wait unsent in the kernel: writes beyond it fail with
/// EAGAIN, so the backlog stays in the application where it can be seen and acted on.
pub fn set_notsent_lowat(socket: &impl AsRawFd, bytes: u32) -> io::Result<()> {
    set_option(socket.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT, &(bytes as libc::c_int))
}

pub fn set_nodelay(socket: &impl AsRawFd) -> io::Result<()> {
    set_option(socket.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_NODELAY, &(1 as libc::c_int))
}

/// SO_TIMESTAMPNS (and its control message type) on every architecture with the generic
/// socket ABI and 64-bit time (x86-64, arm64, riscv64).
const SO_TIMESTAMPNS: libc::c_int = 35;

/// Asks the kernel to stamp every datagram with its arrival time at the host (taken
/// when the packet enters the network stack), which a busy receiver cannot distort.
pub fn enable_arrival_timestamps(socket: &impl AsRawFd) -> io::Result<()> {
    set_option(socket.as_raw_fd(), libc::SOL_SOCKET, SO_TIMESTAMPNS, &(1 as libc::c_int))
}

/// A datagram's length, sender and arrival time (CLOCK_MONOTONIC ns). The kernel stamps
/// in CLOCK_REALTIME; the stamp is moved to the monotonic clock by the offset between the
/// two clocks read right after the datagram is taken (they do not drift apart in that
/// instant). Without a kernel stamp the time of reading is used.
pub fn recv_stamped(socket: &impl AsRawFd, buf: &mut [u8]) -> io::Result<(usize, SocketAddr, u64)> {
    // SAFETY: zeroed sockaddr_storage and msghdr are valid; every pointer in the msghdr
    // points to a live buffer of the stated length for the duration of the call.
    let mut name: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut control = [0u64; 8];
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr() as *mut libc::c_void, iov_len: buf.len() };
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = &mut name as *mut libc::sockaddr_storage as *mut libc::c_void;
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = std::mem::size_of_val(&control);
    let len = unsafe { libc::recvmsg(socket.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
    if len < 0 {
        return Err(io::Error::last_os_error());
    }
    let (mono, real) = (now_ns(), clock_ns(libc::CLOCK_REALTIME));
    let arrival = kernel_stamp(&msg).map_or(mono, |stamp| stamp.saturating_sub(real.saturating_sub(mono)));
    let from = socket_address(&name).ok_or_else(|| io::Error::other("datagram from an unknown address family"))?;
    Ok((len as usize, from, arrival))
}

fn kernel_stamp(msg: &libc::msghdr) -> Option<u64> {
    // SAFETY: the CMSG macros walk the control buffer the kernel filled, within msg_controllen.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == SO_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg) as *const libc::timespec);
                return Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            cmsg = libc::CMSG_NXTHDR(msg, cmsg);
        }
    }
    None
}

fn socket_address(name: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match name.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let v4 = unsafe { &*(name as *const libc::sockaddr_storage as *const libc::sockaddr_in) };
            let ip = Ipv4Addr::from(u32::from_be(v4.sin_addr.s_addr));
            Some(SocketAddr::V4(SocketAddrV4::new(ip, u16::from_be(v4.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let v6 = unsafe { &*(name as *const libc::sockaddr_storage as *const libc::sockaddr_in6) };
            let ip = Ipv6Addr::from(v6.sin6_addr.s6_addr);
            Some(SocketAddr::V6(SocketAddrV6::new(ip, u16::from_be(v6.sin6_port), v6.sin6_flowinfo,
                                                  v6.sin6_scope_id)))
        }
        _ => None,
    }
}

/// The leading part of Linux's `struct tcp_info` (include/uapi/linux/tcp.h) up to
/// `tcpi_delivery_rate`; the layout is append-only, so this prefix is stable.
#[repr(C)]
#[derive(Default, Clone, Copy)]
pub struct TcpInfo {
    pub state: u8,
    pub ca_state: u8,
    pub retransmits: u8,
    pub probes: u8,
    pub backoff: u8,
    pub options: u8,
    pub wscale: u8,
    pub flags: u8,
    pub rto: u32,
    pub ato: u32,
    pub snd_mss: u32,
    pub rcv_mss: u32,
    pub unacked: u32,
    pub sacked: u32,
    pub lost: u32,
    pub retrans: u32,
    pub fackets: u32,
    pub last_data_sent: u32,
    pub last_ack_sent: u32,
    pub last_data_recv: u32,
    pub last_ack_recv: u32,
    pub pmtu: u32,
    pub rcv_ssthresh: u32,
    pub rtt_us: u32,
    pub rttvar_us: u32,
    pub snd_ssthresh: u32,
    pub snd_cwnd: u32,
    pub advmss: u32,
    pub reordering: u32,
    pub rcv_rtt: u32,
    pub rcv_space: u32,
    pub total_retrans: u32,
    pub pacing_rate: u64,
    pub max_pacing_rate: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub segs_out: u32,
    pub segs_in: u32,
    pub notsent_bytes: u32,
    pub min_rtt: u32,
    pub data_segs_in: u32,
    pub data_segs_out: u32,
    pub delivery_rate: u64,
}

pub fn tcp_info(socket: &impl AsRawFd) -> io::Result<TcpInfo> {
    let mut info = TcpInfo::default();
    let mut len = std::mem::size_of::<TcpInfo>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into our repr(C) struct.
    let rc = unsafe {
        libc::getsockopt(socket.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_INFO,
                         &mut info as *mut TcpInfo as *mut libc::c_void, &mut len)
    };
    if rc == 0 { Ok(info) } else { Err(io::Error::last_os_error()) }
}

/// The congestion control algorithms this kernel offers (loaded or loadable on demand).
pub fn available_congestion_controls() -> Vec<String> {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .map(|s| s.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
}
