// SPDX-License-Identifier: MIT
//! The receiver's side of the feedback loop: it notes the arrival time of every packet
//! (media or padding) by transport-wide sequence number, marks the sequence numbers it
//! skipped as lost, and reports them in batches as often as the sender's latest packet
//! asks (every N packets and/or every M ms).

use crate::wire::{encode_feedback, FeedbackEntry, FeedbackRequest, MAX_FEEDBACK_ENTRIES};

/// A jump in sequence numbers larger than this is a restarted sender, not a loss burst.
const MAX_GAP: u64 = 10_000;
/// A loss is reported this soon after it is noticed, whatever the requested pace, so the
/// sender can resend in about one round trip (as a WebRTC receiver sends NACKs at once).
const LOSS_REPORT_DELAY_NS: u64 = 5_000_000;

pub struct FeedbackBuilder {
    pending: Vec<FeedbackEntry>,
    oldest_pending_ns: Option<u64>,
    loss_noticed_ns: Option<u64>,
    highest_seq: Option<u64>,
    request: FeedbackRequest,
}

impl FeedbackBuilder {
    pub fn new() -> FeedbackBuilder {
        FeedbackBuilder { pending: Vec::new(), oldest_pending_ns: None, loss_noticed_ns: None, highest_seq: None,
                          request: FeedbackRequest::default() }
    }

    pub fn on_packet(&mut self, seq: u64, arrival_ns: u64, request: FeedbackRequest) {
        self.request = request;
        if let Some(highest) = self.highest_seq {
            if seq > highest + 1 && seq - highest <= MAX_GAP {
                self.pending.extend((highest + 1..seq).map(|s| FeedbackEntry { seq: s, arrival_ns: None }));
                self.loss_noticed_ns.get_or_insert(arrival_ns);
            }
        }
        if self.highest_seq.is_none_or(|h| seq > h) {
            self.highest_seq = Some(seq);
        }
        self.pending.push(FeedbackEntry { seq, arrival_ns: Some(arrival_ns) });
        self.oldest_pending_ns.get_or_insert(arrival_ns);
    }

    /// When the pending report must go out by time, if anything is pending.
    pub fn deadline_ns(&self) -> Option<u64> {
        let by_time = self.oldest_pending_ns.map(|t| t + self.request.interval_ms as u64 * 1_000_000);
        let by_loss = self.loss_noticed_ns.map(|t| t + LOSS_REPORT_DELAY_NS);
        by_time.into_iter().chain(by_loss).min()
    }

    pub fn is_due(&self, now_ns: u64) -> bool {
        let by_count = self.request.every_packets > 0 && self.pending.len() >= self.request.every_packets as usize;
        by_count || self.deadline_ns().is_some_and(|d| now_ns >= d)
    }

    /// Encodes everything pending into as many datagrams as needed, stamped `now_ns`.
    pub fn take_datagrams(&mut self, now_ns: u64) -> Vec<Vec<u8>> {
        let datagrams = self
            .pending
            .chunks(MAX_FEEDBACK_ENTRIES)
            .map(|chunk| {
                let mut buf = Vec::new();
                encode_feedback(now_ns, chunk, &mut buf);
                buf
            })
            .collect();
        self.pending.clear();
        self.oldest_pending_ns = None;
        self.loss_noticed_ns = None;
        datagrams
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::decode_feedback;

    const EVERY_TWO: FeedbackRequest = FeedbackRequest { every_packets: 2, interval_ms: 5 };
    const BY_TIME: FeedbackRequest = FeedbackRequest { every_packets: 0, interval_ms: 50 };

    #[test]
    fn reports_by_count_or_by_time() {
        let mut fb = FeedbackBuilder::new();
        fb.on_packet(0, 1_000, EVERY_TWO);
        assert!(!fb.is_due(1_000));
        assert!(fb.is_due(6_000_000), "5 ms after the first pending arrival");
        fb.on_packet(1, 2_000, EVERY_TWO);
        assert!(fb.is_due(2_000));
        let datagrams = fb.take_datagrams(3_000);
        assert_eq!(datagrams.len(), 1);
        let (report, entries) = decode_feedback(&datagrams[0]).unwrap();
        assert_eq!(report, 3_000);
        assert_eq!(entries.len(), 2);
        assert_eq!(fb.deadline_ns(), None);
    }

    #[test]
    fn skipped_sequence_numbers_are_reported_lost() {
        let mut fb = FeedbackBuilder::new();
        fb.on_packet(10, 1, BY_TIME);
        fb.on_packet(13, 2, BY_TIME);
        fb.on_packet(12, 3, BY_TIME); // late: reported as it arrived
        let (_, entries) = decode_feedback(&fb.take_datagrams(4)[0]).unwrap();
        let lost: Vec<u64> = entries.iter().filter(|e| e.arrival_ns.is_none()).map(|e| e.seq).collect();
        assert_eq!(lost, vec![11, 12]);
        assert_eq!(entries.last().unwrap(), &FeedbackEntry { seq: 12, arrival_ns: Some(3) });
    }

    #[test]
    fn a_loss_is_reported_soon_whatever_the_requested_pace() {
        let mut fb = FeedbackBuilder::new();
        fb.on_packet(1, 1_000_000, BY_TIME);
        assert_eq!(fb.deadline_ns(), Some(51_000_000));
        fb.on_packet(3, 2_000_000, BY_TIME);
        assert_eq!(fb.deadline_ns(), Some(7_000_000));
        fb.take_datagrams(7_000_000);
        fb.on_packet(4, 8_000_000, BY_TIME);
        assert_eq!(fb.deadline_ns(), Some(58_000_000));
    }

    #[test]
    fn a_large_backlog_is_split_over_datagrams() {
        let mut fb = FeedbackBuilder::new();
        for seq in 0..200 {
            fb.on_packet(seq, seq + 1, BY_TIME);
        }
        let datagrams = fb.take_datagrams(500);
        assert_eq!(datagrams.len(), 200_usize.div_ceil(MAX_FEEDBACK_ENTRIES));
        let total: usize = datagrams.iter().map(|d| decode_feedback(d).unwrap().1.len()).sum();
        assert_eq!(total, 200);
    }
}
