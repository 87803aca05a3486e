// SPDX-License-Identifier: MIT
/*
 * A page load in ns-3 with the rules of tools/web's web-client: one server
 * address per domain; an object is requested when its parent has fully arrived.
 *
 * A domain speaks HTTP/1.1 or a multiplexed protocol. HTTP/1.1: at most
 * MaxPerDomain persistent connections, opened on demand while more requests
 * wait than connections are being set up; requests wait in a per-domain FIFO
 * for the first idle connection of their domain; no pipelining; the server
 * answers a request for N bytes with a head and N bytes. Multiplexed (HTTP/2,
 * and HTTP/3 as ns-3 has no QUIC): one connection per domain, every request
 * sent on it at once as its own stream; the server answers in HTTP/2's frames
 * (a 9-byte header, at most 16 KiB of data), one response after another in the
 * order asked, as Chrome's priorities (each stream depending on the one before)
 * and HTTP/3's default (RFC 9218: not incremental) have servers send them; or,
 * with Interleave, a frame of each response in turn, as servers that ignore
 * priorities do.
 */
#ifndef CONFUCIUS_PAGE_LOAD_H
#define CONFUCIUS_PAGE_LOAD_H

#include "ns3/application.h"
#include "ns3/callback.h"
#include "ns3/ipv4-address.h"
#include "ns3/nstime.h"
#include "ns3/socket.h"

#include <deque>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace ns3
{

/* One object of a page: `parent` is an index into the page, or -1 for the roots;
 * `protocol` is its domain's: h1, h2 or h3. */
struct WebObject
{
    std::string id, domain;
    uint64_t size;
    int parent;
    std::string protocol = "h1";
};

/* Whether a protocol sends every request of a domain over one connection (h2, h3). */
bool Multiplexed(const std::string& protocol);

/* A page as `confucius sim` writes it: one object per line, "id domain size parent|-
 * [protocol]" (h1 when absent; one protocol per domain). */
std::vector<WebObject> ReadPage(const std::string& path);
/* The page's domains, in order of first appearance. */
std::vector<std::string> PageDomains(const std::vector<WebObject>& page);

class WebObjectServer : public Application
{
  public:
    static TypeId GetTypeId();

  private:
    /* A response being sent on a multiplexed connection. */
    struct Stream
    {
        uint32_t id;
        uint64_t pending; // body bytes still to send
        bool headSent = false;
    };

    struct Client
    {
        std::string request;   // bytes of requests not yet read whole
        bool decided = false;  // whether the connection's protocol is known
        bool multiplexed = false;
        uint64_t pending = 0;  // HTTP/1.1: bytes of responses still to send
        std::deque<Stream> streams; // multiplexed: in turn, a frame each
    };

    void StartApplication() override;
    void StopApplication() override;
    void Accept(Ptr<Socket> socket, const Address& from);
    void Read(Ptr<Socket> socket);
    void ReadRequests(Client& c);
    void ReadFrames(Client& c);
    void Write(Ptr<Socket> socket, uint32_t available);
    void WriteFrames(Ptr<Socket> socket, Client& c);

    uint16_t m_port = 80;
    bool m_interleave = false;
    Ptr<Socket> m_listener;
    std::map<Ptr<Socket>, Client> m_clients;
};

class PageLoader : public Application
{
  public:
    static TypeId GetTypeId();
    PageLoader();

    void SetPage(const std::vector<WebObject>& page, const std::vector<Ipv4Address>& servers);
    /* Called once, when the page's last object has arrived. */
    void SetLoadedCallback(Callback<void> loaded);
    /* First request to last byte (lab's plt_s); negative while not done. */
    Time PageLoadTime() const;
    uint32_t ObjectsDone() const;
    uint32_t Connections() const;
    /* The load in web-client's report format (confucius-web-load/1), times from its start. */
    void WriteReport(std::ostream& out, const std::string& pageName) const;

  private:
    struct Connection;
    /* One object's times as web-client reports them; negative: not reached. */
    struct Timing
    {
        Time ready = Seconds(-1), request = Seconds(-1), firstByte = Seconds(-1),
             lastByte = Seconds(-1);
        int connection = -1;
        uint64_t received = 0;
    };

    void StartApplication() override;
    void StopApplication() override;
    void Request(size_t object);
    void Dispatch(size_t domain);
    void Open(size_t domain);
    void Connected(Ptr<Socket> socket);
    void Failed(Ptr<Socket> socket);
    void Send(Connection& c, size_t object);
    void Read(Ptr<Socket> socket);
    void ReadFrames(size_t connection, const uint8_t* data, size_t size);
    void ConnectionIdle(size_t connection);
    void ObjectDone(size_t object);
    size_t IndexOf(Ptr<Socket> socket) const;

    uint16_t m_port = 80;
    uint32_t m_maxPerDomain = 6;
    std::vector<WebObject> m_page;
    std::vector<std::string> m_domains; // PageDomains order
    std::vector<Ipv4Address> m_servers; // per domain
    std::vector<size_t> m_domainOf;     // per object
    std::vector<std::string> m_protocols; // per domain
    std::vector<std::deque<size_t>> m_waiting;
    std::vector<std::vector<size_t>> m_connectionsOf; // per domain, into m_connections
    std::vector<Connection> m_connections;
    std::vector<Timing> m_timing; // per object
    Time m_start, m_firstRequest, m_lastByte;
    uint32_t m_done = 0;
    Callback<void> m_loaded;
};

} // namespace ns3

#endif
