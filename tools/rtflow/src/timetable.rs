// SPDX-License-Identifier: MIT
//! The timetable both senders' loops keep: when the stream ends, when the controller's
//! next step and the next rate-log row are due, and how long the loop may sleep meanwhile.

use crate::sys::{self, MAX_SLEEP_NS};

pub struct Timetable {
    end: u64,
    step_ns: u64,
    next_step: u64,
    log_ns: u64,
    next_log: u64,
    last_log: u64,
}

impl Timetable {
    /// From `start` for `duration_ns`: a control step every `step_ns` (the first one
    /// `step_ns` after the start) and a log row every `log_ns` (the first one at the start).
    pub fn new(start: u64, duration_ns: u64, step_ns: u64, log_ns: u64) -> Timetable {
        Timetable { end: start + duration_ns, step_ns, next_step: start + step_ns, log_ns, next_log: start,
                    last_log: start }
    }

    /// The time of the loop's next round, or `None` once the stream's time is up or
    /// SIGINT/SIGTERM came.
    pub fn round(&self) -> Option<u64> {
        let now = sys::now_ns();
        (now < self.end && !sys::shutdown_requested()).then_some(now)
    }

    /// Whether a control step is due. The next one is due a step after this one was, or
    /// at once if that has passed too: a late loop makes up one step, not all it missed.
    pub fn step_due(&mut self, now: u64) -> bool {
        if now < self.next_step {
            return false;
        }
        self.next_step = now.max(self.next_step + self.step_ns);
        true
    }

    /// When a log row is due, the time it covers (since the last row).
    pub fn log_due(&mut self, now: u64) -> Option<u64> {
        if now < self.next_log {
            return None;
        }
        let covered = now - self.last_log;
        self.last_log = now;
        self.next_log += self.log_ns;
        Some(covered)
    }

    /// How long the loop may sleep: until `wake` (the sender's own next event) or the
    /// timetable's next entry, whichever comes first, and at most `MAX_SLEEP_NS`.
    pub fn sleep_ns(&self, now: u64, wake: u64) -> u64 {
        wake.min(self.next_step).min(self.next_log).min(self.end).saturating_sub(now).min(MAX_SLEEP_NS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_loop_makes_up_one_step_and_rows_cover_the_time_since_the_last() {
        let mut t = Timetable::new(1000, 10_000, 100, 250);
        assert!(!t.step_due(1099));
        assert!(t.step_due(1100));
        assert!(!t.step_due(1199));
        assert!(t.step_due(1450), "late");
        assert!(t.step_due(1450), "one step made up at once");
        assert!(!t.step_due(1549), "then one step later");
        assert_eq!(t.log_due(1000), Some(0));
        assert_eq!(t.log_due(1249), None);
        assert_eq!(t.log_due(1260), Some(260));
        assert_eq!(t.sleep_ns(1300, u64::MAX), 200, "the next row at 1500");
        assert_eq!(t.sleep_ns(1300, 1310), 10);
    }

    #[test]
    fn rounds_end_with_the_stream() {
        let start = sys::now_ns();
        assert!(Timetable::new(start, 60_000_000_000, 100, 250).round().is_some());
        assert_eq!(Timetable::new(start, 0, 100, 250).round(), None);
    }
}
