// SPDX-License-Identifier: MIT
//! Pion's GCC (`github.com/pion/interceptor/pkg/gcc`, in Go, built by build.rs from
//! tools/piongcc into a static archive): an independent second implementation of Google
//! Congestion Control, driving the same frames, pacer, packets and feedback as `gcc`.
//! It lives in rtflow rather than in rtcontrol so that rtcontrol's C ABI (the simulator's)
//! carries no Go runtime.
//!
//! Pion's `SendSideBWE` hears of every sent packet (it stamps the send time with its own
//! clock, the same CLOCK_MONOTONIC, right after rtflow sent the packet) and of every
//! feedback report, which tools/piongcc turns into RTCP transport-wide feedback packets.
//! Its target rate drives the encoder; the pacer sends at `pacing_factor` × target as in
//! `gcc` mode. Pion has no prober, no process tick and no congestion window.

use std::ffi::c_int;

use rtcontrol::control::{Controller, RateBounds};
use rtcontrol::packet::{FeedbackRequest, Outcome, Sent};

/// The same feedback pace as `gcc` mode, so both controllers hear the same reports.
const FEEDBACK: FeedbackRequest = FeedbackRequest { every_packets: 0, interval_ms: 50 };
/// Pion remembers the last 250 sent packets (its feedback adapter's history); feedback on an
/// older packet finds nothing and is ignored.
const PION_HISTORY_PACKETS: u64 = 250;

/// tools/piongcc's `piongcc_outcome`.
#[repr(C)]
struct PionOutcome {
    seq: u64,
    arrival_us: i64,
    lost: u8,
}

extern "C" {
    fn piongcc_new(start_bps: i64, min_bps: i64, max_bps: i64) -> usize;
    fn piongcc_on_sent(handle: usize, seq: u64, wire_bytes: u32) -> c_int;
    fn piongcc_on_feedback(handle: usize, reported: *const PionOutcome, count: usize) -> c_int;
    fn piongcc_target_bps(handle: usize) -> i64;
    fn piongcc_free(handle: usize);
}

pub struct PionGccController {
    handle: usize,
    pacing_factor: f64,
    last_sent_seq: u64,
    reported: u64,
    /// Reports on packets Pion had already forgotten (see `PION_HISTORY_PACKETS`).
    past_history: u64,
}

impl PionGccController {
    pub fn new(bounds: RateBounds, pacing_factor: f64) -> Result<PionGccController, String> {
        let bps = |rate: f64| rate.round() as i64;
        // SAFETY: plain integers in; 0 is the archive's "could not create".
        let handle = unsafe { piongcc_new(bps(bounds.start), bps(bounds.min), bps(bounds.max)) };
        if handle == 0 {
            return Err("Pion's GCC refused its configuration".to_string());
        }
        Ok(PionGccController { handle, pacing_factor, last_sent_seq: 0, reported: 0, past_history: 0 })
    }
}

fn pion_outcome(outcome: &Outcome) -> PionOutcome {
    match outcome.arrival_ns {
        Some(arrival) => PionOutcome { seq: outcome.sent.seq, arrival_us: (arrival / 1000) as i64, lost: 0 },
        None => PionOutcome { seq: outcome.sent.seq, arrival_us: 0, lost: 1 },
    }
}

impl Controller for PionGccController {
    fn on_sent(&mut self, sent: &Sent) {
        self.last_sent_seq = sent.seq;
        // SAFETY: the handle is live until drop. The call fails only on an RTP header
        // extension it cannot encode, which a 16-bit sequence number always fits.
        let status = unsafe { piongcc_on_sent(self.handle, sent.seq, sent.wire_bytes) };
        debug_assert_eq!(status, 0);
    }

    fn on_feedback(&mut self, _now_ns: u64, outcomes: &[Outcome], _in_flight: u64) {
        let reported: Vec<PionOutcome> = outcomes.iter().map(pion_outcome).collect();
        self.reported += reported.len() as u64;
        self.past_history +=
            reported.iter().filter(|o| self.last_sent_seq - o.seq >= PION_HISTORY_PACKETS).count() as u64;
        // SAFETY: the slice outlives the call, which copies what it needs.
        let status = unsafe { piongcc_on_feedback(self.handle, reported.as_ptr(), reported.len()) };
        debug_assert_eq!(status, 0, "Pion rejected a feedback report");
    }

    fn on_tick(&mut self, _: u64, _: u64) {}

    fn target_bps(&self) -> f64 {
        // SAFETY: the handle is live until drop.
        unsafe { piongcc_target_bps(self.handle) as f64 }
    }

    fn pacing_bps(&self) -> f64 {
        self.target_bps() * self.pacing_factor
    }

    fn feedback_request(&self) -> FeedbackRequest {
        FEEDBACK
    }
}

impl Drop for PionGccController {
    fn drop(&mut self) {
        if self.past_history > 0 {
            eprintln!("rtflow send: pion-gcc: {} of {} reported packets were past Pion's {PION_HISTORY_PACKETS}-packet \
                       send history and ignored by it", self.past_history, self.reported);
        }
        // SAFETY: the handle is live and freed once.
        unsafe { piongcc_free(self.handle) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(seq: u64) -> Sent {
        Sent { seq, send_ns: seq * 1_000_000, wire_bytes: 1228, probe: None, in_flight: 1228 }
    }

    #[test]
    fn pion_starts_at_the_start_rate_and_stays_within_its_bounds_under_feedback() {
        let bounds = RateBounds { start: 2e6, min: 1e5, max: 5e6 };
        let mut pion = PionGccController::new(bounds, 2.5).unwrap();
        assert_eq!(pion.target_bps(), 2e6);
        assert_eq!(pion.pacing_bps(), 5e6);
        for seq in 0..200 {
            pion.on_sent(&sent(seq));
        }
        let outcomes: Vec<Outcome> = (0..200)
            .map(|seq| Outcome { sent: sent(seq), arrival_ns: (seq % 10 != 3).then_some(seq * 1_000_000 + 20_000_000),
                                 rtt_ns: None })
            .collect();
        for report in outcomes.chunks(50) {
            pion.on_feedback(0, report, 0);
        }
        assert!((1e5..=5e6).contains(&pion.target_bps()), "{}", pion.target_bps());
        assert_eq!(pion.past_history, 0);
    }
}
