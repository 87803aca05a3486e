// SPDX-License-Identifier: MIT
//! The video source: frames captured at a fixed rate whose sizes follow the rate
//! controller's target, with a larger key frame at the start of every group of pictures.
//!
//! A key frame is `key_ratio` times a delta frame. The delta frame is shrunk so that a
//! whole group (one key frame, N-1 delta frames) averages exactly the target rate:
//! `delta = (target / fps) * N / (N - 1 + key_ratio)`. Without periodic key frames
//! only the first frame is a key frame.

#[derive(Clone, Debug)]
pub struct EncoderConfig {
    pub fps: u32,
    /// Frames per group of pictures; 0 means no periodic key frames.
    pub gop_frames: u64,
    pub key_ratio: f64,
}

/// One encoded frame: its budget is the number of bytes it may occupy on the wire.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Frame {
    pub id: u64,
    pub capture_ns: u64,
    pub key: bool,
    pub wire_budget: u64,
}

pub struct Encoder {
    config: EncoderConfig,
    start_ns: u64,
    next_id: u64,
}

impl Encoder {
    pub fn new(config: EncoderConfig, start_ns: u64) -> Encoder {
        Encoder { config, start_ns, next_id: 0 }
    }

    pub fn frame_interval_ns(&self) -> u64 {
        1_000_000_000 / self.config.fps as u64
    }

    /// Capture instants are fixed in advance (start + id / fps), so a late wake-up
    /// never shifts the schedule.
    pub fn next_capture_ns(&self) -> u64 {
        self.start_ns + (self.next_id as u128 * 1_000_000_000 / self.config.fps as u128) as u64
    }

    /// Encodes the next frame at `target_bps` and stamps it with its scheduled capture time.
    pub fn capture(&mut self, target_bps: f64) -> Frame {
        let id = self.next_id;
        let capture_ns = self.next_capture_ns();
        self.next_id += 1;
        let key = self.is_key(id);
        Frame { id, capture_ns, key, wire_budget: self.frame_bytes(target_bps, key).round().max(1.0) as u64 }
    }

    fn is_key(&self, id: u64) -> bool {
        match self.config.gop_frames {
            0 => id == 0,
            n => id.is_multiple_of(n),
        }
    }

    fn frame_bytes(&self, target_bps: f64, key: bool) -> f64 {
        let average = target_bps / 8.0 / self.config.fps as f64;
        let delta = match self.config.gop_frames {
            0 | 1 => average,
            n => average * n as f64 / (n as f64 - 1.0 + self.config.key_ratio),
        };
        if key { delta * self.config.key_ratio } else { delta }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoder(gop_frames: u64) -> Encoder {
        Encoder::new(EncoderConfig { fps: 60, gop_frames, key_ratio: 4.0 }, 1_000)
    }

    #[test]
    fn a_group_of_pictures_averages_the_target_rate() {
        let mut enc = encoder(120);
        let total: u64 = (0..120).map(|_| enc.capture(20e6).wire_budget).sum();
        let expected = 20e6 / 8.0 * 2.0;
        assert!((total as f64 - expected).abs() < 120.0, "{total} vs {expected}");
    }

    #[test]
    fn key_frames_come_every_group_and_are_larger() {
        let mut enc = encoder(120);
        let frames: Vec<Frame> = (0..241).map(|_| enc.capture(6e6)).collect();
        let keys: Vec<u64> = frames.iter().filter(|f| f.key).map(|f| f.id).collect();
        assert_eq!(keys, vec![0, 120, 240]);
        assert_eq!(frames[0].wire_budget, frames[1].wire_budget * 4);
    }

    #[test]
    fn capture_times_follow_the_frame_rate() {
        let mut enc = encoder(0);
        let times: Vec<u64> = (0..61).map(|_| enc.capture(1e6).capture_ns).collect();
        assert_eq!(times[0], 1_000);
        assert_eq!(times[60], 1_000 + 1_000_000_000);
        assert_eq!(times[1] - times[0], 16_666_666);
        assert!(!enc.is_key(1));
    }
}
