// SPDX-License-Identifier: MIT
/*
 * The heavy-hitter filter as Linux's sch_hhf behaves (the papers' HHF baseline), which ns-3
 * has no queue disc for. A flow whose packets reaching the disc within one reset period
 * (40 ms) pass the admission bytes (128 kB) becomes a heavy hitter until it has been idle
 * for the eviction time (1 s). Heavy hitters share one FIFO, every other flow the other;
 * the two are served by deficit round robin, the others at twice the heavy hitters'
 * quantum, and the others' FIFO, when it turns busy, first (as fq_codel's new flows). Over
 * the limit, the heavy hitters' oldest packet is dropped, else the others'.
 *
 * sch_hhf counts bytes in a multi-stage filter (four hashed arrays of counters, the least
 * of a flow's four the estimate), whose collisions can only make a flow look heavier; here
 * each flow's bytes are counted exactly, the filter without collisions.
 */
#ifndef CONFUCIUS_HHF_QUEUE_DISC_H
#define CONFUCIUS_HHF_QUEUE_DISC_H

#include "ns3/nstime.h"
#include "ns3/queue-disc.h"

#include <deque>
#include <unordered_map>

namespace ns3
{

class HhfQueueDisc : public QueueDisc
{
  public:
    static TypeId GetTypeId();
    HhfQueueDisc();

    static constexpr const char* OVERLIMIT_DROP = "Over the limit: the oldest of a heavy hitter, else of the others";

  private:
    enum Bucket : size_t
    {
        HEAVY = 0,
        OTHERS = 1,
    };

    bool DoEnqueue(Ptr<QueueDiscItem> item) override;
    Ptr<QueueDiscItem> DoDequeue() override;
    bool CheckConfig() override;
    void InitializeParams() override;

    /* The item's bucket, counting its bytes (and starting a new period when due). */
    Bucket BucketOf(Ptr<const QueueDiscItem> item);
    uint32_t Weight(Bucket b) const;

    uint32_t m_quantum;
    uint32_t m_admitBytes;
    uint32_t m_othersWeight;
    Time m_resetPeriod;
    Time m_evictTime;

    Time m_periodStart;
    std::unordered_map<uint32_t, uint64_t> m_periodBytes; // each flow's bytes this period
    std::unordered_map<uint32_t, Time> m_heavy;           // heavy hitters, last seen
    int64_t m_deficit[2] = {0, 0};
    bool m_listed[2] = {false, false};
    std::deque<Bucket> m_new, m_old;                      // as fq_codel's flow lists
};

} // namespace ns3

#endif
