// SPDX-License-Identifier: MIT
/*
 * What our applications share: how each registers its TypeId, the attributes
 * several have (the port it serves, the peer it sends to), and a UDP socket
 * connected to the peer.
 */
#ifndef CONFUCIUS_APP_PARTS_H
#define CONFUCIUS_APP_PARTS_H

#include "ns3/address.h"
#include "ns3/application.h"
#include "ns3/data-rate.h"
#include "ns3/double.h"
#include "ns3/socket.h"
#include "ns3/udp-socket-factory.h"
#include "ns3/uinteger.h"

#include <limits>
#include <string>

namespace ns3
{

/* An application's TypeId, in the Applications group. */
template <typename App>
TypeId
ApplicationTypeId(const std::string& name)
{
    return TypeId(name).SetParent<Application>().SetGroupName("Applications").AddConstructor<App>();
}

/* The "Port" attribute: the port an application listens on, or its servers'. */
template <typename App>
TypeId
WithPort(TypeId tid, const std::string& help, uint16_t byDefault, uint16_t App::*member)
{
    return tid.AddAttribute("Port", help, UintegerValue(byDefault), MakeUintegerAccessor(member),
                            MakeUintegerChecker<uint16_t>());
}

/* The "Remote" attribute: where a sender sends. */
template <typename App>
TypeId
WithRemote(TypeId tid, const std::string& help, Address App::*member)
{
    return tid.AddAttribute("Remote", help, AddressValue(), MakeAddressAccessor(member),
                            MakeAddressChecker());
}

/* A rate attribute. */
template <typename App>
void
AddRate(TypeId tid, const std::string& name, const std::string& help, const std::string& byDefault,
        DataRate App::*member)
{
    tid.AddAttribute(name, help, DataRateValue(DataRate(byDefault)), MakeDataRateAccessor(member),
                     MakeDataRateChecker());
}

/* A number attribute within [low, high]. */
template <typename App>
void
AddNumber(TypeId tid, const std::string& name, const std::string& help, double byDefault,
          double App::*member, double low, double high = std::numeric_limits<double>::max())
{
    tid.AddAttribute(name, help, DoubleValue(byDefault), MakeDoubleAccessor(member),
                     MakeDoubleChecker<double>(low, high));
}

/* A UDP socket of `node`, on an ephemeral port, connected to `peer`. */
inline Ptr<Socket>
UdpSocketTo(Ptr<Node> node, const Address& peer)
{
    Ptr<Socket> socket = Socket::CreateSocket(node, UdpSocketFactory::GetTypeId());
    socket->Bind();
    socket->Connect(peer);
    return socket;
}

} // namespace ns3

#endif
