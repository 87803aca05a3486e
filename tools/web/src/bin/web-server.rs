// SPDX-License-Identifier: MIT
//! web-server: answers `GET /<name>?bytes=N` with N bytes, on every address it is given.

use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use web::{hosts::Hosts, server};

const USAGE: &str =
    "usage: web-server [--hosts FILE] [--listen ADDRESS]... [--port 80] [--cca NAME]

Listens on every address of the hosts file (the lab's domain -> address mapping) and on each
--listen address, HTTP/1.1 with keep-alive. GET /<name>?bytes=N answers with exactly N bytes.
--cca sets the congestion control of the connections it accepts (default: the kernel's).";

fn parse_args() -> Result<server::Config, String> {
    use lexopt::prelude::*;
    let mut ips: Vec<IpAddr> = Vec::new();
    let (mut port, mut cca) = (80u16, None);
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
