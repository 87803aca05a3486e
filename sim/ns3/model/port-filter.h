// SPDX-License-Identifier: MIT
/*
 * The lab's label: a packet filter that matches IPv4 UDP or TCP packets by
 * their destination port (tc's `u32 match ip dport`), giving one class to the
 * matching packets and another to the rest (the lab's catch-all filter); and
 * the ports it reads, for whoever needs to name an item's flow.
 */
#ifndef CONFUCIUS_PORT_FILTER_H
#define CONFUCIUS_PORT_FILTER_H

#include "ns3/packet-filter.h"

#include <optional>
#include <set>

namespace ns3
{

/* An IPv4 item's transport protocol and ports. */
struct TransportPorts
{
    uint8_t proto;
    uint16_t sport, dport;
};

/* The ports of an IPv4 UDP or TCP item; none for anything else. */
std::optional<TransportPorts> ReadPorts(Ptr<const QueueDiscItem> item);

class ConfuciusPortFilter : public PacketFilter
{
  public:
    static TypeId GetTypeId();
    ConfuciusPortFilter();

    void AddPort(uint16_t port);
    void SetResults(int32_t match, int32_t other);

  private:
    bool CheckProtocol(Ptr<QueueDiscItem> item) const override;
    int32_t DoClassify(Ptr<QueueDiscItem> item) const override;

    std::set<uint16_t> m_ports;
    int32_t m_match;
    int32_t m_other;
};

} // namespace ns3

#endif
