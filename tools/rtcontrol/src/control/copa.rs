// SPDX-License-Identifier: MIT
//! Copa (Arun and Balakrishnan, NSDI 2018) for video: the `vidaptive` crate's Copa
//! congestion controller sets a congestion window from the queueing delay it measures
//! (target rate 1/(δ·d_q) packets per second), the pacer sends at 2·cwnd/RTT_standing,
//! packets wait while a window's worth is in flight, and the encoder produces
//! cwnd/sRTT, the rate the window lets through.
//!
//! Copa's delay signals (standing and minimum RTT) take RTT samples without the time the
//! receiver held its report; the encoder's sRTT is the time from sending to the report's
//! arrival, holds included, because that is how long a packet occupies the window. Any
//! backlog left in the pacer is taken off the encoder's rate so that it drains within
//! `DRAIN_NS` (a window controller cannot send faster than its window to catch up).
//!
//! Only vidaptive's Copa is used, not its Vidaptive session (dummy padding, α
//! optimiser): the laboratory's real-time flow is plain Copa-controlled video.
//! The receiver acknowledges every second packet (or after 5 ms), as TCP and QUIC do,
//! because a window controller counts unacknowledged bytes as in flight and batched
//! feedback would make the window bind early (with little propagation delay the window is
//! only a few packets).
//!
//! A known defect of the crate (docs/RESULTS.md, "Copa's window jumps"): a fast cut can
//! leave its internal window far below the least window it reports, and the next step up,
//! divided by that remainder, grows the window by two orders of magnitude in one
//! acknowledgement. It is left as the crate has it until a Copa of our own replaces it.

use std::time::{Duration, Instant};

use vidaptive::{AckInfo, CongestionController, Copa, CopaConfig, LostPacket, SentPacket};

use super::{Controller, RateBounds};
use crate::packet::{FeedbackRequest, Outcome, Sent, IP_UDP_OVERHEAD, MAX_DATAGRAM};

const FEEDBACK: FeedbackRequest = FeedbackRequest { every_packets: 2, interval_ms: 5 };
const PACKET_BYTES: u64 = (MAX_DATAGRAM + IP_UDP_OVERHEAD) as u64;
/// Copa's first RTT guess, before any sample (vidaptive's default).
const INITIAL_RTT: Duration = Duration::from_millis(50);
const DRAIN_NS: f64 = 1e9;

pub struct CopaController {
    copa: Copa,
    bounds: RateBounds,
    /// Copa's own creation instant with the caller's time then, to turn our nanosecond
    /// times into the `Instant`s the crate takes (std's Instant is CLOCK_MONOTONIC on
    /// Linux, the lab's clock; in ns-3, simulated time counted from that instant).
    anchor: (Instant, u64),
    /// Smoothed time from sending a packet to hearing about it, ns (gain 1/8).
    window_rtt_ns: f64,
    pacer_queue_bytes: u64,
}

impl CopaController {
    /// `delta` is Copa's δ; the paper's default is 0.5.
    pub fn new(now_ns: u64, bounds: RateBounds, delta: f64) -> CopaController {
        let min_cwnd = 4 * PACKET_BYTES;
        let start_cwnd = (bounds.start / 8.0 * INITIAL_RTT.as_secs_f64()) as u64;
        let config = CopaConfig {
            min_cwnd,
            initial_cwnd: start_cwnd.max(min_cwnd),
            initial_rtt: INITIAL_RTT,
            packet_size: PACKET_BYTES,
            slow_start_delta: delta,
            steady_delta: delta,
            // The paper's standing RTT is the smallest RTT over the last sRTT/2.
            use_standing_rtt: false,
        };
        let copa = Copa::new(config);
        let created = created_at(&copa);
        CopaController { copa, bounds, anchor: (created, now_ns),
                         window_rtt_ns: INITIAL_RTT.as_nanos() as f64, pacer_queue_bytes: 0 }
    }

    fn instant(&self, ns: u64) -> Instant {
        let (instant, anchor_ns) = self.anchor;
        match ns.checked_sub(anchor_ns) {
            Some(after) => instant + Duration::from_nanos(after),
            None => instant - Duration::from_nanos(anchor_ns - ns),
        }
    }
}

/// The instant `copa` read from the clock when it was made, which it keeps to itself and
/// keys its RTT windows by, in whole microseconds since then: our times must count from
/// exactly that instant. Counted from a clock read of our own, the nanoseconds between the
/// two reads moved samples across microsecond boundaries, and with them what a window kept
/// (in ns-3, 2 of 100 Copa episodes changed when those nanoseconds went from 0 to 500).
/// The crate shows the instant only in its Debug form; Cargo.lock pins the crate, and a
/// test fails if that form changes.
fn created_at(copa: &Copa) -> Instant {
    let now = Instant::now();
    let shown = format!("{copa:?}");
    let (_, init) = shown.split_once("init_time:").expect("vidaptive's Copa shows init_time in its Debug form");
    now - Duration::from_nanos(timespec_ns(&format!("{now:?}")) - timespec_ns(init))
}

/// The first `Instant { tv_sec: S, tv_nsec: N }` in `debug` (std's form on Linux), in ns.
fn timespec_ns(debug: &str) -> u64 {
    let field = |name: &str| -> u64 {
        debug.split_once(name)
            .and_then(|(_, rest)| rest.trim_start().split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|digits| digits.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in an Instant's Debug form: {debug}"))
    };
    field("tv_sec:") * 1_000_000_000 + field("tv_nsec:")
}

impl Controller for CopaController {
    fn on_sent(&mut self, sent: &Sent) {
        self.copa.on_packet_sent(&SentPacket {
            seq: sent.seq,
            len: sent.wire_bytes as usize,
            sent_at: self.instant(sent.send_ns),
            app_limited: false,
        });
    }

    fn on_feedback(&mut self, now_ns: u64, outcomes: &[Outcome], _in_flight: u64) {
        // Losses first, so that the round's loss rate includes them when the acks end it.
        for lost in outcomes.iter().filter(|o| o.arrival_ns.is_none()) {
            self.copa.on_packet_lost(&LostPacket {
                seq: lost.sent.seq,
                len: lost.sent.wire_bytes as usize,
                lost_at: self.instant(now_ns),
            });
        }
        for received in outcomes.iter().filter(|o| o.arrival_ns.is_some()) {
            let sample = now_ns.saturating_sub(received.sent.send_ns) as f64;
            self.window_rtt_ns += (sample - self.window_rtt_ns) / 8.0;
        }
        // Each ack is placed one (hold-corrected) RTT after its packet left.
        let acks: Vec<AckInfo> = outcomes
            .iter()
            .filter_map(|o| {
                let rtt = o.rtt_ns?;
                Some(AckInfo { seq: o.sent.seq, len: o.sent.wire_bytes as usize,
                               acked_at: self.instant(o.sent.send_ns + rtt) })
            })
            .collect();
        self.copa.on_packets_acked(&acks);
    }

    fn on_tick(&mut self, _: u64, pacer_queue_bytes: u64) {
        self.pacer_queue_bytes = pacer_queue_bytes;
    }

    fn target_bps(&self) -> f64 {
        let window_rate = self.copa.cwnd() as f64 * 8e9 / self.window_rtt_ns.max(1.0);
        let drain = self.pacer_queue_bytes as f64 * 8e9 / DRAIN_NS;
        self.bounds.clamp(window_rate - drain)
    }

    fn pacing_bps(&self) -> f64 {
        (self.copa.pacing_rate() as f64 * 8.0).max(self.target_bps())
    }

    fn can_send(&self, in_flight: u64) -> bool {
        self.copa.can_send(in_flight)
    }

    fn cwnd_bytes(&self) -> Option<u64> {
        Some(self.copa.cwnd())
    }

    fn feedback_request(&self) -> FeedbackRequest {
        FEEDBACK
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_times_count_from_copas_own_creation() {
        let created_ns = 3_000_000_123;
        let controller = CopaController::new(created_ns, RateBounds { start: 5e6, min: 0.1e6, max: 50e6 }, 0.5);
        let kept = format!("{:?}", controller.copa);
        let ours = format!("init_time: {:?}", controller.instant(created_ns));
        assert!(kept.contains(&ours), "{ours} is not in {kept}");
    }

    #[test]
    fn an_instants_debug_form_reads_as_its_nanoseconds() {
        let shown = "init_time: Instant { tv_sec: 12, tv_nsec: 345 }, now: Instant { tv_sec: 99, tv_nsec: 1 }";
        assert_eq!(timespec_ns(shown), 12_000_000_345);
    }
}
