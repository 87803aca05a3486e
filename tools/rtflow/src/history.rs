// SPDX-License-Identifier: MIT
//! The sender's record of packets in flight, and what the receiver's feedback says
//! about them: delivered (with a round-trip time sample) or lost.
//!
//! A round-trip sample is `feedback arrival - send time - hold`, where the hold is how
//! long the receiver kept the packet before reporting it (its report time minus the
//! arrival time, both on the receiver's clock). Subtracting the hold keeps the batching
//! of feedback out of the RTT, as QUIC does with its ACK delay.

use std::collections::VecDeque;
use std::ops::Deref;

use rtcontrol::packet::{Outcome as ControlOutcome, Sent};

use crate::pacer::{MediaPacket, Outgoing, Probe};
use crate::wire::FeedbackEntry;

/// A packet that gets no feedback for this long is taken as lost (its feedback was lost).
const FORGET_AFTER_NS: u64 = 2_000_000_000;

/// A sent packet as the controllers know it (`rtcontrol::packet::Sent`, its fields read
/// through `Deref`), and the piece of a frame it carried, kept for retransmission.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SentRecord {
    pub sent: Sent,
    /// None for padding.
    pub media: Option<MediaPacket>,
}

impl Deref for SentRecord {
    type Target = Sent;

    fn deref(&self) -> &Sent {
        &self.sent
    }
}

/// What became of one sent packet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Outcome {
    pub sent: SentRecord,
    /// Arrival on the receiver's clock; `None` when lost.
    pub arrival_ns: Option<u64>,
    pub rtt_ns: Option<u64>,
}

impl Outcome {
    /// The outcome as the controllers take it.
    pub fn control(&self) -> ControlOutcome {
        ControlOutcome { sent: self.sent.sent, arrival_ns: self.arrival_ns, rtt_ns: self.rtt_ns }
    }
}

/// Totals since the last call to `take_interval_stats`, for the rate log.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct IntervalStats {
    pub acked_bytes: u64,
    pub received: u64,
    pub lost: u64,
}

pub struct History {
    next_seq: u64,
    /// Records for sequence numbers `first_seq..next_seq`; `None` once resolved.
    records: VecDeque<Option<SentRecord>>,
    first_seq: u64,
    in_flight: u64,
    srtt_ns: Option<f64>,
    stats: IntervalStats,
}

impl History {
    pub fn new() -> History {
        History { next_seq: 0, records: VecDeque::new(), first_seq: 0, in_flight: 0, srtt_ns: None,
                  stats: IntervalStats::default() }
    }

    /// The transport-wide sequence number the next packet gets.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    pub fn in_flight(&self) -> u64 {
        self.in_flight
    }

    /// Smoothed RTT (EWMA with gain 1/8, as TCP) over all samples so far.
    pub fn srtt_ns(&self) -> Option<f64> {
        self.srtt_ns
    }

    pub fn on_sent(&mut self, send_ns: u64, packet: Outgoing, probe: Option<Probe>) -> SentRecord {
        let wire_bytes = packet.wire_bytes() as u32;
        self.in_flight += wire_bytes as u64;
        let media = match packet {
            Outgoing::Media(media) => Some(media),
            Outgoing::Padding => None,
        };
        let sent = Sent { seq: self.next_seq, send_ns, wire_bytes, probe, in_flight: self.in_flight };
        let record = SentRecord { sent, media };
        self.records.push_back(Some(record));
        self.next_seq += 1;
        record
    }

    /// Resolves the packets a feedback datagram reports. Entries for unknown or already
    /// resolved packets (duplicates, late arrivals after a loss report) are ignored.
    pub fn on_feedback(&mut self, now_ns: u64, report_ns: u64, entries: &[FeedbackEntry]) -> Vec<Outcome> {
        let mut outcomes = Vec::with_capacity(entries.len());
        for entry in entries {
            let Some(sent) = self.take(entry.seq) else { continue };
            let rtt_ns = entry.arrival_ns.map(|arrival| {
                let hold = report_ns.saturating_sub(arrival);
                now_ns.saturating_sub(sent.send_ns).saturating_sub(hold)
            });
            if let Some(rtt) = rtt_ns {
                self.add_rtt_sample(rtt);
            }
            self.count(&sent, entry.arrival_ns.is_some());
            outcomes.push(Outcome { sent, arrival_ns: entry.arrival_ns, rtt_ns });
        }
        self.trim();
        outcomes
    }

    /// Gives up on packets that have waited too long for feedback: they count as lost.
    pub fn forget_stale(&mut self, now_ns: u64) -> Vec<Outcome> {
        let mut outcomes = Vec::new();
        while let Some(front) = self.records.front() {
            match front {
                Some(r) if now_ns.saturating_sub(r.send_ns) < FORGET_AFTER_NS => break,
                Some(r) => {
                    let sent = *r;
                    self.in_flight -= sent.wire_bytes as u64;
                    self.count(&sent, false);
                    outcomes.push(Outcome { sent, arrival_ns: None, rtt_ns: None });
                }
                None => {}
            }
            self.records.pop_front();
            self.first_seq += 1;
        }
        outcomes
    }

    pub fn take_interval_stats(&mut self) -> IntervalStats {
        std::mem::take(&mut self.stats)
    }

    fn take(&mut self, seq: u64) -> Option<SentRecord> {
        let index = usize::try_from(seq.checked_sub(self.first_seq)?).ok()?;
        let sent = self.records.get_mut(index)?.take()?;
        self.in_flight -= sent.wire_bytes as u64;
        Some(sent)
    }

    fn count(&mut self, sent: &SentRecord, received: bool) {
        if received {
            self.stats.received += 1;
            self.stats.acked_bytes += sent.wire_bytes as u64;
        } else {
            self.stats.lost += 1;
        }
    }

    fn add_rtt_sample(&mut self, rtt_ns: u64) {
        let sample = rtt_ns as f64;
        self.srtt_ns = Some(self.srtt_ns.map_or(sample, |s| s + (sample - s) / 8.0));
    }

    fn trim(&mut self) {
        while self.records.front().is_some_and(|r| r.is_none()) {
            self.records.pop_front();
            self.first_seq += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pacer::PADDING_PAYLOAD;

    /// Padding of `PADDING_PAYLOAD` bytes occupies this much on the wire.
    const PAD: u64 = (PADDING_PAYLOAD + crate::wire::MEDIA_HEADER_LEN + crate::wire::IP_UDP_OVERHEAD) as u64;

    #[test]
    fn feedback_resolves_packets_and_subtracts_the_receivers_hold_time() {
        let mut history = History::new();
        for i in 0..4 {
            history.on_sent(1_000_000 * i, Outgoing::Padding, None);
        }
        assert_eq!(history.in_flight(), 4 * PAD);
        let entries = [
            FeedbackEntry { seq: 0, arrival_ns: Some(20_000_000) },
            FeedbackEntry { seq: 1, arrival_ns: None },
            FeedbackEntry { seq: 2, arrival_ns: Some(22_000_000) },
        ];
        // Report sent at 30 ms on the receiver's clock, received at 45 ms by the sender.
        let outcomes = history.on_feedback(45_000_000, 30_000_000, &entries);
        assert_eq!(outcomes.len(), 3);
        assert_eq!(outcomes[0].rtt_ns, Some(35_000_000));
        assert_eq!(outcomes[1].rtt_ns, None);
        assert_eq!(outcomes[2].rtt_ns, Some(35_000_000));
        assert_eq!(history.in_flight(), PAD);
        assert_eq!(history.take_interval_stats(), IntervalStats { acked_bytes: 2 * PAD, received: 2, lost: 1 });
        // Duplicates and unknown sequence numbers change nothing.
        assert!(history.on_feedback(50_000_000, 30_000_000, &entries).is_empty());
        assert!(history.on_feedback(50_000_000, 30_000_000, &[FeedbackEntry { seq: 99, arrival_ns: Some(1) }])
            .is_empty());
        assert_eq!(history.in_flight(), PAD);
    }

    #[test]
    fn packets_without_feedback_are_forgotten_as_lost() {
        let mut history = History::new();
        history.on_sent(0, Outgoing::Padding, None);
        history.on_sent(1_500_000_000, Outgoing::Padding, None);
        assert!(history.forget_stale(1_900_000_000).is_empty());
        let forgotten = history.forget_stale(2_100_000_000);
        assert_eq!(forgotten.len(), 1);
        assert_eq!(forgotten[0].sent.seq, 0);
        assert_eq!(history.in_flight(), PAD);
        assert_eq!(history.next_seq(), 2);
    }
}
