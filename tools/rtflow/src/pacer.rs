// SPDX-License-Identifier: MIT
//! The pacer: frames are cut into datagrams that wait in a queue and leave at the pacing
//! rate (a multiple of the target rate, so a frame is spread out instead of being sent
//! as one burst), plus the bandwidth probes GCC asks for.
//!
//! It is a token bucket in bytes. Tokens accrue at the pacing rate up to `MAX_BURST_NS`
//! worth; a packet may leave while the balance is not negative (the balance may then go
//! negative by one packet). To keep the CPU cost low on a slow machine the sender wakes
//! at most once per `MIN_WAKE_NS` and then sends every packet the bucket allows.

use std::collections::VecDeque;

use crate::encoder::Frame;
use crate::wire::{FramePacket, IP_UDP_OVERHEAD, MAX_DATAGRAM, MAX_MEDIA_PAYLOAD, MEDIA_HEADER_LEN};

/// Tokens saved while idle: at most this long a burst at the pacing rate.
const MAX_BURST_NS: f64 = 5e6;
/// Shortest sleep between two sending rounds.
pub const MIN_WAKE_NS: u64 = 1_000_000;

/// One datagram of a frame, waiting to be sent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MediaPacket {
    pub frame: FramePacket,
    pub payload: usize,
    /// Already a retransmission: it is not sent a third time.
    pub resent: bool,
}

impl MediaPacket {
    pub fn wire_bytes(&self) -> usize {
        wire_bytes(self.payload)
    }
}

/// Bytes a datagram with `payload` media bytes occupies on an IPv4 link.
pub fn wire_bytes(payload: usize) -> usize {
    payload + MEDIA_HEADER_LEN + IP_UDP_OVERHEAD
}

pub use rtcontrol::packet::Probe;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Outgoing {
    Media(MediaPacket),
    /// Filler of `PADDING_PAYLOAD` bytes, sent only to complete a probe.
    Padding,
}

pub const PADDING_PAYLOAD: usize = MAX_MEDIA_PAYLOAD;

impl Outgoing {
    pub fn wire_bytes(&self) -> usize {
        match self {
            Outgoing::Media(p) => p.wire_bytes(),
            Outgoing::Padding => wire_bytes(PADDING_PAYLOAD),
        }
    }
}

struct ActiveProbe {
    probe: Probe,
    sent_packets: u32,
    sent_bytes: u64,
}

pub struct Pacer {
    queue: VecDeque<MediaPacket>,
    queued_bytes: u64,
    probes: VecDeque<ActiveProbe>,
    rate_bps: f64,
    tokens: f64,
    refilled_ns: u64,
}

impl Pacer {
    pub fn new(now_ns: u64) -> Pacer {
        Pacer { queue: VecDeque::new(), queued_bytes: 0, probes: VecDeque::new(), rate_bps: 0.0, tokens: 0.0,
                refilled_ns: now_ns }
    }

    /// Cuts a frame into datagrams of at most `MAX_DATAGRAM` bytes whose headers fit in
    /// the frame's wire budget, and queues them.
    pub fn enqueue_frame(&mut self, frame: &Frame) {
        let per_packet = (MAX_DATAGRAM + IP_UDP_OVERHEAD) as u64;
        let count = frame.wire_budget.div_ceil(per_packet).max(1);
        let overhead = count * (MEDIA_HEADER_LEN + IP_UDP_OVERHEAD) as u64;
        let payload = frame.wire_budget.saturating_sub(overhead).max(count);
        let count = count.min(u16::MAX as u64) as u16;
        let payload = payload.min(count as u64 * MAX_MEDIA_PAYLOAD as u64);
        for index in 0..count {
            let start = payload * index as u64 / count as u64;
            let end = payload * (index as u64 + 1) / count as u64;
            let packet = MediaPacket {
                frame: FramePacket { frame_id: frame.id, capture_ns: frame.capture_ns, key: frame.key,
                                     frame_size: payload as u32, index, count },
                payload: (end - start) as usize, resent: false,
            };
            self.queued_bytes += packet.wire_bytes() as u64;
            self.queue.push_back(packet);
        }
    }

    pub fn add_probe(&mut self, probe: Probe) {
        self.probes.push_back(ActiveProbe { probe, sent_packets: 0, sent_bytes: 0 });
    }

    pub fn queued_bytes(&self) -> u64 {
        self.queued_bytes
    }

    pub fn set_rate(&mut self, pacing_bps: f64) {
        self.rate_bps = pacing_bps;
    }

    /// While a probe runs, its rate replaces the pacing rate (as libwebrtc's prober does),
    /// so that the probe measures the rate it stands for.
    fn effective_rate(&self) -> f64 {
        self.probes.front().map_or(self.rate_bps, |p| p.probe.rate_bps)
    }

    pub fn has_work(&self) -> bool {
        !self.queue.is_empty() || !self.probes.is_empty()
    }

    fn refill(&mut self, now_ns: u64) {
        let rate = self.effective_rate() / 8.0;
        let elapsed = now_ns.saturating_sub(self.refilled_ns) as f64;
        let cap = (rate * MAX_BURST_NS / 1e9).max(MAX_DATAGRAM as f64);
        self.tokens = (self.tokens + rate * elapsed / 1e9).min(cap);
        self.refilled_ns = now_ns;
    }

    /// The next packet to send now, if the bucket allows one, and the probe it serves.
    pub fn poll(&mut self, now_ns: u64) -> Option<(Outgoing, Option<Probe>)> {
        self.refill(now_ns);
        if !self.has_work() || self.tokens < 0.0 {
            return None;
        }
        let packet = match self.queue.pop_front() {
            Some(media) => {
                self.queued_bytes -= media.wire_bytes() as u64;
                Outgoing::Media(media)
            }
            None => Outgoing::Padding,
        };
        self.tokens -= packet.wire_bytes() as f64;
        Some((packet, self.count_probe(packet.wire_bytes())))
    }

    /// Gives back a packet the socket could not take; it goes first next time.
    pub fn unsend(&mut self, packet: Outgoing) {
        self.tokens += packet.wire_bytes() as f64;
        if let Outgoing::Media(media) = packet {
            self.push_front(media);
        }
    }

    /// Queues lost packets again, ahead of new media (libwebrtc sends retransmissions
    /// first too), keeping their order.
    pub fn retransmit(&mut self, lost: &[MediaPacket]) {
        for media in lost.iter().rev() {
            self.push_front(MediaPacket { resent: true, ..*media });
        }
    }

    fn push_front(&mut self, media: MediaPacket) {
        self.queued_bytes += media.wire_bytes() as u64;
        self.queue.push_front(media);
    }

    fn count_probe(&mut self, bytes: usize) -> Option<Probe> {
        let active = self.probes.front_mut()?;
        active.sent_packets += 1;
        active.sent_bytes += bytes as u64;
        let probe = active.probe;
        if active.sent_packets >= active.probe.min_packets && active.sent_bytes >= active.probe.min_bytes {
            self.probes.pop_front();
        }
        Some(probe)
    }

    /// When the bucket will next allow a packet (never sooner than `MIN_WAKE_NS` after a
    /// packet had to wait), or `None` if nothing waits.
    pub fn next_send_ns(&self, now_ns: u64) -> Option<u64> {
        if !self.has_work() {
            return None;
        }
        if self.tokens >= 0.0 {
            return Some(now_ns);
        }
        let rate = self.effective_rate() / 8.0;
        if rate <= 0.0 {
            return Some(now_ns + MIN_WAKE_NS);
        }
        let wait = (-self.tokens / rate * 1e9) as u64;
        Some(self.refilled_ns + wait.max(MIN_WAKE_NS))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(wire_budget: u64) -> Frame {
        Frame { id: 9, capture_ns: 5, key: false, wire_budget }
    }

    #[test]
    fn frames_are_cut_into_datagrams_that_fill_the_budget() {
        let mut pacer = Pacer::new(0);
        pacer.enqueue_frame(&frame(41_667));
        let packets: Vec<MediaPacket> = pacer.queue.iter().copied().collect();
        assert_eq!(packets.len(), 34);
        assert!(packets.iter().all(|p| p.payload <= MAX_MEDIA_PAYLOAD));
        let wire: usize = packets.iter().map(|p| p.wire_bytes()).sum();
        assert!((wire as i64 - 41_667).abs() <= 1, "{wire}");
        let payload: usize = packets.iter().map(|p| p.payload).sum();
        assert_eq!(payload, packets[0].frame.frame_size as usize);
        assert_eq!(pacer.queued_bytes(), wire as u64);
        assert_eq!(packets.last().unwrap().frame.index, 33);
    }

    #[test]
    fn a_tiny_frame_still_makes_one_packet() {
        let mut pacer = Pacer::new(0);
        pacer.enqueue_frame(&frame(10));
        assert_eq!(pacer.queue.len(), 1);
        assert_eq!(pacer.queue[0].payload, 1);
    }

    #[test]
    fn packets_leave_at_the_pacing_rate() {
        let mut pacer = Pacer::new(0);
        pacer.set_rate(8e6); // 1 MB/s: one 1228-byte datagram every ~1.2 ms
        for _ in 0..10 {
            pacer.enqueue_frame(&frame(100_000));
        }
        let mut now = 0;
        let mut sent = 0usize;
        while now < 100_000_000 {
            while let Some((packet, _)) = pacer.poll(now) {
                sent += packet.wire_bytes();
            }
            now = pacer.next_send_ns(now).unwrap();
        }
        let rate = sent as f64 / 0.1;
        assert!((rate - 1e6).abs() < 0.03e6, "{rate}");
    }

    #[test]
    fn lost_packets_go_first_in_order_and_only_once_more() {
        let mut pacer = Pacer::new(0);
        pacer.set_rate(1e9);
        pacer.enqueue_frame(&frame(5_000));
        let first: Vec<MediaPacket> = (0..2).map(|i| match pacer.poll(i * MIN_WAKE_NS) {
            Some((Outgoing::Media(m), None)) => m,
            other => panic!("{other:?}"),
        }).collect();
        pacer.retransmit(&first);
        let order: Vec<(u16, bool)> = pacer.queue.iter().map(|m| (m.frame.index, m.resent)).collect();
        assert_eq!(order, vec![(0, true), (1, true), (2, false), (3, false), (4, false)]);
        assert_eq!(pacer.queued_bytes(), pacer.queue.iter().map(|m| m.wire_bytes() as u64).sum::<u64>());
    }

    #[test]
    fn a_probe_sends_padding_at_its_rate_until_both_minimums_are_met() {
        let mut pacer = Pacer::new(0);
        pacer.set_rate(1e6);
        let probe = Probe { id: 3, rate_bps: 12e6, min_packets: 5, min_bytes: 15_000 };
        pacer.add_probe(probe);
        let mut now = 0;
        let mut tags = 0;
        while pacer.has_work() {
            while let Some((packet, tag)) = pacer.poll(now) {
                assert_eq!(packet, Outgoing::Padding);
                assert_eq!(tag, Some(probe));
                tags += 1;
            }
            now = pacer.next_send_ns(now).unwrap_or(now);
        }
        assert_eq!(tags, 13); // 13 * 1228 >= 15000
        assert!((9_000_000..12_000_000).contains(&now), "{now}");
    }
}
