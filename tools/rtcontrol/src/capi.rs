// SPDX-License-Identifier: MIT
//! The controllers behind a C ABI, for the ns-3 simulator (sim/ns3/apps/rt-flow.cc, and
//! rt-tcp-flow.cc for the TCP mode's rate adapter); `include/rtcontrol.h` declares it.
//! Times are nanoseconds on the simulator's clock.

use std::ffi::c_int;

use crate::control::{Controller, CopaController, FixedController, GccController, RateBounds};
use crate::packet::{Outcome, Probe, Sent};
use crate::tcp_rate::{TcpRateAdapter, CONTROL_INTERVAL_NS, DEFAULT_NOTSENT_LOWAT};

pub const RTC_GCC: c_int = 0;
pub const RTC_COPA: c_int = 1;
pub const RTC_FIXED: c_int = 2;

/// A probe cluster the controller asks the pacer for.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct RtcProbe {
    pub id: i32,
    pub rate_bps: f64,
    pub min_packets: u32,
    pub min_bytes: u64,
}

/// One packet's feedback: `arrival_ns` and `rtt_ns` are meaningful when `received` is 1,
/// `probe` when `probed` is 1 (the cluster it was sent for: GCC's probe estimator reads it).
#[repr(C)]
pub struct RtcOutcome {
    pub seq: u64,
    pub send_ns: u64,
    pub wire_bytes: u32,
    pub in_flight: u64,
    pub received: c_int,
    pub arrival_ns: u64,
    pub rtt_ns: u64,
    pub probed: c_int,
    pub probe: RtcProbe,
}

fn probe(p: &RtcProbe) -> Probe {
    Probe { id: p.id, rate_bps: p.rate_bps, min_packets: p.min_packets, min_bytes: p.min_bytes }
}

/// How often the receiver reports (see `packet::FeedbackRequest`).
#[repr(C)]
pub struct RtcFeedbackRequest {
    pub every_packets: u8,
    pub interval_ms: u16,
}

pub struct RtcController(Box<dyn Controller>);

fn sent(seq: u64, send_ns: u64, wire_bytes: u32, in_flight: u64, probe: Option<Probe>) -> Sent {
    Sent { seq, send_ns, wire_bytes, probe, in_flight }
}

/// A controller of `kind` (RTC_GCC, RTC_COPA, RTC_FIXED at `start_bps`), as rtflow makes
/// it from its options (`--pacing-factor`, `--copa-delta`), or NULL for an unknown kind or
/// bounds that are not 0 < min <= start <= max.
fn valid_bounds(start_bps: f64, min_bps: f64, max_bps: f64) -> bool {
    min_bps > 0.0 && min_bps <= start_bps && start_bps <= max_bps
}

#[no_mangle]
pub extern "C" fn rtc_new(
    kind: c_int,
    now_ns: u64,
    start_bps: f64,
    min_bps: f64,
    max_bps: f64,
    pacing_factor: f64,
    copa_delta: f64,
) -> *mut RtcController {
    if !(valid_bounds(start_bps, min_bps, max_bps) && pacing_factor >= 1.0 && copa_delta > 0.0) {
        return std::ptr::null_mut();
    }
    let bounds = RateBounds { start: start_bps, min: min_bps, max: max_bps };
    let controller: Box<dyn Controller> = match kind {
        RTC_GCC => Box::new(GccController::new(now_ns, bounds, pacing_factor)),
        RTC_COPA => Box::new(CopaController::new(bounds, copa_delta)),
        RTC_FIXED => Box::new(FixedController::new(start_bps, pacing_factor)),
        _ => return std::ptr::null_mut(),
    };
    Box::into_raw(Box::new(RtcController(controller)))
}

/// # Safety
/// `c` comes from `rtc_new` and is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn rtc_free(c: *mut RtcController) {
    if !c.is_null() {
        drop(Box::from_raw(c));
    }
}

/// A packet left; `probe_id` is the cluster it belongs to, or -1.
///
/// # Safety
/// `c` comes from `rtc_new`; `probe` points to the cluster when `probe_id` >= 0.
#[no_mangle]
pub unsafe extern "C" fn rtc_on_sent(
    c: *mut RtcController,
    seq: u64,
    send_ns: u64,
    wire_bytes: u32,
    in_flight: u64,
    probe: *const RtcProbe,
) {
    (*c).0.on_sent(&sent(seq, send_ns, wire_bytes, in_flight, probe.as_ref().map(self::probe)));
}

/// A feedback report reached the sender at `now_ns`; `in_flight` counts after it.
///
/// # Safety
/// `c` comes from `rtc_new`; `outcomes` points to `n` records.
#[no_mangle]
pub unsafe extern "C" fn rtc_on_feedback(c: *mut RtcController, now_ns: u64, outcomes: *const RtcOutcome, n: usize, in_flight: u64) {
    let records = if n == 0 { &[][..] } else { std::slice::from_raw_parts(outcomes, n) };
    let list: Vec<Outcome> = records
        .iter()
        .map(|o| Outcome {
            sent: sent(o.seq, o.send_ns, o.wire_bytes, o.in_flight, (o.probed != 0).then(|| probe(&o.probe))),
            arrival_ns: (o.received != 0).then_some(o.arrival_ns),
            rtt_ns: (o.received != 0).then_some(o.rtt_ns),
        })
        .collect();
    (*c).0.on_feedback(now_ns, &list, in_flight);
}

/// # Safety
/// `c` comes from `rtc_new`.
#[no_mangle]
pub unsafe extern "C" fn rtc_on_tick(c: *mut RtcController, now_ns: u64, pacer_queue_bytes: u64) {
    (*c).0.on_tick(now_ns, pacer_queue_bytes);
}

/// # Safety
/// `c` comes from `rtc_new`.
#[no_mangle]
pub unsafe extern "C" fn rtc_target_bps(c: *const RtcController) -> f64 {
    (*c).0.target_bps()
}

/// # Safety
/// `c` comes from `rtc_new`.
#[no_mangle]
pub unsafe extern "C" fn rtc_pacing_bps(c: *const RtcController) -> f64 {
    (*c).0.pacing_bps()
}

/// A window controller's congestion window (bytes) in `*out`: 1, or 0 for a rate
/// controller (GCC, fixed), which has none (rtflow's rate log leaves it empty then).
///
/// # Safety
/// `c` comes from `rtc_new`; `out` points to a writable u64.
#[no_mangle]
pub unsafe extern "C" fn rtc_cwnd_bytes(c: *const RtcController, out: *mut u64) -> c_int {
    match (*c).0.cwnd_bytes() {
        Some(bytes) => {
            *out = bytes;
            1
        }
        None => 0,
    }
}

/// Whether a window controller lets another packet go with `in_flight` bytes out.
///
/// # Safety
/// `c` comes from `rtc_new`.
#[no_mangle]
pub unsafe extern "C" fn rtc_can_send(c: *const RtcController, in_flight: u64) -> c_int {
    (*c).0.can_send(in_flight) as c_int
}

/// Moves up to `max` requested probe clusters into `out`; returns how many. Clusters
/// beyond `max` are dropped (the pacer runs one at a time).
///
/// # Safety
/// `c` comes from `rtc_new`; `out` has room for `max` records.
#[no_mangle]
pub unsafe extern "C" fn rtc_take_probes(c: *mut RtcController, out: *mut RtcProbe, max: usize) -> usize {
    let probes = (*c).0.take_probes();
    let n = probes.len().min(max);
    for (i, p) in probes.iter().take(n).enumerate() {
        *out.add(i) = RtcProbe { id: p.id, rate_bps: p.rate_bps, min_packets: p.min_packets, min_bytes: p.min_bytes };
    }
    n
}

/// # Safety
/// `c` comes from `rtc_new`.
#[no_mangle]
pub unsafe extern "C" fn rtc_feedback_request(c: *const RtcController) -> RtcFeedbackRequest {
    let r = (*c).0.feedback_request();
    RtcFeedbackRequest { every_packets: r.every_packets, interval_ms: r.interval_ms }
}

/// How often the controller wants `rtc_on_tick`, ns.
#[no_mangle]
pub extern "C" fn rtc_tick_ns() -> u64 {
    crate::control::TICK_NS
}

pub struct RtcTcpAdapter(TcpRateAdapter);

/// The TCP mode's rate adapter (`tcp_rate`) for frames `frame_interval_ns` apart, or NULL
/// for bounds that are not 0 < min <= start <= max or a zero interval.
#[no_mangle]
pub extern "C" fn rtc_tcp_new(start_bps: f64, min_bps: f64, max_bps: f64, frame_interval_ns: u64) -> *mut RtcTcpAdapter {
    if !valid_bounds(start_bps, min_bps, max_bps) || frame_interval_ns == 0 {
        return std::ptr::null_mut();
    }
    let bounds = RateBounds { start: start_bps, min: min_bps, max: max_bps };
    Box::into_raw(Box::new(RtcTcpAdapter(TcpRateAdapter::new(bounds, frame_interval_ns))))
}

/// # Safety
/// `a` comes from `rtc_tcp_new` and is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn rtc_tcp_free(a: *mut RtcTcpAdapter) {
    if !a.is_null() {
        drop(Box::from_raw(a));
    }
}

/// How long the oldest frame not yet handed to the socket has waited so far.
///
/// # Safety
/// `a` comes from `rtc_tcp_new`.
#[no_mangle]
pub unsafe extern "C" fn rtc_tcp_note_wait(a: *mut RtcTcpAdapter, wait_ns: u64) {
    (*a).0.note_wait(wait_ns);
}

/// One control step, every `rtc_tcp_interval_ns`; `bytes_acked` is the running total the
/// peer acknowledged (TCP_INFO's tcpi_bytes_acked).
///
/// # Safety
/// `a` comes from `rtc_tcp_new`.
#[no_mangle]
pub unsafe extern "C" fn rtc_tcp_update(a: *mut RtcTcpAdapter, now_ns: u64, bytes_acked: u64) {
    (*a).0.update(now_ns, bytes_acked);
}

/// # Safety
/// `a` comes from `rtc_tcp_new`.
#[no_mangle]
pub unsafe extern "C" fn rtc_tcp_target_bps(a: *const RtcTcpAdapter) -> f64 {
    (*a).0.target_bps()
}

/// How often the adapter wants `rtc_tcp_update`, ns.
#[no_mangle]
pub extern "C" fn rtc_tcp_interval_ns() -> u64 {
    CONTROL_INTERVAL_NS
}

/// rtflow's default TCP_NOTSENT_LOWAT, bytes.
#[no_mangle]
pub extern "C" fn rtc_tcp_notsent_lowat() -> u64 {
    DEFAULT_NOTSENT_LOWAT
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn the_tcp_adapter_behind_the_abi_is_the_rust_one() {
        let bounds = RateBounds { start: 2e6, min: 0.1e6, max: 50e6 };
        let mut direct = TcpRateAdapter::new(bounds, 16 * MS);
        let through = rtc_tcp_new(2e6, 0.1e6, 50e6, 16 * MS);
        assert!(!through.is_null());
        for step in 1..=20u64 {
            let (wait, acked) = (if step % 7 == 0 { 150 * MS } else { 5 * MS }, step * 100_000);
            direct.note_wait(wait);
            direct.update(step * CONTROL_INTERVAL_NS, acked);
            unsafe {
                rtc_tcp_note_wait(through, wait);
                rtc_tcp_update(through, step * CONTROL_INTERVAL_NS, acked);
                assert_eq!(rtc_tcp_target_bps(through), direct.target_bps());
            }
        }
        unsafe { rtc_tcp_free(through) };
    }

    #[test]
    fn only_a_window_controller_gives_its_window() {
        let bounds = RateBounds { start: 5e6, min: 0.1e6, max: 50e6 };
        let copa = rtc_new(RTC_COPA, 0, 5e6, 0.1e6, 50e6, 2.5, 0.5);
        let gcc = rtc_new(RTC_GCC, 0, 5e6, 0.1e6, 50e6, 2.5, 0.5);
        let mut window = 0u64;
        unsafe {
            assert_eq!(rtc_cwnd_bytes(copa, &mut window), 1);
            assert_eq!(Some(window), CopaController::new(bounds, 0.5).cwnd_bytes());
            window = 7;
            assert_eq!(rtc_cwnd_bytes(gcc, &mut window), 0);
            assert_eq!(window, 7, "a rate controller leaves it untouched");
            rtc_free(copa);
            rtc_free(gcc);
        }
    }

    #[test]
    fn the_tcp_adapter_refuses_bad_bounds_and_intervals() {
        assert!(rtc_tcp_new(1e6, 2e6, 50e6, 16 * MS).is_null());
        assert!(rtc_tcp_new(1e6, 0.0, 50e6, 16 * MS).is_null());
        assert!(rtc_tcp_new(60e6, 0.1e6, 50e6, 16 * MS).is_null());
        assert!(rtc_tcp_new(1e6, 0.1e6, 50e6, 0).is_null());
    }
}
