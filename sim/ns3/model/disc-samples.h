// SPDX-License-Identifier: MIT
/*
 * The bottleneck's queue discs sampled as the lab's guest samples the kernel's
 * (confucius/lab/guest/capture.py and flows.py), one JSON line per sample, in the
 * lab's formats so that its reader (experiment/results.py read_samples) takes them:
 *
 * - qdisc.jsonl: {"time_ns", "qdiscs": [...]}, every disc of the tree as
 *   `tc -s -j qdisc show` prints it: kind, handle, root or parent, bytes, packets,
 *   drops, requeues, backlog, qlen from ns-3's counters (overlimits, which ns-3 does
 *   not count, left out: stored empty); Confucius adds its own statistics with the
 *   keys of tc's confucius plugin (tc/q_confucius.c), from the core.
 * - flows.jsonl: {"time_ns", "flows": [...]}, Confucius's remembered flows as the
 *   kernel's class dump gives them (lab/rtnl.py flow_xstats's keys).
 *
 * Statistics every StatsInterval from the start; flows every StatsInterval until
 * FlowFrom, then every FlowInterval (the lab samples them fast from before a load).
 */
#ifndef CONFUCIUS_DISC_SAMPLES_H
#define CONFUCIUS_DISC_SAMPLES_H

#include "confucius-queue-disc.h"

#include "ns3/nstime.h"
#include "ns3/queue-disc.h"

#include <fstream>
#include <string>

namespace ns3
{

struct DiscSampling
{
    std::string qdiscLog, flowLog; // empty: not sampled
    Time statsInterval, flowInterval, flowFrom;
};

class DiscSampler
{
  public:
    /* Samples `root`'s tree from the simulation's start; the flows only when `flows` is Confucius. */
    DiscSampler(Ptr<QueueDisc> root, Ptr<QueueDisc> flows, const DiscSampling& how);

  private:
    void SampleStats();
    void SampleFlows();

    Ptr<QueueDisc> m_root;
    Ptr<ConfuciusQueueDisc> m_confucius;
    DiscSampling m_how;
    std::ofstream m_stats, m_flows;
};

} // namespace ns3

#endif
