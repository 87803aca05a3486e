// SPDX-License-Identifier: MIT
/*
 * What the simulator's programs (bottleneck.cc, percca.cc) share: the JSON and the
 * "expected one of" list of a name table, the dumbbell's two kinds of link, Linux's TCP
 * defaults, and a timed run.
 */
#ifndef CONFUCIUS_PROGRAM_PARTS_H
#define CONFUCIUS_PROGRAM_PARTS_H

#include "ns3/config.h"
#include "ns3/nstime.h"
#include "ns3/point-to-point-helper.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <chrono>
#include <ctime>
#include <ostream>
#include <string>

namespace ns3
{

/* "a, b, c": a table's names, for an error's "expected one of". */
template <typename Table>
std::string
JoinNames(const Table& table)
{
    std::string names;
    for (const auto& entry : table)
        names += (names.empty() ? "" : ", ") + entry.first;
    return names;
}

/* {"name":"text",...}: a table as a JSON object, `text` giving each entry's string. */
template <typename Table, typename Text>
void
PrintJsonTable(std::ostream& out, const Table& table, Text text)
{
    out << "{";
    const char* sep = "";
    for (const auto& entry : table)
    {
        out << sep << "\"" << entry.first << "\":\"" << text(entry.second) << "\"";
        sep = ",";
    }
    out << "}";
}

const uint32_t TCP_SEGMENT = 1448;      // a 1500-byte MTU less IPv4, TCP and timestamps
const uint32_t SOCKET_BUFFER = 4 << 20; // Linux's tcp_wmem maximum: never the limit here

/* Linux's TCP where ns-3's defaults differ, for every connection a program opens (an
 * application may still set its own socket's options): full-size segments (ns-3: 536
 * bytes), buffers that never limit the window (ns-3: 128 KiB; Linux autotunes up to
 * 4-6 MiB), delayed ACKs after at most 40 ms (ns-3: 200; Linux's least ATO) and a least
 * RTO of 200 ms (ns-3: 1 s; Linux's TCP_RTO_MIN). */
inline void
LinuxTcpDefaults()
{
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(TCP_SEGMENT));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(SOCKET_BUFFER));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(SOCKET_BUFFER));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MilliSeconds(40)));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));
}

/* The links to the router: instantaneous, at `fast`. */
inline PointToPointHelper
AccessLinks(const std::string& fast)
{
    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", StringValue(fast));
    access.SetChannelAttribute("Delay", TimeValue(Seconds(0)));
    return access;
}

/* A link whose device holds one packet, so that the queue forms in the disc above it
 * (ns-3's flow control stops the disc when the device is full). */
inline PointToPointHelper
OnePacketLink(DataRate rate, Time delay)
{
    PointToPointHelper link;
    link.SetDeviceAttribute("DataRate", DataRateValue(rate));
    link.SetChannelAttribute("Delay", TimeValue(delay));
    link.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
    return link;
}

/* The bottleneck link carries the RTT; its device is fast, the scheduler's disc or the
 * shaper above it sets the rate. */
inline PointToPointHelper
BottleneckLink(const std::string& fast, Time rtt)
{
    return OnePacketLink(DataRate(fast), rtt / 2);
}

/* Simulator::Run, with the wall-clock and CPU seconds it took. */
struct RunTime
{
    double wall;
    double cpu;
};

inline RunTime
RunTimed()
{
    const auto wallStart = std::chrono::steady_clock::now();
    const std::clock_t cpuStart = std::clock();
    Simulator::Run();
    const double cpu = double(std::clock() - cpuStart) / CLOCKS_PER_SEC;
    return {std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count(), cpu};
}

} // namespace ns3

#endif
