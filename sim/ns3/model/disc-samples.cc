// SPDX-License-Identifier: MIT
#include "disc-samples.h"

#include "ns3/abort.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <limits>
#include <map>
#include <sstream>

namespace ns3
{

namespace
{

/* tc's name for an ns-3 disc: ns3::FqCoDelQueueDisc -> fq_codel. */
std::string
Kind(Ptr<QueueDisc> disc)
{
    static const std::map<std::string, std::string> KINDS = {
        {"ns3::FifoQueueDisc", "pfifo"},   {"ns3::FqCoDelQueueDisc", "fq_codel"},
        {"ns3::CoDelQueueDisc", "codel"},  {"ns3::RedQueueDisc", "red"},
        {"ns3::PieQueueDisc", "pie"},      {"ns3::FqPieQueueDisc", "fq_pie"},
        {"ns3::PrioQueueDisc", "prio"},    {"ns3::TbfQueueDisc", "tbf"},
        {"ns3::ConfuciusQueueDisc", "confucius"}};
    const std::string name = disc->GetInstanceTypeId().GetName();
    auto it = KINDS.find(name);
    return it != KINDS.end() ? it->second : name;
}

/* tc/q_confucius.c's statistics (print_qdisc_xstats), from the core as the kernel fills them. */
void
ConfuciusStats(std::ostream& out, Ptr<ConfuciusQueueDisc> disc)
{
    const struct cfc_stats st = disc->CoreStats();
    const struct cfc_config cfg = disc->CoreConfig();
    out << ",\"overlimits\":" << st.cnt.overlimits << ",\"new_flows\":" << st.new_flows << ",\"old_flows\":" << st.old_flows
        << ",\"new_weight\":" << double(st.new_sum) / CFC_W_ONE << ",\"ticks\":" << st.cnt.ticks
        << ",\"holds\":" << st.cnt.holds << ",\"delay_drops\":" << st.cnt.delay_drops
        << ",\"aqm_drops\":" << st.cnt.aqm_drops << ",\"ecn_marks\":" << st.cnt.ecn_marks
        << ",\"moves\":" << st.cnt.moves
        << ",\"max_sojourn\":" << (uint64_t(st.cnt.max_sojourn) << 10) / 1000
        << ",\"memory_used\":" << st.mem << ",\"enqueued_packets\":" << st.cnt.enqueued_pkts
        << ",\"enqueued_bytes\":" << st.cnt.enqueued_bytes << ",\"sent_packets\":" << st.cnt.dequeued_pkts
        << ",\"sent_bytes\":" << st.cnt.dequeued_bytes << ",\"dropped_packets\":" << st.cnt.dropped_pkts
        << ",\"dropped_bytes\":" << st.cnt.dropped_bytes << ",\"backlog_packets\":" << st.qlen
        << ",\"backlog_bytes\":" << st.backlog << ",\"classes\":[";
    const uint32_t classes = cfg.mode == CFC_MODE_FLOW ? 1 : cfg.classes;
    for (uint32_t i = 0; i < classes; i++)
        out << (i ? "," : "") << "{\"class\":" << i + 1 << ",\"flows\":" << st.class_flows[i]
            << ",\"packets\":" << st.class_qlen[i] << ",\"bytes\":" << st.class_backlog[i] << "}";
    out << "]";
}

/* One disc as `tc -s -j qdisc show` prints it; then its classes' discs, numbered on. */
void
Disc(std::ostream& out, Ptr<QueueDisc> disc, uint32_t& handles, const std::string& parent)
{
    const uint32_t handle = handles++;
    const QueueDisc::Stats& s = disc->GetStats();
    out << (handle > 1 ? "," : "") << "{\"kind\":\"" << Kind(disc) << "\",\"handle\":\"" << handle << ":\",";
    if (parent.empty())
        out << "\"root\":true";
    else
        out << "\"parent\":\"" << parent << "\"";
    out << ",\"bytes\":" << s.nTotalSentBytes << ",\"packets\":" << s.nTotalSentPackets
        << ",\"drops\":" << s.nTotalDroppedPackets << ",\"requeues\":" << s.nTotalRequeuedPackets
        << ",\"backlog\":" << disc->GetNBytes() << ",\"qlen\":" << disc->GetNPackets();
    if (auto confucius = DynamicCast<ConfuciusQueueDisc>(disc))
        ConfuciusStats(out, confucius);
    out << "}";
    // FQ-CoDel's and FQ-PIE's classes are their flows, which tc lists as classes, not qdiscs.
    if (Kind(disc).rfind("fq_", 0) == 0)
        return;
    for (size_t i = 0; i < disc->GetNQueueDiscClasses(); i++)
        Disc(out, disc->GetQueueDiscClass(i)->GetQueueDisc(), handles,
             std::to_string(handle) + ":" + std::to_string(i + 1));
}

/* lab/rtnl.py flow_xstats's keys; the ports are zero without a head packet, as the kernel's. */
void
FlowJson(std::ostream& out, const ConfuciusQueueDisc::Flow& f)
{
    const struct cfc_flow_stats& s = f.stats;
    const TransportPorts ports = f.head.value_or(TransportPorts{0, 0, 0});
    out << "{\"bucket\":" << f.bucket << ",\"state\":\"" << (s.state == CFC_FLOW_NEW ? "new" : "old")
        << "\",\"class\":" << unsigned(s.queue) << ",\"weight\":" << double(s.weight) / CFC_W_ONE
        << ",\"packets\":" << s.qlen << ",\"bytes\":" << s.backlog << ",\"deficit\":" << s.deficit
        << ",\"sojourn_us\":"
        << std::min<uint64_t>(s.sojourn_ns / 1000, std::numeric_limits<uint32_t>::max())
        << ",\"sport\":" << ports.sport << ",\"dport\":" << ports.dport << ",\"ip_proto\":" << unsigned(ports.proto)
        << "}";
}

std::ofstream
Open(const std::string& path)
{
    std::ofstream out(path);
    NS_ABORT_MSG_UNLESS(out, "DiscSampler: cannot write " << path);
    out.precision(9);
    return out;
}

} // namespace

DiscSampler::DiscSampler(Ptr<QueueDisc> root, Ptr<QueueDisc> flows, const DiscSampling& how)
    : m_root(root),
      m_confucius(DynamicCast<ConfuciusQueueDisc>(flows)),
      m_how(how)
{
    NS_ABORT_MSG_UNLESS(how.statsInterval.IsStrictlyPositive() && how.flowInterval.IsStrictlyPositive(),
                        "DiscSampler: the sampling intervals must be positive");
    // The first samples once the simulation runs: the discs are set up when it starts.
    if (!how.qdiscLog.empty())
    {
        m_stats = Open(how.qdiscLog);
        Simulator::ScheduleNow(&DiscSampler::SampleStats, this);
    }
    if (!how.flowLog.empty() && m_confucius)
    {
        m_flows = Open(how.flowLog);
        Simulator::ScheduleNow(&DiscSampler::SampleFlows, this);
    }
}

void
DiscSampler::SampleStats()
{
    uint32_t handles = 1;
    std::ostringstream qdiscs;
    qdiscs.precision(9);
    Disc(qdiscs, m_root, handles, "");
    m_stats << "{\"time_ns\":" << Simulator::Now().GetNanoSeconds() << ",\"qdiscs\":[" << qdiscs.str() << "]}\n";
    Simulator::Schedule(m_how.statsInterval, &DiscSampler::SampleStats, this);
}

void
DiscSampler::SampleFlows()
{
    m_flows << "{\"time_ns\":" << Simulator::Now().GetNanoSeconds() << ",\"flows\":[";
    bool first = true;
    for (const auto& f : m_confucius->Flows())
    {
        m_flows << (first ? "" : ",");
        FlowJson(m_flows, f);
        first = false;
    }
    m_flows << "]}\n";
    const Time now = Simulator::Now();
    const Time next = now < m_how.flowFrom ? std::min(now + m_how.statsInterval, m_how.flowFrom)
                                           : now + m_how.flowInterval;
    Simulator::Schedule(next - now, &DiscSampler::SampleFlows, this);
}

} // namespace ns3
