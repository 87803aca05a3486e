// SPDX-License-Identifier: MIT
//! A constant target rate: the reference point that does not react to the network.

use super::Controller;
use crate::packet::{FeedbackRequest, Outcome, Sent};

/// Feedback only feeds the rate log (RTT, loss), so a slow pace is enough.
const FEEDBACK: FeedbackRequest = FeedbackRequest { every_packets: 0, interval_ms: 100 };

pub struct FixedController {
    rate_bps: f64,
    pacing_factor: f64,
}

impl FixedController {
    pub fn new(rate_bps: f64, pacing_factor: f64) -> FixedController {
        FixedController { rate_bps, pacing_factor }
    }
}

impl Controller for FixedController {
    fn on_sent(&mut self, _: &Sent) {}
    fn on_feedback(&mut self, _: u64, _: &[Outcome], _: u64) {}
    fn on_tick(&mut self, _: u64, _: u64) {}

    fn target_bps(&self) -> f64 {
        self.rate_bps
    }

    fn pacing_bps(&self) -> f64 {
        self.rate_bps * self.pacing_factor
    }

    fn feedback_request(&self) -> FeedbackRequest {
        FEEDBACK
    }
}
