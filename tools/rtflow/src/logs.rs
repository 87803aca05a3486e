// SPDX-License-Identifier: MIT
//! CSV logs: the receiver's frame log and the sender's rate log. Absent values are empty
//! fields. Rows are buffered and written out at least once a second and on exit, so a
//! log read while the program runs is at most a second behind.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::sys::now_ns;

const FLUSH_EVERY_NS: u64 = 1_000_000_000;

pub const FRAME_LOG_HEADER: &str =
    "frame_id,capture_ns,key,size_bytes,packets,packets_received,first_arrival_ns,last_arrival_ns,delay_ms,complete";
pub const RATE_LOG_HEADER: &str =
    "time_ns,target_bps,pacing_bps,sent_bps,acked_bps,srtt_ms,loss,in_flight_bytes,queue_bytes,cwnd_bytes";

/// A CSV file being written; `None` inside means no log was asked for.
pub struct CsvLog {
    sink: Option<(BufWriter<File>, PathBuf)>,
    flushed_ns: u64,
    line: String,
}

/// Creates the log file at once, so that a bad path is reported before anything runs.
pub fn create(path: Option<&Path>, header: &str) -> Result<CsvLog, String> {
    let sink = match path {
        None => None,
        Some(path) => {
            let file = File::create(path).map_err(|e| format!("cannot create log {}: {e}", path.display()))?;
            let mut writer = BufWriter::new(file);
            writeln!(writer, "{header}").map_err(|e| format!("cannot write log {}: {e}", path.display()))?;
            Some((writer, path.to_path_buf()))
        }
    };
    Ok(CsvLog { sink, flushed_ns: now_ns(), line: String::new() })
}

/// One CSV field.
pub enum Field {
    Int(u64),
    Float(f64, usize),
    Flag(bool),
    Missing,
}

impl From<u64> for Field {
    fn from(v: u64) -> Field {
        Field::Int(v)
    }
}

impl From<Option<u64>> for Field {
    fn from(v: Option<u64>) -> Field {
        v.map_or(Field::Missing, Field::Int)
    }
}

impl From<bool> for Field {
    fn from(v: bool) -> Field {
        Field::Flag(v)
    }
}

/// A float with `digits` decimals; `None` or NaN is an empty field.
pub fn float(value: Option<f64>, digits: usize) -> Field {
    value.filter(|v| v.is_finite()).map_or(Field::Missing, |v| Field::Float(v, digits))
}

impl CsvLog {
    pub fn row(&mut self, fields: &[Field]) -> Result<(), String> {
        let Some((writer, path)) = &mut self.sink else { return Ok(()) };
        self.line.clear();
        for (i, field) in fields.iter().enumerate() {
            if i > 0 {
                self.line.push(',');
            }
            let _ = match field {
                Field::Int(v) => write!(self.line, "{v}"),
                Field::Float(v, digits) => write!(self.line, "{v:.digits$}"),
                Field::Flag(v) => write!(self.line, "{}", u8::from(*v)),
                Field::Missing => Ok(()),
            };
        }
        self.line.push('\n');
        let mut written = writer.write_all(self.line.as_bytes());
        let now = now_ns();
        if written.is_ok() && now - self.flushed_ns >= FLUSH_EVERY_NS {
            self.flushed_ns = now;
            written = writer.flush();
        }
        written.map_err(|e| format!("cannot write log {}: {e}", path.display()))
    }

    pub fn finish(&mut self) -> Result<(), String> {
        match &mut self.sink {
            Some((writer, path)) => writer.flush().map_err(|e| format!("cannot write log {}: {e}", path.display())),
            None => Ok(()),
        }
    }
}
