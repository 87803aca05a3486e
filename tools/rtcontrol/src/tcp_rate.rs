// SPDX-License-Identifier: MIT
//! How rtflow's TCP mode (and the simulator's, through `capi`) picks its bitrate, as
//! applications that stream over TCP do: the kernel's congestion control decides how fast
//! bytes leave, and the application watches whether its frames get out in time and follows
//! what the socket delivers.
//!
//! The socket keeps at most `--notsent-lowat` bytes unsent in the kernel (TCP_NOTSENT_LOWAT),
//! so when the connection cannot keep up, frames wait in the application, where their
//! waiting time is visible. Every `CONTROL_INTERVAL_NS`:
//! - if a frame waited longer than `WAIT_LIMIT_NS` during the interval and the connection
//!   delivered less than the target (bytes the peer acknowledged over the last
//!   `DELIVERY_WINDOW_NS`, from TCP_INFO), the target drops to `BACKOFF` x the delivered
//!   rate, so the backlog drains; a wait while the connection keeps up with the target is
//!   a passing hiccup (a key frame, a late wake-up) and holds the rate;
//! - if a frame waited longer than two frame intervals (a key frame may take that long)
//!   and the connection delivered less than the target, the target comes down to `DRAIN` x
//!   the delivered rate, so the backlog stops growing and drains;
//! - if no frame waited longer than two frame intervals, the target grows by `RAMP_UP`
//!   per interval until the first backoff and by `STEADY_UP` afterwards;
//! - otherwise it holds.
//!
//! The second rule keeps the flow from stalling itself: without it a target grown past
//! what the connection carries held there while the backlog grew, until a frame had waited
//! `WAIT_LIMIT_NS` (a sawtooth; tools/rtflow/README.md has the measurements).
//! `BACKOFF` is the multiplicative decrease of libwebrtc's AIMD rate control (0.85).

use std::collections::VecDeque;

use crate::control::RateBounds;

pub const CONTROL_INTERVAL_NS: u64 = 100_000_000;
/// rtflow's `--notsent-lowat` unless told otherwise.
pub const DEFAULT_NOTSENT_LOWAT: u64 = 16 << 10;
const DELIVERY_WINDOW_NS: u64 = 500_000_000;
const WAIT_LIMIT_NS: u64 = 100_000_000;
const BACKOFF: f64 = 0.85;
const DRAIN: f64 = 0.95;
const RAMP_UP: f64 = 1.10;
const STEADY_UP: f64 = 1.02;

pub struct TcpRateAdapter {
    bounds: RateBounds,
    target_bps: f64,
    ramping: bool,
    frame_interval_ns: u64,
    acked: VecDeque<(u64, u64)>,
    longest_wait_ns: u64,
}

impl TcpRateAdapter {
    pub fn new(bounds: RateBounds, frame_interval_ns: u64) -> TcpRateAdapter {
        TcpRateAdapter { bounds, target_bps: bounds.start, ramping: true, frame_interval_ns, acked: VecDeque::new(),
                         longest_wait_ns: 0 }
    }

    pub fn target_bps(&self) -> f64 {
        self.target_bps
    }

    /// How long the oldest frame not yet handed to the kernel has waited so far.
    pub fn note_wait(&mut self, wait_ns: u64) {
        self.longest_wait_ns = self.longest_wait_ns.max(wait_ns);
    }

    /// Bytes acknowledged per second over the delivery window, once two samples exist.
    pub fn delivered_bps(&self) -> Option<f64> {
        let (&(t0, b0), &(t1, b1)) = (self.acked.front()?, self.acked.back()?);
        (t1 > t0).then(|| (b1 - b0) as f64 * 8e9 / (t1 - t0) as f64)
    }

    /// One control step; `bytes_acked` is TCP_INFO's running total.
    pub fn update(&mut self, now_ns: u64, bytes_acked: u64) {
        self.acked.push_back((now_ns, bytes_acked));
        while self.acked.front().is_some_and(|(t, _)| now_ns - t > DELIVERY_WINDOW_NS) {
            self.acked.pop_front();
        }
        let wait = std::mem::take(&mut self.longest_wait_ns);
        if wait <= 2 * self.frame_interval_ns {
            let growth = if self.ramping { RAMP_UP } else { STEADY_UP };
            self.target_bps = self.bounds.clamp(self.target_bps * growth);
        } else if let Some(delivered) = self.delivered_bps().filter(|d| *d < self.target_bps) {
            let factor = if wait > WAIT_LIMIT_NS { BACKOFF } else { DRAIN };
            self.target_bps = self.bounds.clamp(factor * delivered);
            self.ramping = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const BOUNDS: RateBounds = RateBounds { start: 1e6, min: 0.1e6, max: 50e6 };

    #[test]
    fn ramps_up_while_frames_leave_promptly() {
        let mut adapter = TcpRateAdapter::new(BOUNDS, 16 * MS);
        for step in 1..=10 {
            adapter.note_wait(5 * MS);
            adapter.update(step * 100 * MS, step * 10_000);
        }
        assert!((adapter.target_bps() - 1e6 * 1.1f64.powi(10)).abs() < 1.0);
    }

    #[test]
    fn backs_off_below_the_delivered_rate_when_frames_wait() {
        let mut adapter = TcpRateAdapter::new(RateBounds { start: 20e6, ..BOUNDS }, 16 * MS);
        // 1.25 MB acknowledged per 100 ms: 10 Mbit/s delivered.
        for step in 0..=5 {
            adapter.update(step * 100 * MS, step * 125_000);
        }
        let before = adapter.target_bps();
        adapter.note_wait(150 * MS);
        adapter.update(600 * MS, 6 * 125_000);
        assert!((adapter.target_bps() - 8.5e6).abs() < 1e3, "{}", adapter.target_bps());
        assert!(before > 20e6);
        // Afterwards growth is gentle, and a wait between the limits while the connection
        // keeps up holds the rate.
        adapter.update(700 * MS, 7 * 125_000);
        assert!((adapter.target_bps() - 8.5e6 * 1.02).abs() < 1e3);
        adapter.note_wait(50 * MS);
        adapter.update(800 * MS, 8 * 125_000);
        assert!((adapter.target_bps() - 8.5e6 * 1.02).abs() < 1e3);
    }

    #[test]
    fn a_target_past_what_the_connection_delivers_comes_down_to_it_before_frames_wait_long() {
        let mut adapter = TcpRateAdapter::new(RateBounds { start: 12e6, ..BOUNDS }, 16 * MS);
        adapter.ramping = false;
        // 1.25 MB acknowledged per 100 ms: the connection carries 10 Mbit/s.
        for step in 0..=5 {
            adapter.update(step * 100 * MS, step * 125_000);
        }
        let grown = adapter.target_bps();
        assert!(grown > 12e6);
        // A frame waited three frame intervals, under the back-off's limit.
        adapter.note_wait(50 * MS);
        adapter.update(600 * MS, 6 * 125_000);
        assert!((adapter.target_bps() - 9.5e6).abs() < 1e3, "{}", adapter.target_bps());
        // Below what the connection delivers, a wait that long holds the rate.
        adapter.note_wait(50 * MS);
        adapter.update(700 * MS, 7 * 125_000);
        assert!((adapter.target_bps() - 9.5e6).abs() < 1e3, "{}", adapter.target_bps());
    }

    #[test]
    fn a_wait_while_the_connection_keeps_up_holds_the_rate() {
        let mut adapter = TcpRateAdapter::new(RateBounds { start: 8e6, ..BOUNDS }, 16 * MS);
        adapter.ramping = false;
        // 1.25 MB acknowledged per 100 ms: 10 Mbit/s delivered, above the 8 Mbit/s target.
        for step in 0..=5 {
            adapter.note_wait(150 * MS);
            adapter.update(step * 100 * MS, step * 125_000);
        }
        assert_eq!(adapter.target_bps(), 8e6);
    }

    #[test]
    fn stays_within_bounds() {
        let mut adapter = TcpRateAdapter::new(RateBounds { start: 45e6, ..BOUNDS }, 16 * MS);
        for step in 0..5 {
            adapter.update(step * 100 * MS, 0);
        }
        assert_eq!(adapter.target_bps(), 50e6);
        adapter.note_wait(500 * MS);
        adapter.update(600 * MS, 0);
        assert_eq!(adapter.target_bps(), 0.1e6);
    }
}
