// SPDX-License-Identifier: MIT
#include "page-load.h"

#include "app-parts.h"

#include "ns3/abort.h"
#include "ns3/boolean.h"
#include "ns3/inet-socket-address.h"
#include "ns3/packet.h"
#include "ns3/pointer.h"
#include "ns3/simulator.h"
#include "ns3/tcp-cubic.h"
#include "ns3/tcp-socket-factory.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace ns3
{

namespace
{

/* The response's head before the body (status line and headers, as web-server's). */
const uint64_t RESPONSE_HEAD = 100;
const uint32_t MAX_CHUNK = 65536;
const char* END_OF_REQUEST = "\r\n\r\n";

/* HTTP/2's framing (RFC 9113, section 4.1): the client's preface, then frames of a 9-byte
 * header (length, type, flags, stream) and at most 16 KiB of payload (the default
 * SETTINGS_MAX_FRAME_SIZE). Header blocks stand for HPACK's: a request's carries
 * `bytes=N`, a response's HPACKED_RESPONSE bytes (a status and a length, compressed). */
const std::string PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const uint32_t FRAME_HEAD = 9;
const uint32_t MAX_FRAME = 16384;
const uint32_t HPACKED_RESPONSE = 31;
const uint8_t DATA = 0;
const uint8_t HEADERS = 1;
const uint8_t END_STREAM = 0x1;
const uint8_t END_HEADERS = 0x4;

/* A frame's header followed by `payload` (zeros when empty and `length` > 0). */
std::vector<uint8_t>
Frame(uint8_t type, uint8_t flags, uint32_t stream, uint32_t length, const std::string& payload = "")
{
    NS_ABORT_MSG_IF(payload.size() > length, "a frame's payload beyond its length");
    std::vector<uint8_t> frame(FRAME_HEAD + length, 0);
    for (int i = 0; i < 3; i++)
        frame[i] = static_cast<uint8_t>(length >> (16 - 8 * i));
    frame[3] = type;
    frame[4] = flags;
    for (int i = 0; i < 4; i++)
        frame[5 + i] = static_cast<uint8_t>(stream >> (24 - 8 * i));
    std::copy(payload.begin(), payload.end(), frame.begin() + FRAME_HEAD);
    return frame;
}

uint32_t
BigEndian(const uint8_t* bytes, size_t count)
{
    uint32_t value = 0;
    for (size_t i = 0; i < count; i++)
        value = value << 8 | bytes[i];
    return value;
}

/* A request's stream: odd, as a client's (one per object, so none is reused). */
uint32_t
StreamOf(size_t object)
{
    return static_cast<uint32_t>(2 * object + 1);
}

uint64_t
BytesAsked(const std::string& request)
{
    const size_t at = request.find("bytes=");
    NS_ABORT_MSG_IF(at == std::string::npos, "a request without bytes=N");
    return std::stoull(request.substr(at + 6));
}

Ptr<TcpCubic>
CubicOf(Ptr<Socket> socket)
{
    PointerValue ops;
    socket->GetAttribute("CongestionOps", ops);
    return ops.Get<TcpCubic>();
}

/*
 * ns-3 3.44's TcpCubic copy (an accepted connection's copy of the listener's) leaves
 * TcpFriendliness uninitialised: the connection's Cubic then depended on what the heap
 * held before. It takes the listener's setting, as the other settings are copied.
 */
void
CopyCubicFriendliness(Ptr<Socket> listener, Ptr<Socket> accepted)
{
    Ptr<TcpCubic> from = CubicOf(listener), to = CubicOf(accepted);
    if (!from || !to)
        return;
    BooleanValue friendliness;
    from->GetAttribute("TcpFriendliness", friendliness);
    to->SetAttribute("TcpFriendliness", friendliness);
}

} // namespace

bool
Multiplexed(const std::string& protocol)
{
    return protocol == "h2" || protocol == "h3";
}

std::vector<WebObject>
ReadPage(const std::string& path)
{
    std::ifstream in(path);
    NS_ABORT_MSG_UNLESS(in, "cannot read page " << path);
    std::vector<WebObject> page;
    std::vector<std::string> parents;
    std::map<std::string, int> index;
    std::map<std::string, std::string> protocols; // per domain
    std::string line;
    for (int number = 1; std::getline(in, line); number++)
    {
        std::istringstream words(line);
        WebObject o{};
        std::string parent;
        if (!(words >> o.id >> o.domain >> o.size >> parent))
            NS_ABORT_MSG(path << ":" << number << ": expected 'id domain size parent|- [protocol]'");
        if (!(words >> o.protocol))
            o.protocol = "h1";
        NS_ABORT_MSG_UNLESS(o.protocol == "h1" || o.protocol == "h2" || o.protocol == "h3",
                            path << ":" << number << ": protocol '" << o.protocol
                                 << "' is not h1, h2 or h3");
        NS_ABORT_MSG_UNLESS(protocols.emplace(o.domain, o.protocol).first->second == o.protocol,
                            path << ":" << number << ": domain " << o.domain
                                 << " speaks two protocols");
        NS_ABORT_MSG_IF(index.count(o.id), path << ":" << number << ": object " << o.id << " twice");
        index[o.id] = static_cast<int>(page.size());
        page.push_back(o);
        parents.push_back(parent);
    }
    NS_ABORT_MSG_IF(page.empty(), path << ": no objects");
    for (size_t i = 0; i < page.size(); i++)
    {
        if (parents[i] == "-")
        {
            page[i].parent = -1;
            continue;
        }
        auto it = index.find(parents[i]);
        NS_ABORT_MSG_IF(it == index.end(), path << ": " << page[i].id << "'s parent " << parents[i]
                                                << " is not on the page");
        page[i].parent = it->second;
    }
    return page;
}

std::vector<std::string>
PageDomains(const std::vector<WebObject>& page)
{
    std::vector<std::string> domains;
    for (const auto& o : page)
        if (std::find(domains.begin(), domains.end(), o.domain) == domains.end())
            domains.push_back(o.domain);
    return domains;
}

/* ------------------------------------------------------------------ server */

NS_OBJECT_ENSURE_REGISTERED(WebObjectServer);

TypeId
WebObjectServer::GetTypeId()
{
    static TypeId tid =
        WithPort(ApplicationTypeId<WebObjectServer>("ns3::WebObjectServer"), "TCP port", 80,
                 &WebObjectServer::m_port)
            .AddAttribute("Interleave",
                          "Multiplexed connections: a frame of each response in turn, not one "
                          "response after another",
                          BooleanValue(false), MakeBooleanAccessor(&WebObjectServer::m_interleave),
                          MakeBooleanChecker());
    return tid;
}

void
WebObjectServer::StartApplication()
{
    m_listener = Socket::CreateSocket(GetNode(), TcpSocketFactory::GetTypeId());
    m_listener->Bind(InetSocketAddress(Ipv4Address::GetAny(), m_port));
    m_listener->Listen();
    m_listener->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
                                  MakeCallback(&WebObjectServer::Accept, this));
}

void
WebObjectServer::StopApplication()
{
    for (auto& [socket, client] : m_clients)
        socket->Close();
    m_clients.clear();
    if (m_listener)
        m_listener->Close();
}

void
WebObjectServer::Accept(Ptr<Socket> socket, const Address&)
{
    CopyCubicFriendliness(m_listener, socket);
    m_clients[socket] = Client{};
    socket->SetRecvCallback(MakeCallback(&WebObjectServer::Read, this));
    socket->SetSendCallback(MakeCallback(&WebObjectServer::Write, this));
}

/* The connection's protocol is told by its first bytes: HTTP/2's preface, or a request. */
void
WebObjectServer::Read(Ptr<Socket> socket)
{
    Client& c = m_clients[socket];
    Ptr<Packet> packet;
    while ((packet = socket->Recv()))
    {
        std::string data(packet->GetSize(), '\0');
        packet->CopyData(reinterpret_cast<uint8_t*>(data.data()), data.size());
        c.request += data;
    }
    if (!c.decided)
    {
        if (c.request.size() < 4)
            return;
        c.multiplexed = c.request.compare(0, 4, PREFACE, 0, 4) == 0;
        if (c.multiplexed && c.request.size() < PREFACE.size())
            return;
        NS_ABORT_MSG_IF(c.multiplexed && c.request.compare(0, PREFACE.size(), PREFACE) != 0,
                        "WebObjectServer: a broken HTTP/2 preface");
        if (c.multiplexed)
            c.request.erase(0, PREFACE.size());
        c.decided = true;
    }
    if (c.multiplexed)
        ReadFrames(c);
    else
        ReadRequests(c);
    Write(socket, socket->GetTxAvailable());
}

/* `GET /<id>?bytes=N HTTP/1.1 ...` asks for N bytes of body (web-server's protocol). */
void
WebObjectServer::ReadRequests(Client& c)
{
    size_t end;
    while ((end = c.request.find(END_OF_REQUEST)) != std::string::npos)
    {
        c.pending += RESPONSE_HEAD + BytesAsked(c.request.substr(0, end));
        c.request.erase(0, end + 4);
    }
}

/* A HEADERS frame carrying `bytes=N` opens a stream that asks for N bytes. */
void
WebObjectServer::ReadFrames(Client& c)
{
    while (c.request.size() >= FRAME_HEAD)
    {
        const auto* head = reinterpret_cast<const uint8_t*>(c.request.data());
        const uint32_t length = BigEndian(head, 3);
        if (c.request.size() < FRAME_HEAD + length)
            return;
        NS_ABORT_MSG_UNLESS(head[3] == HEADERS, "WebObjectServer: a client frame of type "
                                                    << int(head[3]));
        c.streams.push_back(Stream{BigEndian(head + 5, 4) & 0x7fffffff,
                                   BytesAsked(c.request.substr(FRAME_HEAD, length))});
        c.request.erase(0, FRAME_HEAD + length);
    }
}

void
WebObjectServer::Write(Ptr<Socket> socket, uint32_t)
{
    Client& c = m_clients[socket];
    if (c.multiplexed)
    {
        WriteFrames(socket, c);
        return;
    }
    while (c.pending > 0 && socket->GetTxAvailable() > 0)
    {
        const uint32_t chunk = static_cast<uint32_t>(
            std::min<uint64_t>({c.pending, socket->GetTxAvailable(), MAX_CHUNK}));
        const int sent = socket->Send(Create<Packet>(chunk));
        if (sent <= 0)
            break;
        c.pending -= sent;
    }
}

/* The streams' responses, each its head first: in the order asked, or a frame each in turn. */
void
WebObjectServer::WriteFrames(Ptr<Socket> socket, Client& c)
{
    while (!c.streams.empty())
    {
        Stream s = c.streams.front();
        const uint32_t room = socket->GetTxAvailable();
        if (room <= FRAME_HEAD || (!s.headSent && room < FRAME_HEAD + HPACKED_RESPONSE))
            return;
        std::vector<uint8_t> frame;
        bool last = false;
        if (!s.headSent)
        {
            frame = Frame(HEADERS, END_HEADERS, s.id, HPACKED_RESPONSE);
            s.headSent = true;
        }
        else
        {
            const auto length =
                static_cast<uint32_t>(std::min<uint64_t>({MAX_FRAME, s.pending, room - FRAME_HEAD}));
            s.pending -= length;
            last = s.pending == 0;
            frame = Frame(DATA, last ? END_STREAM : 0, s.id, length);
        }
        const int sent = socket->Send(frame.data(), frame.size(), 0);
        NS_ABORT_MSG_UNLESS(sent == static_cast<int>(frame.size()), "WebObjectServer: a frame cut");
        c.streams.pop_front();
        if (last)
            continue;
        if (m_interleave)
            c.streams.push_back(s);
        else
            c.streams.push_front(s);
    }
}

/* ------------------------------------------------------------------ client */

/* Where a multiplexed connection's reading stands in the frame it is in. */
struct FrameReader
{
    uint8_t head[FRAME_HEAD];
    uint32_t headRead = 0;
    uint32_t left = 0; // of the frame's payload
};

struct PageLoader::Connection
{
    Ptr<Socket> socket;
    size_t domain;
    bool multiplexed = false;
    bool connected = false, busy = false;
    size_t object = 0;      // HTTP/1.1: the request in progress
    uint64_t remaining = 0; // HTTP/1.1: bytes of the current response still to come
    FrameReader frame;
    Time opened, established = Seconds(-1);
    uint32_t objects = 0;
    uint64_t bytes = 0;
};

NS_OBJECT_ENSURE_REGISTERED(PageLoader);

TypeId
PageLoader::GetTypeId()
{
    static TypeId tid = WithPort(ApplicationTypeId<PageLoader>("ns3::PageLoader"),
                                 "The servers' TCP port", 80, &PageLoader::m_port)
                            .AddAttribute("MaxPerDomain", "Connections per domain (Chrome's 6)",
                                          UintegerValue(6),
                                          MakeUintegerAccessor(&PageLoader::m_maxPerDomain),
                                          MakeUintegerChecker<uint32_t>(1, 64));
    return tid;
}

PageLoader::PageLoader()
    : m_start(Seconds(-1)),
      m_firstRequest(Seconds(-1)),
      m_lastByte(Seconds(-1))
{
}

void
PageLoader::SetPage(const std::vector<WebObject>& page, const std::vector<Ipv4Address>& servers)
{
    const std::vector<std::string> domains = PageDomains(page);
    NS_ABORT_MSG_UNLESS(domains.size() == servers.size(), "one server address per domain");
    m_page = page;
    m_domains = domains;
    m_servers = servers;
    m_domainOf.clear();
    m_protocols.assign(domains.size(), "h1");
    for (const auto& o : page)
    {
        m_domainOf.push_back(std::find(domains.begin(), domains.end(), o.domain) - domains.begin());
        m_protocols[m_domainOf.back()] = o.protocol;
    }
    m_waiting.assign(domains.size(), {});
    m_connectionsOf.assign(domains.size(), {});
    m_timing.assign(page.size(), Timing{});
}

void
PageLoader::SetLoadedCallback(Callback<void> loaded)
{
    m_loaded = loaded;
}

Time
PageLoader::PageLoadTime() const
{
    return m_done == m_page.size() ? m_lastByte - m_firstRequest : Seconds(-1);
}

uint32_t
PageLoader::ObjectsDone() const
{
    return m_done;
}

uint32_t
PageLoader::Connections() const
{
    return static_cast<uint32_t>(m_connections.size());
}

void
PageLoader::StartApplication()
{
    m_start = Simulator::Now();
    for (size_t i = 0; i < m_page.size(); i++)
        if (m_page[i].parent < 0)
            Request(i);
}

void
PageLoader::StopApplication()
{
    for (auto& c : m_connections)
        c.socket->Close();
}

void
PageLoader::Request(size_t object)
{
    m_timing[object].ready = Simulator::Now();
    m_waiting[m_domainOf[object]].push_back(object);
    Dispatch(m_domainOf[object]);
}

/*
 * HTTP/1.1: idle connections take waiting requests; more open while requests outnumber
 * those being set up. Multiplexed: the domain's one connection takes every request.
 */
void
PageLoader::Dispatch(size_t domain)
{
    if (Multiplexed(m_protocols[domain]))
    {
        if (m_connectionsOf[domain].empty())
            Open(domain);
        Connection& c = m_connections[m_connectionsOf[domain].front()];
        for (; c.connected && !m_waiting[domain].empty(); m_waiting[domain].pop_front())
            Send(c, m_waiting[domain].front());
        return;
    }
    size_t opening = 0;
    for (size_t i : m_connectionsOf[domain])
    {
        if (!m_connections[i].connected)
            opening++;
        else if (!m_connections[i].busy && !m_waiting[domain].empty())
        {
            const size_t object = m_waiting[domain].front();
            m_waiting[domain].pop_front();
            Send(m_connections[i], object);
        }
    }
    while (m_waiting[domain].size() > opening && m_connectionsOf[domain].size() < m_maxPerDomain)
    {
        Open(domain);
        opening++;
    }
}

void
PageLoader::Open(size_t domain)
{
    Connection c;
    c.domain = domain;
    c.multiplexed = Multiplexed(m_protocols[domain]);
    c.opened = Simulator::Now();
    c.socket = Socket::CreateSocket(GetNode(), TcpSocketFactory::GetTypeId());
    c.socket->Bind();
    c.socket->SetConnectCallback(MakeCallback(&PageLoader::Connected, this),
                                 MakeCallback(&PageLoader::Failed, this));
    c.socket->SetRecvCallback(MakeCallback(&PageLoader::Read, this));
    m_connectionsOf[domain].push_back(m_connections.size());
    m_connections.push_back(c);
    c.socket->Connect(InetSocketAddress(m_servers[domain], m_port));
}

size_t
PageLoader::IndexOf(Ptr<Socket> socket) const
{
    for (size_t i = 0; i < m_connections.size(); i++)
        if (m_connections[i].socket == socket)
            return i;
    NS_ABORT_MSG("PageLoader: a socket that is not one of its connections");
}

void
PageLoader::Connected(Ptr<Socket> socket)
{
    const size_t i = IndexOf(socket);
    m_connections[i].connected = true;
    m_connections[i].established = Simulator::Now();
    if (m_connections[i].multiplexed)
        socket->Send(reinterpret_cast<const uint8_t*>(PREFACE.data()), PREFACE.size(), 0);
    Dispatch(m_connections[i].domain);
}

void
PageLoader::Failed(Ptr<Socket> socket)
{
    NS_ABORT_MSG("PageLoader: a connection failed (" << socket << ")");
}

void
PageLoader::Send(Connection& c, size_t object)
{
    c.objects++;
    m_timing[object].request = Simulator::Now();
    m_timing[object].connection = static_cast<int>(&c - m_connections.data());
    if (m_firstRequest.IsNegative())
        m_firstRequest = Simulator::Now();
    if (c.multiplexed)
    {
        const std::string asked = "bytes=" + std::to_string(m_page[object].size);
        const std::vector<uint8_t> frame =
            Frame(HEADERS, END_STREAM | END_HEADERS, StreamOf(object), asked.size(), asked);
        c.socket->Send(frame.data(), frame.size(), 0);
        return;
    }
    c.busy = true;
    c.object = object;
    c.remaining = RESPONSE_HEAD + m_page[object].size;
    const std::string request = "GET /" + m_page[object].id + "?bytes=" +
                                std::to_string(m_page[object].size) + " HTTP/1.1\r\nHost: " +
                                m_page[object].domain + END_OF_REQUEST;
    c.socket->Send(reinterpret_cast<const uint8_t*>(request.data()), request.size(), 0);
}

/* HTTP/1.1's responses come whole and in order on a connection (no pipelining): bytes are
 * counted. A multiplexed connection's are read frame by frame. */
void
PageLoader::Read(Ptr<Socket> socket)
{
    const size_t i = IndexOf(socket);
    Ptr<Packet> packet;
    while ((packet = socket->Recv()))
    {
        if (m_connections[i].multiplexed)
        {
            std::vector<uint8_t> data(packet->GetSize());
            packet->CopyData(data.data(), data.size());
            ReadFrames(i, data.data(), data.size());
            continue;
        }
        Connection& c = m_connections[i];
        NS_ABORT_MSG_IF(packet->GetSize() > c.remaining, "PageLoader: more bytes than asked for");
        Timing& t = m_timing[c.object];
        if (t.firstByte.IsNegative())
            t.firstByte = Simulator::Now();
        c.remaining -= packet->GetSize();
        c.bytes += packet->GetSize();
        // The body is what follows the head: the response's bytes beyond its first RESPONSE_HEAD.
        t.received = m_page[c.object].size - std::min(c.remaining, m_page[c.object].size);
        if (c.busy && c.remaining == 0)
            ConnectionIdle(i); // may open connections: m_connections grows
    }
}

/* A stream's first byte is its response's first frame; its last, the end of its last DATA
 * frame. Completing an object may open connections, so `c` is found again each frame. */
void
PageLoader::ReadFrames(size_t connection, const uint8_t* data, size_t size)
{
    for (size_t at = 0; at < size;)
    {
        Connection& c = m_connections[connection];
        FrameReader& f = c.frame;
        if (f.headRead < FRAME_HEAD)
        {
            const auto take = static_cast<uint32_t>(std::min<size_t>(FRAME_HEAD - f.headRead, size - at));
            std::copy(data + at, data + at + take, f.head + f.headRead);
            f.headRead += take;
            at += take;
            c.bytes += take;
            if (f.headRead < FRAME_HEAD)
                return;
            f.left = BigEndian(f.head, 3);
        }
        const uint32_t stream = BigEndian(f.head + 5, 4) & 0x7fffffff;
        const size_t object = (stream - 1) / 2;
        NS_ABORT_MSG_UNLESS(stream % 2 == 1 && object < m_page.size(),
                            "PageLoader: a frame of stream " << stream);
        Timing& t = m_timing[object];
        if (t.firstByte.IsNegative())
            t.firstByte = Simulator::Now();
        const auto take = static_cast<uint32_t>(std::min<size_t>(f.left, size - at));
        at += take;
        f.left -= take;
        c.bytes += take;
        if (f.head[3] == DATA)
            t.received += take;
        NS_ABORT_MSG_IF(t.received > m_page[object].size, "PageLoader: more bytes than asked for");
        if (f.left > 0)
            return;
        f.headRead = 0;
        if (f.head[3] == DATA && f.head[4] & END_STREAM)
            ObjectDone(object);
    }
}

/* HTTP/1.1: the connection's response is whole; the connection takes the next request. */
void
PageLoader::ConnectionIdle(size_t connection)
{
    const size_t object = m_connections[connection].object;
    const size_t domain = m_connections[connection].domain;
    m_connections[connection].busy = false;
    ObjectDone(object);
    Dispatch(domain);
}

/* The object's children become requestable. */
void
PageLoader::ObjectDone(size_t object)
{
    m_timing[object].lastByte = Simulator::Now();
    m_lastByte = Simulator::Now();
    m_done++;
    if (m_done == m_page.size() && !m_loaded.IsNull())
        m_loaded();
    for (size_t i = 0; i < m_page.size(); i++)
        if (m_page[i].parent == static_cast<int>(object))
            Request(i);
}

namespace
{

std::string
JsonString(const std::string& text)
{
    std::string out = "\"";
    for (char ch : text)
    {
        if (ch == '"' || ch == '\\')
            out += '\\';
        out += ch;
    }
    return out + "\"";
}

/* Microseconds from the load's start, or null when the moment never came. */
std::string
Micros(Time at, Time start)
{
    return at.IsNegative() ? "null" : std::to_string((at - start).GetMicroSeconds());
}

} // namespace

void
PageLoader::WriteReport(std::ostream& out, const std::string& pageName) const
{
    const bool ok = m_done == m_page.size();
    out << "{\"format\":\"confucius-web-load/1\",\"page\":" << JsonString(pageName)
        << ",\"ok\":" << (ok ? "true" : "false") << ",\"error\":"
        << (ok ? "null" : "\"not every object arrived before the simulation ended\"")
        << ",\"start_unix_us\":" << m_start.GetMicroSeconds()
        << ",\"plt_us\":" << Micros(ok ? m_lastByte : Seconds(-1), m_start)
        << ",\"cca\":null,\"max_per_domain\":" << m_maxPerDomain
        << ",\"objects_total\":" << m_page.size() << ",\"objects_done\":" << m_done
        << ",\"connections\":[";
    for (size_t i = 0; i < m_connections.size(); i++)
    {
        const Connection& c = m_connections[i];
        Address local;
        c.socket->GetSockName(local);
        std::ostringstream server;
        m_servers[c.domain].Print(server);
        out << (i ? "," : "") << "{\"id\":" << i << ",\"domain\":" << JsonString(m_domains[c.domain])
            << ",\"protocol\":\"" << m_protocols[c.domain] << "\",\"server\":\"" << server.str() << ":" << m_port
            << "\",\"local_port\":" << InetSocketAddress::ConvertFrom(local).GetPort()
            << ",\"opened_us\":" << Micros(c.opened, m_start)
            << ",\"established_us\":" << Micros(c.established, m_start)
            << ",\"objects\":" << c.objects << ",\"bytes\":" << c.bytes << ",\"error\":null}";
    }
    out << "],\"objects\":[";
    for (size_t i = 0; i < m_page.size(); i++)
    {
        const WebObject& o = m_page[i];
        const Timing& t = m_timing[i];
        int depth = 0;
        for (int p = o.parent; p >= 0; p = m_page[p].parent)
            depth++;
        const char* status = !t.lastByte.IsNegative() ? "done" : t.request.IsNegative() ? "skipped" : "failed";
        out << (i ? "," : "") << "{\"id\":" << JsonString(o.id) << ",\"domain\":" << JsonString(o.domain)
            << ",\"size\":" << o.size << ",\"parent\":"
            << (o.parent < 0 ? "null" : JsonString(m_page[o.parent].id)) << ",\"depth\":" << depth
            << ",\"status\":\"" << status << "\",\"connection\":"
            << (t.connection < 0 ? "null" : std::to_string(t.connection))
            << ",\"ready_us\":" << Micros(t.ready, m_start)
            << ",\"request_us\":" << Micros(t.request, m_start)
            << ",\"first_byte_us\":" << Micros(t.firstByte, m_start)
            << ",\"last_byte_us\":" << Micros(t.lastByte, m_start) << ",\"received\":" << t.received
            << ",\"error\":null}";
    }
    out << "]}";
}

} // namespace ns3
