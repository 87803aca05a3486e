// SPDX-License-Identifier: MIT
//! The TCP sender: the same frames, written to one TCP connection that uses the kernel
//! congestion control the user names. Each frame is a media header (which carries the
//! payload length) followed by its payload. The bitrate follows rtcontrol's `tcp_rate`.

use std::collections::VecDeque;
use std::io::{ErrorKind, IoSlice, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;

use rtcontrol::tcp_rate::{TcpRateAdapter, CONTROL_INTERVAL_NS};

use crate::control::RateBounds;
use crate::encoder::{Encoder, EncoderConfig, Frame};
use crate::logs::{float, CsvLog, Field};
use crate::sys::{self, Interest, TcpInfo};
use crate::timetable::Timetable;
use crate::units::format_rate;
use crate::wire::{FeedbackRequest, FramePacket, Kind, MediaHeader, MEDIA_HEADER_LEN};

/// How long to keep trying while the receiver is not listening yet.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const CONNECT_RETRY: Duration = Duration::from_millis(50);
static ZEROS: [u8; 64 << 10] = [0; 64 << 10];

pub struct TcpSendConfig {
    pub to: SocketAddr,
    pub duration_ns: u64,
    pub encoder: EncoderConfig,
    pub cca: String,
    pub notsent_lowat: u32,
    pub bounds: RateBounds,
    pub log_interval_ns: u64,
}

/// A frame waiting in the application, partly written perhaps.
struct Pending {
    header: [u8; MEDIA_HEADER_LEN],
    header_left: usize,
    payload_left: u64,
    capture_ns: u64,
}

struct Sender {
    stream: TcpStream,
    encoder: Encoder,
    adapter: TcpRateAdapter,
    queue: VecDeque<Pending>,
    queued_bytes: u64,
    blocked: bool,
    written_interval: u64,
    written_total: u64,
    frames: u64,
    target_sum: f64,
    last_info: TcpInfo,
}

fn connect_with_retries(to: SocketAddr) -> Result<TcpStream, String> {
    let deadline = std::time::Instant::now() + CONNECT_TIMEOUT;
    loop {
        match TcpStream::connect_timeout(&to, CONNECT_TIMEOUT) {
            Ok(stream) => return Ok(stream),
            Err(e) if e.kind() == ErrorKind::ConnectionRefused && std::time::Instant::now() < deadline => {
                std::thread::sleep(CONNECT_RETRY);
            }
            Err(e) => return Err(format!("cannot connect to {to}: {e}")),
        }
    }
}

fn connect(config: &TcpSendConfig) -> Result<TcpStream, String> {
    let stream = connect_with_retries(config.to)?;
    sys::set_congestion_control(&stream, &config.cca).map_err(|e| {
        format!("cannot use TCP congestion control {:?}: {e} (this kernel has loaded: {})", config.cca,
                sys::available_congestion_controls().join(" "))
    })?;
    sys::set_nodelay(&stream).map_err(|e| format!("cannot set TCP_NODELAY: {e}"))?;
    sys::set_notsent_lowat(&stream, config.notsent_lowat).map_err(|e| format!("cannot set TCP_NOTSENT_LOWAT: {e}"))?;
    stream.set_nonblocking(true).map_err(|e| format!("cannot make the socket non-blocking: {e}"))?;
    Ok(stream)
}

pub fn run(config: TcpSendConfig, mut rate_log: CsvLog) -> Result<(), String> {
    let stream = connect(&config)?;
    let start = sys::now_ns();
    let encoder = Encoder::new(config.encoder.clone(), start);
    let adapter = TcpRateAdapter::new(config.bounds, encoder.frame_interval_ns());
    let mut sender = Sender {
        stream, encoder, adapter, queue: VecDeque::new(), queued_bytes: 0, blocked: false, written_interval: 0,
        written_total: 0, frames: 0, target_sum: 0.0, last_info: TcpInfo::default(),
    };
    let mut timetable = Timetable::new(start, config.duration_ns, CONTROL_INTERVAL_NS, config.log_interval_ns);
    while let Some(now) = timetable.round() {
        sender.capture_due_frames(now);
        sender.write_queued()?;
        if let Some(oldest) = sender.queue.front() {
            sender.adapter.note_wait(now.saturating_sub(oldest.capture_ns));
        }
        if timetable.step_due(now) {
            let info = sender.info()?;
            sender.adapter.update(now, info.bytes_acked);
        }
        if let Some(covered) = timetable.log_due(now) {
            sender.log_rates(&mut rate_log, now, covered)?;
        }
        let interest = Interest { fd: sender.stream.as_raw_fd(), readable: true, writable: sender.blocked };
        let ready = sys::wait(&[interest], timetable.sleep_ns(now, sender.encoder.next_capture_ns()))
            .map_err(|e| format!("wait failed: {e}"))?;
        if ready[0].writable {
            sender.blocked = false;
        }
        if ready[0].readable {
            sender.check_peer()?;
        }
    }
    rate_log.finish()?;
    sender.finish(sys::now_ns() - start)
}

impl Sender {
    fn capture_due_frames(&mut self, now: u64) {
        while self.encoder.next_capture_ns() <= now {
            let target = self.adapter.target_bps();
            let frame = self.encoder.capture(target);
            self.enqueue(&frame);
            self.frames += 1;
            self.target_sum += target;
        }
    }

    fn enqueue(&mut self, frame: &Frame) {
        let payload = frame.wire_budget.saturating_sub(MEDIA_HEADER_LEN as u64).max(1);
        let header = MediaHeader {
            kind: Kind::Media, feedback: FeedbackRequest::default(), seq: frame.id,
            frame: FramePacket { frame_id: frame.id, capture_ns: frame.capture_ns, key: frame.key,
                                 frame_size: payload as u32, index: 0, count: 1 },
        };
        let mut bytes = [0u8; MEDIA_HEADER_LEN];
        header.encode(&mut bytes);
        self.queued_bytes += MEDIA_HEADER_LEN as u64 + payload;
        self.queue.push_back(Pending { header: bytes, header_left: MEDIA_HEADER_LEN, payload_left: payload,
                                       capture_ns: frame.capture_ns });
    }

    /// Writes queued frames until the kernel refuses more (TCP_NOTSENT_LOWAT reached).
    fn write_queued(&mut self) -> Result<(), String> {
        while !self.blocked {
            let Some(front) = self.queue.front_mut() else { return Ok(()) };
            let header = &front.header[MEDIA_HEADER_LEN - front.header_left..];
            let payload = &ZEROS[..front.payload_left.min(ZEROS.len() as u64) as usize];
            let written = match self.stream.write_vectored(&[IoSlice::new(header), IoSlice::new(payload)]) {
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    self.blocked = true;
                    return Ok(());
                }
                Err(e) => return Err(format!("TCP send failed: {e}")),
            };
            let from_header = written.min(front.header_left);
            front.header_left -= from_header;
            front.payload_left -= (written - from_header) as u64;
            self.queued_bytes -= written as u64;
            self.written_interval += written as u64;
            self.written_total += written as u64;
            if front.header_left == 0 && front.payload_left == 0 {
                self.queue.pop_front();
            }
        }
        Ok(())
    }

    /// The receiver never sends data: readability means it closed or the connection failed.
    fn check_peer(&mut self) -> Result<(), String> {
        let mut byte = [0u8; 1];
        match std::io::Read::read(&mut self.stream, &mut byte) {
            Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(()),
            Err(e) => Err(format!("TCP connection failed: {e}")),
            Ok(_) => Err("the receiver closed the connection".to_string()),
        }
    }

    fn info(&self) -> Result<TcpInfo, String> {
        sys::tcp_info(&self.stream).map_err(|e| format!("cannot read TCP_INFO: {e}"))
    }

    fn log_rates(&mut self, log: &mut CsvLog, now: u64, interval_ns: u64) -> Result<(), String> {
        let info = self.info()?;
        let previous = std::mem::replace(&mut self.last_info, info);
        let per_second = |bytes: u64| (interval_ns > 0).then(|| bytes as f64 * 8e9 / interval_ns as f64);
        let segments = info.segs_out.wrapping_sub(previous.segs_out);
        let retransmitted = info.total_retrans.wrapping_sub(previous.total_retrans);
        let mss = info.snd_mss as u64;
        log.row(&[
            Field::Int(now),
            float(Some(self.adapter.target_bps()), 0),
            float(Some(info.pacing_rate as f64 * 8.0), 0),
            float(per_second(std::mem::take(&mut self.written_interval)), 0),
            float(per_second(info.bytes_acked.saturating_sub(previous.bytes_acked)), 0),
            float(Some(info.rtt_us as f64 / 1e3), 3),
            float((segments > 0).then(|| retransmitted as f64 / segments as f64), 4),
            Field::Int(info.unacked as u64 * mss),
            Field::Int(self.queued_bytes + info.notsent_bytes as u64),
            Field::Int(info.snd_cwnd as u64 * mss),
        ])
    }

    fn finish(self, elapsed_ns: u64) -> Result<(), String> {
        let cca = sys::congestion_control(&self.stream).unwrap_or_else(|e| format!("unknown: {e}"));
        let _ = self.stream.shutdown(std::net::Shutdown::Write);
        let seconds = elapsed_ns as f64 / 1e9;
        eprintln!("rtflow send: tcp ({cca}), {seconds:.1} s, {} frames, mean target {}, mean written {}", self.frames,
                  format_rate(self.target_sum / self.frames.max(1) as f64),
                  format_rate(self.written_total as f64 * 8.0 / seconds.max(1e-9)));
        Ok(())
    }
}
