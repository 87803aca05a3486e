// SPDX-License-Identifier: MIT
//! What travels between sender and receiver (all integers big-endian).
//!
//! Media header, 40 bytes, at the start of every UDP media, padding and bye datagram and
//! of every frame on a TCP connection (where `frame_size` payload bytes follow it):
//!
//! ```text
//!  0 magic "RF" (2)   2 version (1)   3 kind (1)   4 flags (1)   5 feedback_every (1)
//!  6 feedback_interval_ms (2)   8 transport-wide sequence number (8)   16 frame id (8)
//! 24 capture time, ns of CLOCK_MONOTONIC (8)   32 frame size, payload bytes (4)
//! 36 packet index (2)   38 packet count (2)
//! ```
//!
//! The sender states in every packet how often it wants feedback (every N packets
//! and/or every M ms), so the receiver needs no configuration per controller.
//!
//! Feedback datagram (receiver to sender), like RTP transport-wide congestion control
//! feedback: 16-byte header `magic, version, kind, 4 spare bytes, report time (8)`, then
//! entries of 16 bytes `sequence number (8), arrival time (8)`, arrival 0 meaning lost.
//! Times are the receiver's CLOCK_MONOTONIC; the sender uses only differences of them
//! (report time minus arrival time = how long the receiver held the report).

pub const MAGIC: [u8; 2] = *b"RF";
pub const VERSION: u8 = 1;
pub const MEDIA_HEADER_LEN: usize = 40;
pub use rtcontrol::packet::{FeedbackRequest, IP_UDP_OVERHEAD, MAX_DATAGRAM};
pub const MAX_MEDIA_PAYLOAD: usize = MAX_DATAGRAM - MEDIA_HEADER_LEN;

const FEEDBACK_HEADER_LEN: usize = 16;
const FEEDBACK_ENTRY_LEN: usize = 16;
pub const MAX_FEEDBACK_ENTRIES: usize = (MAX_DATAGRAM - FEEDBACK_HEADER_LEN) / FEEDBACK_ENTRY_LEN;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A piece of a video frame.
    Media = 1,
    /// Filler sent only to probe the path for more bandwidth (GCC probes).
    Padding = 2,
    /// The sender has finished; the receiver may stop.
    Bye = 3,
    Feedback = 4,
}

impl Kind {
    fn from_byte(byte: u8) -> Option<Kind> {
        [Kind::Media, Kind::Padding, Kind::Bye, Kind::Feedback].into_iter().find(|k| *k as u8 == byte)
    }
}

pub const FLAG_KEY_FRAME: u8 = 1;

/// Which packet of which frame a datagram (or a TCP frame) carries: the media header's
/// frame fields, all 0 in padding and bye datagrams.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FramePacket {
    pub frame_id: u64,
    pub capture_ns: u64,
    pub key: bool,
    pub frame_size: u32,
    pub index: u16,
    pub count: u16,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MediaHeader {
    pub kind: Kind,
    pub feedback: FeedbackRequest,
    pub seq: u64,
    pub frame: FramePacket,
}

impl MediaHeader {
    pub fn encode(&self, out: &mut [u8]) {
        out[0..2].copy_from_slice(&MAGIC);
        out[2] = VERSION;
        out[3] = self.kind as u8;
        out[4] = if self.frame.key { FLAG_KEY_FRAME } else { 0 };
        out[5] = self.feedback.every_packets;
        out[6..8].copy_from_slice(&self.feedback.interval_ms.to_be_bytes());
        out[8..16].copy_from_slice(&self.seq.to_be_bytes());
        out[16..24].copy_from_slice(&self.frame.frame_id.to_be_bytes());
        out[24..32].copy_from_slice(&self.frame.capture_ns.to_be_bytes());
        out[32..36].copy_from_slice(&self.frame.frame_size.to_be_bytes());
        out[36..38].copy_from_slice(&self.frame.index.to_be_bytes());
        out[38..40].copy_from_slice(&self.frame.count.to_be_bytes());
    }

    /// Reads a header; `None` for anything that is not an rtflow media, padding or bye header.
    pub fn decode(buf: &[u8]) -> Option<MediaHeader> {
        if buf.len() < MEDIA_HEADER_LEN || buf[0..2] != MAGIC || buf[2] != VERSION {
            return None;
        }
        let kind = Kind::from_byte(buf[3]).filter(|k| *k != Kind::Feedback)?;
        Some(MediaHeader {
            kind,
            feedback: FeedbackRequest { every_packets: buf[5], interval_ms: be16(&buf[6..8]) },
            seq: be64(&buf[8..16]),
            frame: FramePacket {
                frame_id: be64(&buf[16..24]),
                capture_ns: be64(&buf[24..32]),
                key: buf[4] & FLAG_KEY_FRAME != 0,
                frame_size: u32::from_be_bytes(buf[32..36].try_into().unwrap()),
                index: be16(&buf[36..38]),
                count: be16(&buf[38..40]),
            },
        })
    }
}

/// One packet's fate as the receiver reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeedbackEntry {
    pub seq: u64,
    /// Receiver clock at arrival, `None` if the receiver concluded the packet was lost.
    pub arrival_ns: Option<u64>,
}

/// Writes one feedback datagram; `entries.len()` must not exceed `MAX_FEEDBACK_ENTRIES`.
pub fn encode_feedback(report_ns: u64, entries: &[FeedbackEntry], out: &mut Vec<u8>) {
    assert!(entries.len() <= MAX_FEEDBACK_ENTRIES);
    out.clear();
    out.extend_from_slice(&MAGIC);
    out.push(VERSION);
    out.push(Kind::Feedback as u8);
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&report_ns.to_be_bytes());
    for entry in entries {
        out.extend_from_slice(&entry.seq.to_be_bytes());
        out.extend_from_slice(&entry.arrival_ns.unwrap_or(0).to_be_bytes());
    }
}

/// Reads a feedback datagram: the receiver's report time and the entries.
pub fn decode_feedback(buf: &[u8]) -> Option<(u64, Vec<FeedbackEntry>)> {
    if buf.len() < FEEDBACK_HEADER_LEN || buf[0..2] != MAGIC || buf[2] != VERSION
        || buf[3] != Kind::Feedback as u8 || !(buf.len() - FEEDBACK_HEADER_LEN).is_multiple_of(FEEDBACK_ENTRY_LEN)
    {
        return None;
    }
    let entries = buf[FEEDBACK_HEADER_LEN..]
        .chunks_exact(FEEDBACK_ENTRY_LEN)
        .map(|e| {
            let arrival = be64(&e[8..16]);
            FeedbackEntry { seq: be64(&e[0..8]), arrival_ns: (arrival != 0).then_some(arrival) }
        })
        .collect();
    Some((be64(&buf[8..16]), entries))
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes(b.try_into().unwrap())
}

fn be64(b: &[u8]) -> u64 {
    u64::from_be_bytes(b.try_into().unwrap())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_header_round_trips() {
        let header = MediaHeader {
            kind: Kind::Media,
            feedback: FeedbackRequest { every_packets: 2, interval_ms: 50 },
            seq: 1 << 40,
            frame: FramePacket { frame_id: 77, capture_ns: 123_456_789_012, key: true, frame_size: 41_000, index: 3,
                                 count: 36 },
        };
        let mut buf = [0u8; MEDIA_HEADER_LEN];
        header.encode(&mut buf);
        assert_eq!(MediaHeader::decode(&buf), Some(header));
        assert_eq!(MediaHeader::decode(&buf[..39]), None);
        buf[0] = b'X';
        assert_eq!(MediaHeader::decode(&buf), None);
    }

    #[test]
    fn feedback_round_trips_and_fits_one_datagram() {
        let entries: Vec<FeedbackEntry> = (0..MAX_FEEDBACK_ENTRIES as u64)
            .map(|i| FeedbackEntry { seq: 1000 + i, arrival_ns: (i % 7 != 0).then_some(5_000_000 + i) })
            .collect();
        let mut buf = Vec::new();
        encode_feedback(9_999_999, &entries, &mut buf);
        assert!(buf.len() <= MAX_DATAGRAM);
        assert_eq!(decode_feedback(&buf), Some((9_999_999, entries)));
        assert_eq!(MediaHeader::decode(&buf), None);
        assert_eq!(decode_feedback(&buf[..buf.len() - 1]), None);
    }
}
