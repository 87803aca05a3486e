// SPDX-License-Identifier: MIT
/*
 * What the simulator's programs (bottleneck.cc, percca.cc) share: the JSON and the
 * "expected one of" list of a name table, the dumbbell's two kinds of link, and a timed run.
 */
#ifndef CONFUCIUS_PROGRAM_PARTS_H
#define CONFUCIUS_PROGRAM_PARTS_H

#include "ns3/nstime.h"
#include "ns3/point-to-point-helper.h"
#include "ns3/simulator.h"
#include "ns3/string.h"

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

/* The links to the router: instantaneous, at `fast`. */
inline PointToPointHelper
AccessLinks(const std::string& fast)
{
    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", StringValue(fast));
    access.SetChannelAttribute("Delay", TimeValue(Seconds(0)));
    return access;
}

/* The bottleneck link carries the RTT; its device is fast and holds one packet, so the
 * queue forms in the disc above it (ns-3's flow control stops the disc when it is full). */
inline PointToPointHelper
BottleneckLink(const std::string& fast, Time rtt)
{
    PointToPointHelper narrow;
    narrow.SetDeviceAttribute("DataRate", StringValue(fast));
    narrow.SetChannelAttribute("Delay", TimeValue(rtt / 2));
    narrow.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
    return narrow;
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
