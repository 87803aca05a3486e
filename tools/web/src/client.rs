// SPDX-License-Identifier: MIT
//! The browser-like page loader: one thread, one mio event loop, non-blocking sockets.
//!
//! Browser rules (Chrome's HTTP/1.1 socket pools): at most `max_per_domain` persistent
//! connections per domain, opened on demand; requests wait in a per-domain FIFO and go to
//! whichever connection of that domain becomes idle first (late binding), a new connection is
//! opened only while more requests wait than connections are being set up; no pipelining. An
//! object is requested when its parent has fully arrived. Every object's times are recorded.
//!
//! A domain that speaks HTTP/2 gets one connection, opened when its first request waits, and
//! every request of the domain goes on it at once as a stream of its own; the streams travel
//! through the HTTP/2 transport (h2client.rs), whose events come back into this loop.

use crate::h2client::{self, Command, Transport};
use crate::page::Page;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token, Waker};
use serde::Serialize;
use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub const REPORT_FORMAT: &str = "confucius-web-load/1";
const MAX_RESPONSE_HEAD: usize = 16 * 1024;
/// The event loop's token for the HTTP/2 transport's events (connections use their index).
const TRANSPORT: Token = Token(usize::MAX);

pub struct Config {
    /// The server address of each of the page's domains, in `Page::domains` order.
    pub servers: Vec<SocketAddr>,
    /// Whether each domain speaks HTTP/2 (else HTTP/1.1), in `Page::domains` order.
    pub http2: Vec<bool>,
    pub cca: Option<String>,
    pub max_per_domain: usize,
    pub timeout: Duration,
}

#[derive(Serialize)]
pub struct Report {
    pub format: &'static str,
    pub page: String,
    pub ok: bool,
    pub error: Option<String>,
    /// Wall-clock time of the load's start (t = 0 of every `*_us` field), to align with other logs.
    pub start_unix_us: u64,
    /// Start of the load (the first connection attempt) to the last byte of the last object.
    pub plt_us: Option<u64>,
    pub cca: Option<String>,
    pub max_per_domain: usize,
    pub objects_total: usize,
    pub objects_done: usize,
    pub connections: Vec<ConnectionRecord>,
    pub objects: Vec<ObjectRecord>,
}

#[derive(Serialize)]
pub struct ConnectionRecord {
    pub id: usize,
    pub domain: String,
    pub server: String,
    pub local_port: Option<u16>,
    /// h1 or h2.
    pub protocol: &'static str,
    pub opened_us: u64,
    pub established_us: Option<u64>,
    pub objects: usize,
    pub bytes: u64,
    pub error: Option<String>,
}

#[derive(Serialize)]
pub struct ObjectRecord {
    pub id: String,
    pub domain: String,
    pub size: u64,
    pub parent: Option<String>,
    pub depth: usize,
    /// done, failed (requested, did not arrive), skipped (never requested: an ancestor failed).
    pub status: &'static str,
    pub connection: Option<usize>,
    /// When the object became requestable (its parent arrived, or the load started).
    pub ready_us: Option<u64>,
    pub request_us: Option<u64>,
    pub first_byte_us: Option<u64>,
    pub last_byte_us: Option<u64>,
    pub received: u64,
    pub error: Option<String>,
}

#[derive(Clone, Copy, PartialEq)]
enum Phase {
    Waiting,
    Queued,
    InFlight,
    Finished,
}

#[derive(Clone, Copy, PartialEq)]
enum ConnState {
    Connecting,
    Idle,
    Busy(usize),
    Closed,
}

struct Connection {
    stream: Option<TcpStream>,
    domain: usize,
    /// An HTTP/2 connection's received bytes, counted by the transport (None: HTTP/1.1, this loop counts).
    http2_bytes: Option<Arc<AtomicU64>>,
    state: ConnState,
    /// Request bytes not yet accepted by the socket.
    outgoing: Vec<u8>,
    head: Vec<u8>,
    body_left: Option<u64>,
}

impl Connection {
    fn new(stream: Option<TcpStream>, domain: usize, state: ConnState) -> Connection {
        Connection {
            stream,
            domain,
            http2_bytes: None,
            state,
            outgoing: Vec::new(),
            head: Vec::new(),
            body_left: None,
        }
    }
}

struct Loader<'a> {
    page: &'a Page,
    config: &'a Config,
    poll: Poll,
    start: Instant,
    conns: Vec<Connection>,
    conn_records: Vec<ConnectionRecord>,
    queues: Vec<VecDeque<usize>>,
    phases: Vec<Phase>,
    records: Vec<ObjectRecord>,
    finished: usize,
    dirty_domains: Vec<usize>,
    /// Started with the load when a domain speaks HTTP/2.
    transport: Option<Transport>,
}

/// Loads the page; the report says what arrived and what did not (a failed load is a report too).
pub fn load(page: &Page, config: &Config) -> Result<Report, String> {
    let poll = Poll::new().map_err(|e| format!("cannot create the event loop: {e}"))?;
    let start_unix_us = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0);
    let mut loader = Loader {
        page,
        config,
        poll,
        start: Instant::now(),
        conns: Vec::new(),
        conn_records: Vec::new(),
        queues: vec![VecDeque::new(); page.domains.len()],
        phases: vec![Phase::Waiting; page.objects.len()],
        records: initial_records(page),
        finished: 0,
        dirty_domains: Vec::new(),
        transport: None,
    };
    if config.http2.contains(&true) {
        let waker = Waker::new(loader.poll.registry(), TRANSPORT)
            .map_err(|e| format!("cannot watch the HTTP/2 transport: {e}"))?;
        loader.transport = Some(Transport::start(config.cca.clone(), loader.start, waker)?);
    }
    let error = loader.run();
    loader.count_http2_bytes();
    let plt_us = if loader.finished == page.objects.len() && error.is_none() {
        loader.records.iter().filter_map(|r| r.last_byte_us).max()
    } else {
        None
    };
    let objects_done = loader.records.iter().filter(|r| r.status == "done").count();
    Ok(Report {
        format: REPORT_FORMAT,
        page: page.id.clone(),
        ok: objects_done == page.objects.len(),
        error,
        start_unix_us,
        plt_us,
        cca: config.cca.clone(),
        max_per_domain: config.max_per_domain,
        objects_total: page.objects.len(),
        objects_done,
        connections: loader.conn_records,
        objects: loader.records,
    })
}

fn initial_records(page: &Page) -> Vec<ObjectRecord> {
    page.objects
        .iter()
        .map(|o| ObjectRecord {
            id: o.id.clone(),
            domain: page.domains[o.domain].clone(),
            size: o.size,
            parent: o.parent.map(|p| page.objects[p].id.clone()),
            depth: depth(page, o.parent),
            status: "skipped",
            connection: None,
            ready_us: None,
            request_us: None,
            first_byte_us: None,
            last_byte_us: None,
            received: 0,
            error: None,
        })
        .collect()
}

fn depth(page: &Page, mut parent: Option<usize>) -> usize {
    let mut d = 0;
    while let Some(p) = parent {
        d += 1;
        parent = page.objects[p].parent;
    }
    d
}

impl Loader<'_> {
    fn now_us(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }

    /// The event loop; Some(message) when the load stopped before every object arrived.
    fn run(&mut self) -> Option<String> {
        let roots: Vec<usize> = self.page.roots().collect();
        for r in roots {
            self.make_ready(r);
        }
        self.dispatch_dirty();
        let mut events = Events::with_capacity(256);
        let deadline = self.start + self.config.timeout;
        while self.finished < self.page.objects.len() {
            let now = Instant::now();
            if now >= deadline {
                let reason = format!("timeout after {:?}", self.config.timeout);
                self.abandon_all(&reason);
                return Some(reason);
            }
            if let Err(e) = self.poll.poll(&mut events, Some(deadline - now)) {
                if e.kind() == ErrorKind::Interrupted {
                    continue;
                }
                let reason = format!("event loop failed: {e}");
                self.abandon_all(&reason);
                return Some(reason);
            }
            for event in events.iter() {
                self.handle_event(event.token());
            }
            self.dispatch_dirty();
        }
        let failed = self.records.iter().filter(|r| r.status != "done").count();
        (failed > 0).then(|| {
            format!(
                "{failed} of {} objects did not arrive",
                self.page.objects.len()
            )
        })
    }

    fn make_ready(&mut self, object: usize) {
        let domain = self.page.objects[object].domain;
        self.phases[object] = Phase::Queued;
        self.records[object].ready_us = Some(self.now_us());
        self.queues[domain].push_back(object);
        self.dirty_domains.push(domain);
    }

    fn dispatch_dirty(&mut self) {
        while let Some(domain) = self.dirty_domains.pop() {
            self.dispatch(domain);
        }
    }

    /// Idle connections take waiting requests; connections are added while requests outnumber
    /// the connections being set up, up to the per-domain limit. An HTTP/2 domain's requests
    /// all go on its one connection at once.
    fn dispatch(&mut self, domain: usize) {
        if self.config.http2[domain] {
            return self.dispatch_http2(domain);
        }
        while !self.queues[domain].is_empty() {
            let Some(conn) = (0..self.conns.len()).find(|&c| {
                self.conns[c].domain == domain && self.conns[c].state == ConnState::Idle
            }) else {
                break;
            };
            let object = self.queues[domain].pop_front().unwrap();
            self.send_request(conn, object);
        }
        let live = self
            .conns
            .iter()
            .filter(|c| c.domain == domain && c.state != ConnState::Closed)
            .count();
        let connecting = self
            .conns
            .iter()
            .filter(|c| c.domain == domain && c.state == ConnState::Connecting)
            .count();
        let wanted = self.queues[domain].len().saturating_sub(connecting);
        let room = self.config.max_per_domain.saturating_sub(live);
        for _ in 0..wanted.min(room) {
            if !self.open_connection(domain) {
                break;
            }
        }
    }

    fn open_connection(&mut self, domain: usize) -> bool {
        let id = self.conns.len();
        let server = self.config.servers[domain];
        self.record_connection(domain, "h1");
        match self.start_stream(server, id) {
            Ok(stream) => {
                self.conns
                    .push(Connection::new(Some(stream), domain, ConnState::Connecting));
                true
            }
            Err(reason) => {
                self.conns
                    .push(Connection::new(None, domain, ConnState::Closed));
                self.fail_connection(id, reason);
                false
            }
        }
    }

    fn record_connection(&mut self, domain: usize, protocol: &'static str) {
        self.conn_records.push(ConnectionRecord {
            id: self.conn_records.len(),
            domain: self.page.domains[domain].clone(),
            server: self.config.servers[domain].to_string(),
            local_port: None,
            protocol,
            opened_us: self.now_us(),
            established_us: None,
            objects: 0,
            bytes: 0,
            error: None,
        });
    }

    fn dispatch_http2(&mut self, domain: usize) {
        if self.queues[domain].is_empty() {
            return;
        }
        let conn = (0..self.conns.len())
            .find(|&c| self.conns[c].domain == domain && self.conns[c].state != ConnState::Closed)
            .unwrap_or_else(|| self.open_http2(domain));
        while let Some(object) = self.queues[domain].pop_front() {
            let command = Command::Request {
                conn,
                object,
                authority: self.page.domains[domain].clone(),
                path: request_path(&self.page.objects[object]),
                size: self.page.objects[object].size,
            };
            self.phases[object] = Phase::InFlight;
            self.records[object].connection = Some(conn);
            self.conn_records[conn].objects += 1;
            self.transport.as_ref().unwrap().send(command);
        }
    }

    /// Opens the domain's HTTP/2 connection through the transport; its index.
    fn open_http2(&mut self, domain: usize) -> usize {
        let conn = self.conns.len();
        self.record_connection(domain, "h2");
        self.conns
            .push(Connection::new(None, domain, ConnState::Connecting));
        let bytes = Arc::new(AtomicU64::new(0));
        self.conns[conn].http2_bytes = Some(bytes.clone());
        let server = self.config.servers[domain];
        self.transport.as_ref().unwrap().send(Command::Open {
            conn,
            server,
            bytes,
        });
        conn
    }

    /// What the HTTP/2 transport reports, in the order it happened.
    fn take_transport_events(&mut self) {
        loop {
            let Some(transport) = self.transport.as_ref() else {
                return;
            };
            let event = match transport.events.try_recv() {
                Ok(event) => event,
                Err(mpsc::TryRecvError::Empty) => return,
                Err(mpsc::TryRecvError::Disconnected) => {
                    return self.fail_http2("the HTTP/2 transport stopped")
                }
            };
            match event {
                h2client::Event::Connected {
                    conn,
                    local_port,
                    at_us,
                } => {
                    self.conn_records[conn].local_port = local_port;
                    self.conn_records[conn].established_us = Some(at_us);
                    if self.conns[conn].state == ConnState::Connecting {
                        self.conns[conn].state = ConnState::Idle;
                    }
                }
                h2client::Event::ConnectionFailed { conn, reason } => self.end_http2(conn, reason),
                h2client::Event::Requested { object, at_us } => {
                    self.records[object].request_us.get_or_insert(at_us);
                }
                h2client::Event::FirstByte { object, at_us }
                    if self.phases[object] == Phase::InFlight =>
                {
                    self.records[object].first_byte_us.get_or_insert(at_us);
                }
                h2client::Event::Data { object, bytes }
                    if self.phases[object] == Phase::InFlight =>
                {
                    self.records[object].received += bytes
                }
                h2client::Event::Done { object, at_us }
                    if self.phases[object] == Phase::InFlight =>
                {
                    self.finish_object(object, at_us)
                }
                h2client::Event::Failed { object, reason }
                    if self.phases[object] == Phase::InFlight =>
                {
                    self.fail_object(object, &reason)
                }
                h2client::Event::FirstByte { .. }
                | h2client::Event::Data { .. }
                | h2client::Event::Done { .. }
                | h2client::Event::Failed { .. } => {}
            }
        }
    }

    /// An HTTP/2 connection ended: a failure if streams were still on it (they fail), else a
    /// close; the domain's next request opens another.
    fn end_http2(&mut self, conn: usize, reason: String) {
        if self.conns[conn].state == ConnState::Closed {
            return;
        }
        if !self.in_flight_on(conn).is_empty() {
            self.fail_connection(conn, reason);
        } else {
            self.close(conn);
        }
    }

    /// The transport's thread is gone: every HTTP/2 connection fails with what it carried.
    fn fail_http2(&mut self, reason: &str) {
        for conn in 0..self.conns.len() {
            if self.conns[conn].http2_bytes.is_some() && self.conns[conn].state != ConnState::Closed
            {
                self.fail_connection(conn, reason.to_string());
            }
        }
    }

    fn count_http2_bytes(&mut self) {
        for (conn, record) in self.conns.iter().zip(&mut self.conn_records) {
            if let Some(bytes) = &conn.http2_bytes {
                record.bytes = bytes.load(Ordering::Relaxed);
            }
        }
    }

    fn start_stream(&self, server: SocketAddr, id: usize) -> Result<TcpStream, String> {
        let mut stream = crate::sock::connect_nonblocking(server, self.config.cca.as_deref())?;
        self.poll
            .registry()
            .register(
                &mut stream,
                Token(id),
                Interest::READABLE | Interest::WRITABLE,
            )
            .map_err(|e| format!("cannot watch a socket: {e}"))?;
        Ok(stream)
    }

    fn handle_event(&mut self, token: Token) {
        if token == TRANSPORT {
            return self.take_transport_events();
        }
        let conn = token.0;
        match self.conns[conn].state {
            ConnState::Connecting => self.check_connected(conn),
            ConnState::Busy(_) => {
                self.flush_request(conn);
                self.read_responses(conn);
            }
            ConnState::Idle => self.read_responses(conn),
            ConnState::Closed => {}
        }
    }

    fn check_connected(&mut self, conn: usize) {
        let stream = self.conns[conn].stream.as_ref().unwrap();
        let outcome = match stream.take_error() {
            Ok(Some(e)) | Err(e) => Err(format!(
                "cannot connect to {}: {e}",
                self.conn_records[conn].server
            )),
            Ok(None) => match stream.peer_addr() {
                Ok(_) => Ok(stream.local_addr().ok().map(|a| a.port())),
                Err(e) if e.kind() == ErrorKind::NotConnected => return,
                Err(e) => Err(format!(
                    "cannot connect to {}: {e}",
                    self.conn_records[conn].server
                )),
            },
        };
        match outcome {
            Ok(port) => {
                self.conn_records[conn].local_port = port;
                self.conn_records[conn].established_us = Some(self.now_us());
                self.conns[conn].state = ConnState::Idle;
                self.dirty_domains.push(self.conns[conn].domain);
            }
            Err(reason) => self.fail_connection(conn, reason),
        }
    }

    fn send_request(&mut self, conn: usize, object: usize) {
        let o = &self.page.objects[object];
        let request = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: confucius-web-client/0.1\r\nAccept: */*\r\n\r\n",
            request_path(o),
            self.page.domains[o.domain]
        );
        self.phases[object] = Phase::InFlight;
        self.records[object].connection = Some(conn);
        self.conn_records[conn].objects += 1;
        let c = &mut self.conns[conn];
        c.state = ConnState::Busy(object);
        c.outgoing = request.into_bytes();
        c.head.clear();
        c.body_left = None;
        self.flush_request(conn);
    }

    /// Writes what the socket accepts; the request time is when its last byte was handed over.
    fn flush_request(&mut self, conn: usize) {
        let c = &mut self.conns[conn];
        let ConnState::Busy(object) = c.state else {
            return;
        };
        while !c.outgoing.is_empty() {
            match c.stream.as_mut().unwrap().write(&c.outgoing) {
                Ok(n) => {
                    c.outgoing.drain(..n);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    let reason = format!("sending the request failed: {e}");
                    self.fail_connection(conn, reason);
                    return;
                }
            }
        }
        if self.records[object].request_us.is_none() {
            self.records[object].request_us = Some(self.now_us());
        }
    }

    fn read_responses(&mut self, conn: usize) {
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            let Some(stream) = self.conns[conn].stream.as_mut() else {
                return;
            };
            match stream.read(&mut chunk) {
                Ok(0) => {
                    let reason = "the server closed the connection".to_string();
                    match self.conns[conn].state {
                        ConnState::Busy(_) => self.fail_connection(conn, reason),
                        _ => self.close(conn),
                    }
                    return;
                }
                Ok(n) => {
                    self.conn_records[conn].bytes += n as u64;
                    if let Err(reason) = self.take_bytes(conn, &chunk[..n]) {
                        self.fail_connection(conn, reason);
                        return;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    self.fail_connection(conn, format!("receiving failed: {e}"));
                    return;
                }
            }
        }
    }

    fn take_bytes(&mut self, conn: usize, data: &[u8]) -> Result<(), String> {
        let ConnState::Busy(object) = self.conns[conn].state else {
            return Err("the server sent bytes nobody asked for".to_string());
        };
        let now = self.now_us();
        let record = &mut self.records[object];
        record.first_byte_us.get_or_insert(now);
        let c = &mut self.conns[conn];
        let body = match c.body_left {
            Some(_) => data,
            None => {
                c.head.extend_from_slice(data);
                match parse_response_head(&c.head, record.size)? {
                    None => return Ok(()),
                    Some(used) => {
                        c.body_left = Some(record.size);
                        let rest = c.head.split_off(used);
                        return self.take_body(conn, object, &rest);
                    }
                }
            }
        };
        self.take_body(conn, object, body)
    }

    fn take_body(&mut self, conn: usize, object: usize, body: &[u8]) -> Result<(), String> {
        let left = self.conns[conn].body_left.unwrap();
        let n = body.len() as u64;
        if n > left {
            return Err(format!(
                "the server sent {} bytes more than announced",
                n - left
            ));
        }
        self.records[object].received += n;
        self.conns[conn].body_left = Some(left - n);
        if left == n {
            self.complete_object(conn, object);
        }
        Ok(())
    }

    fn complete_object(&mut self, conn: usize, object: usize) {
        let c = &mut self.conns[conn];
        c.state = ConnState::Idle;
        c.body_left = None;
        self.dirty_domains.push(c.domain);
        self.finish_object(object, self.now_us());
    }

    /// The object's last byte arrived at `at_us`: its children become requestable.
    fn finish_object(&mut self, object: usize, at_us: u64) {
        let record = &mut self.records[object];
        record.last_byte_us = Some(at_us);
        record.status = "done";
        self.phases[object] = Phase::Finished;
        self.finished += 1;
        for &child in &self.page.objects[object].children {
            self.make_ready(child);
        }
    }

    fn close(&mut self, conn: usize) {
        if let Some(mut stream) = self.conns[conn].stream.take() {
            let _ = self.poll.registry().deregister(&mut stream);
        }
        self.conns[conn].state = ConnState::Closed;
    }

    /// The objects in flight on it fail (one on HTTP/1.1, every stream on HTTP/2); if the
    /// domain has no connection left, so do its waiting requests.
    fn fail_connection(&mut self, conn: usize, reason: String) {
        let state = self.conns[conn].state;
        self.close(conn);
        self.conn_records[conn].error = Some(reason.clone());
        if let ConnState::Busy(object) = state {
            self.fail_object(object, &reason);
        }
        if self.conns[conn].http2_bytes.is_some() {
            let streams = self.in_flight_on(conn);
            for object in streams {
                self.fail_object(object, &reason);
            }
        }
        let domain = self.conns[conn].domain;
        let live = self
            .conns
            .iter()
            .any(|c| c.domain == domain && c.state != ConnState::Closed);
        if !live {
            let waiting: Vec<usize> = self.queues[domain].drain(..).collect();
            for object in waiting {
                self.fail_object(
                    object,
                    &format!("no connection to {}: {reason}", self.page.domains[domain]),
                );
            }
        }
    }

    /// The objects requested on `conn` whose response has not ended (HTTP/2's open streams).
    fn in_flight_on(&self, conn: usize) -> Vec<usize> {
        (0..self.page.objects.len())
            .filter(|&o| {
                self.phases[o] == Phase::InFlight && self.records[o].connection == Some(conn)
            })
            .collect()
    }

    fn fail_object(&mut self, object: usize, reason: &str) {
        self.records[object].status = "failed";
        self.records[object].error = Some(reason.to_string());
        self.phases[object] = Phase::Finished;
        self.finished += 1;
        self.skip_descendants(object);
    }

    fn skip_descendants(&mut self, object: usize) {
        let mut stack = self.page.objects[object].children.clone();
        while let Some(o) = stack.pop() {
            self.records[o].error = Some(format!(
                "not requested: ancestor {:?} did not arrive",
                self.records[object].id
            ));
            self.phases[o] = Phase::Finished;
            self.finished += 1;
            stack.extend(&self.page.objects[o].children);
        }
    }

    /// At the deadline: requests in flight or waiting fail, objects not yet requestable are skipped.
    fn abandon_all(&mut self, reason: &str) {
        for object in 0..self.page.objects.len() {
            match self.phases[object] {
                Phase::Queued | Phase::InFlight => self.fail_object(object, reason),
                Phase::Waiting | Phase::Finished => {}
            }
        }
        for object in 0..self.page.objects.len() {
            if self.phases[object] == Phase::Waiting {
                self.records[object].error = Some(format!("not requested: {reason}"));
                self.phases[object] = Phase::Finished;
                self.finished += 1;
            }
        }
    }
}

/// Some(head length) once the head is complete and acceptable; None while it is incomplete.
fn parse_response_head(head: &[u8], expected: u64) -> Result<Option<usize>, String> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut headers);
    let used = match response.parse(head) {
        Ok(httparse::Status::Complete(used)) => used,
        Ok(httparse::Status::Partial) if head.len() <= MAX_RESPONSE_HEAD => return Ok(None),
        Ok(httparse::Status::Partial) => return Err("response head too large".to_string()),
        Err(e) => return Err(format!("malformed response: {e}")),
    };
    if response.code != Some(200) {
        return Err(format!(
            "HTTP {} {}",
            response.code.unwrap_or(0),
            response.reason.unwrap_or("")
        ));
    }
    let length = response
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("content-length"))
        .and_then(|h| {
            std::str::from_utf8(h.value)
                .ok()?
                .trim()
                .parse::<u64>()
                .ok()
        })
        .ok_or("response without a valid Content-Length")?;
    if length != expected {
        return Err(format!(
            "the server announced {length} bytes, the page says {expected}"
        ));
    }
    Ok(Some(used))
}

/// The path an object is asked for by, in either version: its id and size.
fn request_path(object: &crate::page::Object) -> String {
    format!("/{}?bytes={}", percent_encode(&object.id), object.size)
}

/// Object ids go into the request path; anything beyond unreserved characters is escaped.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_heads() {
        assert_eq!(
            parse_response_head(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab", 5),
            Ok(Some(38))
        );
        assert_eq!(
            parse_response_head(b"HTTP/1.1 200 OK\r\nContent-Le", 5),
            Ok(None)
        );
        assert!(
            parse_response_head(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n", 5)
                .unwrap_err()
                .contains("announced 4")
        );
        assert!(parse_response_head(b"HTTP/1.1 400 Bad Request\r\n\r\n", 5)
            .unwrap_err()
            .contains("400"));
        assert!(parse_response_head(b"HTTP/1.1 200 OK\r\n\r\n", 5)
            .unwrap_err()
            .contains("Content-Length"));
    }

    #[test]
    fn escapes_ids() {
        assert_eq!(percent_encode("o-1.x"), "o-1.x");
        assert_eq!(percent_encode("a b/c?"), "a%20b%2Fc%3F");
    }
}
