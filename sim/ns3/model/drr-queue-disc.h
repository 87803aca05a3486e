// SPDX-License-Identifier: MIT
/*
 * Deficit round robin among classes, as Linux's sch_drr serves them: the lab's weighted
 * classes (`drr-1:1`, `drr-1:5`: the RT flow labelled into class 1, the rest into class 2,
 * each class's quantum its weight times an MTU), which ns-3 has no queue disc for. A packet
 * filter gives each packet its class; each class is a child queue disc that holds its own
 * limit (the lab's pfifo per class). A class that turns busy joins the back of the round
 * with one quantum of credit; the class at the front sends while its head fits its credit,
 * else earns another quantum and goes to the back.
 */
#ifndef CONFUCIUS_DRR_QUEUE_DISC_H
#define CONFUCIUS_DRR_QUEUE_DISC_H

#include "ns3/queue-disc.h"

#include <deque>
#include <string>
#include <vector>

namespace ns3
{

class DeficitRoundRobinQueueDisc : public QueueDisc
{
  public:
    static TypeId GetTypeId();
    DeficitRoundRobinQueueDisc();

    static constexpr const char* UNCLASSIFIED_DROP = "No class for the packet";

  private:
    bool DoEnqueue(Ptr<QueueDiscItem> item) override;
    Ptr<QueueDiscItem> DoDequeue() override;
    bool CheckConfig() override;
    void InitializeParams() override;

    std::string m_quantaText;       // "Q1 Q2 ...": each class's quantum in bytes
    std::vector<uint32_t> m_quanta;
    std::vector<uint32_t> m_deficit;
    std::deque<size_t> m_active;    // the busy classes, in the round's order
};

} // namespace ns3

#endif
