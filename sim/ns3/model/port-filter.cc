// SPDX-License-Identifier: MIT
#include "port-filter.h"

#include "ns3/ipv4-queue-disc-item.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(ConfuciusPortFilter);

static const uint8_t PROTO_TCP = 6;
static const uint8_t PROTO_UDP = 17;

TypeId
ConfuciusPortFilter::GetTypeId()
{
    static TypeId tid = TypeId("ns3::ConfuciusPortFilter")
                            .SetParent<PacketFilter>()
                            .SetGroupName("TrafficControl")
                            .AddConstructor<ConfuciusPortFilter>();
    return tid;
}

ConfuciusPortFilter::ConfuciusPortFilter()
    : m_match(PF_NO_MATCH),
      m_other(PF_NO_MATCH)
{
}

void
ConfuciusPortFilter::AddPort(uint16_t port)
{
    m_ports.insert(port);
}

void
ConfuciusPortFilter::SetResults(int32_t match, int32_t other)
{
    m_match = match;
    m_other = other;
}

bool
ConfuciusPortFilter::CheckProtocol(Ptr<QueueDiscItem> item) const
{
    return DynamicCast<Ipv4QueueDiscItem>(item) != nullptr;
}

/* UDP and TCP both start with the source and destination ports, in network order. */
std::optional<TransportPorts>
ReadPorts(Ptr<const QueueDiscItem> item)
{
    auto ip = DynamicCast<const Ipv4QueueDiscItem>(item);
    if (!ip)
        return std::nullopt;
    const uint8_t proto = ip->GetHeader().GetProtocol();
    uint8_t ports[4];
    if ((proto != PROTO_UDP && proto != PROTO_TCP) || ip->GetPacket()->CopyData(ports, 4) != 4)
        return std::nullopt;
    return TransportPorts{proto, uint16_t(ports[0] << 8 | ports[1]), uint16_t(ports[2] << 8 | ports[3])};
}

int32_t
ConfuciusPortFilter::DoClassify(Ptr<QueueDiscItem> item) const
{
    const auto ports = ReadPorts(item);
    return ports && m_ports.count(ports->dport) ? m_match : m_other;
}

} // namespace ns3
