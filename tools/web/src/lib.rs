// SPDX-License-Identifier: MIT
//! Web page loads for the Confucius lab: a browser-like HTTP/1.1 and HTTP/2 client
//! (`web-client`) and a server that answers for many domains in both (`web-server`). See
//! README.md for formats and behaviour.

pub mod client;
pub mod h2client;
pub mod h2io;
pub mod h2server;
pub mod hosts;
pub mod page;
pub mod server;
pub mod sock;

/// The value of the option just parsed, as text (both tools take UTF-8 arguments only).
pub fn option_text(parser: &mut lexopt::Parser) -> Result<String, String> {
    parser
        .value()
        .map_err(|e| e.to_string())?
        .into_string()
        .map_err(|_| "argument is not UTF-8".to_string())
}

/// Parses a non-negative duration such as `30s`, `500ms` or `2.5` (seconds) for the options.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let (number, scale) = if let Some(n) = text.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = text.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1.0)
    } else {
        (text, 1.0)
    };
    match number.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(std::time::Duration::from_secs_f64(v * scale)),
        _ => Err(format!("cannot read duration {text:?}: expected a positive number with unit s, ms or us (e.g. 30s)")),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn durations_take_units() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("fast").is_err());
    }
}
