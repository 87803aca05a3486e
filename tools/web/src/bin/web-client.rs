// SPDX-License-Identifier: MIT
//! web-client: loads one page description like a browser and prints the load as JSON.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;
use web::{client, hosts::Hosts, page::Page};

const USAGE: &str = "usage: web-client --page FILE --hosts FILE [--port 80] [--cca NAME] \
[--max-per-domain 6] [--h2 DOMAIN]... [--timeout 60s] [--out FILE]

Loads the page (format confucius-web-page/1) from the servers the hosts file names for its
domains, and writes one JSON report (format confucius-web-load/1) to --out or stdout. Each
domain named with --h2 is loaded over HTTP/2 (one connection, every request a stream), the
others over HTTP/1.1 (up to --max-per-domain connections).
Exit status: 0 every object arrived, 1 the load failed (the report says why), 2 bad input.";

struct Args {
    page: String,
    hosts: String,
    port: u16,
    cca: Option<String>,
    max_per_domain: usize,
    http2: Vec<String>,
    timeout: Duration,
    out: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    use lexopt::prelude::*;
    let (mut page, mut hosts, mut out, mut cca) = (None, None, None, None);
    let (mut port, mut max_per_domain, mut timeout) = (80u16, 6usize, Duration::from_secs(60));
    let mut http2 = Vec::new();
    let mut parser = lexopt::Parser::from_env();
    while let Some(arg) = parser.next().map_err(|e| e.to_string())? {
        match arg {
            Long("page") => page = Some(web::option_text(&mut parser)?),
            Long("hosts") => hosts = Some(web::option_text(&mut parser)?),
            Long("out") => out = Some(web::option_text(&mut parser)?),
            Long("cca") => cca = Some(web::option_text(&mut parser)?),
            Long("port") => {
                port = web::option_text(&mut parser)?
                    .parse()
                    .map_err(|_| "--port takes a number 1-65535")?
            }
            Long("max-per-domain") => {
                max_per_domain = web::option_text(&mut parser)?
                    .parse()
                    .map_err(|_| "--max-per-domain takes a number")?;
                if max_per_domain == 0 {
                    return Err("--max-per-domain must be at least 1".into());
                }
            }
            Long("h2") => http2.push(web::option_text(&mut parser)?),
            Long("timeout") => timeout = web::parse_duration(&web::option_text(&mut parser)?)?,
            Long("help") | Short('h') => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            _ => return Err(arg.unexpected().to_string()),
        }
    }
    Ok(Args {
        page: page.ok_or("--page FILE is required")?,
        hosts: hosts.ok_or("--hosts FILE is required")?,
        port,
        cca,
        max_per_domain,
        http2,
        timeout,
        out,
    })
}

/// Every domain of the page must have a server before anything is sent.
fn servers_for(page: &Page, hosts: &Hosts, port: u16) -> Result<Vec<SocketAddr>, String> {
    let missing: Vec<&str> = page
        .domains
        .iter()
        .filter(|d| hosts.lookup(d).is_none())
        .map(|d| d.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "the hosts file has no address for {} domain(s): {}",
            missing.len(),
            missing.join(", ")
        ));
    }
    Ok(page
        .domains
        .iter()
        .map(|d| SocketAddr::new(hosts.lookup(d).unwrap(), port))
        .collect())
}

/// Whether each of the page's domains speaks HTTP/2; a named domain the page lacks is refused.
/// A named domain the page lacks, or one that is no URI authority (HTTP/2 names the host in
/// its request's :authority), is refused; names compare as the page's, in lower case.
fn http2_domains(page: &Page, named: &[String]) -> Result<Vec<bool>, String> {
    let named: Vec<String> = named.iter().map(|d| d.to_ascii_lowercase()).collect();
    if let Some(stranger) = named.iter().find(|d| !page.domains.contains(d)) {
        return Err(format!("--h2 {stranger}: the page has no such domain"));
    }
    if let Some(bad) = named.iter().find(|d| {
        d.parse::<http::uri::Authority>()
            .map_or(true, |a| a.as_str() != d.as_str())
    }) {
        return Err(format!("--h2 {bad}: not a host name HTTP/2 can ask for"));
    }
    Ok(page.domains.iter().map(|d| named.contains(d)).collect())
}

fn run() -> Result<bool, String> {
    let args = parse_args()?;
    let page = Page::read(&args.page)?;
    let hosts = Hosts::read(&args.hosts)?;
    if let Some(cca) = &args.cca {
        web::sock::check_cca(cca)?;
    }
    let config = client::Config {
        servers: servers_for(&page, &hosts, args.port)?,
        http2: http2_domains(&page, &args.http2)?,
        cca: args.cca,
        max_per_domain: args.max_per_domain,
        timeout: args.timeout,
    };
    let report = client::load(&page, &config)?;
    let json =
        serde_json::to_string(&report).map_err(|e| format!("cannot write the report: {e}"))?;
    match &args.out {
        Some(path) => {
            std::fs::write(path, json + "\n").map_err(|e| format!("cannot write {path}: {e}"))?
        }
        None => println!("{json}"),
    }
    if let Some(error) = &report.error {
        eprintln!("web-client: page {}: {error}", report.page);
    }
    Ok(report.ok)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("web-client: {e}");
            ExitCode::from(2)
        }
    }
}
