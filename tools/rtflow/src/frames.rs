// SPDX-License-Identifier: MIT
//! The receiver's view of frames: packets are gathered per frame; a frame is logged as
//! soon as its last missing packet arrives (complete), or as incomplete once no packet
//! of it has arrived for `timeout_ns`. Frames of which no packet arrived at all are
//! noticed from the gap in frame ids and logged as incomplete too, with a capture time
//! interpolated between their neighbours (capture times are evenly spaced).
//!
//! Frame delay = arrival of the frame's last byte - capture time, both CLOCK_MONOTONIC.

use std::collections::BTreeMap;

use crate::logs::{float, CsvLog, Field};
use crate::wire::FramePacket;

/// The most frames one gap may stand for (10 s at 60 fps); a bigger jump is a new stream.
const MAX_GAP_FRAMES: u64 = 600;

/// A frame as the receiver finally saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct FrameRecord {
    pub id: u64,
    pub capture_ns: u64,
    pub key: Option<bool>,
    pub size: Option<u32>,
    /// Packets in the frame (UDP only) and how many arrived.
    pub packets: Option<(u16, u16)>,
    pub first_arrival_ns: Option<u64>,
    pub last_arrival_ns: Option<u64>,
    pub complete: bool,
}

impl FrameRecord {
    pub fn delay_ns(&self) -> Option<u64> {
        if !self.complete {
            return None;
        }
        Some(self.last_arrival_ns?.saturating_sub(self.capture_ns))
    }

    pub fn write(&self, log: &mut CsvLog) -> Result<(), String> {
        log.row(&[
            Field::Int(self.id),
            Field::Int(self.capture_ns),
            self.key.map_or(Field::Missing, Field::from),
            self.size.map_or(Field::Missing, |s| Field::Int(s as u64)),
            self.packets.map_or(Field::Missing, |(count, _)| Field::Int(count as u64)),
            self.packets.map_or(Field::Missing, |(_, got)| Field::Int(got as u64)),
            self.first_arrival_ns.into(),
            self.last_arrival_ns.into(),
            float(self.delay_ns().map(|d| d as f64 / 1e6), 3),
            self.complete.into(),
        ])
    }
}

struct Open {
    record: FrameRecord,
    seen: Vec<bool>,
    /// Last time anything happened to this frame (its creation or a packet).
    touched_ns: u64,
}

enum Slot {
    Open(Open),
    Done { at_ns: u64 },
}

pub struct Assembler {
    slots: BTreeMap<u64, Slot>,
    /// Frames below this id are forgotten; their late packets are ignored.
    forgotten_below: u64,
    /// Highest frame id seen and its capture time.
    newest: Option<(u64, u64)>,
    timeout_ns: u64,
}

impl Assembler {
    pub fn new(timeout_ns: u64) -> Assembler {
        Assembler { slots: BTreeMap::new(), forgotten_below: 0, newest: None, timeout_ns }
    }

    /// Takes one packet; returns the frame if this packet completed it.
    pub fn on_packet(&mut self, packet: &FramePacket, arrival_ns: u64) -> Option<FrameRecord> {
        if packet.frame_id < self.forgotten_below || packet.index >= packet.count {
            return None;
        }
        self.note_gap(packet, arrival_ns);
        let slot = self.slots.entry(packet.frame_id).or_insert_with(|| Slot::Open(placeholder(
            packet.frame_id, packet.capture_ns, arrival_ns)));
        let Slot::Open(open) = slot else { return None };
        if open.seen.is_empty() {
            open.seen = vec![false; packet.count as usize];
            open.record.capture_ns = packet.capture_ns;
            open.record.key = Some(packet.key);
            open.record.size = Some(packet.frame_size);
            open.record.packets = Some((packet.count, 0));
        }
        let index = packet.index as usize;
        if index >= open.seen.len() || open.seen[index] {
            return None;
        }
        open.seen[index] = true;
        open.touched_ns = arrival_ns;
        let record = &mut open.record;
        record.first_arrival_ns.get_or_insert(arrival_ns);
        record.last_arrival_ns = Some(arrival_ns);
        let (count, got) = record.packets.as_mut().expect("set with seen");
        *got += 1;
        if *got < *count {
            return None;
        }
        record.complete = true;
        let done = record.clone();
        *slot = Slot::Done { at_ns: arrival_ns };
        Some(done)
    }

    /// Frames skipped entirely between the newest frame and this one get placeholders.
    fn note_gap(&mut self, packet: &FramePacket, arrival_ns: u64) {
        let (newest_id, newest_capture) = match self.newest {
            Some(newest) if packet.frame_id <= newest.0 => return,
            Some(newest) => newest,
            None => (packet.frame_id, packet.capture_ns),
        };
        self.newest = Some((packet.frame_id, packet.capture_ns));
        let gap = packet.frame_id - newest_id;
        if gap <= 1 || gap > MAX_GAP_FRAMES {
            return;
        }
        let span = packet.capture_ns.saturating_sub(newest_capture);
        for k in 1..gap {
            let capture_ns = newest_capture + span * k / gap;
            let id = newest_id + k;
            self.slots.entry(id).or_insert_with(|| Slot::Open(placeholder(id, capture_ns, arrival_ns)));
        }
    }

    /// Frames that waited `timeout_ns` without news are given up: returned incomplete.
    pub fn expire(&mut self, now_ns: u64) -> Vec<FrameRecord> {
        let timeout = self.timeout_ns;
        self.close_where(|open| now_ns.saturating_sub(open.touched_ns) >= timeout, now_ns)
    }

    /// Every frame still open, returned incomplete (the stream ended).
    pub fn finish(&mut self, now_ns: u64) -> Vec<FrameRecord> {
        self.close_where(|_| true, now_ns)
    }

    fn close_where(&mut self, give_up: impl Fn(&Open) -> bool, now_ns: u64) -> Vec<FrameRecord> {
        let mut closed = Vec::new();
        for slot in self.slots.values_mut() {
            if let Slot::Open(open) = slot {
                if give_up(open) {
                    closed.push(open.record.clone());
                    *slot = Slot::Done { at_ns: now_ns };
                }
            }
        }
        self.forget_old(now_ns);
        closed
    }

    /// Drops finished frames from the front once they are old, to bound memory.
    fn forget_old(&mut self, now_ns: u64) {
        while let Some(entry) = self.slots.first_entry() {
            match entry.get() {
                Slot::Done { at_ns } if now_ns.saturating_sub(*at_ns) >= self.timeout_ns => {
                    self.forgotten_below = entry.key() + 1;
                    entry.remove();
                }
                _ => break,
            }
        }
    }
}

fn placeholder(id: u64, capture_ns: u64, now_ns: u64) -> Open {
    Open {
        record: FrameRecord { id, capture_ns, key: None, size: None, packets: None, first_arrival_ns: None,
                              last_arrival_ns: None, complete: false },
        seen: Vec::new(),
        touched_ns: now_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn packet(frame_id: u64, index: u16, count: u16) -> FramePacket {
        FramePacket { frame_id, capture_ns: frame_id * 16 * MS, key: frame_id == 0, frame_size: 3000, index, count }
    }

    #[test]
    fn a_frame_completes_with_its_last_packet() {
        let mut asm = Assembler::new(1000 * MS);
        assert_eq!(asm.on_packet(&packet(0, 1, 3), 5 * MS), None);
        assert_eq!(asm.on_packet(&packet(0, 1, 3), 6 * MS), None, "duplicate");
        assert_eq!(asm.on_packet(&packet(0, 0, 3), 7 * MS), None);
        let done = asm.on_packet(&packet(0, 2, 3), 9 * MS).expect("complete");
        assert!(done.complete);
        assert_eq!(done.packets, Some((3, 3)));
        assert_eq!(done.first_arrival_ns, Some(5 * MS));
        assert_eq!(done.delay_ns(), Some(9 * MS));
        assert_eq!(done.key, Some(true));
        assert_eq!(asm.on_packet(&packet(0, 2, 3), 10 * MS), None, "late duplicate");
    }

    #[test]
    fn incomplete_and_missing_frames_are_given_up_after_the_timeout() {
        let mut asm = Assembler::new(100 * MS);
        asm.on_packet(&packet(1, 0, 2), 20 * MS);
        asm.on_packet(&packet(4, 0, 1), 70 * MS).expect("frame 4 complete");
        assert!(asm.expire(110 * MS).is_empty());
        let lost = asm.expire(121 * MS);
        assert_eq!(lost.iter().map(|f| f.id).collect::<Vec<_>>(), vec![1]);
        assert_eq!(lost[0].packets, Some((2, 1)));
        assert_eq!(lost[0].delay_ns(), None);
        let missing = asm.expire(170 * MS);
        assert_eq!(missing.iter().map(|f| f.id).collect::<Vec<_>>(), vec![2, 3]);
        assert_eq!(missing[0].capture_ns, 32 * MS, "interpolated");
        assert_eq!(missing[1].packets, None);
        assert!(asm.expire(400 * MS).is_empty());
        assert_eq!(asm.on_packet(&packet(1, 1, 2), 401 * MS), None, "forgotten frame");
    }

    #[test]
    fn finish_gives_up_every_open_frame() {
        let mut asm = Assembler::new(1000 * MS);
        asm.on_packet(&packet(7, 0, 2), MS);
        let rest = asm.finish(2 * MS);
        assert_eq!(rest.len(), 1);
        assert!(!rest[0].complete);
    }
}
