// SPDX-License-Identifier: MIT
#include "confucius-queue-disc.h"

#include <linux/container_of.h>

#include "ns3/abort.h"
#include "ns3/boolean.h"
#include "ns3/enum.h"
#include "ns3/hash.h"
#include "ns3/ipv4-queue-disc-item.h"
#include "ns3/ipv6-queue-disc-item.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/socket.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <cstring>
#include <sstream>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("ConfuciusQueueDisc");
NS_OBJECT_ENSURE_REGISTERED(ConfuciusStore);
NS_OBJECT_ENSURE_REGISTERED(ConfuciusQueueDisc);

/* ------------------------------------------------------------------ store */

TypeId
ConfuciusStore::GetTypeId()
{
    static TypeId tid = TypeId("ns3::ConfuciusStore")
                            .SetParent<Queue<QueueDiscItem>>()
                            .SetGroupName("TrafficControl")
                            .AddConstructor<ConfuciusStore>();
    return tid;
}

ConfuciusStore::Iterator
ConfuciusStore::Add(Ptr<QueueDiscItem> item)
{
    Iterator pos;
    bool kept = DoEnqueue(GetContainer().end(), item, pos);
    NS_ABORT_MSG_UNLESS(kept, "the store holds more than the core's largest limit");
    return pos;
}

Ptr<QueueDiscItem>
ConfuciusStore::Take(Iterator pos)
{
    return DoDequeue(pos);
}

/* Queue's interface in arrival order; the disc itself only uses Add and Take. */
bool
ConfuciusStore::Enqueue(Ptr<QueueDiscItem> item)
{
    return DoEnqueue(GetContainer().end(), item);
}

Ptr<QueueDiscItem>
ConfuciusStore::Dequeue()
{
    return DoDequeue(GetContainer().begin());
}

Ptr<QueueDiscItem>
ConfuciusStore::Remove()
{
    return DoRemove(GetContainer().begin());
}

Ptr<const QueueDiscItem>
ConfuciusStore::Peek() const
{
    return DoPeek(GetContainer().begin());
}

/* ------------------------------------------------------------------- disc */

/* The core's part of a packet, and where the host keeps the item itself. */
struct ConfuciusQueueDisc::Node
{
    struct cfc_pkt pkt; // first: the core hands back &pkt
    ConfuciusStore::Iterator pos;
};

static struct cfc_config
CoreDefaults()
{
    struct cfc_config cfg;
    cfc_config_default(&cfg);
    return cfg;
}

static Time
Ns(uint64_t ns)
{
    return NanoSeconds(static_cast<int64_t>(ns));
}

namespace
{

/* An option that is a time or a count: one attribute each, the core's default. */
template <typename T>
struct Option
{
    const char* name;
    const char* help;
    T byDefault;
    T ConfuciusQueueDisc::*member;
};

/* An option that names one of the core's constants: `choices` are value, name pairs. */
template <typename... Choices>
void
AddChoice(TypeId tid, const char* name, const char* help, uint8_t byDefault,
          uint8_t ConfuciusQueueDisc::*member, Choices... choices)
{
    tid.AddAttribute(name, help, EnumValue<uint8_t>(byDefault), MakeEnumAccessor<uint8_t>(member),
                     MakeEnumChecker<uint8_t>(choices...));
}

} // namespace

TypeId
ConfuciusQueueDisc::GetTypeId()
{
    static TypeId tid = [] {
        const struct cfc_config d = CoreDefaults();
        TypeId t =
            TypeId("ns3::ConfuciusQueueDisc")
                .SetParent<QueueDisc>()
                .SetGroupName("TrafficControl")
                .AddConstructor<ConfuciusQueueDisc>()
                .AddAttribute("Bandwidth",
                              "Rate the disc shapes its output to; 0 = unshaped (the device paces)",
                              DataRateValue(DataRate(d.bandwidth)),
                              MakeDataRateAccessor(&ConfuciusQueueDisc::SetBandwidth,
                                                   &ConfuciusQueueDisc::GetBandwidth),
                              MakeDataRateChecker())
                .AddAttribute("Classes",
                              "K: occupancy classes (mode class) or external classes",
                              UintegerValue(d.classes),
                              MakeUintegerAccessor(&ConfuciusQueueDisc::m_classes),
                              MakeUintegerChecker<uint8_t>(1, CFC_MAX_CLASSES))
                .AddAttribute("Weights",
                              "Mode external: class weights as tc writes them, e.g. 4:2:1 "
                              "(0 or empty = served by their number of flows)",
                              StringValue(""),
                              MakeStringAccessor(&ConfuciusQueueDisc::m_weights),
                              MakeStringChecker());
        AddChoice(t, "Pace", "How new flows' weights grow: fixed (double every tick) or adaptive",
                  d.pace, &ConfuciusQueueDisc::m_pace, uint8_t(CFC_PACE_FIXED), "fixed",
                  uint8_t(CFC_PACE_ADAPTIVE), "adaptive");
        AddChoice(t, "Mode",
                  "flow (per-flow weights), class (occupancy classes) or external (class from "
                  "packet filters or the packet's priority)",
                  d.mode, &ConfuciusQueueDisc::m_mode, uint8_t(CFC_MODE_FLOW), "flow",
                  uint8_t(CFC_MODE_CLASS), "class", uint8_t(CFC_MODE_EXTERNAL), "external");
        AddChoice(t, "Isolate",
                  "Which hosts share the link fairly before their old flows do, in cake's words",
                  d.isolate, &ConfuciusQueueDisc::m_isolate, uint8_t(CFC_ISOLATE_FLOWS), "flows",
                  uint8_t(CFC_ISOLATE_SRCHOST), "dual-srchost", uint8_t(CFC_ISOLATE_DSTHOST),
                  "dual-dsthost", uint8_t(CFC_ISOLATE_HOSTS), "triple-isolate");
        const Option<Time> times[] = {
            {"Interval", "1/lambda: the reweight tick and the time new flows are remembered",
             Ns(d.interval_ns), &ConfuciusQueueDisc::m_interval},
            {"Reclassify", "Mode class: how often old flows are re-examined for their class",
             Ns(d.reclassify_ns), &ConfuciusQueueDisc::m_reclassify},
            {"Target", "Pace adaptive: the old flows' standing-queue sojourn that holds a tick",
             Ns(d.target_ns), &ConfuciusQueueDisc::m_target},
            {"MaxHold", "Pace adaptive: the most time held per burst of new flows (0 = never)",
             Ns(d.maxhold_ns), &ConfuciusQueueDisc::m_maxhold},
            {"MaxDelay", "An old flow's packets that waited longer are dropped at dequeue (0 = no bound)",
             Ns(d.maxdelay_ns), &ConfuciusQueueDisc::m_maxdelay},
            {"AqmTarget", "Old flows' AQM (CoDel): the standing sojourn it keeps their queues near "
             "(0 = no AQM)", Ns(d.aqm_target_ns), &ConfuciusQueueDisc::m_aqmTarget},
            {"AqmInterval", "Old flows' AQM: how long their sojourn may stand above AqmTarget "
             "before it drops or marks", Ns(d.aqm_interval_ns), &ConfuciusQueueDisc::m_aqmInterval},
            {"AqmSettle", "Old flows' AQM: how long it waits once no flow is new",
             Ns(d.aqm_settle_ns), &ConfuciusQueueDisc::m_aqmSettle},
        };
        for (const auto& o : times)
            t.AddAttribute(o.name, o.help, TimeValue(o.byDefault), MakeTimeAccessor(o.member),
                           MakeTimeChecker());
        const Option<uint32_t> counts[] = {
            {"Limit", "Packets the disc holds", d.limit, &ConfuciusQueueDisc::m_limit},
            {"MemLimit", "Bytes the disc holds (the items' sizes stand for the kernel's truesize)",
             d.memlimit, &ConfuciusQueueDisc::m_memlimit},
            {"Flows", "Flow hash buckets", d.flows, &ConfuciusQueueDisc::m_flows},
            {"Quantum", "Bytes a weight-1 flow may send per round", d.quantum,
             &ConfuciusQueueDisc::m_quantum},
            {"Hysteresis", "Mode class: alpha, in whole percent",
             static_cast<uint32_t>(d.hysteresis * 100 / CFC_W_ONE),
             &ConfuciusQueueDisc::m_hysteresisPercent},
            {"Perturbation", "Seed of the flow hash (the kernel's is random per boot)", 0,
             &ConfuciusQueueDisc::m_perturbation},
        };
        for (const auto& o : counts)
            t.AddAttribute(o.name, o.help, UintegerValue(o.byDefault), MakeUintegerAccessor(o.member),
                           MakeUintegerChecker<uint32_t>());
        t.AddAttribute("UseEcn",
                       "The AQM marks ECN-capable packets Congestion Experienced instead of "
                       "dropping them",
                       BooleanValue(d.ecn), MakeBooleanAccessor(&ConfuciusQueueDisc::m_useEcn),
                       MakeBooleanChecker());
        return t;
    }();
    return tid;
}

ConfuciusQueueDisc::ConfuciusQueueDisc()
    : QueueDisc(QueueDiscSizePolicy::NO_LIMITS),
      m_started(false),
      m_core{}
{
}

ConfuciusQueueDisc::~ConfuciusQueueDisc() = default;

/* "4:2:1" -> class_weight; an empty string leaves every class at 0 (by its flows). */
static void
ParseWeights(const std::string& text, struct cfc_config& cfg)
{
    if (text.empty())
        return;
    std::istringstream in(text);
    std::string word;
    uint32_t i = 0;
    while (std::getline(in, word, ':'))
    {
        NS_ABORT_MSG_IF(i == CFC_MAX_CLASSES,
                        "ConfuciusQueueDisc: Weights \"" << text << "\" names more than "
                                                         << CFC_MAX_CLASSES << " classes");
        char* end = nullptr;
        unsigned long long w = std::strtoull(word.c_str(), &end, 10);
        NS_ABORT_MSG_IF(word.empty() || *end != '\0' || w > UINT32_MAX,
                        "ConfuciusQueueDisc: invalid Weights \""
                            << text << "\": expected whole numbers (0 to " << UINT32_MAX
                            << ") joined by ':'");
        cfg.class_weight[i++] = static_cast<uint32_t>(w);
    }
}

struct cfc_config
ConfuciusQueueDisc::Config() const
{
    struct cfc_config cfg = CoreDefaults();
    cfg.bandwidth = m_bandwidth.GetBitRate();
    cfg.interval_ns = m_interval.GetNanoSeconds();
    cfg.reclassify_ns = m_reclassify.GetNanoSeconds();
    cfg.target_ns = m_target.GetNanoSeconds();
    cfg.maxhold_ns = m_maxhold.GetNanoSeconds();
    cfg.maxdelay_ns = m_maxdelay.GetNanoSeconds();
    cfg.aqm_target_ns = m_aqmTarget.GetNanoSeconds();
    cfg.aqm_interval_ns = m_aqmInterval.GetNanoSeconds();
    cfg.aqm_settle_ns = m_aqmSettle.GetNanoSeconds();
    cfg.ecn = m_useEcn;
    cfg.limit = m_limit;
    cfg.memlimit = m_memlimit;
    cfg.flows = m_flows;
    cfg.quantum = m_quantum;
    cfg.hysteresis = static_cast<uint32_t>(uint64_t(m_hysteresisPercent) * CFC_W_ONE / 100);
    cfg.mode = m_mode;
    cfg.classes = m_classes;
    cfg.pace = m_pace;
    cfg.isolate = m_isolate;
    ParseWeights(m_weights, cfg);
    return cfg;
}

static uint64_t
NowNs()
{
    return static_cast<uint64_t>(Simulator::Now().GetNanoSeconds());
}

bool
ConfuciusQueueDisc::CheckConfig()
{
    NS_ABORT_MSG_IF(GetNQueueDiscClasses() > 0, "ConfuciusQueueDisc has no classes to attach");
    NS_ABORT_MSG_IF(GetNInternalQueues() > 0, "ConfuciusQueueDisc keeps its own store");
    if (m_mode != CFC_MODE_EXTERNAL && GetNPacketFilters() > 0)
        NS_LOG_WARN("packet filters are read in mode external only");
    const struct cfc_config cfg = Config();
    const char* why = cfc_config_check(&cfg);
    NS_ABORT_MSG_IF(why, "ConfuciusQueueDisc: " << why);
    m_store = CreateObject<ConfuciusStore>();
    // The core enforces the limits; one more packet than the largest is held for an instant.
    m_store->SetMaxSize(QueueSize(QueueSizeUnit::PACKETS, CFC_LIMIT_MAX + 1));
    AddInternalQueue(m_store);
    return true;
}

void
ConfuciusQueueDisc::InitializeParams()
{
    const struct cfc_config cfg = Config();
    m_table.assign(cfc_table_bytes(cfg.flows), 0);
    if (cfc_needs_heaps(&cfg))
    {
        m_heaps.assign(cfc_heaps_bytes(cfg.flows), 0);
    }
    m_hosts.assign(cfc_hosts_bytes(cfg.flows), 0);
    cfc_init(&m_core, m_table.data(), m_hosts.data(), m_heaps.empty() ? nullptr : m_heaps.data(),
             &cfg, NowNs());
    m_started = true;
}

void
ConfuciusQueueDisc::SetBandwidth(DataRate rate)
{
    m_bandwidth = rate;
    if (!m_started)
        return;
    const struct cfc_config cfg = Config();
    const char* why = cfc_config_check(&cfg);
    NS_ABORT_MSG_IF(why, "ConfuciusQueueDisc: " << why);
    struct cfc_pkt* dropped = nullptr;
    cfc_change(&m_core, &cfg, NowNs(), &dropped);
    DropChain(dropped);
    Wake(); // a held-back packet may be due at once at the new rate
}

DataRate
ConfuciusQueueDisc::GetBandwidth() const
{
    return m_bandwidth;
}

uint32_t
ConfuciusQueueDisc::Hash(Ptr<const QueueDiscItem> item) const
{
    return item->Hash(m_perturbation);
}

/* An address's bytes and the perturbation, hashed as the kernel keys its hosts' hashes. */
static uint32_t
AddressHash(const uint8_t* bytes, size_t len, uint32_t perturbation)
{
    uint8_t buf[16 + sizeof(perturbation)];
    std::memcpy(buf, bytes, len);
    std::memcpy(buf + len, &perturbation, sizeof(perturbation));
    return Hash32(reinterpret_cast<const char*>(buf), len + sizeof(perturbation));
}

/* The item's flow and its hosts' addresses; items that are not IP come from and go to one host. */
struct cfc_key
ConfuciusQueueDisc::Key(Ptr<const QueueDiscItem> item) const
{
    struct cfc_key key = {Hash(item), 0, 0};
    uint8_t src[16];
    uint8_t dst[16];
    if (auto v4 = DynamicCast<const Ipv4QueueDiscItem>(item))
    {
        v4->GetHeader().GetSource().Serialize(src);
        v4->GetHeader().GetDestination().Serialize(dst);
        key.srchost = AddressHash(src, 4, m_perturbation);
        key.dsthost = AddressHash(dst, 4, m_perturbation);
    }
    else if (auto v6 = DynamicCast<const Ipv6QueueDiscItem>(item))
    {
        v6->GetHeader().GetSource().Serialize(src);
        v6->GetHeader().GetDestination().Serialize(dst);
        key.srchost = AddressHash(src, 16, m_perturbation);
        key.dsthost = AddressHash(dst, 16, m_perturbation);
    }
    return key;
}

/*
 * Mode external: a packet filter's result 1..K names the class (tc's classid
 * minor), else the packet's priority 1..K does (the kernel's skb->priority),
 * else class 1.
 */
uint32_t
ConfuciusQueueDisc::ExternalClass(Ptr<QueueDiscItem> item)
{
    const int32_t k = m_core.cfg.classes;
    int32_t byFilter = GetNPacketFilters() ? Classify(item) : PacketFilter::PF_NO_MATCH;
    if (byFilter >= 1 && byFilter <= k)
        return byFilter - 1;
    SocketPriorityTag tag;
    if (item->GetPacket()->PeekPacketTag(tag) && tag.GetPriority() >= 1 && tag.GetPriority() <= k)
        return tag.GetPriority() - 1;
    return 0;
}

/*
 * Whether the item's IP header says its transport is ECN-capable: ECT(0), ECT(1)
 * or already CE, as the kernel's host reads it. Anything else is never marked.
 */
static bool
IsEcnCapable(Ptr<const QueueDiscItem> item)
{
    if (auto v4 = DynamicCast<const Ipv4QueueDiscItem>(item))
        return v4->GetHeader().GetEcn() != Ipv4Header::ECN_NotECT;
    if (auto v6 = DynamicCast<const Ipv6QueueDiscItem>(item))
        return v6->GetHeader().GetEcn() != Ipv6Header::ECN_NotECT;
    return false;
}

void
ConfuciusQueueDisc::DropChain(struct cfc_pkt* chain)
{
    while (chain)
    {
        Node* node = container_of(chain, Node, pkt);
        chain = chain->next;
        Ptr<QueueDiscItem> item = m_store->Take(node->pos);
        delete node;
        DropAfterDequeue(item, CONFUCIUS_DROP);
    }
}

void
ConfuciusQueueDisc::ReleaseChain(struct cfc_pkt* chain)
{
    while (chain)
    {
        Node* node = container_of(chain, Node, pkt);
        chain = chain->next;
        m_store->Take(node->pos);
        delete node;
    }
}

bool
ConfuciusQueueDisc::DoEnqueue(Ptr<QueueDiscItem> item)
{
    Node* node = new Node{};
    node->pkt.len = item->GetSize();
    node->pkt.truesize = item->GetSize();
    node->pkt.ect = IsEcnCapable(item);
    const uint32_t cls = m_core.cfg.mode == CFC_MODE_EXTERNAL ? ExternalClass(item) : 0;
    node->pos = m_store->Add(item);
    struct cfc_pkt* dropped = nullptr;
    const struct cfc_key key = Key(item);
    cfc_enqueue(&m_core, &node->pkt, &key, cls, NowNs(), &dropped);
    // The core may drop the packet just queued (its flow is the fattest): then the
    // enqueue still succeeded, as the kernel's does, and the drop is counted after it.
    DropChain(dropped);
    return true;
}

Ptr<QueueDiscItem>
ConfuciusQueueDisc::DoDequeue()
{
    const uint64_t now = NowNs();
    struct cfc_pkt* dropped = nullptr;
    struct cfc_pkt* pkt = cfc_dequeue(&m_core, now, &dropped);
    DropChain(dropped);
    if (!pkt)
    {
        WakeAt(cfc_throttled_until(&m_core, now));
        return nullptr;
    }
    Node* node = container_of(pkt, Node, pkt);
    Ptr<QueueDiscItem> item = m_store->Take(node->pos);
    const bool ce = pkt->ce;
    delete node;
    // The core sets ce only on packets the host found ECN-capable: the mark always lands.
    const bool marked = !ce || Mark(item, CONFUCIUS_MARK);
    NS_ABORT_MSG_UNLESS(marked, "ConfuciusQueueDisc: a CE mark did not land");
    return item;
}

/* The kernel's watchdog: run the disc again when the shaper lets the next packet go. */
void
ConfuciusQueueDisc::WakeAt(uint64_t ns)
{
    if (!ns)
        return;
    const Time at = Ns(ns);
    if (m_wake.IsPending() && Simulator::Now() + Simulator::GetDelayLeft(m_wake) <= at)
        return; // already woken in time
    m_wake.Cancel();
    m_wake = Simulator::Schedule(at - Simulator::Now(), &ConfuciusQueueDisc::Wake, this);
}

void
ConfuciusQueueDisc::Wake()
{
    Run();
}

struct cfc_config
ConfuciusQueueDisc::CoreConfig() const
{
    return m_core.cfg;
}

struct cfc_stats
ConfuciusQueueDisc::CoreStats()
{
    struct cfc_stats st;
    cfc_advance(&m_core, NowNs());
    cfc_stats(&m_core, &st);
    return st;
}

/* As the kernel's dump: the core brought up to date, then every bucket that holds a flow. */
std::vector<ConfuciusQueueDisc::Flow>
ConfuciusQueueDisc::Flows()
{
    const uint64_t now = NowNs();
    cfc_advance(&m_core, now);
    std::vector<Flow> flows;
    for (uint32_t bucket = 0; bucket < m_core.cfg.flows; bucket++)
    {
        Flow flow{bucket, {}, std::nullopt};
        if (!cfc_flow_stats(&m_core, bucket, now, &flow.stats))
            continue;
        if (const struct cfc_pkt* head = m_core.flows[bucket].head)
            flow.head = ReadPorts(*container_of(head, Node, pkt)->pos);
        flows.push_back(flow);
    }
    return flows;
}

uint32_t
ConfuciusQueueDisc::FlowWeight(Ptr<const QueueDiscItem> item)
{
    cfc_advance(&m_core, NowNs());
    return cfc_flow_weight(&m_core, cfc_bucket(&m_core, Hash(item)));
}

int
ConfuciusQueueDisc::FlowClass(Ptr<const QueueDiscItem> item)
{
    cfc_advance(&m_core, NowNs());
    return cfc_flow_class(&m_core, cfc_bucket(&m_core, Hash(item)));
}

void
ConfuciusQueueDisc::DoDispose()
{
    m_wake.Cancel();
    if (m_started)
    {
        // The simulation is over: what is still queued is let go, not dropped (a drop
        // reaches a parent disc, TBF's, which ns-3 may have disposed of already).
        ReleaseChain(cfc_reset(&m_core, NowNs()));
        m_started = false;
    }
    m_store = nullptr;
    QueueDisc::DoDispose();
}

} // namespace ns3
