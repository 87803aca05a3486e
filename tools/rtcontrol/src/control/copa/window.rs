// SPDX-License-Identifier: MIT
//! Copa's congestion window (Arun and Balakrishnan, "Copa: Practical Delay-Based
//! Congestion Control for the Internet", NSDI 2018, §2.1), in its default mode.
//!
//! On every acknowledged packet: the queueing delay is d_q = RTT_standing − RTT_min
//! (RTT_standing the smallest RTT over the last sRTT/2, RTT_min the smallest over 10 s),
//! the target rate λ_t = 1/(δ·d_q) packets per second, the current rate
//! λ = cwnd/RTT_standing; the window, in packets, moves by v/(δ·cwnd) towards λ_t: up when
//! λ ≤ λ_t, down otherwise. Once per window the velocity v doubles if the window has
//! moved in one direction for three windows, and returns to 1 when the direction changes.
//! Slow start doubles the window every round trip until λ first exceeds λ_t.
//!
//! Where this departs from the paper, and why:
//! - **A round trip moves the window by at most a quarter.** The velocity is bounded so
//!   that one acknowledged packet moves the window by at most a quarter of its size
//!   (v ≤ δ·cwnd/4, in packets). With the paper's velocity alone, behind a 60 fps encoder,
//!   the window climbed past the link's BDP with a velocity doubled over three windows,
//!   the queue built, and the first window that turned down still carried that velocity:
//!   from 143 to 8 kB in 150 ms, four times in two seconds once a page's flows left (ns-3),
//!   and in the lab's timing the video cycled even alone (docs/RESULTS.md, "Copa's
//!   window"). Velocity still speeds convergence where the window is large against its
//!   step; the bound only stops a step of many windows' worth.
//! - **The window never goes below its least** (4 packets), and the velocity returns to 1
//!   there. The `vidaptive` crate's Copa, used before, let its window fall far below the
//!   least it reported, and the next step up, divided by that remainder, took it from
//!   4.9 kB to 1.35 MB in one acknowledgement.
//! - **Losses do not move the window**: the default mode reacts to delay only, and the
//!   paper's competitive mode (for flows that share a queue with loss-based TCP) is not
//!   used; a video behind a scheduler has a queue of its own.
//!
//! The velocity changes only once per window, as the paper says: dropping it to 1 as soon
//! as one acknowledgement turned the window made a video alone on a 20 Mbit/s link swing
//! between 15 and 300 kB in ns-3.

use std::collections::VecDeque;

/// The paper's window for RTT_min.
const MIN_RTT_WINDOW_NS: u64 = 10_000_000_000;
/// Windows in the same direction before the velocity starts doubling.
const SAME_DIRECTION_WINDOWS: u32 = 3;
/// Copa paces at twice cwnd/RTT_standing, so that a window's packets are not sent in one
/// burst and the queue still drains between bursts.
const PACING_GAIN: f64 = 2.0;
/// The most a round trip may move the window, as a share of it: each acknowledged packet
/// moves it by at most this share of the packet's bytes.
const MOST_PER_ROUND_TRIP: f64 = 0.25;

#[derive(Clone, Copy, Debug)]
pub struct CopaConfig {
    /// δ: the target queue is 1/δ packets; the paper's default is 0.5.
    pub delta: f64,
    /// The packet size the rule counts in, bytes.
    pub packet_bytes: f64,
    pub min_cwnd_bytes: f64,
    pub initial_cwnd_bytes: f64,
    /// RTT_standing before any sample, ns.
    pub initial_rtt_ns: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    Up,
    Down,
}

#[derive(Debug)]
struct Velocity {
    v: f64,
    direction: Direction,
    /// Consecutive windows the window moved in `direction`.
    same_windows: u32,
    /// The window when the current one began, and the last packet sent then: the window
    /// ends when that packet is acknowledged.
    cwnd_at_start: f64,
    ends_at_seq: u64,
}

#[derive(Debug)]
pub struct CopaWindow {
    config: CopaConfig,
    cwnd: f64,
    slow_start: bool,
    srtt_ns: Option<f64>,
    standing: WindowedMin,
    least: WindowedMin,
    velocity: Velocity,
    last_sent_seq: u64,
}

impl CopaWindow {
    pub fn new(config: CopaConfig) -> CopaWindow {
        let cwnd = config.initial_cwnd_bytes.max(config.min_cwnd_bytes);
        CopaWindow {
            config,
            cwnd,
            slow_start: true,
            srtt_ns: None,
            standing: WindowedMin::default(),
            least: WindowedMin::default(),
            velocity: Velocity { v: 1.0, direction: Direction::Up, same_windows: 0,
                                 cwnd_at_start: cwnd, ends_at_seq: 0 },
            last_sent_seq: 0,
        }
    }

    pub fn on_sent(&mut self, seq: u64) {
        self.last_sent_seq = seq;
    }

    /// One packet of `bytes` acknowledged at `acked_ns` with an RTT sample of `rtt_ns`.
    pub fn on_acked(&mut self, seq: u64, bytes: u64, rtt_ns: u64, acked_ns: u64) {
        self.note_rtt(rtt_ns, acked_ns);
        let up = self.rate_below_target();
        if self.slow_start && up {
            self.cwnd += bytes as f64;
        } else {
            self.slow_start = false;
            self.step(up, bytes as f64);
        }
        if seq >= self.velocity.ends_at_seq {
            self.end_window();
        }
    }

    pub fn cwnd_bytes(&self) -> u64 {
        self.cwnd as u64
    }

    /// RTT_standing, ns: the initial guess until the first sample.
    fn standing_rtt_ns(&self) -> u64 {
        self.standing.min().unwrap_or(self.config.initial_rtt_ns).max(1)
    }

    pub fn pacing_bytes_per_s(&self) -> f64 {
        PACING_GAIN * self.cwnd * 1e9 / self.standing_rtt_ns() as f64
    }

    fn note_rtt(&mut self, rtt_ns: u64, at_ns: u64) {
        let srtt = match self.srtt_ns {
            Some(srtt) => srtt + (rtt_ns as f64 - srtt) / 8.0,
            None => rtt_ns as f64,
        };
        self.srtt_ns = Some(srtt);
        self.standing.insert(at_ns, rtt_ns, (srtt / 2.0) as u64);
        self.least.insert(at_ns, rtt_ns, MIN_RTT_WINDOW_NS);
    }

    /// λ ≤ λ_t, in bytes: cwnd/RTT_standing ≤ packet/(δ·d_q); always so with no queue.
    fn rate_below_target(&self) -> bool {
        let standing = self.standing_rtt_ns();
        let queueing = standing.saturating_sub(self.least.min().unwrap_or(standing));
        queueing == 0
            || self.cwnd * self.config.delta * queueing as f64
                <= self.config.packet_bytes * standing as f64
    }

    /// The paper's v/(δ·cwnd) packets for one packet acknowledged, in bytes, with v at most
    /// δ·cwnd/4: the change is then at most a quarter of the bytes acknowledged.
    fn step(&mut self, up: bool, acked_bytes: f64) {
        let packet = self.config.packet_bytes;
        let most = (self.config.delta * self.cwnd / packet * MOST_PER_ROUND_TRIP).max(1.0);
        let change = self.velocity.v.min(most) * acked_bytes * packet / (self.config.delta * self.cwnd);
        if up {
            self.cwnd += change;
        } else if self.cwnd - change > self.config.min_cwnd_bytes {
            self.cwnd -= change;
        } else {
            self.cwnd = self.config.min_cwnd_bytes;
            self.velocity.v = 1.0;
            self.velocity.same_windows = 0;
        }
    }

    /// Once per window: the direction the window moved in it, and the velocity for the next.
    fn end_window(&mut self) {
        let velocity = &mut self.velocity;
        if !self.slow_start {
            let moved = if self.cwnd > velocity.cwnd_at_start { Direction::Up } else { Direction::Down };
            if moved == velocity.direction {
                velocity.same_windows += 1;
                if velocity.same_windows >= SAME_DIRECTION_WINDOWS {
                    velocity.v *= 2.0;
                }
            } else {
                velocity.v = 1.0;
                velocity.same_windows = 0;
                velocity.direction = moved;
            }
        }
        velocity.cwnd_at_start = self.cwnd;
        velocity.ends_at_seq = self.last_sent_seq;
    }
}

/// The smallest sample over a sliding window of time: a deque whose samples grow from
/// front to back, so that the front is the minimum once older samples are gone.
#[derive(Debug, Default)]
struct WindowedMin {
    samples: VecDeque<(u64, u64)>,
}

impl WindowedMin {
    /// Adds `value` taken at `at_ns` and forgets samples older than `window_ns` then; the
    /// window may change from one sample to the next (sRTT/2 does).
    fn insert(&mut self, at_ns: u64, value: u64, window_ns: u64) {
        while self.samples.back().is_some_and(|&(_, kept)| kept >= value) {
            self.samples.pop_back();
        }
        self.samples.push_back((at_ns, value));
        let oldest = at_ns.saturating_sub(window_ns);
        while self.samples.front().is_some_and(|&(at, _)| at < oldest) {
            self.samples.pop_front();
        }
    }

    fn min(&self) -> Option<u64> {
        self.samples.front().map(|&(_, value)| value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PACKET: f64 = 1228.0;
    const MS: u64 = 1_000_000;

    fn config() -> CopaConfig {
        CopaConfig { delta: 0.5, packet_bytes: PACKET, min_cwnd_bytes: 4.0 * PACKET,
                     initial_cwnd_bytes: 10.0 * PACKET, initial_rtt_ns: 50 * MS }
    }

    #[test]
    fn a_fast_cut_stops_at_the_least_window_and_the_next_rise_is_one_step() {
        // The state vidaptive's Copa was in before its jump: cutting with a velocity of 32
        // from 44 kB, the queue 40 ms above the least RTT.
        let mut copa = CopaWindow::new(config());
        copa.slow_start = false;
        copa.cwnd = 44_000.0;
        copa.velocity.v = 32.0;
        copa.velocity.direction = Direction::Down;
        copa.velocity.ends_at_seq = u64::MAX;
        copa.note_rtt(40 * MS, 0);
        let mut seq = 0;
        let mut at = 1_000 * MS;
        while copa.cwnd > config().min_cwnd_bytes {
            seq += 1;
            at += MS;
            copa.on_acked(seq, PACKET as u64, 80 * MS, at);
            assert!(copa.cwnd >= config().min_cwnd_bytes, "cut below the least: {}", copa.cwnd);
            assert!(seq < 200, "the cut never reached the least window");
        }
        // The queue is gone: the next acknowledgement turns the window up, one step.
        copa.on_acked(seq + 1, 2 * PACKET as u64, 40 * MS, at + MS);
        let rise = copa.cwnd - config().min_cwnd_bytes;
        assert!(rise > 0.0 && rise <= 2.0 * PACKET * PACKET / (0.5 * config().min_cwnd_bytes),
                "the window rose by {rise} bytes in one acknowledgement");
    }

    #[test]
    fn a_large_velocity_moves_the_window_by_at_most_a_quarter_a_round_trip() {
        let start = 100.0 * PACKET;
        // One window's worth of acknowledgements with no queue (up) or 40 ms of it (down).
        for (rtt_ms, direction) in [(40, Direction::Up), (80, Direction::Down)] {
            let mut copa = CopaWindow::new(config());
            copa.slow_start = false;
            copa.cwnd = start;
            copa.velocity.v = 64.0;
            copa.velocity.direction = direction;
            copa.velocity.ends_at_seq = u64::MAX;
            copa.note_rtt(40 * MS, 0);
            for seq in 1..=100 {
                copa.on_acked(seq, PACKET as u64, rtt_ms * MS, 1_000 * MS + seq * MS / 10);
            }
            let moved = (copa.cwnd - start).abs() / start;
            assert!(moved > 0.15 && moved <= 0.25 + 1e-9, "a round trip at velocity 64 moved the window by {moved}");
        }
    }

    #[test]
    fn slow_start_doubles_the_window_every_round_trip_until_a_queue_builds() {
        let mut copa = CopaWindow::new(config());
        for seq in 1..=10 {
            copa.on_sent(seq);
        }
        for seq in 1..=10 {
            copa.on_acked(seq, PACKET as u64, 40 * MS, 40 * MS + seq);
        }
        assert_eq!(copa.cwnd, 20.0 * PACKET);
        assert!(copa.slow_start);
        // A queue of 20 ms with 20 packets a 60 ms window: λ = 333 > λ_t = 100 packets/s.
        copa.on_acked(11, PACKET as u64, 60 * MS, 100 * MS);
        assert!(!copa.slow_start);
        assert!(copa.cwnd < 20.0 * PACKET);
    }

    #[test]
    fn the_windowed_minimum_forgets_samples_older_than_its_window() {
        let mut min = WindowedMin::default();
        min.insert(0, 30, 100);
        min.insert(50, 40, 100);
        assert_eq!(min.min(), Some(30));
        min.insert(120, 50, 100);
        assert_eq!(min.min(), Some(40), "30 was taken more than 100 before 120");
        min.insert(130, 20, 100);
        assert_eq!(min.min(), Some(20));
    }

    /// What one Copa does alone on a FIFO link.
    struct LinkRun {
        utilisation: f64,
        mean_queueing_ms: f64,
        largest_cwnd: f64,
    }

    /// Copa sends full packets whenever its window and pacing allow through a link of
    /// `rate_bps` with `base_rtt_ns` of propagation and an unbounded FIFO; each packet is
    /// acknowledged on arrival. Measured over the second half of `duration_ns`.
    fn run_on_link(rate_bps: f64, base_rtt_ns: u64, duration_ns: u64) -> LinkRun {
        let serialisation = (PACKET * 8e9 / rate_bps) as u64;
        let mut copa = CopaWindow::new(config());
        let mut flight: VecDeque<(u64, u64, u64)> = VecDeque::new(); // seq, sent, acked
        let (mut seq, mut link_free, mut next_send) = (0u64, 0u64, 0u64);
        let (mut delivered, mut queueing, mut samples, mut largest) = (0.0, 0.0, 0.0, 0.0f64);
        let measure_from = duration_ns / 2;
        loop {
            let window_open = (flight.len() as f64 + 1.0) * PACKET <= copa.cwnd;
            let ack_at = flight.front().map(|&(_, _, acked)| acked).unwrap_or(u64::MAX);
            if window_open && next_send < ack_at {
                let now = next_send;
                seq += 1;
                copa.on_sent(seq);
                link_free = link_free.max(now) + serialisation;
                flight.push_back((seq, now, link_free + base_rtt_ns));
                next_send = now + (PACKET * 1e9 / copa.pacing_bytes_per_s()) as u64;
                continue;
            }
            let (acked_seq, sent, now) = flight.pop_front().expect("a packet in flight");
            if now >= duration_ns {
                break;
            }
            copa.on_acked(acked_seq, PACKET as u64, now - sent, now);
            next_send = next_send.max(now);
            if now >= measure_from {
                delivered += PACKET;
                queueing += (now - sent - base_rtt_ns - serialisation) as f64;
                samples += 1.0;
                largest = largest.max(copa.cwnd);
            }
        }
        let seconds = (duration_ns - measure_from) as f64 / 1e9;
        LinkRun { utilisation: delivered * 8.0 / seconds / rate_bps,
                  mean_queueing_ms: queueing / samples / 1e6, largest_cwnd: largest }
    }

    #[test]
    fn alone_on_a_link_copa_fills_it_with_a_queue_of_a_few_packets() {
        for (rate_bps, base_rtt_ms) in [(20e6, 40), (100e6, 20), (5e6, 80)] {
            let run = run_on_link(rate_bps, base_rtt_ms * MS, 20_000 * MS);
            let bdp = rate_bps / 8.0 * base_rtt_ms as f64 / 1e3;
            let packet_ms = PACKET * 8e3 / rate_bps;
            assert!(run.utilisation > 0.95, "{rate_bps} bit/s: utilisation {}", run.utilisation);
            // The paper's equilibrium queue is 1/δ = 2 packets; Copa's oscillation about it
            // stays within a few more.
            assert!(run.mean_queueing_ms < 4.0 * packet_ms / 0.5,
                    "{rate_bps} bit/s: {} ms of queue", run.mean_queueing_ms);
            assert!(run.largest_cwnd < 1.5 * bdp, "{rate_bps} bit/s: window {} of BDP {bdp}", run.largest_cwnd);
        }
    }
}
