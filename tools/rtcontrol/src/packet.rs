// SPDX-License-Identifier: MIT
//! What a controller hears about: packets sent, and what the receiver's feedback says
//! became of them; and what it asks for: probe clusters and a feedback schedule.

/// Largest UDP payload the RT flow sends, header included (fits any common path MTU).
pub const MAX_DATAGRAM: usize = 1200;
/// IPv4 (20) + UDP (8) header bytes added to every datagram on the wire.
pub const IP_UDP_OVERHEAD: usize = 28;

/// A probe cluster: send at `rate_bps` until both minimums are reached.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Probe {
    pub id: i32,
    pub rate_bps: f64,
    pub min_packets: u32,
    pub min_bytes: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct FeedbackRequest {
    /// Send feedback once this many packets are unreported (0: by time only).
    pub every_packets: u8,
    /// Send feedback at latest this long after the oldest unreported packet arrived.
    pub interval_ms: u16,
}

/// One packet as it left the sender.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sent {
    pub seq: u64,
    pub send_ns: u64,
    pub wire_bytes: u32,
    pub probe: Option<Probe>,
    /// Bytes in flight just after this packet left.
    pub in_flight: u64,
}

/// What became of one sent packet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Outcome {
    pub sent: Sent,
    /// Arrival on the receiver's clock; `None` when lost.
    pub arrival_ns: Option<u64>,
    pub rtt_ns: Option<u64>,
}
