// SPDX-License-Identifier: MIT
//! Quantities on the command line, written as tc(8) writes them: rates in bit/s
//! (`20mbit`, `500kbit`; `bps`/`kbps`/`mbps` are bytes per second as in tc), times in
//! seconds (`40ms`, `2s`, `500us`), sizes in bytes (`16kb`, with 1024 multiples).
//! A bare number takes the default unit (bit/s, seconds, bytes).

use std::time::Duration;

const RATE_UNITS: &[(&str, f64)] = &[
    ("", 1.0), ("bit", 1.0), ("kbit", 1e3), ("mbit", 1e6), ("gbit", 1e9),
    ("bps", 8.0), ("kbps", 8e3), ("mbps", 8e6), ("gbps", 8e9),
];
const TIME_UNITS: &[(&str, f64)] = &[
    ("", 1.0), ("s", 1.0), ("sec", 1.0), ("ms", 1e-3), ("msec", 1e-3),
    ("us", 1e-6), ("usec", 1e-6),
];
const SIZE_UNITS: &[(&str, f64)] = &[
    ("", 1.0), ("b", 1.0), ("k", 1024.0), ("kb", 1024.0), ("m", 1048576.0), ("mb", 1048576.0),
];

fn parse(text: &str, units: &[(&str, f64)], what: &str, example: &str) -> Result<f64, String> {
    let text = text.trim();
    let split = text.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let unit = unit.to_ascii_lowercase();
    let scale = units.iter().find(|(name, _)| *name == unit).map(|(_, scale)| *scale);
    let value = number.trim().parse::<f64>().ok().filter(|v| v.is_finite());
    match (value, scale) {
        (Some(v), Some(s)) if v >= 0.0 => Ok(v * s),
        (Some(_), Some(_)) => Err(format!("{what} must not be negative: {text:?}")),
        _ => {
            let names: Vec<&str> = units.iter().map(|(n, _)| *n).filter(|n| !n.is_empty()).collect();
            Err(format!("cannot read {what} {text:?}: expected a number with one of the units {} (e.g. {example})",
                        names.join(", ")))
        }
    }
}

/// A rate in bit/s: `parse_rate("20mbit") == Ok(20e6)`.
pub fn parse_rate(text: &str) -> Result<f64, String> {
    parse(text, RATE_UNITS, "rate", "20mbit")
}

/// A duration: `parse_time("40ms") == Ok(40 ms)`.
pub fn parse_time(text: &str) -> Result<Duration, String> {
    parse(text, TIME_UNITS, "time", "40ms").map(Duration::from_secs_f64)
}

/// A size in bytes: `parse_size("16kb") == Ok(16384)`.
pub fn parse_size(text: &str) -> Result<u64, String> {
    parse(text, SIZE_UNITS, "size", "16kb").map(|v| v.round() as u64)
}

/// A rate for people: `format_rate(2.5e6) == "2.50Mbit"`.
pub fn format_rate(bps: f64) -> String {
    if bps >= 1e6 {
        format!("{:.2}Mbit", bps / 1e6)
    } else {
        format!("{:.0}Kbit", bps / 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_tc_units() {
        assert_eq!(parse_rate("20mbit"), Ok(20e6));
        assert_eq!(parse_rate("1.5Mbit"), Ok(1.5e6));
        assert_eq!(parse_rate("100kbps"), Ok(800e3));
        assert_eq!(parse_rate("300000"), Ok(300e3));
        assert_eq!(parse_time("40ms"), Ok(Duration::from_millis(40)));
        assert_eq!(parse_time("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_size("16kb"), Ok(16384));
    }

    #[test]
    fn rejects_nonsense_with_a_message() {
        let err = parse_rate("20 furlongs").unwrap_err();
        assert!(err.contains("mbit"), "{err}");
        assert!(parse_rate("-1mbit").unwrap_err().contains("negative"));
        assert!(parse_time("fast").is_err());
        assert!(parse_rate("").is_err());
        assert!(parse_rate("nanmbit").is_err());
    }
}
