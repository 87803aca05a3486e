// SPDX-License-Identifier: MIT
#include "drr-queue-disc.h"

#include "number-list.h"

#include "ns3/log.h"
#include "ns3/string.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DeficitRoundRobinQueueDisc");
NS_OBJECT_ENSURE_REGISTERED(DeficitRoundRobinQueueDisc);

TypeId
DeficitRoundRobinQueueDisc::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::DeficitRoundRobinQueueDisc")
            .SetParent<QueueDisc>()
            .SetGroupName("TrafficControl")
            .AddConstructor<DeficitRoundRobinQueueDisc>()
            .AddAttribute("Quanta", "each class's quantum in bytes, in class order, separated by spaces",
                          StringValue(""),
                          MakeStringAccessor(&DeficitRoundRobinQueueDisc::m_quantaText),
                          MakeStringChecker());
    return tid;
}

DeficitRoundRobinQueueDisc::DeficitRoundRobinQueueDisc()
    : QueueDisc(QueueDiscSizePolicy::NO_LIMITS)
{
}

bool
DeficitRoundRobinQueueDisc::DoEnqueue(Ptr<QueueDiscItem> item)
{
    const int32_t cls = Classify(item);
    if (cls < 0 || size_t(cls) >= GetNQueueDiscClasses())
    {
        DropBeforeEnqueue(item, UNCLASSIFIED_DROP); // as sch_drr drops what no filter classifies
        return false;
    }
    Ptr<QueueDisc> child = GetQueueDiscClass(cls)->GetQueueDisc();
    const bool wasIdle = child->GetNPackets() == 0;
    if (!child->Enqueue(item))
        return false; // the child counted its drop, and ns-3 passes it up to this disc
    if (wasIdle)
    {
        m_deficit[cls] = m_quanta[cls];
        m_active.push_back(cls);
    }
    return true;
}

Ptr<QueueDiscItem>
DeficitRoundRobinQueueDisc::DoDequeue()
{
    while (!m_active.empty())
    {
        const size_t cls = m_active.front();
        Ptr<QueueDisc> child = GetQueueDiscClass(cls)->GetQueueDisc();
        Ptr<const QueueDiscItem> head = child->Peek();
        if (!head)
        {
            m_active.pop_front();
            continue;
        }
        if (head->GetSize() > m_deficit[cls])
        {
            m_deficit[cls] += m_quanta[cls];
            m_active.pop_front();
            m_active.push_back(cls);
            continue;
        }
        Ptr<QueueDiscItem> item = child->Dequeue();
        m_deficit[cls] -= item->GetSize();
        if (child->GetNPackets() == 0)
            m_active.pop_front();
        return item;
    }
    return nullptr;
}

bool
DeficitRoundRobinQueueDisc::CheckConfig()
{
    if (GetNInternalQueues() > 0 || GetNPacketFilters() == 0 || GetNQueueDiscClasses() == 0)
    {
        NS_LOG_ERROR("DeficitRoundRobinQueueDisc needs classes and a packet filter, and no internal queue");
        return false;
    }
    const auto quanta = ReadNumbers<uint32_t>(m_quantaText);
    m_quanta = quanta.value_or(std::vector<uint32_t>{});
    if (!quanta || m_quanta.size() != GetNQueueDiscClasses() ||
        std::find(m_quanta.begin(), m_quanta.end(), 0u) != m_quanta.end())
    {
        NS_LOG_ERROR("Quanta '" << m_quantaText << "': one positive number of bytes per class");
        return false;
    }
    return true;
}

void
DeficitRoundRobinQueueDisc::InitializeParams()
{
    m_deficit.assign(m_quanta.size(), 0);
}

} // namespace ns3
