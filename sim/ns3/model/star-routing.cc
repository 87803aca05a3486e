// SPDX-License-Identifier: MIT
#include "star-routing.h"

#include "ns3/boolean.h"
#include "ns3/channel.h"
#include "ns3/ipv4-list-routing.h"
#include "ns3/ipv4-route.h"
#include "ns3/ipv4.h"
#include "ns3/loopback-net-device.h"
#include "ns3/net-device.h"
#include "ns3/node.h"
#include "ns3/output-stream-wrapper.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(ConfuciusStarRouting);

// Above the static routing's 0 and the global routing's -10 that InternetStackHelper installs.
static const int16_t FIRST_IN_LIST = 100;

TypeId
ConfuciusStarRouting::GetTypeId()
{
    static TypeId tid = TypeId("ns3::ConfuciusStarRouting")
                            .SetParent<Ipv4RoutingProtocol>()
                            .SetGroupName("Internet")
                            .AddConstructor<ConfuciusStarRouting>();
    return tid;
}

void
ConfuciusStarRouting::Install(const NodeContainer& nodes)
{
    for (auto node = nodes.Begin(); node != nodes.End(); ++node)
    {
        Ptr<Ipv4> ipv4 = (*node)->GetObject<Ipv4>();
        auto list = DynamicCast<Ipv4ListRouting>(ipv4->GetRoutingProtocol());
        NS_ABORT_MSG_UNLESS(list, "star routing goes into InternetStackHelper's list routing");
        auto star = CreateObject<ConfuciusStarRouting>();
        list->AddRoutingProtocol(star, FIRST_IN_LIST);
        star->Build();
        ipv4->SetAttribute("StrongEndSystemModel", BooleanValue(true));
    }
}

void
ConfuciusStarRouting::Build()
{
    std::vector<uint32_t> links;
    for (uint32_t i = 0; i < m_ipv4->GetNInterfaces(); i++)
    {
        for (uint32_t a = 0; a < m_ipv4->GetNAddresses(i); a++)
        {
            m_local.insert(m_ipv4->GetAddress(i, a).GetLocal().Get());
            m_local.insert(m_ipv4->GetAddress(i, a).GetBroadcast().Get());
        }
        if (!DynamicCast<LoopbackNetDevice>(m_ipv4->GetNetDevice(i)))
            links.push_back(i);
    }
    for (uint32_t link : links)
        for (Ipv4Address neighbour : NeighbourAddresses(link))
            m_routes.emplace(neighbour.Get(), MakeRoute(link, neighbour, Ipv4Address::GetZero()));
    // A host: whatever its neighbour does not hold goes to the neighbour.
    if (links.size() == 1 && !NeighbourAddresses(links[0]).empty())
        m_default = MakeRoute(links[0], Ipv4Address::GetZero(), NeighbourAddresses(links[0]).front());
}

/* The addresses of the nodes at the other end of `interface`'s link. */
std::vector<Ipv4Address>
ConfuciusStarRouting::NeighbourAddresses(uint32_t interface) const
{
    std::vector<Ipv4Address> addresses;
    Ptr<NetDevice> device = m_ipv4->GetNetDevice(interface);
    Ptr<Channel> channel = device->GetChannel();
    for (std::size_t d = 0; channel && d < channel->GetNDevices(); d++)
    {
        Ptr<NetDevice> peer = channel->GetDevice(d);
        Ptr<Ipv4> peerIpv4 = peer->GetNode()->GetObject<Ipv4>();
        const int32_t peerInterface = peerIpv4 ? peerIpv4->GetInterfaceForDevice(peer) : -1;
        for (uint32_t a = 0; peer != device && peerInterface >= 0 && a < peerIpv4->GetNAddresses(peerInterface); a++)
            addresses.push_back(peerIpv4->GetAddress(peerInterface, a).GetLocal());
    }
    return addresses;
}

/* As ns-3's own routing gives it: the interface's device, the gateway, its first address as source. */
Ptr<Ipv4Route>
ConfuciusStarRouting::MakeRoute(uint32_t interface, Ipv4Address destination, Ipv4Address gateway) const
{
    auto route = Create<Ipv4Route>();
    route->SetDestination(destination);
    route->SetGateway(gateway);
    route->SetSource(m_ipv4->GetAddress(interface, 0).GetLocal());
    route->SetOutputDevice(m_ipv4->GetNetDevice(interface));
    return route;
}

Ptr<Ipv4Route>
ConfuciusStarRouting::Lookup(Ipv4Address destination) const
{
    auto found = m_routes.find(destination.Get());
    return found != m_routes.end() ? found->second : m_default;
}

/* No route here leaves the packet to the list's other protocols (loopback, multicast). */
Ptr<Ipv4Route>
ConfuciusStarRouting::RouteOutput(Ptr<Packet>,
                                  const Ipv4Header& header,
                                  Ptr<NetDevice> oif,
                                  Socket::SocketErrno& sockerr)
{
    Ptr<Ipv4Route> route = Lookup(header.GetDestination());
    if (!route || (oif && oif != route->GetOutputDevice()))
        return nullptr;
    sockerr = Socket::ERROR_NOTERROR;
    return route;
}

bool
ConfuciusStarRouting::RouteInput(Ptr<const Packet> p,
                                 const Ipv4Header& header,
                                 Ptr<const NetDevice> idev,
                                 const UnicastForwardCallback& ucb,
                                 const MulticastForwardCallback&,
                                 const LocalDeliverCallback& lcb,
                                 const ErrorCallback&)
{
    const Ipv4Address destination = header.GetDestination();
    // The arriving interface's addresses were checked by the list; these are the others'.
    if (m_local.count(destination.Get()))
    {
        if (!lcb.IsNull())
            lcb(p, header, m_ipv4->GetInterfaceForDevice(idev));
        return true;
    }
    if (destination.IsMulticast() || destination.IsBroadcast())
        return false;
    Ptr<Ipv4Route> route = Lookup(destination);
    if (!route)
        return false;
    ucb(route, p, header);
    return true;
}

void
ConfuciusStarRouting::SetIpv4(Ptr<Ipv4> ipv4)
{
    m_ipv4 = ipv4;
}

// The routes are built once, after every address is assigned (Install): the star does not change.
void
ConfuciusStarRouting::NotifyInterfaceUp(uint32_t)
{
}

void
ConfuciusStarRouting::NotifyInterfaceDown(uint32_t)
{
}

void
ConfuciusStarRouting::NotifyAddAddress(uint32_t, Ipv4InterfaceAddress)
{
}

void
ConfuciusStarRouting::NotifyRemoveAddress(uint32_t, Ipv4InterfaceAddress)
{
}

void
ConfuciusStarRouting::PrintRoutingTable(Ptr<OutputStreamWrapper> stream, Time::Unit) const
{
    std::ostream& out = *stream->GetStream();
    out << "ConfuciusStarRouting: " << m_routes.size() << " neighbour addresses, "
        << (m_default ? "a default route" : "no default route") << "\n";
}

} // namespace ns3
