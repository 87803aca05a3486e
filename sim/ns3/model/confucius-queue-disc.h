// SPDX-License-Identifier: MIT
/*
 * Confucius as an ns-3 queue disc: the third host of the one scheduling core
 * (core/confucius_impl.h, kernel C compiled unchanged), beside the Linux qdisc and the
 * core's userspace tests. Every option of the qdisc is an attribute, named as
 * tc names it (tc/README.md).
 */
#ifndef CONFUCIUS_QUEUE_DISC_H
#define CONFUCIUS_QUEUE_DISC_H

#include "ns3/data-rate.h"
#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/queue-disc.h"
#include "ns3/queue.h"

#include "port-filter.h"

#include <optional>
#include <vector>

extern "C" {
#include "confucius_api.h"
}

namespace ns3
{

/*
 * Where the queued items live while the core orders them: an internal queue of
 * the disc, so that ns-3's own counters (GetNPackets, the Enqueue/Dequeue/Drop
 * traces) see every packet, in any order the core takes them out.
 */
class ConfuciusStore : public Queue<QueueDiscItem>
{
  public:
    using Iterator = Queue<QueueDiscItem>::Iterator;

    static TypeId GetTypeId();

    /* Keep item; its position is what the core's packet remembers. */
    Iterator Add(Ptr<QueueDiscItem> item);
    /* Take out the item at pos (counted as dequeued by the disc). */
    Ptr<QueueDiscItem> Take(Iterator pos);

    bool Enqueue(Ptr<QueueDiscItem> item) override;
    Ptr<QueueDiscItem> Dequeue() override;
    Ptr<QueueDiscItem> Remove() override;
    Ptr<const QueueDiscItem> Peek() const override;
};

class ConfuciusQueueDisc : public QueueDisc
{
  public:
    static TypeId GetTypeId();
    ConfuciusQueueDisc();
    ~ConfuciusQueueDisc() override;

    /* The shaper's rate (0 = unshaped); applied at once when the disc runs (tc change). */
    void SetBandwidth(DataRate rate);
    DataRate GetBandwidth() const;

    /* The configuration the core runs with (what `tc qdisc show` prints). */
    struct cfc_config CoreConfig() const;
    /* The core's counters and queue state (what `tc -s qdisc` prints). */
    struct cfc_stats CoreStats();
    /* A remembered flow as the kernel's class dump gives it (tc -s class show): its
     * bucket, the core's state of it, and its head packet's transport ports, if any. */
    struct Flow
    {
        uint32_t bucket;
        struct cfc_flow_stats stats;
        std::optional<TransportPorts> head;
    };
    std::vector<Flow> Flows();
    /* The weight (CFC_W_ONE units) and class of the flow an item belongs to; -1 if free. */
    uint32_t FlowWeight(Ptr<const QueueDiscItem> item);
    int FlowClass(Ptr<const QueueDiscItem> item);

    static constexpr const char* CONFUCIUS_DROP = "Confucius limit drop";
    static constexpr const char* CONFUCIUS_MARK = "Confucius AQM mark";

  private:
    struct Node;

    bool DoEnqueue(Ptr<QueueDiscItem> item) override;
    Ptr<QueueDiscItem> DoDequeue() override;
    bool CheckConfig() override;
    void InitializeParams() override;
    void DoDispose() override;

    struct cfc_config Config() const;
    uint32_t Hash(Ptr<const QueueDiscItem> item) const;
    struct cfc_key Key(Ptr<const QueueDiscItem> item) const;
    uint32_t ExternalClass(Ptr<QueueDiscItem> item);
    void DropChain(struct cfc_pkt* chain);
    /* Frees the packets of `chain` without counting or reporting them (at the disc's end). */
    void ReleaseChain(struct cfc_pkt* chain);
    void WakeAt(uint64_t ns);
    void Wake();

    /* Options, as tc gives them. */
    DataRate m_bandwidth;
    Time m_interval;
    Time m_reclassify;
    Time m_target;
    Time m_maxhold;
    Time m_maxdelay;
    Time m_aqmTarget;
    Time m_aqmInterval;
    Time m_aqmSettle;
    bool m_useEcn;
    uint32_t m_limit;
    uint32_t m_memlimit;
    uint32_t m_flows;
    uint32_t m_quantum;
    uint32_t m_hysteresisPercent;
    uint8_t m_mode;
    uint8_t m_classes;
    uint8_t m_pace;
    uint8_t m_isolate;
    std::string m_weights;
    uint32_t m_perturbation;

    bool m_started;
    struct cfc_sched m_core;
    std::vector<uint8_t> m_table;
    std::vector<uint8_t> m_hosts;
    std::vector<uint8_t> m_heaps; //!< the classes' heaps, in modes class and external
    Ptr<ConfuciusStore> m_store;
    EventId m_wake;
};

} // namespace ns3

#endif
