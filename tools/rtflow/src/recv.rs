// SPDX-License-Identifier: MIT
//! The receiver: listens for UDP datagrams and a TCP connection on the same address, so
//! the sender's mode needs no matching option here. For UDP it gathers packets into
//! frames and sends feedback; for TCP it reads length-prefixed frames. Every frame goes
//! to the frame log. It stops when the sender says bye (UDP) or closes (TCP), after
//! `--duration`, or on SIGINT/SIGTERM, logging the frames still open as incomplete.

use std::io::{ErrorKind, Read};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;

use crate::feedback::FeedbackBuilder;
use crate::frames::{Assembler, FrameRecord};
use crate::logs::CsvLog;
use crate::sys::{self, Interest, MAX_SLEEP_NS};
use crate::wire::{Kind, MediaHeader, MAX_DATAGRAM, MEDIA_HEADER_LEN};

const SOCKET_BUFFER: u32 = 4 << 20;
const EXPIRE_EVERY_NS: u64 = 100_000_000;
/// Datagrams read in one go before feedback and timers get a turn.
const READ_BATCH: usize = 256;

pub struct RecvConfig {
    pub listen: SocketAddr,
    pub duration_ns: Option<u64>,
    pub frame_timeout_ns: u64,
}

struct Receiver {
    udp: UdpSocket,
    listener: TcpListener,
    tcp: Option<TcpFrames>,
    peer: Option<SocketAddr>,
    feedback: FeedbackBuilder,
    assembler: Assembler,
    frame_log: CsvLog,
    delays_ns: Vec<u64>,
    incomplete: u64,
    sender_done: bool,
}

fn open_sockets(listen: SocketAddr) -> Result<(UdpSocket, TcpListener), String> {
    let udp = UdpSocket::bind(listen).map_err(|e| format!("cannot bind UDP {listen}: {e}"))?;
    let listener = TcpListener::bind(listen).map_err(|e| format!("cannot listen on TCP {listen}: {e}"))?;
    for result in [udp.set_nonblocking(true), listener.set_nonblocking(true)] {
        result.map_err(|e| format!("cannot make sockets non-blocking: {e}"))?;
    }
    sys::set_receive_buffer(&udp, SOCKET_BUFFER).map_err(|e| format!("cannot size the receive buffer: {e}"))?;
    sys::enable_arrival_timestamps(&udp).map_err(|e| format!("cannot enable arrival timestamps: {e}"))?;
    Ok((udp, listener))
}

pub fn run(config: RecvConfig, frame_log: CsvLog) -> Result<(), String> {
    let (udp, listener) = open_sockets(config.listen)?;
    eprintln!("rtflow recv: listening on {} (UDP and TCP)", config.listen);
    let mut receiver = Receiver {
        udp, listener, tcp: None, peer: None,
        feedback: FeedbackBuilder::new(),
        assembler: Assembler::new(config.frame_timeout_ns),
        frame_log, delays_ns: Vec::new(), incomplete: 0, sender_done: false,
    };
    let start = sys::now_ns();
    let end = config.duration_ns.map(|d| start + d);
    let mut next_expire = start + EXPIRE_EVERY_NS;
    while !receiver.sender_done && !sys::shutdown_requested() {
        let now = sys::now_ns();
        if end.is_some_and(|e| now >= e) {
            break;
        }
        let wake = [receiver.feedback.deadline_ns(), Some(next_expire), end].into_iter().flatten().min().unwrap();
        let ready = sys::wait(&receiver.interests(), wake.saturating_sub(now).min(MAX_SLEEP_NS))
            .map_err(|e| format!("wait failed: {e}"))?;
        if ready[0].readable {
            receiver.read_udp()?;
        }
        if ready[1].readable {
            receiver.accept()?;
        }
        if ready.get(2).is_some_and(|r| r.readable) {
            receiver.read_tcp()?;
        }
        let now = sys::now_ns();
        if receiver.feedback.is_due(now) {
            receiver.send_feedback(now)?;
        }
        if now >= next_expire {
            let expired = receiver.assembler.expire(now);
            receiver.log_frames(&expired)?;
            next_expire = now + EXPIRE_EVERY_NS;
        }
    }
    receiver.finish()
}

impl Receiver {
    fn interests(&self) -> Vec<Interest> {
        let mut interests = vec![
            Interest { fd: self.udp.as_raw_fd(), readable: true, writable: false },
            Interest { fd: self.listener.as_raw_fd(), readable: true, writable: false },
        ];
        if let Some(tcp) = &self.tcp {
            interests.push(Interest { fd: tcp.stream.as_raw_fd(), readable: true, writable: false });
        }
        interests
    }

    fn read_udp(&mut self) -> Result<(), String> {
        let mut buf = [0u8; MAX_DATAGRAM];
        for _ in 0..READ_BATCH {
            let (len, from, arrival) = match sys::recv_stamped(&self.udp, &mut buf) {
                Ok(got) => got,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => return Err(format!("receive failed: {e}")),
            };
            let Some(header) = MediaHeader::decode(&buf[..len]) else { continue };
            self.peer = Some(from);
            match header.kind {
                Kind::Bye => self.sender_done = true,
                Kind::Media => {
                    self.feedback.on_packet(header.seq, arrival, header.feedback);
                    if let Some(frame) = self.assembler.on_packet(&header.frame, arrival) {
                        self.log_frames(&[frame])?;
                    }
                }
                Kind::Padding => self.feedback.on_packet(header.seq, arrival, header.feedback),
                Kind::Feedback => {}
            }
            let now = sys::now_ns();
            if self.feedback.is_due(now) {
                self.send_feedback(now)?;
            }
        }
        Ok(())
    }

    fn send_feedback(&mut self, now: u64) -> Result<(), String> {
        let datagrams = self.feedback.take_datagrams(now);
        let Some(peer) = self.peer else { return Ok(()) };
        for datagram in datagrams {
            match self.udp.send_to(&datagram, peer) {
                Ok(_) => {}
                // Feedback is best effort, like RTCP: a lost report only delays the sender.
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::ConnectionRefused) => {}
                Err(e) => return Err(format!("cannot send feedback to {peer}: {e}")),
            }
        }
        Ok(())
    }

    fn accept(&mut self) -> Result<(), String> {
        match self.listener.accept() {
            Ok((stream, _)) if self.tcp.is_none() => {
                stream.set_nonblocking(true).map_err(|e| format!("cannot make the connection non-blocking: {e}"))?;
                self.tcp = Some(TcpFrames::new(stream));
                Ok(())
            }
            Ok(_) => Ok(()), // one stream at a time: a second connection is closed at once
            Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(()),
            Err(e) => Err(format!("accept failed: {e}")),
        }
    }

    fn read_tcp(&mut self) -> Result<(), String> {
        let Some(tcp) = &mut self.tcp else { return Ok(()) };
        let (frames, closed) = tcp.read()?;
        self.sender_done |= closed;
        self.log_frames(&frames)
    }

    fn log_frames(&mut self, frames: &[FrameRecord]) -> Result<(), String> {
        for frame in frames {
            match frame.delay_ns() {
                Some(delay) => self.delays_ns.push(delay),
                None => self.incomplete += 1,
            }
            frame.write(&mut self.frame_log)?;
        }
        Ok(())
    }

    fn finish(mut self) -> Result<(), String> {
        let now = sys::now_ns();
        self.send_feedback(now)?;
        let rest = self.assembler.finish(now);
        self.log_frames(&rest)?;
        self.frame_log.finish()?;
        self.delays_ns.sort_unstable();
        let percentile = |p: f64| match self.delays_ns.len() {
            0 => "-".to_string(),
            n => format!("{:.1}", self.delays_ns[((n - 1) as f64 * p).round() as usize] as f64 / 1e6),
        };
        eprintln!("rtflow recv: {} frames complete, {} incomplete; frame delay p50 {} ms, p95 {} ms, max {} ms",
                  self.delays_ns.len(), self.incomplete, percentile(0.5), percentile(0.95), percentile(1.0));
        Ok(())
    }
}

/// Frames arriving on a TCP connection: a media header, then `frame_size` payload bytes.
struct TcpFrames {
    stream: TcpStream,
    header: Vec<u8>,
    header_started_ns: u64,
    /// The frame being read and when its first byte arrived.
    current: Option<(MediaHeader, u64)>,
    remaining: u64,
}

impl TcpFrames {
    fn new(stream: TcpStream) -> TcpFrames {
        TcpFrames { stream, header: Vec::with_capacity(MEDIA_HEADER_LEN), header_started_ns: 0, current: None, remaining: 0 }
    }

    /// Reads what has arrived; returns the frames it completed and whether the peer closed.
    fn read(&mut self) -> Result<(Vec<FrameRecord>, bool), String> {
        let mut buf = vec![0u8; 64 << 10];
        let mut frames = Vec::new();
        loop {
            let len = match self.stream.read(&mut buf) {
                Ok(0) => return Ok((frames, true)),
                Ok(len) => len,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok((frames, false)),
                Err(e) if e.kind() == ErrorKind::ConnectionReset => return Ok((frames, true)),
                Err(e) => return Err(format!("TCP receive failed: {e}")),
            };
            let arrival = sys::now_ns();
            let mut data = &buf[..len];
            while !data.is_empty() {
                data = self.consume(data, arrival, &mut frames)?;
            }
        }
    }

    /// Takes bytes for the header or the payload of the current frame; returns the rest.
    fn consume<'a>(&mut self, data: &'a [u8], arrival: u64, frames: &mut Vec<FrameRecord>)
                   -> Result<&'a [u8], String> {
        let rest = match self.current {
            None => {
                let take = (MEDIA_HEADER_LEN - self.header.len()).min(data.len());
                if self.header.is_empty() {
                    self.header_started_ns = arrival;
                }
                self.header.extend_from_slice(&data[..take]);
                if self.header.len() == MEDIA_HEADER_LEN {
                    let header = MediaHeader::decode(&self.header)
                        .filter(|h| h.kind == Kind::Media)
                        .ok_or_else(|| "the TCP peer does not speak rtflow (bad frame header)".to_string())?;
                    self.header.clear();
                    self.current = Some((header, self.header_started_ns));
                    self.remaining = header.frame.frame_size as u64;
                }
                &data[take..]
            }
            Some(_) => {
                let take = self.remaining.min(data.len() as u64) as usize;
                self.remaining -= take as u64;
                &data[take..]
            }
        };
        if let (Some((header, first)), 0) = (self.current, self.remaining) {
            let frame = header.frame;
            frames.push(FrameRecord {
                id: frame.frame_id, capture_ns: frame.capture_ns, key: Some(frame.key),
                size: Some(frame.frame_size), packets: None, first_arrival_ns: Some(first),
                last_arrival_ns: Some(arrival), complete: true,
            });
            self.current = None;
        }
        Ok(rest)
    }
}
