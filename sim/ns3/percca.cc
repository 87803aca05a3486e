// SPDX-License-Identifier: MIT
/*
 * Seed 003's per-CCA queueing in ns-3: long-lived TCP flows, each with its own
 * congestion control (set on its socket), from one server through a router to
 * one client, the buffer policy at the router's bottleneck as the lab installs
 * it (confucius/percca/tc.py):
 *
 *   shared     a tail-drop FIFO of the whole buffer, drained by the bottleneck's
 *              device at the link rate (the lab: pfifo under HTB; the device is an
 *              exact shaper without TBF's timer events)
 *   external   Confucius, mode external, one class per queue, shaping itself at
 *              the link rate, one buffer of `buffer` packets; flow f's packets go
 *              to the class the classifier drew for it by their destination port
 *              (the lab: u32 filters on `ip dport`), served by the given weights
 *              or, with none, by the core's own count of backlogged flows
 *
 * Flow f listens on port first-port + f at the client and starts at a random
 * instant of the first 100 ms (ns-3's generator, seeded by --seed: a seed
 * repeats a run exactly). Prints one JSON object: each flow's bytes received
 * in the measured window [warmup, warmup + duration], each queue's occupancy
 * samples (packets) and drops in the window, and the simulation's speed.
 *
 *   percca --flows=reno:1,cubic:2,bbr:3 --policy=external --weights=1:1:1 \
 *          --rate=30Mbps --rtt=40ms --buffer=50 --warmup=2s --duration=5s
 */
#include "model/confucius-queue-disc.h"
#include "model/port-filter.h"
#include "program-parts.h"

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <iostream>
#include <map>
#include <sstream>

using namespace ns3;

namespace
{

const char* FAST_LINK = "100Gbps";       // faster than any bottleneck: the shaper sets the rate
const Time START_SPREAD = MilliSeconds(100);

// The CCAs by the lab's names (Linux's), as ns-3 has them.
const std::map<std::string, std::string> CCAS = {
    {"reno", "ns3::TcpLinuxReno"}, {"cubic", "ns3::TcpCubic"}, {"bbr", "ns3::TcpBbr"}};
// The lab's queue discs for per-CCA queues that ns-3 has no counterpart for.
const std::map<std::string, std::string> MISSING_QDISCS = {
    {"drr", "ns-3 has no DRR (weighted classes) queue disc"}};

struct Flow
{
    std::string cca;
    uint32_t queue; // 1..Q
};

struct Options
{
    std::string flowsText;
    std::vector<Flow> flows;
    std::string policy = "shared";
    std::string qdisc = "confucius";
    std::string weights;
    std::string rate = "150Mbps";
    Time rtt = MilliSeconds(40);
    uint32_t buffer = 128;
    Time warmup = Seconds(3);
    Time duration = Seconds(12);
    Time sample = MilliSeconds(500);
    uint32_t firstPort = 6000;
    uint32_t seed = 1;
    bool describe = false;
    uint32_t queues = 0;
};

[[noreturn]] void
Fail(const std::string& why)
{
    std::cerr << "percca: " << why << "\n";
    std::exit(2);
}

/* "reno:1,bbr:2": each flow's CCA and queue (1-based, as tc's class minor). */
std::vector<Flow>
ParseFlows(const std::string& text)
{
    std::vector<Flow> flows;
    std::istringstream in(text);
    std::string word;
    while (std::getline(in, word, ','))
    {
        const auto colon = word.find(':');
        const std::string cca = word.substr(0, colon);
        if (!CCAS.count(cca))
            Fail("flows: unknown CCA '" + cca + "' in '" + word + "': expected one of " + JoinNames(CCAS));
        uint32_t queue = 1;
        if (colon != std::string::npos)
        {
            char* end = nullptr;
            const std::string digits = word.substr(colon + 1);
            const unsigned long q = std::strtoul(digits.c_str(), &end, 10);
            if (digits.empty() || *end != '\0' || q < 1 || q > CFC_MAX_CLASSES)
                Fail("flows: queue of '" + word + "' must be 1 to " +
                     std::to_string(CFC_MAX_CLASSES));
            queue = static_cast<uint32_t>(q);
        }
        flows.push_back({cca, queue});
    }
    if (flows.empty())
        Fail("flows: give each flow as CCA:QUEUE, e.g. --flows=reno:1,bbr:2");
    return flows;
}

Options
ParseOptions(int argc, char** argv)
{
    Options o;
    CommandLine cmd(__FILE__);
    cmd.Usage("Seed 003: bulk TCP flows of several CCAs through one bottleneck, a shared FIFO "
              "or Confucius's external classes (one per queue).");
    cmd.AddValue("flows", "each flow as CCA:QUEUE, comma-separated (CCA: reno, cubic, bbr)",
                 o.flowsText);
    cmd.AddValue("policy", "shared (one FIFO) or external (one Confucius class per queue)",
                 o.policy);
    cmd.AddValue("qdisc", "the per-queue disc: confucius (drr is the lab's, not ns-3's)", o.qdisc);
    cmd.AddValue("queues", "external: classes (0 = the highest queue a flow names)", o.queues);
    cmd.AddValue("weights", "external: class weights as tc writes them (empty = the core's count "
                            "of backlogged flows)", o.weights);
    cmd.AddValue("rate", "bottleneck rate", o.rate);
    cmd.AddValue("rtt", "every flow's round-trip propagation delay", o.rtt);
    cmd.AddValue("buffer", "the bottleneck's buffer, in packets", o.buffer);
    cmd.AddValue("warmup", "time before the measured window", o.warmup);
    cmd.AddValue("duration", "the measured window", o.duration);
    cmd.AddValue("sample", "queue occupancy sampling period", o.sample);
    cmd.AddValue("first-port", "flow f listens on first-port + f", o.firstPort);
    cmd.AddValue("seed", "ns-3 run number (the flows' start instants)", o.seed);
    cmd.AddValue("describe", "print the CCAs and queue discs this program has as JSON, and exit",
                 o.describe);
    cmd.Parse(argc, argv);
    LinuxTcpDefaults();
    if (o.describe)
        return o;
    o.flows = ParseFlows(o.flowsText);
    if (o.policy != "shared" && o.policy != "external")
        Fail("policy must be shared or external, got '" + o.policy + "'");
    if (MISSING_QDISCS.count(o.qdisc))
        Fail("qdisc " + o.qdisc + " cannot be simulated: " + MISSING_QDISCS.at(o.qdisc));
    if (o.qdisc != "confucius")
        Fail("qdisc must be confucius, got '" + o.qdisc + "'");
    uint32_t highest = 1;
    for (const Flow& f : o.flows)
        highest = std::max(highest, f.queue);
    if (o.queues == 0)
        o.queues = highest;
    if (highest > o.queues || o.queues > CFC_MAX_CLASSES)
        Fail("queues must be at least the highest queue a flow names (" + std::to_string(highest) +
             ") and at most " + std::to_string(CFC_MAX_CLASSES));
    if (o.policy == "shared" && (o.queues != 1 || !o.weights.empty()))
        Fail("policy shared has one queue: every flow in queue 1, no weights");
    if (o.buffer < 1)
        Fail("buffer must be at least 1 packet");
    if (!o.rtt.IsStrictlyPositive() || !o.duration.IsStrictlyPositive() ||
        !o.sample.IsStrictlyPositive() || o.warmup.IsStrictlyNegative())
        Fail("rtt, duration and sample must be positive, warmup not negative");
    if (o.firstPort + o.flows.size() > 65535)
        Fail("first-port + flows must stay below 65536");
    return o;
}

void
Describe()
{
    const auto same = [](const std::string& text) { return text; };
    std::cout << "{\"ns3\":\"" << CONFUCIUS_NS3_VERSION << "\",\"ccas\":";
    PrintJsonTable(std::cout, CCAS, same);
    std::cout << ",\"qdiscs\":[\"confucius\"],\"missing\":";
    PrintJsonTable(std::cout, MISSING_QDISCS, same);
    std::cout << "}\n";
}

/* ------------------------------------------------------------------ traffic */

/* Keep the socket's send buffer full, as the lab's bulk sender does. */
void
Fill(Ptr<Socket> socket, uint32_t)
{
    while (socket->GetTxAvailable() >= TCP_SEGMENT)
        if (socket->Send(Create<Packet>(TCP_SEGMENT)) < 0)
            return;
}

void
Connected(Ptr<Socket> socket)
{
    Fill(socket, 0);
}

void
ConnectFailed(Ptr<Socket>)
{
    Fail("a flow's connection failed");
}

void
StartFlow(Ptr<Node> server, TypeId cca, Address to)
{
    Ptr<Socket> socket = server->GetObject<TcpL4Protocol>()->CreateSocket(cca);
    socket->Bind();
    socket->SetConnectCallback(MakeCallback(&Connected), MakeCallback(&ConnectFailed));
    socket->SetSendCallback(MakeCallback(&Fill));
    socket->Connect(to);
}

/* ----------------------------------------------------------------- the queues */

/* Each queue's occupancy samples and drops in the measured window. */
struct Queues
{
    Ptr<QueueDisc> disc;              // the disc that holds the packets
    Ptr<ConfuciusQueueDisc> confucius; // null for the shared FIFO
    std::map<uint16_t, uint32_t> queueOfPort;
    std::vector<std::vector<std::pair<int64_t, uint32_t>>> samples;
    std::vector<uint64_t> drops;
    Time from;

    void Sample()
    {
        if (!confucius)
        {
            samples[0].emplace_back(Simulator::Now().GetNanoSeconds(), disc->GetNPackets());
            return;
        }
        const struct cfc_stats st = confucius->CoreStats();
        for (size_t q = 0; q < samples.size(); q++)
            samples[q].emplace_back(Simulator::Now().GetNanoSeconds(), st.class_qlen[q]);
    }

    /* A dropped packet counts for the queue its destination port maps to. */
    void Dropped(Ptr<const QueueDiscItem> item)
    {
        if (Simulator::Now() < from)
            return;
        auto ip = DynamicCast<const Ipv4QueueDiscItem>(item);
        uint8_t ports[4];
        if (!ip || ip->GetPacket()->CopyData(ports, 4) != 4)
            return;
        auto it = queueOfPort.find(uint16_t(ports[2] << 8 | ports[3]));
        if (it != queueOfPort.end())
            drops[it->second]++;
    }
};

void
SampleEvery(Queues* queues, Time period, Time until)
{
    queues->Sample();
    if (Simulator::Now() + period <= until)
        Simulator::Schedule(period, &SampleEvery, queues, period, until);
}

/* The shared FIFO at a device of the link's rate, or Confucius (shaping itself) with one
 * class (and port filter) per queue. */
Ptr<QueueDisc>
InstallBottleneck(const Options& o, Ptr<NetDevice> device, Queues& queues)
{
    TrafficControlHelper tch;
    const DataRate rate(o.rate);
    if (o.policy == "shared")
    {
        device->SetAttribute("DataRate", DataRateValue(rate));
        tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize",
                             QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, o.buffer)));
        return tch.Install(device).Get(0);
    }
    tch.SetRootQueueDisc("ns3::ConfuciusQueueDisc", "Mode", StringValue("external"), "Classes",
                         UintegerValue(o.queues), "Limit", UintegerValue(o.buffer), "Bandwidth",
                         DataRateValue(rate), "Weights", StringValue(o.weights));
    Ptr<QueueDisc> disc = tch.Install(device).Get(0);
    for (uint32_t q = 1; q <= o.queues; q++)
    {
        auto filter = CreateObject<ConfuciusPortFilter>();
        for (const auto& [port, queue] : queues.queueOfPort)
            if (queue + 1 == q)
                filter->AddPort(port);
        filter->SetResults(q, PacketFilter::PF_NO_MATCH);
        disc->AddPacketFilter(filter);
    }
    queues.confucius = DynamicCast<ConfuciusQueueDisc>(disc);
    return disc;
}

/* ------------------------------------------------------------------- output */

void
PrintJson(const Options& o, const std::vector<Ptr<PacketSink>>& sinks,
          const std::vector<uint64_t>& atWarmup, const Queues& queues, RunTime took)
{
    const double simulated = Simulator::Now().GetSeconds();
    std::ostringstream out;
    out << "{\"ns3\":\"" << CONFUCIUS_NS3_VERSION << "\",\"seed\":" << o.seed
        << ",\"policy\":\"" << o.policy << "\",\"window_s\":" << o.duration.GetSeconds()
        << ",\"flows\":[";
    for (size_t f = 0; f < sinks.size(); f++)
        out << (f ? "," : "") << "{\"port\":" << o.firstPort + f << ",\"cca\":\"" << o.flows[f].cca
            << "\",\"queue\":" << o.flows[f].queue - 1
            << ",\"bytes\":" << sinks[f]->GetTotalRx() - atWarmup[f] << "}";
    out << "],\"queues\":[";
    for (size_t q = 0; q < queues.samples.size(); q++)
    {
        uint64_t sum = 0, most = 0;
        out << (q ? "," : "") << "{\"queue\":" << q << ",\"drops\":" << queues.drops[q]
            << ",\"samples\":[";
        for (size_t i = 0; i < queues.samples[q].size(); i++)
        {
            const auto& [t, n] = queues.samples[q][i];
            out << (i ? "," : "") << "[" << t << "," << n << "]";
            sum += n;
            most = std::max<uint64_t>(most, n);
        }
        const size_t n = queues.samples[q].size();
        out << "],\"mean_packets\":" << (n ? double(sum) / n : 0.0) << ",\"max_packets\":" << most
            << "}";
    }
    out << "],\"simulated_s\":" << simulated << ",\"wall_s\":" << took.wall << ",\"cpu_s\":" << took.cpu
        << ",\"speed\":" << simulated / took.wall << "}\n";
    std::cout << out.str();
}

void
Snapshot(const std::vector<Ptr<PacketSink>>* sinks, std::vector<uint64_t>* into)
{
    for (size_t f = 0; f < sinks->size(); f++)
        (*into)[f] = (*sinks)[f]->GetTotalRx();
}

} // namespace

int
main(int argc, char** argv)
{
    const Options o = ParseOptions(argc, argv);
    if (o.describe)
    {
        Describe();
        return 0;
    }
    RngSeedManager::SetRun(o.seed);

    // Nodes: 0 server, 1 router, 2 client. The RTT is on the bottleneck link, whose device
    // holds one packet, so the queue forms in the disc; Confucius shapes to the rate at a fast
    // device, the shared FIFO's device sends at the rate.
    NodeContainer nodes;
    nodes.Create(3);
    Ptr<Node> server = nodes.Get(0), router = nodes.Get(1), client = nodes.Get(2);
    InternetStackHelper().Install(nodes);
    NetDeviceContainer serverLink = AccessLinks(FAST_LINK).Install(server, router);
    NetDeviceContainer bottleneck = BottleneckLink(FAST_LINK, o.rtt).Install(router, client);

    Queues queues;
    queues.samples.resize(o.queues);
    queues.drops.assign(o.queues, 0);
    queues.from = o.warmup;
    for (size_t f = 0; f < o.flows.size(); f++)
        queues.queueOfPort[uint16_t(o.firstPort + f)] = o.flows[f].queue - 1;
    queues.disc = InstallBottleneck(o, bottleneck.Get(0), queues);
    queues.disc->TraceConnectWithoutContext("Drop", MakeCallback(&Queues::Dropped, &queues));

    Ipv4AddressHelper addr;
    addr.SetBase("10.1.1.0", "255.255.255.0");
    addr.Assign(serverLink);
    addr.SetBase("10.1.3.0", "255.255.255.0");
    const Ipv4Address clientAddr = addr.Assign(bottleneck).GetAddress(1);
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    const Time end = o.warmup + o.duration;
    auto start = CreateObject<UniformRandomVariable>();
    std::vector<Ptr<PacketSink>> sinks;
    for (size_t f = 0; f < o.flows.size(); f++)
    {
        const uint16_t port = uint16_t(o.firstPort + f);
        PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
        sinks.push_back(DynamicCast<PacketSink>(sink.Install(client).Get(0)));
        Simulator::Schedule(Seconds(start->GetValue(0, START_SPREAD.GetSeconds())), &StartFlow,
                            server, TypeId::LookupByName(CCAS.at(o.flows[f].cca)),
                            Address(InetSocketAddress(clientAddr, port)));
    }
    std::vector<uint64_t> atWarmup(sinks.size(), 0);
    Simulator::Schedule(o.warmup, &Snapshot, &sinks, &atWarmup);
    Simulator::Schedule(o.warmup, &SampleEvery, &queues, o.sample, end);
    Simulator::Stop(end);

    PrintJson(o, sinks, atWarmup, queues, RunTimed());
    // Disposing the disc drops what it still holds: not drops of the window, and `queues` goes first.
    queues.disc->TraceDisconnectWithoutContext("Drop", MakeCallback(&Queues::Dropped, &queues));
    Simulator::Destroy();
    return 0;
}
