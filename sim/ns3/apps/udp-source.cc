// SPDX-License-Identifier: MIT
#include "udp-source.h"

#include "app-parts.h"

#include "ns3/packet.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"
#include "ns3/udp-socket-factory.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(ConfuciusUdpSource);

TypeId
ConfuciusUdpSource::GetTypeId()
{
    static TypeId tid = [] {
        TypeId t =
            WithRemote(ApplicationTypeId<ConfuciusUdpSource>("ns3::ConfuciusUdpSource"),
                       "Where to send", &ConfuciusUdpSource::m_peer)
                .AddAttribute("PacketSize", "UDP payload bytes per packet", UintegerValue(1472),
                              MakeUintegerAccessor(&ConfuciusUdpSource::m_packetSize),
                              MakeUintegerChecker<uint32_t>(1, 65507))
                .AddAttribute("MaxBytes", "Payload bytes to send; 0 = until stopped", UintegerValue(0),
                              MakeUintegerAccessor(&ConfuciusUdpSource::m_maxBytes),
                              MakeUintegerChecker<uint64_t>())
                .AddAttribute("Priority", "Socket priority of every packet (0 = unlabelled)",
                              UintegerValue(0), MakeUintegerAccessor(&ConfuciusUdpSource::m_priority),
                              MakeUintegerChecker<uint8_t>());
        AddRate(t, "DataRate", "Sending rate (UDP payload)", "1Mbps", &ConfuciusUdpSource::m_rate);
        return t;
    }();
    return tid;
}

uint64_t
ConfuciusUdpSource::SentPackets() const
{
    return m_sentPackets;
}

uint64_t
ConfuciusUdpSource::SentBytes() const
{
    return m_sentBytes;
}

void
ConfuciusUdpSource::StartApplication()
{
    m_socket = UdpSocketTo(GetNode(), m_peer);
    m_socket->SetPriority(m_priority);
    SendOne();
}

void
ConfuciusUdpSource::StopApplication()
{
    m_next.Cancel();
    if (m_socket)
        m_socket->Close();
}

void
ConfuciusUdpSource::SendOne()
{
    if (m_maxBytes && m_sentBytes >= m_maxBytes)
        return;
    if (m_socket->Send(Create<Packet>(m_packetSize)) >= 0)
    {
        m_sentPackets++;
        m_sentBytes += m_packetSize;
    }
    m_next = Simulator::Schedule(m_rate.CalculateBytesTxTime(m_packetSize),
                                 &ConfuciusUdpSource::SendOne, this);
}

} // namespace ns3
