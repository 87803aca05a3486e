// SPDX-License-Identifier: MIT
//! Rate controllers for the UDP sender. Each one hears about every packet sent and every
//! feedback report, is ticked every `TICK_NS`, and tells the encoder its target rate and
//! the pacer its pacing rate.

mod copa;
mod fixed;
mod gcc;

pub use copa::CopaController;
pub use fixed::FixedController;
pub use gcc::GccController;

use crate::packet::{FeedbackRequest, Outcome, Probe, Sent};

/// How often controllers are ticked (libwebrtc's GoogCC process interval).
pub const TICK_NS: u64 = 25_000_000;

pub trait Controller {
    fn on_sent(&mut self, sent: &Sent);
    /// `now_ns` is when the report reached the sender; `in_flight` counts after it.
    fn on_feedback(&mut self, now_ns: u64, outcomes: &[Outcome], in_flight: u64);
    fn on_tick(&mut self, now_ns: u64, pacer_queue_bytes: u64);
    /// The rate the encoder should produce, bit/s.
    fn target_bps(&self) -> f64;
    /// The rate the pacer sends at, bit/s.
    fn pacing_bps(&self) -> f64;
    /// Window-based controllers hold packets back while too much is in flight.
    fn can_send(&self, _in_flight: u64) -> bool {
        true
    }
    /// Probe clusters requested since the last call.
    fn take_probes(&mut self) -> Vec<Probe> {
        Vec::new()
    }
    fn cwnd_bytes(&self) -> Option<u64> {
        None
    }
    /// How often this controller needs the receiver's feedback.
    fn feedback_request(&self) -> FeedbackRequest;
}

/// Rate bounds shared by the adaptive controllers, bit/s.
#[derive(Clone, Copy, Debug)]
pub struct RateBounds {
    pub start: f64,
    pub min: f64,
    pub max: f64,
}

impl RateBounds {
    pub fn clamp(&self, bps: f64) -> f64 {
        bps.clamp(self.min, self.max)
    }
}
