// SPDX-License-Identifier: MIT
//! Copa (Arun and Balakrishnan, NSDI 2018) for video: Copa's window (`window.rs`, our
//! own, from the paper) follows the queueing delay it measures (target rate 1/(δ·d_q)
//! packets per second), the pacer sends at 2·cwnd/RTT_standing, packets wait while a
//! window's worth is in flight, and the encoder produces cwnd/sRTT, the rate the window
//! lets through.
//!
//! Copa's delay signals (standing and minimum RTT) take RTT samples without the time the
//! receiver held its report; the encoder's sRTT is the time from sending to the report's
//! arrival, holds included, because that is how long a packet occupies the window. Any
//! backlog left in the pacer is taken off the encoder's rate so that it drains within
//! `DRAIN_NS` (a window controller cannot send faster than its window to catch up).
//!
//! The receiver acknowledges every second packet (or after 5 ms), as TCP and QUIC do,
//! because a window controller counts unacknowledged bytes as in flight and batched
//! feedback would make the window bind early (with little propagation delay the window is
//! only a few packets).

mod window;

use window::{CopaConfig, CopaWindow};

use super::{Controller, RateBounds};
use crate::packet::{FeedbackRequest, Outcome, Sent, IP_UDP_OVERHEAD, MAX_DATAGRAM};

const FEEDBACK: FeedbackRequest = FeedbackRequest { every_packets: 2, interval_ms: 5 };
const PACKET_BYTES: f64 = (MAX_DATAGRAM + IP_UDP_OVERHEAD) as f64;
/// Copa's first RTT guess, before any sample, ns.
const INITIAL_RTT_NS: u64 = 50_000_000;
const DRAIN_NS: f64 = 1e9;

pub struct CopaController {
    copa: CopaWindow,
    bounds: RateBounds,
    /// Smoothed time from sending a packet to hearing about it, ns (gain 1/8).
    window_rtt_ns: f64,
    pacer_queue_bytes: u64,
}

impl CopaController {
    /// `delta` is Copa's δ; the paper's default is 0.5. The first window lets `bounds.start`
    /// through in the first RTT guess.
    pub fn new(bounds: RateBounds, delta: f64) -> CopaController {
        let config = CopaConfig {
            delta,
            packet_bytes: PACKET_BYTES,
            min_cwnd_bytes: 4.0 * PACKET_BYTES,
            initial_cwnd_bytes: bounds.start / 8.0 * INITIAL_RTT_NS as f64 / 1e9,
            initial_rtt_ns: INITIAL_RTT_NS,
        };
        CopaController { copa: CopaWindow::new(config), bounds,
                         window_rtt_ns: INITIAL_RTT_NS as f64, pacer_queue_bytes: 0 }
    }
}

impl Controller for CopaController {
    fn on_sent(&mut self, sent: &Sent) {
        self.copa.on_sent(sent.seq);
    }

    /// Losses do not move Copa's window (window.rs); each acknowledged packet is one of
    /// the paper's acknowledgements, placed one (hold-corrected) RTT after it left.
    fn on_feedback(&mut self, now_ns: u64, outcomes: &[Outcome], _in_flight: u64) {
        for received in outcomes.iter().filter(|o| o.arrival_ns.is_some()) {
            let sample = now_ns.saturating_sub(received.sent.send_ns) as f64;
            self.window_rtt_ns += (sample - self.window_rtt_ns) / 8.0;
            if let Some(rtt) = received.rtt_ns {
                self.copa.on_acked(received.sent.seq, received.sent.wire_bytes as u64, rtt,
                                   received.sent.send_ns + rtt);
            }
        }
    }

    fn on_tick(&mut self, _: u64, pacer_queue_bytes: u64) {
        self.pacer_queue_bytes = pacer_queue_bytes;
    }

    fn target_bps(&self) -> f64 {
        let window_rate = self.copa.cwnd_bytes() as f64 * 8e9 / self.window_rtt_ns.max(1.0);
        let drain = self.pacer_queue_bytes as f64 * 8e9 / DRAIN_NS;
        self.bounds.clamp(window_rate - drain)
    }

    fn pacing_bps(&self) -> f64 {
        (self.copa.pacing_bytes_per_s() * 8.0).max(self.target_bps())
    }

    fn can_send(&self, in_flight: u64) -> bool {
        in_flight < self.copa.cwnd_bytes()
    }

    fn cwnd_bytes(&self) -> Option<u64> {
        Some(self.copa.cwnd_bytes())
    }

    fn feedback_request(&self) -> FeedbackRequest {
        FEEDBACK
    }
}
