// SPDX-License-Identifier: MIT
//! rtflow: a real-time video flow for the Confucius laboratory. `rtflow send` streams
//! frames under a rate controller (GCC, Copa, a fixed rate, or a kernel TCP congestion
//! control); `rtflow recv` logs every frame's delay. See README.md.

mod encoder;
mod feedback;
mod frames;
mod history;
mod logs;
mod pacer;
mod pion_gcc;
mod recv;
mod sys;
mod tcp_send;
mod timetable;
mod udp_send;
mod units;
mod wire;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use rtcontrol::control;
use control::{Controller, CopaController, FixedController, GccController, RateBounds};
use rtcontrol::tcp_rate::DEFAULT_NOTSENT_LOWAT;
use pion_gcc::PionGccController;
use encoder::EncoderConfig;

#[derive(Parser)]
#[command(name = "rtflow", version, about = "Real-time video flow: a frame sender under a rate controller and a \
receiver that logs every frame's delay.", after_help = "Quantities take tc's units: rates 20mbit, 500kbit; times \
40ms, 2s; sizes 16kb. All timestamps are CLOCK_MONOTONIC nanoseconds.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Stream video frames to a receiver.
    Send(SendArgs),
    /// Receive frames (UDP and TCP on the same address) and log each one.
    Recv(RecvArgs),
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// UDP with libwebrtc's GCC (goog_cc crate) fed by per-packet feedback.
    Gcc,
    /// UDP with Pion's GCC (pion/interceptor, Go) on the same frames, pacer and feedback as gcc.
    PionGcc,
    /// UDP with Copa (the NSDI'18 paper's window), acknowledged every 2 packets.
    Copa,
    /// UDP at a constant --rate.
    Fixed,
    /// TCP with the kernel congestion control --cca; bitrate follows what the socket delivers.
    Tcp,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Gcc => "gcc",
            Mode::PionGcc => "pion-gcc",
            Mode::Copa => "copa",
            Mode::Fixed => "fixed",
            Mode::Tcp => "tcp",
        }
    }
}

#[derive(Args)]
struct SendArgs {
    /// Receiver address, e.g. 10.0.2.2:5000.
    #[arg(long, value_name = "ADDR:PORT")]
    to: SocketAddr,
    /// Rate controller.
    #[arg(long, value_enum, default_value = "gcc")]
    mode: Mode,
    /// Kernel TCP congestion control for --mode tcp (bbr, cubic, reno, vegas, ...).
    #[arg(long, value_name = "NAME")]
    cca: Option<String>,
    /// How long to stream.
    #[arg(long, default_value = "30s", value_name = "TIME", value_parser = units::parse_time)]
    duration: Duration,
    /// Frames per second.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..=240))]
    fps: u32,
    /// Constant target rate for --mode fixed.
    #[arg(long, value_name = "RATE", value_parser = units::parse_rate)]
    rate: Option<f64>,
    /// Target rate at the start (gcc, pion-gcc, copa, tcp).
    #[arg(long, default_value = "1mbit", value_name = "RATE", value_parser = units::parse_rate)]
    start_rate: f64,
    /// Lowest target rate (gcc, pion-gcc, copa, tcp).
    #[arg(long, default_value = "100kbit", value_name = "RATE", value_parser = units::parse_rate)]
    min_rate: f64,
    /// Highest target rate (gcc, pion-gcc, copa, tcp).
    #[arg(long, default_value = "100mbit", value_name = "RATE", value_parser = units::parse_rate)]
    max_rate: f64,
    /// Time between key frames; 0 for a key frame only at the start.
    #[arg(long, default_value = "2s", value_name = "TIME", value_parser = units::parse_time)]
    key_interval: Duration,
    /// Size of a key frame relative to a delta frame.
    #[arg(long, default_value_t = 4.0)]
    key_ratio: f64,
    /// Pacing rate as a multiple of the target rate (gcc, pion-gcc, fixed; libwebrtc uses 2.5).
    #[arg(long, default_value_t = 2.5)]
    pacing_factor: f64,
    /// Copa's delta (queueing-delay weight; the paper's default is 0.5).
    #[arg(long, default_value_t = 0.5)]
    copa_delta: f64,
    /// Bytes TCP may hold unsent in the kernel (TCP_NOTSENT_LOWAT) in --mode tcp.
    #[arg(long, default_value_t = DEFAULT_NOTSENT_LOWAT, value_name = "SIZE", value_parser = units::parse_size)]
    notsent_lowat: u64,
    /// Lost packets of frames younger than this are sent once more (UDP modes; 0: never).
    #[arg(long, default_value = "0", value_name = "TIME", value_parser = units::parse_time)]
    retransmit_window: Duration,
    /// Local address to send from (UDP modes).
    #[arg(long, value_name = "ADDR:PORT", default_value = "0.0.0.0:0")]
    bind: SocketAddr,
    /// CSV log of the target rate and controller state over time.
    #[arg(long, value_name = "PATH")]
    rate_log: Option<PathBuf>,
    /// Time between rows of the rate log.
    #[arg(long, default_value = "50ms", value_name = "TIME", value_parser = units::parse_time)]
    log_interval: Duration,
}

#[derive(Args)]
struct RecvArgs {
    /// Address to listen on (UDP and TCP), e.g. 0.0.0.0:5000.
    #[arg(long, value_name = "ADDR:PORT")]
    listen: SocketAddr,
    /// CSV log with one row per frame.
    #[arg(long, value_name = "PATH")]
    frame_log: Option<PathBuf>,
    /// Stop after this long even if the sender has not finished.
    #[arg(long, value_name = "TIME", value_parser = units::parse_time)]
    duration: Option<Duration>,
    /// A frame with no new packet for this long is logged as incomplete.
    #[arg(long, default_value = "1s", value_name = "TIME", value_parser = units::parse_time)]
    frame_timeout: Duration,
}

fn nanos(d: Duration) -> u64 {
    d.as_nanos().min(u64::MAX as u128) as u64
}

/// Every check on the arguments, done before anything is opened or sent.
fn validate(args: &SendArgs) -> Result<(), String> {
    let mut problems = Vec::new();
    if args.min_rate <= 0.0 || !(args.min_rate <= args.start_rate && args.start_rate <= args.max_rate) {
        problems.push("rates must satisfy 0 < --min-rate <= --start-rate <= --max-rate".to_string());
    }
    match (args.mode, args.rate) {
        (Mode::Fixed, None) => problems.push("--mode fixed needs --rate".to_string()),
        (Mode::Fixed, Some(r)) if r <= 0.0 => problems.push("--rate must be positive".to_string()),
        (Mode::Gcc | Mode::PionGcc | Mode::Copa | Mode::Tcp, Some(_)) => problems.push("--rate applies to --mode fixed only".to_string()),
        _ => {}
    }
    if args.cca.is_some() != (args.mode == Mode::Tcp) {
        problems.push("--cca is required with --mode tcp and applies to it only".to_string());
    }
    if !(args.key_ratio >= 1.0 && args.key_ratio <= 100.0) {
        problems.push("--key-ratio must be between 1 and 100".to_string());
    }
    if !(args.pacing_factor >= 1.0 && args.pacing_factor <= 100.0) {
        problems.push("--pacing-factor must be between 1 and 100".to_string());
    }
    if !(args.copa_delta > 0.0 && args.copa_delta <= 10.0) {
        problems.push("--copa-delta must be in (0, 10]".to_string());
    }
    if args.duration.is_zero() || args.log_interval.is_zero() {
        problems.push("--duration and --log-interval must be positive".to_string());
    }
    if args.notsent_lowat == 0 || args.notsent_lowat > u32::MAX as u64 {
        problems.push("--notsent-lowat must be between 1 byte and 4 GB".to_string());
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("; ")) }
}

fn send(args: SendArgs) -> Result<(), String> {
    validate(&args)?;
    let rate_log = logs::create(args.rate_log.as_deref(), logs::RATE_LOG_HEADER)?;
    let encoder = EncoderConfig {
        fps: args.fps,
        gop_frames: (args.key_interval.as_secs_f64() * args.fps as f64).round() as u64,
        key_ratio: args.key_ratio,
    };
    let bounds = RateBounds { start: args.start_rate, min: args.min_rate, max: args.max_rate };
    let log_interval_ns = nanos(args.log_interval);
    let udp = udp_send::UdpSendConfig { label: args.mode.name(), to: args.to, bind: args.bind, duration_ns: nanos(args.duration),
                                        encoder: encoder.clone(), log_interval_ns,
                                        retransmit_window_ns: nanos(args.retransmit_window) };
    let (pacing, delta) = (args.pacing_factor, args.copa_delta);
    match args.mode {
        Mode::Gcc => udp_send::run(udp, |now| -> Box<dyn Controller> {
            Box::new(GccController::new(now, bounds, pacing))
        }, rate_log),
        Mode::PionGcc => {
            let pion = PionGccController::new(bounds, pacing)?;
            udp_send::run(udp, |_| -> Box<dyn Controller> { Box::new(pion) }, rate_log)
        }
        Mode::Copa => udp_send::run(udp, |_| -> Box<dyn Controller> {
            Box::new(CopaController::new(bounds, delta))
        }, rate_log),
        Mode::Fixed => {
            let rate = args.rate.expect("validated: fixed mode has a rate");
            udp_send::run(udp, |_| -> Box<dyn Controller> { Box::new(FixedController::new(rate, pacing)) }, rate_log)
        }
        Mode::Tcp => {
            let config = tcp_send::TcpSendConfig {
                to: args.to, duration_ns: nanos(args.duration), encoder, cca: args.cca.unwrap_or_default(),
                notsent_lowat: args.notsent_lowat as u32, bounds, log_interval_ns,
            };
            tcp_send::run(config, rate_log)
        }
    }
}

fn recv(args: RecvArgs) -> Result<(), String> {
    if args.duration.is_some_and(|d| d.is_zero()) || args.frame_timeout.is_zero() {
        return Err("--duration and --frame-timeout must be positive".to_string());
    }
    let frame_log = logs::create(args.frame_log.as_deref(), logs::FRAME_LOG_HEADER)?;
    let config = recv::RecvConfig { listen: args.listen, duration_ns: args.duration.map(nanos),
                                    frame_timeout_ns: nanos(args.frame_timeout) };
    recv::run(config, frame_log)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = sys::install_shutdown_handler() {
        eprintln!("rtflow: cannot install signal handlers: {e}");
        return ExitCode::FAILURE;
    }
    let result = match cli.command {
        Command::Send(args) => send(args),
        Command::Recv(args) => recv(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("rtflow: {message}");
            ExitCode::FAILURE
        }
    }
}
