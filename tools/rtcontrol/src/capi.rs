// SPDX-License-Identifier: MIT
//! The controllers behind a C ABI, for the ns-3 simulator (sim/ns3/apps/rt-flow.cc);
//! `include/rtcontrol.h` declares it. Times are nanoseconds on the simulator's clock.

use std::ffi::c_int;

use crate::control::{Controller, CopaController, FixedController, GccController, RateBounds};
use crate::packet::{Outcome, Probe, Sent};

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
    if !(min_bps > 0.0 && min_bps <= start_bps && start_bps <= max_bps && pacing_factor >= 1.0 && copa_delta > 0.0) {
        return std::ptr::null_mut();
    }
    let bounds = RateBounds { start: start_bps, min: min_bps, max: max_bps };
    let controller: Box<dyn Controller> = match kind {
        RTC_GCC => Box::new(GccController::new(now_ns, bounds, pacing_factor)),
        RTC_COPA => Box::new(CopaController::new(now_ns, bounds, copa_delta)),
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
