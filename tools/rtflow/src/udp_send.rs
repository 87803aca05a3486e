// SPDX-License-Identifier: MIT
//! The UDP sender: one thread, one non-blocking socket, one loop that captures frames on
//! schedule, lets the pacer send what the controller allows, reads feedback, ticks the
//! controller and writes the rate log, then sleeps until the next of those is due.

use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

use crate::control::{Controller, TICK_NS};
use crate::encoder::{Encoder, EncoderConfig};
use crate::history::{History, Outcome};
use crate::logs::{float, CsvLog, Field};
use crate::pacer::{MediaPacket, Outgoing, Pacer, PADDING_PAYLOAD};
use crate::sys::{self, Interest};
use crate::timetable::Timetable;
use crate::units::format_rate;
use crate::wire::{self, FramePacket, Kind, MediaHeader, MAX_DATAGRAM, MEDIA_HEADER_LEN};

/// The socket may hold many datagrams: the sender's own queue is the pacer's.
const SOCKET_BUFFER: u32 = 4 << 20;
/// When the bye datagrams go out after the last media packet: spread over a quarter of a
/// second, so that some arrive after a full bottleneck queue has drained.
const BYE_SCHEDULE_MS: [u64; 5] = [0, 10, 30, 70, 150];

pub struct UdpSendConfig {
    /// The controller's name, for the summary line.
    pub label: &'static str,
    pub to: SocketAddr,
    pub bind: SocketAddr,
    pub duration_ns: u64,
    pub encoder: EncoderConfig,
    pub log_interval_ns: u64,
    /// Lost packets of frames captured less than this long ago are sent again (0: never).
    pub retransmit_window_ns: u64,
}

/// Everything the loop owns.
struct Sender {
    socket: UdpSocket,
    controller: Box<dyn Controller>,
    encoder: Encoder,
    pacer: Pacer,
    history: History,
    rate_log: CsvLog,
    buf: [u8; MAX_DATAGRAM],
    blocked_on_socket: bool,
    sent_bytes_interval: u64,
    retransmit_window_ns: u64,
    totals: Totals,
}

#[derive(Default)]
struct Totals {
    frames: u64,
    target_sum: f64,
    sent_bytes: u64,
    retransmitted: u64,
}

fn open_socket(config: &UdpSendConfig) -> Result<UdpSocket, String> {
    let socket = UdpSocket::bind(config.bind).map_err(|e| format!("cannot bind UDP socket to {}: {e}", config.bind))?;
    socket.connect(config.to).map_err(|e| format!("cannot reach {}: {e}", config.to))?;
    socket.set_nonblocking(true).map_err(|e| format!("cannot make the socket non-blocking: {e}"))?;
    sys::set_send_buffer(&socket, SOCKET_BUFFER).map_err(|e| format!("cannot size the send buffer: {e}"))?;
    sys::set_receive_buffer(&socket, SOCKET_BUFFER).map_err(|e| format!("cannot size the receive buffer: {e}"))?;
    Ok(socket)
}

/// Streams for `duration_ns`, or until SIGINT/SIGTERM. `make_controller` gets the start time.
pub fn run(config: UdpSendConfig, make_controller: impl FnOnce(u64) -> Box<dyn Controller>,
           rate_log: CsvLog) -> Result<(), String> {
    let socket = open_socket(&config)?;
    let start = sys::now_ns();
    let mut sender = Sender {
        socket,
        controller: make_controller(start),
        encoder: Encoder::new(config.encoder.clone(), start),
        pacer: Pacer::new(start),
        history: History::new(),
        rate_log,
        buf: [0; MAX_DATAGRAM],
        blocked_on_socket: false,
        sent_bytes_interval: 0,
        retransmit_window_ns: config.retransmit_window_ns,
        totals: Totals::default(),
    };
    let mut timetable = Timetable::new(start, config.duration_ns, TICK_NS, config.log_interval_ns);
    while let Some(now) = timetable.round() {
        sender.capture_due_frames(now);
        if timetable.step_due(now) {
            sender.tick(now);
        }
        sender.send_allowed(now)?;
        if let Some(covered) = timetable.log_due(now) {
            sender.log_rates(now, covered)?;
        }
        let wake = sender.next_send_ns(now).unwrap_or(u64::MAX).min(sender.encoder.next_capture_ns());
        let ready = sys::wait(&[sender.interest()], timetable.sleep_ns(now, wake))
            .map_err(|e| format!("wait failed: {e}"))?;
        if ready[0].writable {
            sender.blocked_on_socket = false;
        }
        if ready[0].readable {
            sender.read_feedback()?;
        }
    }
    sender.finish(config.label, sys::now_ns() - start)
}

impl Sender {
    fn capture_due_frames(&mut self, now: u64) {
        while self.encoder.next_capture_ns() <= now {
            let target = self.controller.target_bps();
            let frame = self.encoder.capture(target);
            self.pacer.enqueue_frame(&frame);
            self.totals.frames += 1;
            self.totals.target_sum += target;
        }
    }

    fn tick(&mut self, now: u64) {
        self.controller.on_tick(now, self.pacer.queued_bytes());
        for probe in self.controller.take_probes() {
            self.pacer.add_probe(probe);
        }
        let forgotten = self.history.forget_stale(now);
        self.report(now, &forgotten);
    }

    /// Tells the controller what became of sent packets, and, if asked to, queues lost
    /// pieces of frames once more while they are recent enough to still be worth showing
    /// (like WebRTC's NACK and RTX; here the loss report itself is the NACK).
    fn report(&mut self, now: u64, outcomes: &[Outcome]) {
        if outcomes.is_empty() {
            return;
        }
        let control: Vec<_> = outcomes.iter().map(Outcome::control).collect();
        self.controller.on_feedback(now, &control, self.history.in_flight());
        let lost: Vec<MediaPacket> = outcomes
            .iter()
            .filter(|o| o.arrival_ns.is_none())
            .filter_map(|o| o.sent.media)
            .filter(|m| !m.resent && now.saturating_sub(m.frame.capture_ns) < self.retransmit_window_ns)
            .collect();
        self.totals.retransmitted += lost.len() as u64;
        self.pacer.retransmit(&lost);
    }

    /// Sends every packet the pacer and the controller allow now.
    fn send_allowed(&mut self, now: u64) -> Result<(), String> {
        self.pacer.set_rate(self.controller.pacing_bps());
        while !self.blocked_on_socket && self.controller.can_send(self.history.in_flight()) {
            let Some((packet, probe)) = self.pacer.poll(now) else { break };
            let len = self.write_datagram(&packet);
            // Each packet's own send time: GCC reads pacing from the gaps between them.
            let sent_at = sys::now_ns();
            match self.socket.send(&self.buf[..len]) {
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    self.pacer.unsend(packet);
                    self.blocked_on_socket = true;
                    break;
                }
                // The receiver is not (yet) listening; the packet is lost like any other.
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => {}
                Err(e) => return Err(format!("send failed: {e}")),
            }
            let record = self.history.on_sent(sent_at, packet, probe);
            self.controller.on_sent(&record);
            self.sent_bytes_interval += record.wire_bytes as u64;
            self.totals.sent_bytes += record.wire_bytes as u64;
        }
        Ok(())
    }

    fn write_datagram(&mut self, packet: &Outgoing) -> usize {
        let feedback = self.controller.feedback_request();
        let seq = self.history.next_seq();
        let (header, payload) = match packet {
            Outgoing::Media(m) => (MediaHeader { kind: Kind::Media, feedback, seq, frame: m.frame }, m.payload),
            Outgoing::Padding => (MediaHeader { kind: Kind::Padding, feedback, seq, frame: FramePacket::default() },
                                  PADDING_PAYLOAD),
        };
        header.encode(&mut self.buf);
        MEDIA_HEADER_LEN + payload
    }

    fn next_send_ns(&self, now: u64) -> Option<u64> {
        if self.blocked_on_socket || !self.controller.can_send(self.history.in_flight()) {
            return None; // the socket or the feedback will wake us
        }
        self.pacer.next_send_ns(now)
    }

    fn interest(&self) -> Interest {
        Interest { fd: self.socket.as_raw_fd(), readable: true, writable: self.blocked_on_socket }
    }

    fn read_feedback(&mut self) -> Result<(), String> {
        let mut buf = [0u8; MAX_DATAGRAM];
        loop {
            match self.socket.recv(&mut buf) {
                Ok(len) => {
                    let now = sys::now_ns();
                    if let Some((report_ns, entries)) = wire::decode_feedback(&buf[..len]) {
                        let outcomes = self.history.on_feedback(now, report_ns, &entries);
                        self.report(now, &outcomes);
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => return Ok(()),
                Err(e) => return Err(format!("receive failed: {e}")),
            }
        }
    }

    fn log_rates(&mut self, now: u64, interval_ns: u64) -> Result<(), String> {
        let stats = self.history.take_interval_stats();
        let per_second = |bytes: u64| (interval_ns > 0).then(|| bytes as f64 * 8e9 / interval_ns as f64);
        let resolved = stats.received + stats.lost;
        let loss = (resolved > 0).then(|| stats.lost as f64 / resolved as f64);
        let sent = std::mem::take(&mut self.sent_bytes_interval);
        self.rate_log.row(&[
            Field::Int(now),
            float(Some(self.controller.target_bps()), 0),
            float(Some(self.controller.pacing_bps()), 0),
            float(per_second(sent), 0),
            float(per_second(stats.acked_bytes), 0),
            float(self.history.srtt_ns().map(|s| s / 1e6), 3),
            float(loss, 4),
            Field::Int(self.history.in_flight()),
            Field::Int(self.pacer.queued_bytes()),
            self.controller.cwnd_bytes().into(),
        ])
    }

    fn finish(mut self, label: &str, elapsed_ns: u64) -> Result<(), String> {
        let bye = MediaHeader { kind: Kind::Bye, feedback: Default::default(), seq: self.history.next_seq(),
                                frame: FramePacket::default() };
        bye.encode(&mut self.buf);
        let stopped = sys::now_ns();
        for at_ms in BYE_SCHEDULE_MS {
            let at = stopped + at_ms * 1_000_000;
            std::thread::sleep(std::time::Duration::from_nanos(at.saturating_sub(sys::now_ns())));
            // Best effort: a receiver that misses every bye still stops on its own duration or signal.
            let _ = self.socket.send(&self.buf[..MEDIA_HEADER_LEN]);
        }
        self.rate_log.finish()?;
        let seconds = elapsed_ns as f64 / 1e9;
        let mean_target = self.totals.target_sum / self.totals.frames.max(1) as f64;
        eprintln!("rtflow send: {label}, {seconds:.1} s, {} frames, mean target {}, mean sent {}, {} packets sent again",
                  self.totals.frames, format_rate(mean_target),
                  format_rate(self.totals.sent_bytes as f64 * 8.0 / seconds.max(1e-9)), self.totals.retransmitted);
        Ok(())
    }
}
