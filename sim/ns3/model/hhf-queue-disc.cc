// SPDX-License-Identifier: MIT
#include "hhf-queue-disc.h"

#include "ns3/drop-tail-queue.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("HhfQueueDisc");
NS_OBJECT_ENSURE_REGISTERED(HhfQueueDisc);

TypeId
HhfQueueDisc::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::HhfQueueDisc")
            .SetParent<QueueDisc>()
            .SetGroupName("TrafficControl")
            .AddConstructor<HhfQueueDisc>()
            .AddAttribute("MaxSize", "the packets both FIFOs hold together",
                          QueueSizeValue(QueueSize("1000p")),
                          MakeQueueSizeAccessor(&QueueDisc::SetMaxSize, &QueueDisc::GetMaxSize),
                          MakeQueueSizeChecker())
            .AddAttribute("Quantum", "the heavy hitters' bytes a round (sch_hhf: the MTU)", UintegerValue(1514),
                          MakeUintegerAccessor(&HhfQueueDisc::m_quantum), MakeUintegerChecker<uint32_t>(256))
            .AddAttribute("AdmitBytes", "a flow's bytes within a reset period that make it a heavy hitter",
                          UintegerValue(128 * 1024), MakeUintegerAccessor(&HhfQueueDisc::m_admitBytes),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("NonHhWeight", "the others' quanta a round", UintegerValue(2),
                          MakeUintegerAccessor(&HhfQueueDisc::m_othersWeight), MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("ResetTimeout", "how long the flows' byte counts last", TimeValue(MilliSeconds(40)),
                          MakeTimeAccessor(&HhfQueueDisc::m_resetPeriod), MakeTimeChecker(NanoSeconds(1)))
            .AddAttribute("EvictTimeout", "the idle time after which a heavy hitter is forgotten",
                          TimeValue(Seconds(1)), MakeTimeAccessor(&HhfQueueDisc::m_evictTime), MakeTimeChecker());
    return tid;
}

HhfQueueDisc::HhfQueueDisc()
    : QueueDisc(QueueDiscSizePolicy::MULTIPLE_QUEUES, QueueSizeUnit::PACKETS)
{
}

HhfQueueDisc::Bucket
HhfQueueDisc::BucketOf(Ptr<const QueueDiscItem> item)
{
    const Time now = Simulator::Now();
    if (now - m_periodStart > m_resetPeriod)
    {
        m_periodBytes.clear();
        m_periodStart = now;
    }
    const uint32_t flow = item->Hash();
    auto heavy = m_heavy.find(flow);
    if (heavy != m_heavy.end() && now - heavy->second <= m_evictTime)
    {
        heavy->second = now;
        return HEAVY;
    }
    uint64_t& bytes = m_periodBytes[flow];
    if (bytes + item->GetSize() > m_admitBytes)
    {
        m_heavy[flow] = now; // its bytes from now on are the heavy hitters' (sch_hhf's shielding)
        return HEAVY;
    }
    bytes += item->GetSize();
    return OTHERS;
}

uint32_t
HhfQueueDisc::Weight(Bucket b) const
{
    return b == HEAVY ? 1 : m_othersWeight;
}

bool
HhfQueueDisc::DoEnqueue(Ptr<QueueDiscItem> item)
{
    const Bucket b = BucketOf(item);
    GetInternalQueue(b)->Enqueue(item);
    if (!m_listed[b])
    {
        // The others' FIFO, turning busy, goes first; the heavy hitters' waits its turn.
        (b == HEAVY ? m_old : m_new).push_back(b);
        m_listed[b] = true;
        m_deficit[b] = int64_t(Weight(b)) * m_quantum;
    }
    if (GetCurrentSize() <= GetMaxSize())
        return true;
    const Bucket victim = GetInternalQueue(HEAVY)->IsEmpty() ? OTHERS : HEAVY;
    DropAfterDequeue(GetInternalQueue(victim)->Dequeue(), OVERLIMIT_DROP);
    return true; // the item itself stays queued
}

Ptr<QueueDiscItem>
HhfQueueDisc::DoDequeue()
{
    for (;;)
    {
        std::deque<Bucket>& list = m_new.empty() ? m_old : m_new;
        if (list.empty())
            return nullptr;
        const Bucket b = list.front();
        if (m_deficit[b] <= 0)
        {
            m_deficit[b] += int64_t(Weight(b)) * m_quantum;
            list.pop_front();
            m_old.push_back(b);
            continue;
        }
        Ptr<QueueDiscItem> item = GetInternalQueue(b)->Dequeue();
        if (!item)
        {
            list.pop_front();
            // A pass through the old list before the new one is served again (no starvation).
            if (&list == &m_new && !m_old.empty())
                m_old.push_back(b);
            else
                m_listed[b] = false;
            continue;
        }
        m_deficit[b] -= item->GetSize();
        return item;
    }
}

bool
HhfQueueDisc::CheckConfig()
{
    if (GetNQueueDiscClasses() > 0 || GetNPacketFilters() > 0 || GetNInternalQueues() > 0)
    {
        NS_LOG_ERROR("HhfQueueDisc classifies by itself: no classes, packet filters or queues");
        return false;
    }
    if (GetMaxSize().GetUnit() != QueueSizeUnit::PACKETS)
    {
        NS_LOG_ERROR("HhfQueueDisc's limit is in packets, as sch_hhf's");
        return false;
    }
    for (int b = 0; b < 2; b++)
    {
        auto queue = CreateObject<DropTailQueue<QueueDiscItem>>();
        queue->SetMaxSize(QueueSize(QueueSizeUnit::PACKETS, GetMaxSize().GetValue() + 1));
        AddInternalQueue(queue);
    }
    return true;
}

void
HhfQueueDisc::InitializeParams()
{
    m_periodStart = Simulator::Now();
}

} // namespace ns3
