// SPDX-License-Identifier: MIT
/*
 * Shortest job first without knowing the jobs, as PIAS approximates it (Bai et al., NSDI
 * 2015; the papers' SJF baseline): a multi-level feedback queue. Each flow starts in the
 * highest-priority level and moves down a level each time the bytes it has sent pass the
 * next threshold; levels are served in strict priority, FIFO within a level. PIAS's hosts
 * count their flows' bytes and tag the packets; here the router counts them: every packet
 * of the flow that reaches the disc, dropped ones included, in the one direction the disc
 * sees (the lab's conntrack counts both, the ACKs adding 2-3 %). Each
 * level is a FIFO of the disc's limit, dropping at its tail.
 */
#ifndef CONFUCIUS_PIAS_QUEUE_DISC_H
#define CONFUCIUS_PIAS_QUEUE_DISC_H

#include "ns3/queue-disc.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace ns3
{

class PiasQueueDisc : public QueueDisc
{
  public:
    static TypeId GetTypeId();
    PiasQueueDisc();

  private:
    /* The level of a flow that has sent `bytes`: how many thresholds it has passed. */
    size_t Level(uint64_t bytes) const;

    bool DoEnqueue(Ptr<QueueDiscItem> item) override;
    Ptr<QueueDiscItem> DoDequeue() override;
    bool CheckConfig() override;
    void InitializeParams() override;

    std::string m_thresholdsText;   // "T1 T2 ...": increasing byte counts
    std::vector<uint64_t> m_thresholds;
    std::unordered_map<uint32_t, uint64_t> m_sent; // by flow hash
};

} // namespace ns3

#endif
