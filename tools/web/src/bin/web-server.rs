// SPDX-License-Identifier: MIT
//! web-server: answers `GET /<name>?bytes=N` with N bytes, on every address it is given.

use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use web::{hosts::Hosts, server};

const USAGE: &str =
    "usage: web-server [--hosts FILE] [--listen ADDRESS]... [--port 80] [--cca NAME] [--idle 60]

Listens on every address of the hosts file (the lab's domain -> address mapping) and on each
--listen address, HTTP/1.1 with keep-alive. GET /<name>?bytes=N answers with exactly N bytes.
--cca sets the congestion control of the connections it accepts (default: the kernel's).
--idle SECONDS (1-3600): an HTTP/1.1 connection idle this long is closed; an HTTP/2 one is
then probed (TCP keepalive) and closed once its client is gone.";

fn parse_args() -> Result<server::Config, String> {
    use lexopt::prelude::*;
    let mut ips: Vec<IpAddr> = Vec::new();
    let (mut port, mut cca, mut idle) = (80u16, None, server::DEFAULT_IDLE);
    let mut parser = lexopt::Parser::from_env();
    while let Some(arg) = parser.next().map_err(|e| e.to_string())? {
        match arg {
            Long("hosts") => ips.extend(Hosts::read(&web::option_text(&mut parser)?)?.addresses()),
            Long("listen") => {
                let value = web::option_text(&mut parser)?;
                ips.push(
                    value
                        .parse()
                        .map_err(|_| format!("--listen {value:?} is not an IP address"))?,
                );
            }
            Long("port") => {
                port = web::option_text(&mut parser)?
                    .parse()
                    .map_err(|_| "--port takes a number 1-65535")?
            }
            Long("cca") => cca = Some(web::option_text(&mut parser)?),
            Long("idle") => {
                let value = web::option_text(&mut parser)?;
                idle = value
                    .parse()
                    .ok()
                    .filter(|s| (1..=3600).contains(s))
                    .map(std::time::Duration::from_secs)
                    .ok_or(format!("--idle takes whole seconds 1-3600, not {value:?}"))?;
            }
            Long("help") | Short('h') => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            _ => return Err(arg.unexpected().to_string()),
        }
    }
    ips.sort();
    ips.dedup();
    Ok(server::Config {
        addresses: ips
            .into_iter()
            .map(|ip| SocketAddr::new(ip, port))
            .collect(),
        cca,
        idle,
    })
}

fn main() -> ExitCode {
    match parse_args().and_then(|config| server::run(&config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("web-server: {e}");
            ExitCode::from(2)
        }
    }
}
