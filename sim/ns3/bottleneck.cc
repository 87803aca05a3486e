// SPDX-License-Identifier: MIT
/*
 * Seed 000 Fig. 2 in ns-3: servers — router — client, the scheduler under test
 * at the router's bottleneck towards the client, a constant rate or a
 * `time_s Mbps` trace, the RTT and the buffer as the lab's scenarios give them.
 *
 * Traffic (for now): one UDP "real-time" flow and a group of UDP "web" flows
 * that start later, each at a constant rate (the motivating example when both
 * exceed their share). Prints one JSON object: what each group received per
 * sample period at the client, what went in and out of the bottleneck's queue
 * disc (and the Confucius core's own counters), and how fast it simulated.
 *
 *   bottleneck --scheduler=confucius-fixed --rate=20Mbps --rtt=40ms --buffer=1000
 *   bottleneck --scheduler=fq_codel --trace=../shared/traces/x.log
 *   bottleneck --scheduler=confucius --ns3::ConfuciusQueueDisc::Interval=500ms
 */
#include "apps/page-load.h"
#include "apps/rt-flow.h"
#include "apps/rt-tcp-flow.h"
#include "apps/udp-source.h"
#include "model/confucius-queue-disc.h"
#include "model/disc-samples.h"
#include "model/port-filter.h"
#include "model/star-routing.h"
#include "program-parts.h"

#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"
#include "ns3/applications-module.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

using namespace ns3;

namespace
{

const uint16_t RT_PORT = 5000;
const uint16_t WEB_PORT = 8000;
const uint32_t MTU_BYTES = 1514; // the lab's unit for byte limits (schedulers.py)
const uint32_t IP_UDP_HEADERS = 28;
const std::map<std::string, std::string> TCP_TYPES = {
    {"cubic", "ns3::TcpCubic"}, {"bbr", "ns3::TcpBbr"}, {"vegas", "ns3::TcpVegas"}};
// --rt=tcp-CCA: rtflow's TCP mode over one of TCP_TYPES.
const std::string TCP_RT_PREFIX = "tcp-";
const char* FAST_LINK = "1Gbps";
// The lab's least HTB bucket (topology._htb_class); ns-3's timers are never late.
const uint32_t TBF_BURST_BYTES = 2 * MTU_BYTES;

struct Options
{
    std::string scheduler = "confucius";
    std::string rate = "20Mbps";
    std::string trace;
    std::string shaper = "own";
    std::string bottleneck = "router";
    std::string routerRate = "100Mbps";
    Time rtt = MilliSeconds(40);
    uint32_t buffer = 1000;
    Time duration = Seconds(3);
    Time drain = Seconds(2);
    Time sample = MilliSeconds(50);
    std::vector<std::string> rt = {"udp"};
    std::string rtRate = "30Mbps";
    std::string rtStartRate = "5Mbps";
    std::string frameLog;
    std::string rateLog;
    DiscSampling sampling{"", "", MilliSeconds(200), MilliSeconds(20), Seconds(0)};
    std::string web = "udp";
    std::string page;
    std::string session;
    std::string webCca = "cubic";
    std::string tcp = "linux";
    uint32_t webFlows = 9;
    std::string webRate = "2.5Mbps";
    uint64_t webBytes = 0;
    Time webStart = MilliSeconds(500);
    Time pageTail = Seconds(0);
    Time calm = Seconds(0);
    Time late = MilliSeconds(190);
    uint32_t seed = 1;
    bool listSchedulers = false;
};

/* -------------------------------------------------------------- schedulers */

/* Where a scheduler goes: the root, or the only class of the shaper (TBF, the lab's HTB). */
struct Slot
{
    TrafficControlHelper& helper;
    std::optional<std::pair<uint16_t, uint16_t>> parent; // handle and class
};

template <typename... Args>
uint16_t
Place(Slot& slot, const std::string& type, Args&&... args)
{
    if (!slot.parent)
        return slot.helper.SetRootQueueDisc(type, std::forward<Args>(args)...);
    return slot.helper.AddChildQueueDisc(slot.parent->first, slot.parent->second, type,
                                         std::forward<Args>(args)...);
}

/* Label-based schedulers: the class of the RT flow's packets (by its port) and of the rest. */
struct Label
{
    int32_t rt, other;
};
const Label UNLABELLED = {PacketFilter::PF_NO_MATCH, PacketFilter::PF_NO_MATCH};

/* How a lab scheduler stands in ns-3. */
struct LabScheduler
{
    std::string summary;
    bool shapesItself;   // has its own shaper (confucius), as the lab runs it at the root
    Label label;
    std::function<void(Slot&, const Options&, DataRate)> install;
    std::vector<std::pair<std::string, std::string>> attributes = {}; // set on the disc after
};

QueueSizeValue
Packets(uint32_t n)
{
    return QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, n));
}

/* A disc of `type` whose limit is the buffer, with ns-3's defaults otherwise. */
std::function<void(Slot&, const Options&, DataRate)>
Limited(const std::string& type)
{
    return [type](Slot& t, const Options& o, DataRate) { Place(t, type, "MaxSize", Packets(o.buffer)); };
}

/* Its options other than the limit are the entry's attributes; the rest keep the core's defaults. */
void
Confucius(Slot& slot, const Options& o, DataRate)
{
    Place(slot, "ns3::ConfuciusQueueDisc", "Limit", UintegerValue(o.buffer));
}

/* Two classes under DRR, the RT flow's (band 0) at one MTU a round, the rest's at `weight`. */
LabScheduler
WeightedClasses(const std::string& summary, uint32_t weight)
{
    auto install = [](Slot& t, const Options& o, DataRate) {
        uint16_t root = Place(t, "ns3::DeficitRoundRobinQueueDisc");
        for (auto cls : t.helper.AddQueueDiscClasses(root, 2, "ns3::QueueDiscClass"))
            t.helper.AddChildQueueDisc(root, cls, "ns3::FifoQueueDisc", "MaxSize", Packets(o.buffer));
    };
    return {summary, false, {0, 1}, install,
            {{"Quanta", std::to_string(MTU_BYTES) + " " + std::to_string(weight * MTU_BYTES)}}};
}

const std::map<std::string, LabScheduler>&
Schedulers()
{
    static const std::map<std::string, LabScheduler> table = {
        {"pfifo", {"FIFO, drop tail", false, UNLABELLED, Limited("ns3::FifoQueueDisc")}},
        {"fq_codel", {"fair queueing + CoDel", false, UNLABELLED, Limited("ns3::FqCoDelQueueDisc")}},
        // As the lab: fq_codel's scheduler with CoDel's target and interval at 100 s.
        {"fq",
         {"fair queueing without AQM (FqCoDel, CoDel off)", false, UNLABELLED,
          [](Slot& t, const Options& o, DataRate) {
              Place(t, "ns3::FqCoDelQueueDisc", "MaxSize", Packets(o.buffer),
                    "Target", StringValue("100s"), "Interval", StringValue("100s"));
          }}},
        {"codel", {"CoDel AQM, one FIFO", false, UNLABELLED, Limited("ns3::CoDelQueueDisc")}},
        // As the lab's tc defaults: min limit/12, max limit/4, max probability 0.02.
        {"red",
         {"RED AQM (min limit/12, max limit/4, p 0.02)", false, UNLABELLED,
          [](Slot& t, const Options& o, DataRate rate) {
              Place(t, "ns3::RedQueueDisc", "MaxSize", Packets(o.buffer),
                                 "MeanPktSize", UintegerValue(MTU_BYTES),
                                 "MinTh", DoubleValue(o.buffer / 12.0),
                                 "MaxTh", DoubleValue(o.buffer / 4.0),
                                 "LInterm", DoubleValue(50), "LinkBandwidth", DataRateValue(rate),
                                 "LinkDelay", TimeValue(o.rtt / 2));
          }}},
        {"pie", {"PIE AQM, one FIFO", false, UNLABELLED, Limited("ns3::PieQueueDisc")}},
        {"fq_pie", {"fair queueing + PIE", false, UNLABELLED, Limited("ns3::FqPieQueueDisc")}},
        {"hhf", {"heavy-hitter filter (sch_hhf's defaults)", false, UNLABELLED, Limited("ns3::HhfQueueDisc")}},
        // As the lab's: four levels, demoted at 100 kB, 1 MB and 10 MB sent (PiasQueueDisc).
        {"pias", {"shortest job first without labels (PIAS's multi-level feedback queue)", false,
                  UNLABELLED, Limited("ns3::PiasQueueDisc")}},
        // The RT flow's packets to band 0, the rest to band 1; a FIFO of the whole
        // buffer in each band, as the lab's pfifo per class.
        {"prio",
         {"strict priority for the labelled RT flow", false, {0, 1},
          [](Slot& t, const Options& o, DataRate) {
              uint16_t root = Place(t, "ns3::PrioQueueDisc");
              auto classes = t.helper.AddQueueDiscClasses(root, 2, "ns3::QueueDiscClass");
              for (auto cls : classes)
                  t.helper.AddChildQueueDisc(root, cls, "ns3::FifoQueueDisc", "MaxSize",
                                      Packets(o.buffer));
          }}},
        // As the lab's weighted classes: DRR with the RT flow's class 1 at quantum one MTU,
        // class 2 at one MTU times its weight; a FIFO of the whole buffer in each class.
        {"drr-1:1", WeightedClasses("weighted classes RT:rest = 1:1 (DRR), RT labelled", 1)},
        {"drr-1:5", WeightedClasses("weighted classes RT:rest = 1:5 (DRR), RT labelled", 5)},
        {"confucius",
         {"Confucius, mode flow, adaptive pace (default)", true, UNLABELLED,
          Confucius, {{"Mode", "flow"}}}},
        {"confucius-fixed",
         {"Confucius, mode flow, the seeds' fixed schedule and no delay bound", true, UNLABELLED,
          Confucius, {{"Mode", "flow"}, {"Pace", "fixed"}, {"MaxDelay", "0s"}}}},
        {"confucius-class",
         {"Confucius, mode class (seed 000)", true, UNLABELLED,
          Confucius, {{"Mode", "class"}}}},
        // As the lab's label-based schedulers: the RT flow in class 1, the rest in class 2,
        // each class served by its number of flows.
        {"confucius-external",
         {"Confucius, mode external: RT labelled into its own class", true, {1, 2},
          Confucius, {{"Mode", "external"}, {"Classes", "2"}}}},
    };
    return table;
}

/* The lab's schedulers that ns-3 has no counterpart for. */
const std::map<std::string, std::string> NO_COUNTERPART = {
    {"cake", "ns-3 has no CAKE"},
    {"cake-flows", "ns-3 has no CAKE"},
};

/* {"ns3": version, "simulated": {name: summary}, "missing": {name: why}}: what `confucius sim` asks first. */
void
PrintSchedulers()
{
    std::cout << "{\"ns3\":\"" << CONFUCIUS_NS3_VERSION << "\",\"simulated\":";
    PrintJsonTable(std::cout, Schedulers(), [](const LabScheduler& s) { return s.summary; });
    std::cout << ",\"missing\":";
    PrintJsonTable(std::cout, NO_COUNTERPART, [](const std::string& why) { return why; });
    std::cout << "}\n";
}

[[noreturn]] void
Fail(const std::string& why)
{
    std::cerr << "bottleneck: " << why << "\n";
    std::exit(2);
}

const LabScheduler&
FindScheduler(const std::string& name)
{
    auto it = Schedulers().find(name);
    if (it != Schedulers().end())
        return it->second;
    auto missing = NO_COUNTERPART.find(name);
    if (missing != NO_COUNTERPART.end())
        Fail("scheduler " + name + " cannot be simulated: " + missing->second);
    Fail("unknown scheduler '" + name + "': expected one of " + JoinNames(Schedulers()));
}

/* ------------------------------------------------------------------- links */

/* A `time_s Mbps` trace as (seconds from its start, bit/s), as the lab reads it. */
std::vector<std::pair<double, uint64_t>>
ReadTrace(const std::string& path)
{
    std::ifstream in(path);
    if (!in)
        Fail("cannot read trace " + path);
    std::vector<std::pair<double, uint64_t>> points;
    std::string line;
    for (int number = 1; std::getline(in, line); number++)
    {
        std::istringstream words(line);
        std::string first;
        if (!(words >> first) || first[0] == '#')
            continue;
        double t, mbps;
        if (!(std::istringstream(first) >> t) || !(words >> mbps))
            Fail(path + ":" + std::to_string(number) + ": expected 'time_s Mbps', got '" + line +
                 "'");
        if (mbps < 0 || (!points.empty() && t < points.back().first))
            Fail(path + ":" + std::to_string(number) + ": negative rate or time going back");
        points.emplace_back(t, static_cast<uint64_t>(mbps * 1e6));
    }
    if (points.empty())
        Fail(path + ": no 'time_s Mbps' lines");
    const double start = points.front().first;
    for (auto& p : points)
        p.first -= start;
    return points;
}

/* The bottleneck's shaper: the scheduler's own (confucius) or the TBF above it. */
struct Bottleneck
{
    Ptr<QueueDisc> root;
    bool ownShaper;

    void SetRate(uint64_t bps) const
    {
        root->SetAttribute(ownShaper ? "Bandwidth" : "Rate", DataRateValue(DataRate(bps)));
        root->Run(); // a packet held back at the old rate may be due now
    }
};

/*
 * The rate of trace point i. An outage (0 Mbit/s) cannot be a rate: it becomes
 * the rate at which one full packet takes the whole outage (at least the lab's
 * 8 kbit/s floor): what a shaper at the lab's floor rate lets through, without
 * holding a packet past the outage.
 */
uint64_t
TraceRate(const std::vector<std::pair<double, uint64_t>>& points, size_t i)
{
    if (points[i].second >= CFC_BANDWIDTH_MIN)
        return points[i].second;
    if (i + 1 == points.size() || points[i + 1].first <= points[i].first)
        return CFC_BANDWIDTH_MIN;
    const double outage = points[i + 1].first - points[i].first;
    return std::max<uint64_t>(CFC_BANDWIDTH_MIN, static_cast<uint64_t>(MTU_BYTES * 8 / outage));
}

void
FollowTrace(const Bottleneck& b, const std::vector<std::pair<double, uint64_t>>& points)
{
    for (size_t i = 0; i < points.size(); i++)
        Simulator::Schedule(Seconds(points[i].first), &Bottleneck::SetRate, b,
                            TraceRate(points, i));
}

/* ------------------------------------------------------------------ output */

struct Groups
{
    uint64_t rtBytes = 0, webBytes = 0, rtPackets = 0, webPackets = 0;
    uint64_t rtBefore = 0, webBefore = 0;
    std::ostringstream samples;
    bool firstSample = true;
};

void
Sample(Groups* g, Time webAtClient, Time period)
{
    const uint64_t rt = g->rtBytes - g->rtBefore, web = g->webBytes - g->webBefore;
    const double total = double(rt + web);
    g->samples << (g->firstSample ? "" : ",") << "{\"time_ms\":"
               << (Simulator::Now() - webAtClient).GetMilliSeconds()
               << ",\"rt\":" << (total ? rt / total : 0) << ",\"web\":" << (total ? web / total : 0)
               << ",\"rt_bytes\":" << rt << ",\"web_bytes\":" << web << "}";
    g->firstSample = false;
    g->rtBefore = g->rtBytes;
    g->webBefore = g->webBytes;
    Simulator::Schedule(period, &Sample, g, webAtClient, period);
}

/* Bytes as the link carries them: a UDP datagram's payload and its IPv4 and UDP headers. */
void
CountRx(uint64_t* bytes, uint64_t* packets, Ptr<const Packet> p, const Address&)
{
    *bytes += p->GetSize() + IP_UDP_HEADERS;
    (*packets)++;
}

/* The video's packets, which its receiver counts with their headers (TCP: data segments). */
void
CountVideoRx(uint64_t* bytes, uint64_t* packets, uint32_t wireBytes)
{
    *bytes += wireBytes;
    (*packets)++;
}

std::string
DiscJson(Ptr<QueueDisc> disc)
{
    const QueueDisc::Stats& s = disc->GetStats();
    std::ostringstream out;
    out << "{\"received\":" << s.nTotalReceivedPackets
        << ",\"dropped_before_enqueue\":" << s.nTotalDroppedPacketsBeforeEnqueue
        << ",\"enqueued\":" << s.nTotalEnqueuedPackets
        << ",\"requeued\":" << s.nTotalRequeuedPackets
        << ",\"dequeued\":" << s.nTotalDequeuedPackets
        << ",\"dropped_after_dequeue\":" << s.nTotalDroppedPacketsAfterDequeue
        << ",\"marked\":" << s.nTotalMarkedPackets
        << ",\"sent\":" << s.nTotalSentPackets << ",\"in_queue\":" << disc->GetNPackets() << "}";
    return out.str();
}

std::string
CoreJson(Ptr<QueueDisc> disc)
{
    auto confucius = DynamicCast<ConfuciusQueueDisc>(disc);
    if (!confucius)
        return "null";
    const struct cfc_stats st = confucius->CoreStats();
    const struct cfc_config cfg = confucius->CoreConfig();
    static const char* const MODES[] = {"flow", "class", "external"};
    static const char* const PACES[] = {"fixed", "adaptive"};
    static const char* const ISOLATES[] = {"flows", "dual-srchost", "dual-dsthost", "triple-isolate"};
    std::ostringstream out;
    out << "{\"mode\":\"" << MODES[cfg.mode] << "\",\"pace\":\"" << PACES[cfg.pace]
        << "\",\"isolate\":\"" << ISOLATES[cfg.isolate]
        << "\",\"bandwidth_bps\":" << cfg.bandwidth << ",\"limit\":" << cfg.limit
        << ",\"maxdelay_ns\":" << cfg.maxdelay_ns << ",\"delay_drops\":" << st.cnt.delay_drops
        << ",\"aqm_target_ns\":" << cfg.aqm_target_ns << ",\"aqm_interval_ns\":" << cfg.aqm_interval_ns
        << ",\"aqm_settle_ns\":" << cfg.aqm_settle_ns
        << ",\"ecn\":" << (cfg.ecn ? "true" : "false") << ",\"aqm_drops\":" << st.cnt.aqm_drops
        << ",\"ecn_marks\":" << st.cnt.ecn_marks
        << ",\"moves\":" << st.cnt.moves << ",\"enqueued\":" << st.cnt.enqueued_pkts << ",\"dequeued\":" << st.cnt.dequeued_pkts
        << ",\"dropped\":" << st.cnt.dropped_pkts << ",\"overlimits\":" << st.cnt.overlimits
        << ",\"ticks\":" << st.cnt.ticks << ",\"holds\":" << st.cnt.holds
        << ",\"qlen\":" << st.qlen << "}";
    return out.str();
}

/* --------------------------------------------------------------- topology */

bool
IsVideoController(const std::string& rt)
{
    const bool tcp = rt.rfind(TCP_RT_PREFIX, 0) == 0 && TCP_TYPES.count(rt.substr(TCP_RT_PREFIX.size()));
    return tcp || rt == "gcc" || rt == "copa" || rt == "fixed";
}

/* --rt's flows: "udp" alone, or one video controller per RT flow. */
std::vector<std::string>
RtControllers(const std::string& text)
{
    if (text == "udp")
        return {text};
    std::vector<std::string> controllers;
    std::istringstream in(text);
    for (std::string controller; std::getline(in, controller, ',');)
    {
        if (!IsVideoController(controller))
            Fail("rt must be udp, or videos' controllers (gcc, copa, fixed, tcp-bbr, tcp-cubic, tcp-vegas) "
                 "separated by commas, got '" + text + "'");
        controllers.push_back(controller);
    }
    if (controllers.empty() || text.back() == ',')
        Fail("rt names no flow: '" + text + "'");
    return controllers;
}

Options
ParseOptions(int argc, char** argv)
{
    Options o;
    CommandLine cmd(__FILE__);
    cmd.Usage("Seed 000 Fig. 2: servers - router (scheduler under test) - client.\n"
              "Queue disc options: --ns3::ConfuciusQueueDisc::ATTRIBUTE=VALUE.");
    cmd.AddValue("scheduler", "the lab's scheduler name (--list-schedulers)", o.scheduler);
    cmd.AddValue("rate", "bottleneck rate (constant)", o.rate);
    cmd.AddValue("trace", "bottleneck rate from a 'time_s Mbps' file instead", o.trace);
    cmd.AddValue("shaper", "own: confucius shapes itself, the others under TBF (as the lab with "
                           "HTB); tbf: every scheduler under TBF", o.shaper);
    cmd.AddValue("bottleneck", "where the link is narrowest (seed 000 Fig. 28): router (the scheduler's "
                               "link, link B), before (between the servers and the router, link A) or after "
                               "(between the router and the client, link C); elsewhere a FIFO of buffer packets "
                               "at rate, and the router's link at router-rate", o.bottleneck);
    cmd.AddValue("router-rate", "the router's link (its scheduler's rate) when the bottleneck is elsewhere",
                 o.routerRate);
    cmd.AddValue("rtt", "round-trip propagation delay", o.rtt);
    cmd.AddValue("buffer", "the scheduler's limit, in packets (as the lab's link.buffer)", o.buffer);
    cmd.AddValue("duration", "how long the sources send", o.duration);
    cmd.AddValue("drain", "simulated time after the sources stop", o.drain);
    cmd.AddValue("sample", "share sampling period", o.sample);
    std::string rt = "udp";
    cmd.AddValue("rt", "the RT flow: udp (constant rate), or rtflow's videos, comma-separated, each "
                       "with its controller: gcc, copa, fixed, or over TCP: tcp-bbr, tcp-cubic, tcp-vegas "
                       "(the n-th on port 5000 + n, its logs named frames-n.csv after the first's)", rt);
    cmd.AddValue("rt-rate", "the RT flow's UDP rate (0 = no RT flow)", o.rtRate);
    cmd.AddValue("rt-start-rate", "the video's first rate (gcc, copa, tcp-*; fixed sends at it)",
                 o.rtStartRate);
    cmd.AddValue("frame-log", "the video receiver's frame log (rtflow's CSV format)", o.frameLog);
    cmd.AddValue("rate-log", "the video sender's rate log (rtflow's CSV format)", o.rateLog);
    cmd.AddValue("qdisc-log", "the bottleneck's queue discs every stats-interval, as `tc -s -j qdisc "
                              "show` prints them (JSON lines, the lab's qdisc.jsonl)", o.sampling.qdiscLog);
    cmd.AddValue("flow-log", "Confucius's flows as its class dump gives them (JSON lines, the lab's "
                             "flows.jsonl): every stats-interval, from flow-from every flow-interval",
                 o.sampling.flowLog);
    cmd.AddValue("stats-interval", "time between samples of the queue discs", o.sampling.statsInterval);
    cmd.AddValue("flow-interval", "time between samples of Confucius's flows from flow-from on",
                 o.sampling.flowInterval);
    cmd.AddValue("flow-from", "when Confucius's flows are sampled every flow-interval from", o.sampling.flowFrom);
    cmd.AddValue("web", "the web flows: udp (constant rate) or tcp (bulk transfers of web-bytes)",
                 o.web);
    cmd.AddValue("page", "a page to load from web-start instead of web flows: one object per line, "
                         "'id domain size parent|-' (confucius sim writes it from a page file)",
                 o.page);
    cmd.AddValue("session", "pages of one session instead of --page (the papers' continuous sessions): "
                            "a file of 'START_S PAGE_FILE' lines, each page loaded from its start; "
                            "the last one's tail ends the run", o.session);
    cmd.AddValue("page-tail", "with --page or --session: end the run this long after the (last) page's last byte "
                              "(0 = run for duration and drain)", o.pageTail);
    cmd.AddValue("calm", "with --page-tail and a video: end the run drain after the video's frames "
                         "of the last CALM, all after the page's last byte, were on time (0 = off)",
                 o.calm);
    cmd.AddValue("late", "with --calm: a frame later than this is not on time (the stall threshold)",
                 o.late);
    cmd.AddValue("web-cca", "the web flows' TCP congestion control: cubic, bbr, vegas", o.webCca);
    cmd.AddValue("tcp", "every TCP connection's defaults: linux (Linux's where ns-3's differ) or ns3 "
                        "(ns-3's own, with full-sized segments)", o.tcp);
    cmd.AddValue("web-flows", "web flows", o.webFlows);
    cmd.AddValue("web-rate", "each web flow's UDP rate", o.webRate);
    cmd.AddValue("web-bytes", "each web flow's bytes (0 = until the end)", o.webBytes);
    cmd.AddValue("web-start", "when the web flows start", o.webStart);
    cmd.AddValue("seed", "ns-3 run number", o.seed);
    cmd.AddValue("list-schedulers", "print the lab's schedulers this program simulates and those it "
                                    "cannot (with why) as JSON, and exit", o.listSchedulers);
    cmd.Parse(argc, argv);
    o.rt = RtControllers(rt);
    if (o.shaper != "own" && o.shaper != "tbf")
        Fail("shaper must be own or tbf, got '" + o.shaper + "'");
    if (o.bottleneck != "router" && o.bottleneck != "before" && o.bottleneck != "after")
        Fail("bottleneck must be router, before or after, got '" + o.bottleneck + "'");
    if (o.bottleneck != "router" && !o.trace.empty())
        Fail("a trace sets the router's link: the bottleneck must be the router's with --trace");
    if (o.web != "udp" && o.web != "tcp")
        Fail("web must be udp or tcp, got '" + o.web + "'");
    if (!TCP_TYPES.count(o.webCca))
        Fail("web-cca must be cubic, bbr or vegas, got '" + o.webCca + "'");
    if (o.tcp != "linux" && o.tcp != "ns3")
        Fail("tcp must be linux or ns3, got '" + o.tcp + "'");
    if (o.buffer < 1)
        Fail("the buffer must be at least 1 packet");
    if (!o.page.empty() && !o.session.empty())
        Fail("give one page (--page) or one session (--session), not both");
    // Every TCP connection (web flows, page loads; the TCP video sets its own) runs this CCA
    // with full-sized segments.
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue(TCP_TYPES.at(o.webCca)));
    if (o.tcp == "linux")
        LinuxTcpDefaults();
    else
        Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(TCP_SEGMENT));
    if (!o.rtt.IsStrictlyPositive() || !o.duration.IsStrictlyPositive() ||
        !o.sample.IsStrictlyPositive() || !o.sampling.statsInterval.IsStrictlyPositive() ||
        !o.sampling.flowInterval.IsStrictlyPositive())
        Fail("rtt, duration, sample, stats-interval and flow-interval must be positive");
    return o;
}

/* An unmanaged router's queue (seed 000 Fig. 28: "they adopt FIFO"): a tail-drop FIFO of
 * `buffer` packets on the narrow link's sending device, installed before its address so
 * that ns-3 does not give it its default FQ-CoDel. */
void
Unmanaged(Ptr<NetDevice> device, uint32_t buffer)
{
    TrafficControlHelper fifo;
    fifo.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize",
                          QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, buffer)));
    fifo.Install(device);
}

Ptr<ConfuciusUdpSource>
AddSource(Ptr<Node> server, Ipv4Address to, uint16_t port, const std::string& rate,
          uint64_t bytes, uint8_t priority, Time start, Time stop)
{
    auto source = CreateObject<ConfuciusUdpSource>();
    source->SetAttribute("Remote", AddressValue(InetSocketAddress(to, port)));
    source->SetAttribute("DataRate", DataRateValue(DataRate(rate)));
    source->SetAttribute("MaxBytes", UintegerValue(bytes));
    source->SetAttribute("Priority", UintegerValue(priority));
    server->AddApplication(source);
    source->SetStartTime(start);
    source->SetStopTime(stop);
    return source;
}

uint64_t
TotalSent(const std::vector<Ptr<ConfuciusUdpSource>>& sources)
{
    uint64_t n = 0;
    for (const auto& s : sources)
        n += s->SentPackets();
    return n;
}

/*
 * The web flows: constant-rate UDP, or TCP transfers of web-bytes each (a page's
 * objects, one connection each), whose completion times are recorded.
 */
struct WebFlows
{
    std::vector<Ptr<ConfuciusUdpSource>> udp;
    uint64_t bytesEach = 0;
    std::map<Address, uint64_t> received; // by the sender's address and port
    std::vector<Time> done;

    std::string DoneJson(Time start) const
    {
        std::ostringstream out;
        out << "[";
        for (size_t i = 0; i < done.size(); i++)
            out << (i ? "," : "") << (done[i] - start).GetMilliSeconds();
        out << "]";
        return out.str();
    }
};

void
CountTcpRx(WebFlows* web, Groups* groups, Ptr<const Packet> p, const Address& from)
{
    groups->webBytes += p->GetSize();
    groups->webPackets++;
    uint64_t& got = web->received[from];
    const bool wasShort = got < web->bytesEach;
    got += p->GetSize();
    if (wasShort && got >= web->bytesEach)
        web->done.push_back(Simulator::Now());
}

WebFlows&
AddWebFlows(const Options& o, Ptr<Node> server, Ptr<Node> client, Ipv4Address to, Groups* groups)
{
    static WebFlows web; // the sink's callback holds it for the whole simulation
    web.bytesEach = o.webBytes;
    if (o.web == "udp")
    {
        PacketSinkHelper sink("ns3::UdpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), WEB_PORT));
        sink.Install(client).Get(0)->TraceConnectWithoutContext(
            "Rx", MakeBoundCallback(&CountRx, &groups->webBytes, &groups->webPackets));
        for (uint32_t i = 0; i < o.webFlows; i++)
            web.udp.push_back(AddSource(server, to, WEB_PORT, o.webRate, o.webBytes, 0, o.webStart,
                                        o.duration));
        return web;
    }
    PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), WEB_PORT));
    sink.Install(client).Get(0)->TraceConnectWithoutContext(
        "Rx", MakeBoundCallback(&CountTcpRx, &web, groups));
    BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(to, WEB_PORT));
    bulk.SetAttribute("MaxBytes", UintegerValue(o.webBytes));
    bulk.SetAttribute("SendSize", UintegerValue(TCP_SEGMENT));
    for (uint32_t i = 0; i < o.webFlows; i++)
    {
        ApplicationContainer app = bulk.Install(server);
        app.Start(o.webStart);
        app.Stop(o.duration);
    }
    return web;
}

Options
NoWebFlows(Options o)
{
    o.webFlows = 0;
    return o;
}

/* A page to load and when: one line of --session, or --page from web-start. */
struct PageStart
{
    Time start;
    std::string path;
};

/* --session's lines, "START_S PAGE_FILE", in order of their starts. */
std::vector<PageStart>
ReadSession(const std::string& path)
{
    std::ifstream in(path);
    if (!in)
        Fail("cannot read the session " + path);
    std::vector<PageStart> pages;
    std::string line;
    while (std::getline(in, line))
    {
        std::istringstream fields(line);
        double start;
        std::string page, rest;
        if (!(fields >> start >> page) || fields >> rest || start < 0)
            Fail(path + ": a line must be 'START_S PAGE_FILE', got '" + line + "'");
        if (!pages.empty() && Seconds(start) <= pages.back().start)
            Fail(path + ": the pages must start one after another, got '" + line + "'");
        pages.push_back({Seconds(start), page});
    }
    if (pages.empty())
        Fail(path + ": a session needs at least one page");
    return pages;
}

/* The pages the run loads: --session's, or --page's one, or none. */
std::vector<PageStart>
PagesToLoad(const Options& o)
{
    if (!o.session.empty())
        return ReadSession(o.session);
    if (!o.page.empty())
        return {{o.webStart, o.page}};
    return {};
}

/*
 * A page's servers, one node per domain with its own address behind the router, or
 * behind the node before it (as the lab gives each domain its own address), and the
 * loader on the client. `domains` counts the servers of the pages before it (each page
 * of a session has servers of its own).
 * Called before the routing tables are built.
 */
Ptr<PageLoader>
AddPage(const PageStart& page, Ptr<Node> serverSide, Ptr<Node> client, PointToPointHelper& access,
        uint32_t& domains)
{
    const std::vector<WebObject> objects = ReadPage(page.path);
    std::vector<Ipv4Address> servers;
    InternetStackHelper stack;
    Ipv4AddressHelper addr;
    for (size_t i = 0; i < PageDomains(objects).size(); i++, domains++)
    {
        if (domains >= 250 * 256)
            Fail("more than 64000 domains in one run");
        Ptr<Node> server = CreateObject<Node>();
        stack.Install(server);
        NetDeviceContainer link = access.Install(server, serverSide);
        std::ostringstream base;
        base << "10." << 2 + domains / 256 << "." << domains % 256 << ".0";
        addr.SetBase(base.str().c_str(), "255.255.255.0");
        servers.push_back(addr.Assign(link).GetAddress(0));
        auto app = CreateObject<WebObjectServer>();
        server->AddApplication(app);
    }
    auto loader = CreateObject<PageLoader>();
    loader->SetPage(objects, servers);
    client->AddApplication(loader);
    loader->SetStartTime(page.start);
    return loader;
}

std::string
PageJson(Ptr<PageLoader> page, const std::string& path)
{
    if (!page)
        return "null";
    std::ostringstream out;
    const Time plt = page->PageLoadTime();
    out << "{\"plt_s\":";
    if (plt.IsNegative())
        out << "null";
    else
        out << plt.GetSeconds();
    out << ",\"objects_done\":" << page->ObjectsDone() << ",\"connections\":" << page->Connections()
        << ",\"report\":";
    page->WriteReport(out, path);
    out << "}";
    return out.str();
}

/* A session's pages in order (null without --session), each as PageJson with its start. */
std::string
SessionJson(const std::vector<Ptr<PageLoader>>& pages, const std::vector<PageStart>& starts)
{
    if (pages.empty())
        return "null";
    std::ostringstream out;
    out << "[";
    for (size_t i = 0; i < pages.size(); i++)
        out << (i ? "," : "") << "{\"start_s\":" << starts[i].start.GetSeconds()
            << ",\"load\":" << PageJson(pages[i], starts[i].path) << "}";
    out << "]";
    return out.str();
}

/* After the page: frames captured before `late` ago have arrived in time or are late. */
struct CalmWatch
{
    const std::vector<Ptr<RtVideoReceiver>>* videos;
    Time loaded, calm, late, drain;
};

void
WatchCalm(CalmWatch w)
{
    const Time decided = Simulator::Now() - w.late;
    const auto onTime = [&](const Ptr<RtVideoReceiver>& video) {
        return video->OnTimeBetween((decided - w.calm).GetNanoSeconds(), decided.GetNanoSeconds(),
                                    w.late.GetNanoSeconds());
    };
    if (decided - w.calm >= w.loaded && std::all_of(w.videos->begin(), w.videos->end(), onTime))
    {
        Simulator::Stop(w.drain);
        return;
    }
    Simulator::Schedule(MilliSeconds(50), &WatchCalm, w);
}

/* The page's tail, as the lab's: at most page-tail, or until every video is calm again. */
void
PageLoaded(const Options* o, const std::vector<Ptr<RtVideoReceiver>>* videos)
{
    Simulator::Stop(o->pageTail);
    if (!videos->empty() && o->calm.IsStrictlyPositive())
        WatchCalm({videos, Simulator::Now(), o->calm, o->late, o->drain});
}

/* The RT flows: one constant-rate UDP flow, or rtflow's videos, each with its controller. */
struct RtFlows
{
    Ptr<ConfuciusUdpSource> udp;
    std::vector<Ptr<RtVideoSender>> videos;
    std::vector<Ptr<RtVideoReceiver>> receivers;

    uint64_t Sent() const
    {
        uint64_t sent = udp ? udp->SentPackets() : 0;
        for (const auto& video : videos)
            sent += video->SentPackets();
        return sent;
    }

    /* Each video's frames: captured, still waiting in the sender at the end, its last target. */
    std::string VideosJson() const
    {
        std::ostringstream out;
        out << "[";
        for (size_t i = 0; i < videos.size(); i++)
            out << (i ? "," : "") << "{\"frames\":" << videos[i]->FramesCaptured()
                << ",\"frames_waiting\":" << videos[i]->FramesWaiting()
                << ",\"target_bps\":" << videos[i]->TargetBps() << "}";
        out << "]";
        return out.str();
    }

    std::string PortsJson() const
    {
        std::ostringstream out;
        out << "[";
        const size_t n = udp ? 1 : videos.size();
        for (size_t i = 0; i < n; i++)
            out << (i ? "," : "") << RT_PORT + i;
        out << "]";
        return out.str();
    }
};

/* rtflow's video: over UDP with one of its controllers, or over TCP (tcp-CCA). */
std::pair<Ptr<RtVideoSender>, Ptr<RtVideoReceiver>>
VideoApps(const std::string& rt)
{
    if (rt.rfind(TCP_RT_PREFIX, 0) == 0)
    {
        auto sender = CreateObject<RtTcpFlowSender>();
        sender->SetAttribute("CongestionControl",
                             TypeIdValue(TypeId::LookupByName(TCP_TYPES.at(rt.substr(TCP_RT_PREFIX.size())))));
        return {sender, CreateObject<RtTcpFlowReceiver>()};
    }
    auto sender = CreateObject<RtFlowSender>();
    sender->SetAttribute("Controller", StringValue(rt));
    return {sender, CreateObject<RtFlowReceiver>()};
}

/* The log of the video numbered `i`: the path given for the first, "-i" before the
 * extension for the others (frames.csv, frames-1.csv, ...). */
std::string
NumberedLog(const std::string& path, size_t i)
{
    if (path.empty() || i == 0)
        return path;
    const size_t dot = path.rfind('.'), slash = path.rfind('/');
    const size_t at = dot == std::string::npos || (slash != std::string::npos && dot < slash) ? path.size() : dot;
    return path.substr(0, at) + "-" + std::to_string(i) + path.substr(at);
}

void
AddVideo(RtFlows& flows, const Options& o, const std::string& controller, Ptr<Node> server, Ptr<Node> client,
         Ipv4Address to, Groups* groups)
{
    const size_t i = flows.videos.size();
    const uint16_t port = RT_PORT + i;
    auto [sender, receiver] = VideoApps(controller);
    sender->SetAttribute("Remote", AddressValue(InetSocketAddress(to, port)));
    sender->SetAttribute("StartRate", DataRateValue(DataRate(o.rtStartRate)));
    sender->SetAttribute("RateLog", StringValue(NumberedLog(o.rateLog, i)));
    server->AddApplication(sender);
    sender->SetStartTime(Seconds(0));
    sender->SetStopTime(o.duration);
    receiver->SetAttribute("Port", UintegerValue(port));
    receiver->SetAttribute("FrameLog", StringValue(NumberedLog(o.frameLog, i)));
    client->AddApplication(receiver);
    receiver->SetStopTime(o.duration + o.drain - NanoSeconds(1)); // before the simulation's end
    receiver->TraceConnectWithoutContext(
        "Rx", MakeBoundCallback(&CountVideoRx, &groups->rtBytes, &groups->rtPackets));
    flows.videos.push_back(sender);
    flows.receivers.push_back(receiver);
}

RtFlows
AddRtFlows(const Options& o, Ptr<Node> server, Ptr<Node> client, Ipv4Address to, Groups* groups)
{
    RtFlows flows;
    if (o.rt.front() != "udp")
    {
        for (const auto& controller : o.rt)
            AddVideo(flows, o, controller, server, client, to, groups);
        return flows;
    }
    if (DataRate(o.rtRate).GetBitRate() == 0)
        return flows;
    flows.udp = AddSource(server, to, RT_PORT, o.rtRate, 0, 0, Seconds(0), o.duration);
    PacketSinkHelper("ns3::UdpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), RT_PORT))
        .Install(client)
        .Get(0)
        ->TraceConnectWithoutContext("Rx", MakeBoundCallback(&CountRx, &groups->rtBytes, &groups->rtPackets));
    return flows;
}

} // namespace

int
main(int argc, char** argv)
{
    Options o = ParseOptions(argc, argv);
    if (o.listSchedulers)
    {
        PrintSchedulers();
        return 0;
    }
    const LabScheduler& sched = FindScheduler(o.scheduler);
    RngSeedManager::SetRun(o.seed);
    const auto trace = o.trace.empty() ? std::vector<std::pair<double, uint64_t>>{}
                                       : ReadTrace(o.trace);
    const DataRate narrowRate = trace.empty() ? DataRate(o.rate) : DataRate(TraceRate(trace, 0));
    const bool elsewhere = o.bottleneck != "router";
    // The rate the scheduler's link sends at: the bottleneck's, or the router's own.
    const DataRate linkRate = elsewhere ? DataRate(o.routerRate) : narrowRate;
    if (elsewhere && linkRate.GetBitRate() <= narrowRate.GetBitRate())
        Fail("router-rate must be above rate, or the router's link is the bottleneck");
    const bool ownShaper = sched.shapesItself && o.shaper == "own";

    // Nodes: 0 RT server, 1 web server, 2 router, 3 client.
    NodeContainer nodes;
    nodes.Create(4);
    Ptr<Node> rtServer = nodes.Get(0), webServer = nodes.Get(1), router = nodes.Get(2),
              client = nodes.Get(3);
    InternetStackHelper stack;
    stack.Install(nodes);

    // The queue forms in the scheduler and the shaper above it sets the rate, as in the lab.
    PointToPointHelper access = AccessLinks(FAST_LINK);

    // With the bottleneck elsewhere, an unmanaged router (a FIFO at the narrow rate) stands
    // between the servers and the router (before), or between the router and the client (after).
    Ptr<Node> serverSide = router, clientSide = client;
    if (o.bottleneck == "before")
        serverSide = CreateObject<Node>();
    if (o.bottleneck == "after")
        clientSide = CreateObject<Node>();
    if (elsewhere)
        stack.Install(o.bottleneck == "before" ? serverSide : clientSide);

    NetDeviceContainer rtLink = access.Install(rtServer, serverSide);
    NetDeviceContainer webLink = access.Install(webServer, serverSide);
    NetDeviceContainer bottleneck = BottleneckLink(FAST_LINK, o.rtt).Install(router, clientSide);
    NetDeviceContainer narrow;
    // The narrow link when the bottleneck is not the router's: its rate, no delay (the RTT
    // is the router's link's), its queue in the unmanaged FIFO above its device.
    if (o.bottleneck == "before")
        narrow = OnePacketLink(narrowRate, Seconds(0)).Install(serverSide, router);
    if (o.bottleneck == "after")
        narrow = OnePacketLink(narrowRate, Seconds(0)).Install(clientSide, client);
    const std::vector<PageStart> toLoad = PagesToLoad(o);
    std::vector<Ptr<PageLoader>> pages;
    uint32_t domains = 0;
    for (const PageStart& page : toLoad)
        pages.push_back(AddPage(page, serverSide, client, access, domains));

    TrafficControlHelper tch;
    Slot slot{tch, std::nullopt};
    if (!ownShaper)
    {
        uint16_t tbf = tch.SetRootQueueDisc("ns3::TbfQueueDisc", "Rate", DataRateValue(linkRate),
                                            "Burst", UintegerValue(TBF_BURST_BYTES));
        slot.parent = {tbf, tch.AddQueueDiscClasses(tbf, 1, "ns3::QueueDiscClass").front()};
    }
    sched.install(slot, o, linkRate);
    Ptr<QueueDisc> root = tch.Install(bottleneck.Get(0)).Get(0);
    Ptr<QueueDisc> disc = ownShaper ? root : root->GetQueueDiscClass(0)->GetQueueDisc();
    // Before the simulation starts, when the disc reads them (options given on the
    // command line as --ns3::ConfuciusQueueDisc::X=V are its defaults, these override).
    for (const auto& [name, value] : sched.attributes)
        disc->SetAttribute(name, StringValue(value));
    // Linux's fq_codel and fq_pie quantum, one MTU with its Ethernet header (ns-3 takes
    // the device's MTU when the disc is the root and has none under TBF).
    if (auto fq = DynamicCast<FqCoDelQueueDisc>(disc))
        fq->SetQuantum(MTU_BYTES);
    if (auto fq = DynamicCast<FqPieQueueDisc>(disc))
        fq->SetQuantum(MTU_BYTES);
    if (sched.label.rt != PacketFilter::PF_NO_MATCH)
    {
        auto filter = CreateObject<ConfuciusPortFilter>();
        for (uint16_t i = 0; i < o.rt.size(); i++)
            filter->AddPort(RT_PORT + i);
        filter->SetResults(sched.label.rt, sched.label.other);
        disc->AddPacketFilter(filter);
    }
    if (sched.shapesItself)
        disc->SetAttribute("Bandwidth", DataRateValue(ownShaper ? linkRate : DataRate(0)));

    Ipv4AddressHelper addr;
    addr.SetBase("10.1.1.0", "255.255.255.0");
    addr.Assign(rtLink);
    addr.SetBase("10.1.2.0", "255.255.255.0");
    addr.Assign(webLink);
    addr.SetBase("10.1.3.0", "255.255.255.0");
    Ipv4Address clientAddr = addr.Assign(bottleneck).GetAddress(1);
    if (elsewhere)
    {
        Unmanaged(narrow.Get(0), o.buffer);
        addr.SetBase("10.1.4.0", "255.255.255.0");
        const Ipv4InterfaceContainer ends = addr.Assign(narrow);
        if (o.bottleneck == "after")
            clientAddr = ends.GetAddress(1);
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();
    ConfuciusStarRouting::Install(NodeContainer::GetGlobal());

    Bottleneck b{root, ownShaper};
    if (!trace.empty())
        FollowTrace(b, trace);

    Groups groups;
    WebFlows& web = AddWebFlows(toLoad.empty() ? o : NoWebFlows(o), webServer, client, clientAddr,
                                &groups);
    const RtFlows rt = AddRtFlows(o, rtServer, client, clientAddr, &groups);

    // Samples end on a grid anchored where the web flows reach the client, as the
    // core's share trace anchors its own at their arrival.
    const Time webAtClient = (toLoad.empty() ? o.webStart : toLoad.front().start) + o.rtt / 2;
    Time first = webAtClient;
    while (first > o.sample)
        first -= o.sample;
    Simulator::Schedule(first, &Sample, &groups, webAtClient, o.sample);
    DiscSampler sampler(root, disc, o.sampling);

    Simulator::Stop(o.duration + o.drain);
    if (!pages.empty() && o.pageTail.IsStrictlyPositive())
        pages.back()->SetLoadedCallback(MakeBoundCallback(&PageLoaded, &o, &rt.receivers));
    const auto [wall, cpu] = RunTimed();
    const Time end = Simulator::Now();

    std::cout << "{\"scheduler\":\"" << o.scheduler << "\",\"summary\":\"" << sched.summary
              << "\",\"ns3\":\"" << CONFUCIUS_NS3_VERSION
              << "\",\"seed\":" << o.seed << ",\"simulated_s\":" << end.GetSeconds()
              << ",\"wall_s\":" << wall << ",\"cpu_s\":" << cpu
              << ",\"speed\":" << end.GetSeconds() / wall << ",\"cpu_speed\":" << end.GetSeconds() / cpu
              << ",\"rt_ports\":" << rt.PortsJson()
              << ",\"sent\":{\"rt\":" << rt.Sent() << ",\"web\":" << TotalSent(web.udp)
              << "},\"received\":{\"rt\":" << groups.rtPackets << ",\"web\":" << groups.webPackets
              << "},\"web_flows\":" << (toLoad.empty() ? o.webFlows : 0)
              << ",\"web_done_ms\":" << web.DoneJson(o.webStart) << ",\"videos\":" << rt.VideosJson() << ",\"page\":" << PageJson(o.page.empty() ? nullptr : pages.front(), o.page)
              << ",\"session\":" << SessionJson(o.session.empty() ? std::vector<Ptr<PageLoader>>{} : pages, toLoad) << ",\"disc\":" << DiscJson(disc) << ",\"core\":" << CoreJson(disc)
              << ",\"samples\":[" << groups.samples.str() << "]}\n";
    Simulator::Destroy();
    return 0;
}
