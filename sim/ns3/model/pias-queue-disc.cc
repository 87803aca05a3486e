// SPDX-License-Identifier: MIT
#include "pias-queue-disc.h"

#include "number-list.h"

#include "ns3/drop-tail-queue.h"
#include "ns3/log.h"
#include "ns3/string.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("PiasQueueDisc");
NS_OBJECT_ENSURE_REGISTERED(PiasQueueDisc);

TypeId
PiasQueueDisc::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::PiasQueueDisc")
            .SetParent<QueueDisc>()
            .SetGroupName("TrafficControl")
            .AddConstructor<PiasQueueDisc>()
            .AddAttribute("MaxSize", "the packets each level holds",
                          QueueSizeValue(QueueSize("1000p")),
                          MakeQueueSizeAccessor(&QueueDisc::SetMaxSize, &QueueDisc::GetMaxSize),
                          MakeQueueSizeChecker())
            .AddAttribute("Thresholds", "the bytes a flow sends before each demotion, increasing, "
                                        "separated by spaces: one level more than thresholds",
                          StringValue("100000 1000000 10000000"),
                          MakeStringAccessor(&PiasQueueDisc::m_thresholdsText),
                          MakeStringChecker());
    return tid;
}

PiasQueueDisc::PiasQueueDisc()
    : QueueDisc(QueueDiscSizePolicy::MULTIPLE_QUEUES, QueueSizeUnit::PACKETS)
{
}

size_t
PiasQueueDisc::Level(uint64_t bytes) const
{
    return std::upper_bound(m_thresholds.begin(), m_thresholds.end(), bytes) - m_thresholds.begin();
}

bool
PiasQueueDisc::DoEnqueue(Ptr<QueueDiscItem> item)
{
    uint64_t& sent = m_sent[item->Hash()];
    sent += item->GetSize();
    return GetInternalQueue(Level(sent))->Enqueue(item); // a full level counts its drop
}

Ptr<QueueDiscItem>
PiasQueueDisc::DoDequeue()
{
    for (size_t level = 0; level < GetNInternalQueues(); level++)
        if (Ptr<QueueDiscItem> item = GetInternalQueue(level)->Dequeue())
            return item;
    return nullptr;
}

bool
PiasQueueDisc::CheckConfig()
{
    if (GetNQueueDiscClasses() > 0 || GetNPacketFilters() > 0 || GetNInternalQueues() > 0)
    {
        NS_LOG_ERROR("PiasQueueDisc classifies by itself: no classes, packet filters or queues");
        return false;
    }
    const auto thresholds = ReadNumbers<uint64_t>(m_thresholdsText);
    m_thresholds = thresholds.value_or(std::vector<uint64_t>{});
    if (!thresholds || m_thresholds.empty() ||
        std::adjacent_find(m_thresholds.begin(), m_thresholds.end(), std::greater_equal<>()) != m_thresholds.end())
    {
        NS_LOG_ERROR("Thresholds '" << m_thresholdsText << "': increasing numbers of bytes");
        return false;
    }
    // One FIFO per level, each holding the limit, as the lab's pfifo in each prio band: a
    // shared limit would fill with the lowest level's packets, which are never served
    // while a higher level has any, and drop the higher levels' arrivals.
    for (size_t level = 0; level <= m_thresholds.size(); level++)
    {
        auto queue = CreateObject<DropTailQueue<QueueDiscItem>>();
        queue->SetMaxSize(GetMaxSize());
        AddInternalQueue(queue);
    }
    return true;
}

void
PiasQueueDisc::InitializeParams()
{
}

} // namespace ns3
