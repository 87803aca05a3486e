// SPDX-License-Identifier: MIT
//! GCC: libwebrtc's send-side congestion controller (the `goog_cc` crate, a port of
//! modules/congestion_controller/goog_cc), driven as libwebrtc's transport does:
//! every sent packet, every transport-wide feedback report and a process tick every
//! 25 ms go in; target rate, pacing rate and probe clusters come out.
//!
//! The controller runs in "packet feedback only" mode: RTT and loss come from the
//! per-packet feedback, since there are no RTCP receiver reports here.

use goog_cc::experiments::FieldTrials;
use goog_cc::network_control::{NetworkControllerConfig, NetworkControllerInterface};
use goog_cc::transport::{
    NetworkAvailability, NetworkControlUpdate, PacedPacketInfo, PacketResult, ProcessInterval, SentPacket,
    StreamsConfig, TargetRateConstraints, TransportPacketsFeedback,
};
use goog_cc::units::{DataRate, DataSize, Timestamp};
use goog_cc::{GoogCcConfig, GoogCcNetworkController};

use super::{Controller, RateBounds};
use crate::packet::{FeedbackRequest, Outcome, Probe, Sent};

/// libwebrtc sends transport feedback at most every 50 ms (RemoteEstimatorProxy's
/// shortest send interval), which is what it does at video bitrates.
const FEEDBACK: FeedbackRequest = FeedbackRequest { every_packets: 0, interval_ms: 50 };

pub struct GccController {
    gcc: GoogCcNetworkController,
    target_bps: f64,
    pacing_bps: f64,
    probes: Vec<Probe>,
    /// Results of a report in which every packet was lost, held for the next report that
    /// has a received packet: the crate unwraps the latest arrival time of a report and
    /// panics without one (libwebrtc starts that maximum at minus infinity instead).
    held: Vec<PacketResult>,
}

fn timestamp(ns: u64) -> Timestamp {
    Timestamp::from_micros((ns / 1000) as i64)
}

fn rate(bps: f64) -> DataRate {
    DataRate::from_bits_per_sec(bps.round() as i64)
}

impl GccController {
    pub fn new(now_ns: u64, bounds: RateBounds, pacing_factor: f64) -> GccController {
        let at_time = timestamp(now_ns);
        let config = NetworkControllerConfig {
            field_trials: FieldTrials::default(),
            constraints: TargetRateConstraints {
                at_time,
                min_data_rate: Some(rate(bounds.min)),
                max_data_rate: Some(rate(bounds.max)),
                starting_rate: Some(rate(bounds.start)),
            },
            stream_based_config: StreamsConfig {
                at_time,
                pacing_factor: Some(pacing_factor),
                max_total_allocated_bitrate: Some(rate(bounds.max)),
                ..Default::default()
            },
        };
        let mut controller = GccController {
            gcc: GoogCcNetworkController::new(config, GoogCcConfig { feedback_only: true }),
            target_bps: bounds.start,
            pacing_bps: bounds.start * pacing_factor,
            probes: Vec::new(),
            held: Vec::new(),
        };
        let update = controller.gcc.on_network_availability(NetworkAvailability { at_time, network_available: true });
        controller.apply(update);
        controller.on_tick(now_ns, 0);
        controller
    }

    fn apply(&mut self, update: NetworkControlUpdate) {
        if let Some(target) = update.target_rate {
            self.target_bps = target.target_rate.bps_float();
        }
        if let Some(pacer) = update.pacer_config {
            self.pacing_bps = pacer.data_rate().bps_float();
        }
        self.probes.extend(update.probe_cluster_configs.iter().map(|p| Probe {
            id: p.id,
            rate_bps: p.target_data_rate.bps_float(),
            min_packets: p.target_probe_count.max(1) as u32,
            min_bytes: (p.target_data_rate * p.target_duration).bytes().max(0) as u64,
        }));
    }
}

/// The record of a sent packet as GoogCC knows it.
fn sent_packet(sent: &Sent) -> SentPacket {
    let pacing_info = match sent.probe {
        Some(probe) => PacedPacketInfo {
            send_bitrate: rate(probe.rate_bps),
            probe_cluster_id: probe.id,
            probe_cluster_min_probes: probe.min_packets as i64,
            probe_cluster_min_bytes: probe.min_bytes as i64,
            probe_cluster_bytes_sent: 0,
        },
        None => PacedPacketInfo::default(),
    };
    SentPacket {
        send_time: timestamp(sent.send_ns),
        size: DataSize::from_bytes(sent.wire_bytes as i64),
        pacing_info,
        sequence_number: sent.seq as i64,
        data_in_flight: DataSize::from_bytes(sent.in_flight as i64),
        ..Default::default()
    }
}

impl Controller for GccController {
    fn on_sent(&mut self, sent: &Sent) {
        let update = self.gcc.on_sent_packet(sent_packet(sent));
        self.apply(update);
    }

    fn on_feedback(&mut self, now_ns: u64, outcomes: &[Outcome], in_flight: u64) {
        self.held.extend(outcomes.iter().map(|o| PacketResult {
            sent_packet: sent_packet(&o.sent),
            receive_time: o.arrival_ns.map_or(Timestamp::plus_infinity(), timestamp),
            ..Default::default()
        }));
        if !self.held.iter().any(|p| p.receive_time.is_finite()) {
            return;
        }
        let report = TransportPacketsFeedback {
            feedback_time: timestamp(now_ns),
            data_in_flight: DataSize::from_bytes(in_flight as i64),
            packet_feedbacks: std::mem::take(&mut self.held),
            sendless_arrival_times: Vec::new(),
        };
        let update = self.gcc.on_transport_packets_feedback(report);
        self.apply(update);
    }

    fn on_tick(&mut self, now_ns: u64, pacer_queue_bytes: u64) {
        let update = self.gcc.on_process_interval(ProcessInterval {
            at_time: timestamp(now_ns),
            pacer_queue: Some(DataSize::from_bytes(pacer_queue_bytes as i64)),
        });
        self.apply(update);
    }

    fn target_bps(&self) -> f64 {
        self.target_bps
    }

    fn pacing_bps(&self) -> f64 {
        self.pacing_bps
    }

    fn take_probes(&mut self) -> Vec<Probe> {
        std::mem::take(&mut self.probes)
    }

    fn feedback_request(&self) -> FeedbackRequest {
        FEEDBACK
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(seq: u64) -> Sent {
        Sent { seq, send_ns: seq * 1_000_000, wire_bytes: 1200, probe: None, in_flight: 1200 }
    }

    #[test]
    fn a_report_of_only_losses_waits_for_one_with_an_arrival() {
        let bounds = RateBounds { start: 1e6, min: 1e5, max: 1e8 };
        let mut gcc = GccController::new(0, bounds, 2.5);
        for seq in 0..4 {
            gcc.on_sent(&sent(seq));
        }
        let lost = |seq| Outcome { sent: sent(seq), arrival_ns: None, rtt_ns: None };
        gcc.on_feedback(50_000_000, &[lost(0), lost(1)], 2400);
        assert_eq!(gcc.held.len(), 2);
        let arrived = Outcome { sent: sent(2), arrival_ns: Some(22_000_000), rtt_ns: Some(40_000_000) };
        gcc.on_feedback(100_000_000, &[arrived, lost(3)], 0);
        assert!(gcc.held.is_empty());
    }
}
