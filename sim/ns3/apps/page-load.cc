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

std::vector<WebObject>
ReadPage(const std::string& path)
{
    std::ifstream in(path);
    NS_ABORT_MSG_UNLESS(in, "cannot read page " << path);
    std::vector<WebObject> page;
    std::vector<std::string> parents;
    std::map<std::string, int> index;
    std::string line;
    for (int number = 1; std::getline(in, line); number++)
    {
        std::istringstream words(line);
        WebObject o{};
        std::string parent;
        if (!(words >> o.id >> o.domain >> o.size >> parent))
            NS_ABORT_MSG(path << ":" << number << ": expected 'id domain size parent|-'");
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
    static TypeId tid = WithPort(ApplicationTypeId<WebObjectServer>("ns3::WebObjectServer"),
                                 "TCP port", 80, &WebObjectServer::m_port);
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

/* `GET /<id>?bytes=N HTTP/1.1 ...` asks for N bytes of body (web-server's protocol). */
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
    size_t end;
    while ((end = c.request.find(END_OF_REQUEST)) != std::string::npos)
    {
        const size_t at = c.request.find("bytes=");
        NS_ABORT_MSG_IF(at == std::string::npos || at > end, "a request without bytes=N");
        c.pending += RESPONSE_HEAD + std::stoull(c.request.substr(at + 6));
        c.request.erase(0, end + 4);
    }
    Write(socket, socket->GetTxAvailable());
}

void
WebObjectServer::Write(Ptr<Socket> socket, uint32_t)
{
    Client& c = m_clients[socket];
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

/* ------------------------------------------------------------------ client */

struct PageLoader::Connection
{
    Ptr<Socket> socket;
    size_t domain;
    bool connected = false, busy = false;
    size_t object = 0;
    uint64_t remaining = 0; // bytes of the current response still to come
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
    for (const auto& o : page)
        m_domainOf.push_back(std::find(domains.begin(), domains.end(), o.domain) - domains.begin());
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

/* Idle connections take waiting requests; more open while requests outnumber those being set up. */
void
PageLoader::Dispatch(size_t domain)
{
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
    c.busy = true;
    c.object = object;
    c.objects++;
    c.remaining = RESPONSE_HEAD + m_page[object].size;
    m_timing[object].request = Simulator::Now();
    m_timing[object].connection = static_cast<int>(&c - m_connections.data());
    if (m_firstRequest.IsNegative())
        m_firstRequest = Simulator::Now();
    const std::string request = "GET /" + m_page[object].id + "?bytes=" +
                                std::to_string(m_page[object].size) + " HTTP/1.1\r\nHost: " +
                                m_page[object].domain + END_OF_REQUEST;
    c.socket->Send(reinterpret_cast<const uint8_t*>(request.data()), request.size(), 0);
}

/* Responses come whole and in order on a connection (no pipelining): bytes are counted. */
void
PageLoader::Read(Ptr<Socket> socket)
{
    const size_t i = IndexOf(socket);
    Ptr<Packet> packet;
    while ((packet = socket->Recv()))
    {
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
            Done(i); // may open connections: m_connections grows
    }
}

void
PageLoader::Done(size_t connection)
{
    const size_t object = m_connections[connection].object;
    const size_t domain = m_connections[connection].domain;
    m_connections[connection].busy = false;
    m_timing[object].lastByte = Simulator::Now();
    m_lastByte = Simulator::Now();
    m_done++;
    if (m_done == m_page.size() && !m_loaded.IsNull())
        m_loaded();
    for (size_t i = 0; i < m_page.size(); i++)
        if (m_page[i].parent == static_cast<int>(object))
            Request(i);
    Dispatch(domain);
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
            << ",\"server\":\"" << server.str() << ":" << m_port
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
