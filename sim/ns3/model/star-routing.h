// SPDX-License-Identifier: MIT
/*
 * Routing for the simulator's star (servers - router - client): every address a
 * node's point-to-point neighbours hold is reached through the link to that
 * neighbour, and a host with a single link sends everything else to the node at
 * its other end. The routes are built once, when the addresses are assigned, and
 * looked up by destination address in a hash table: ns-3's static and global
 * routing scan their tables and every interface's addresses per packet, which
 * with a page's one link per domain dominated the router's cost.
 *
 * It answers first in each node's Ipv4ListRouting (whose static and global routing
 * stay, unused for these addresses) and gives the routes those would: the same
 * output device, gateway and source address.
 */
#ifndef CONFUCIUS_STAR_ROUTING_H
#define CONFUCIUS_STAR_ROUTING_H

#include "ns3/ipv4-routing-protocol.h"
#include "ns3/node-container.h"

#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ns3
{

class ConfuciusStarRouting : public Ipv4RoutingProtocol
{
  public:
    static TypeId GetTypeId();

    /*
     * Adds the routing to every node of `nodes`, ahead of its list's protocols, once
     * every address is assigned. The nodes' IPv4 then checks only the arriving
     * interface for its own addresses (the strong end-system model); this routing
     * delivers the packets addressed to the node's other interfaces, as the weak
     * model ns-3 runs by default would.
     */
    static void Install(const NodeContainer& nodes);

    Ptr<Ipv4Route> RouteOutput(Ptr<Packet> p,
                               const Ipv4Header& header,
                               Ptr<NetDevice> oif,
                               Socket::SocketErrno& sockerr) override;
    bool RouteInput(Ptr<const Packet> p,
                    const Ipv4Header& header,
                    Ptr<const NetDevice> idev,
                    const UnicastForwardCallback& ucb,
                    const MulticastForwardCallback& mcb,
                    const LocalDeliverCallback& lcb,
                    const ErrorCallback& ecb) override;
    void NotifyInterfaceUp(uint32_t interface) override;
    void NotifyInterfaceDown(uint32_t interface) override;
    void NotifyAddAddress(uint32_t interface, Ipv4InterfaceAddress address) override;
    void NotifyRemoveAddress(uint32_t interface, Ipv4InterfaceAddress address) override;
    void SetIpv4(Ptr<Ipv4> ipv4) override;
    void PrintRoutingTable(Ptr<OutputStreamWrapper> stream, Time::Unit unit) const override;

  private:
    void Build();
    std::vector<Ipv4Address> NeighbourAddresses(uint32_t interface) const;
    Ptr<Ipv4Route> MakeRoute(uint32_t interface, Ipv4Address destination, Ipv4Address gateway) const;
    Ptr<Ipv4Route> Lookup(Ipv4Address destination) const;

    Ptr<Ipv4> m_ipv4;
    // Routes by destination address, one object each, shared by every packet.
    std::unordered_map<uint32_t, Ptr<Ipv4Route>> m_routes;
    Ptr<Ipv4Route> m_default;
    std::unordered_set<uint32_t> m_local; // own and interface broadcast addresses
};

} // namespace ns3

#endif
