// SPDX-License-Identifier: MIT
/*
 * A UDP sender at a constant rate, with a byte budget and a socket priority
 * (the label the strict-priority and external-class schedulers read). ns-3's
 * OnOffApplication has neither the priority nor a count of what it sent.
 */
#ifndef CONFUCIUS_UDP_SOURCE_H
#define CONFUCIUS_UDP_SOURCE_H

#include "ns3/address.h"
#include "ns3/application.h"
#include "ns3/data-rate.h"
#include "ns3/event-id.h"
#include "ns3/socket.h"

namespace ns3
{

class ConfuciusUdpSource : public Application
{
  public:
    static TypeId GetTypeId();

    uint64_t SentPackets() const;
    uint64_t SentBytes() const;

  private:
    void StartApplication() override;
    void StopApplication() override;
    void SendOne();

    Address m_peer;
    DataRate m_rate;
    uint32_t m_packetSize = 1472;
    uint64_t m_maxBytes = 0;
    uint8_t m_priority = 0;
    Ptr<Socket> m_socket;
    EventId m_next;
    uint64_t m_sentPackets = 0;
    uint64_t m_sentBytes = 0;
};

} // namespace ns3

#endif
