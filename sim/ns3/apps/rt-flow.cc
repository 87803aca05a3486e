// SPDX-License-Identifier: MIT
#include "rt-flow.h"

#include "app-parts.h"

#include "ns3/abort.h"
#include "ns3/data-rate.h"
#include "ns3/inet-socket-address.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/udp-socket-factory.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace ns3
{

namespace
{

/* rtflow's datagram sizes (tools/rtcontrol/src/packet.rs, tools/rtflow/src/wire.rs). */
const uint32_t MAX_DATAGRAM = 1200;
const uint32_t IP_UDP_OVERHEAD = 28;
/* A packet with no feedback for this long counts as lost (rtflow's history). */
const uint64_t FORGET_AFTER_NS = 2000000000ull;
const size_t MAX_PROBES = 4;
/* rtflow's pacer (tools/rtflow/src/pacer.rs): tokens saved while idle, shortest sleep. */
const double MAX_BURST_NS = 5e6;
const uint64_t MIN_WAKE_NS = 1000000;

struct FeedbackEntry
{
    uint64_t seq;
    uint64_t arrivalNs;
    uint8_t received;
} __attribute__((packed));

const uint32_t FEEDBACK_HEADER = 1 + 8 + 2;
const size_t ENTRIES_PER_REPORT = (MAX_DATAGRAM - FEEDBACK_HEADER) / sizeof(FeedbackEntry);

int
ControllerKind(const std::string& mode)
{
    if (mode == "gcc")
        return RTC_GCC;
    if (mode == "copa")
        return RTC_COPA;
    if (mode == "fixed")
        return RTC_FIXED;
    NS_ABORT_MSG("RtFlowSender: Controller must be gcc, copa or fixed, got '" << mode << "'");
}

} // namespace

/* ------------------------------------------------------------------ sender */

struct RtFlowSender::Piece
{
    MediaHeader header;
    uint32_t datagram; // bytes of UDP payload
    bool resent;       // sent once more already (rtflow resends a piece once)
};

struct RtFlowSender::Record
{
    uint64_t sendNs;
    uint32_t wire;
    uint64_t inFlight;
    std::optional<struct rtc_probe> probe;
    std::optional<Piece> media; // what to send again if it is lost
};

struct RtFlowSender::ActiveProbe
{
    struct rtc_probe probe;
    uint64_t packets, bytes;
};

NS_OBJECT_ENSURE_REGISTERED(RtFlowSender);

TypeId
RtFlowSender::GetTypeId()
{
    static TypeId tid = [] {
        TypeId t =
            TypeId("ns3::RtFlowSender")
                .SetParent<RtVideoSender>()
                .SetGroupName("Applications")
                .AddConstructor<RtFlowSender>()
                .AddAttribute("Controller", "gcc, copa or fixed (at StartRate)", StringValue("gcc"),
                              MakeStringAccessor(&RtFlowSender::m_mode), MakeStringChecker());
        AddNumber(t, "PacingFactor", "Pacing rate over target (GCC, fixed)", 2.5,
                  &RtFlowSender::m_pacingFactor, 1.0, 100.0);
        AddNumber(t, "CopaDelta", "Copa's delta", 0.5, &RtFlowSender::m_copaDelta, 0.0, 10.0);
        t.AddAttribute("RetransmitWindow",
                       "Resend a lost piece of a frame captured less than this long ago, once, "
                       "ahead of new media (rtflow's --retransmit-window; 0: never)",
                       TimeValue(Time(0)), MakeTimeAccessor(&RtFlowSender::m_retransmitWindow),
                       MakeTimeChecker(Time(0)));
        return t;
    }();
    return tid;
}

RtFlowSender::RtFlowSender()
    : m_pacingFactor(2.5),
      m_copaDelta(0.5),
      m_ctl(nullptr),
      m_seq(0),
      m_inFlight(0),
      m_sentPackets(0),
      m_tokens(0),
      m_refilledNs(0),
      m_linkBps(0),
      m_linkFreeNs(0),
      m_sentBytes(0),
      m_ackedBytes(0),
      m_received(0),
      m_lost(0)
{
}

uint64_t
RtFlowSender::SentPackets() const
{
    return m_sentPackets;
}

double
RtFlowSender::TargetBps() const
{
    return m_ctl ? rtc_target_bps(m_ctl) : 0;
}

/* Media frames with a datagram still in the pacer's queue (a frame's datagrams are adjacent). */
uint64_t
RtFlowSender::FramesWaiting() const
{
    uint64_t frames = 0;
    std::optional<uint64_t> last;
    for (const auto& p : m_queue)
    {
        if (p.header.frame != last)
            frames++;
        last = p.header.frame;
    }
    return frames;
}

/* The slowest data rate among the node's devices (its one link), 0 if none has one. */
static uint64_t
LinkBps(Ptr<Node> node)
{
    uint64_t bps = 0;
    for (uint32_t i = 0; i < node->GetNDevices(); i++)
    {
        DataRateValue rate;
        if (node->GetDevice(i)->GetAttributeFailSafe("DataRate", rate))
            bps = bps ? std::min(bps, rate.Get().GetBitRate()) : rate.Get().GetBitRate();
    }
    return bps;
}

void
RtFlowSender::StartApplication()
{
    m_refilledNs = NowNs();
    m_linkBps = LinkBps(GetNode());
    m_ctl = rtc_new(ControllerKind(m_mode), m_refilledNs, m_startRate.GetBitRate(),
                    m_minRate.GetBitRate(), m_maxRate.GetBitRate(), m_pacingFactor, m_copaDelta);
    NS_ABORT_MSG_UNLESS(m_ctl, "RtFlowSender: rates must be 0 < MinRate <= StartRate <= MaxRate");
    m_socket = UdpSocketTo(GetNode(), m_peer);
    m_socket->SetRecvCallback(MakeCallback(&RtFlowSender::OnFeedback, this));
    StartCapture();
    Tick();
}

void
RtFlowSender::StopApplication()
{
    StopCapture();
    m_tickEvent.Cancel();
    m_paceEvent.Cancel();
    if (m_socket)
        m_socket->Close();
}

void
RtFlowSender::DoDispose()
{
    rtc_free(m_ctl);
    m_ctl = nullptr;
    RtVideoSender::DoDispose();
}

/* The frame's budget in datagrams of at most MAX_DATAGRAM, to the pacer. */
void
RtFlowSender::OnFrame(const VideoFrame& frame)
{
    const uint64_t budget = frame.bytes;
    const uint64_t count = (budget + MAX_DATAGRAM + IP_UDP_OVERHEAD - 1) / (MAX_DATAGRAM + IP_UDP_OVERHEAD);
    const struct rtc_feedback_request req = rtc_feedback_request(m_ctl);
    for (uint64_t i = 0; i < count; i++)
    {
        const uint64_t share = budget / count + (i < budget % count ? 1 : 0);
        Piece piece{};
        piece.header = MediaHeader{MEDIA, frame.key, req.every_packets, req.interval_ms, uint16_t(i),
                                   uint16_t(count), uint32_t(budget), 0, frame.id, frame.captureNs};
        piece.datagram = static_cast<uint32_t>(std::clamp<uint64_t>(
            share > IP_UDP_OVERHEAD ? share - IP_UDP_OVERHEAD : 0, MEDIA_HEADER_LEN + 1, MAX_DATAGRAM));
        m_queue.push_back(piece);
    }
    if (!m_paceEvent.IsPending())
        Pace();
}

uint64_t
RtFlowSender::QueueBytes() const
{
    uint64_t bytes = 0;
    for (const auto& p : m_queue)
        bytes += p.datagram + IP_UDP_OVERHEAD;
    return bytes;
}

/* rtflow's UDP sender (udp_send.rs log_rates): the controller's rates, what was sent and
 * resolved since the last row (wire bytes), the history's smoothed RTT, the pacer's queue
 * and a window controller's window. */
RateRow
RtFlowSender::RateLogRow(uint64_t intervalNs)
{
    RateRow row{.targetBps = rtc_target_bps(m_ctl), .pacingBps = rtc_pacing_bps(m_ctl)};
    row.sentBps = PerSecond(std::exchange(m_sentBytes, 0), intervalNs);
    row.ackedBps = PerSecond(std::exchange(m_ackedBytes, 0), intervalNs);
    if (m_srttNs)
        row.srttMs = *m_srttNs / 1e6;
    const uint64_t resolved = m_received + m_lost;
    if (resolved)
        row.loss = double(m_lost) / resolved;
    m_received = m_lost = 0;
    row.inFlightBytes = m_inFlight;
    row.queueBytes = QueueBytes();
    uint64_t cwnd;
    if (rtc_cwnd_bytes(m_ctl, &cwnd))
        row.cwndBytes = cwnd;
    return row;
}

void
RtFlowSender::Tick()
{
    const uint64_t now = NowNs();
    ForgetStale(now);
    rtc_on_tick(m_ctl, now, QueueBytes());
    struct rtc_probe probes[MAX_PROBES];
    size_t n = rtc_take_probes(m_ctl, probes, MAX_PROBES);
    for (size_t i = 0; i < n; i++)
        m_probes.push_back(ActiveProbe{probes[i], 0, 0});
    if (!m_paceEvent.IsPending())
        Pace();
    m_tickEvent = Simulator::Schedule(NanoSeconds(rtc_tick_ns()), &RtFlowSender::Tick, this);
}

/* The rate the pacer runs at: a probe cluster's while one runs (as libwebrtc's prober). */
double
RtFlowSender::PacerRate() const
{
    return m_probes.empty() ? rtc_pacing_bps(m_ctl) : m_probes.front().probe.rate_bps;
}

/*
 * rtflow's pacer: a token bucket in bytes filled at the pacer's rate, holding at
 * most MAX_BURST_NS of it; a packet leaves while the balance is not negative. Media
 * waits while a window controller says too much is in flight; a probe cluster with
 * no media to send is completed with padding. The sender wakes at most every
 * MIN_WAKE_NS after it had to wait, as rtflow's does.
 */
void
RtFlowSender::Pace()
{
    const uint64_t now = NowNs();
    const double rate = PacerRate() / 8.0; // bytes/s
    const double cap = std::max(rate * MAX_BURST_NS / 1e9, double(MAX_DATAGRAM));
    m_tokens = std::min(m_tokens + rate * (now - m_refilledNs) / 1e9, cap);
    m_refilledNs = now;
    for (;;)
    {
        const bool media = !m_queue.empty() && (!m_probes.empty() || rtc_can_send(m_ctl, m_inFlight));
        if ((!media && m_probes.empty()) || m_tokens < 0)
            break;
        Piece piece{};
        if (media)
        {
            piece = m_queue.front();
            m_queue.pop_front();
        }
        else
        {
            const struct rtc_feedback_request req = rtc_feedback_request(m_ctl);
            piece.header = MediaHeader{PADDING, 0, req.every_packets, req.interval_ms, 0, 0, 0, 0, 0, 0};
            piece.datagram = MAX_DATAGRAM;
        }
        m_tokens -= piece.datagram + IP_UDP_OVERHEAD;
        SendPiece(piece);
    }
    const bool waiting = !m_probes.empty() || (!m_queue.empty() && rtc_can_send(m_ctl, m_inFlight));
    if (!waiting)
        return; // idle until a frame, a tick or feedback
    const double rateNow = std::max(PacerRate() / 8.0, 1.0);
    const uint64_t wait = std::max<uint64_t>(MIN_WAKE_NS, uint64_t(-m_tokens / rateNow * 1e9));
    m_paceEvent = Simulator::Schedule(NanoSeconds(wait), &RtFlowSender::Pace, this);
}

/*
 * When a datagram handed to the socket at `now` leaves the node: once its link has sent
 * the ones handed to it before. That is its send time for the controller, so each
 * datagram of a pacer round has its own, as on a real host, where every send call takes
 * microseconds. With one time for the round, libwebrtc's inter-arrival filter (goog_cc's
 * InterArrivalDelta: equal send times are one burst, whatever their arrival) took each
 * round as one group, and GCC detected its overshoot a second later than the lab's
 * (docs/RESULTS.md, "The simulator's send times").
 */
uint64_t
RtFlowSender::Departure(uint64_t now, uint32_t wire)
{
    const uint64_t leaves = std::max(now, m_linkFreeNs);
    m_linkFreeNs = leaves + (m_linkBps ? wire * uint64_t(8'000'000'000) / m_linkBps : 0);
    return leaves;
}

void
RtFlowSender::SendPiece(const Piece& piece)
{
    const uint32_t wire = piece.datagram + IP_UDP_OVERHEAD;
    const uint64_t sentNs = Departure(NowNs(), wire);
    MediaHeader header = piece.header;
    header.seq = m_seq++;
    m_inFlight += wire;
    m_history[header.seq] =
        Record{sentNs, wire, m_inFlight, std::nullopt, header.kind == MEDIA ? std::optional(piece) : std::nullopt};
    if (!m_probes.empty())
    {
        ActiveProbe& active = m_probes.front();
        m_history[header.seq].probe = active.probe;
        rtc_on_sent(m_ctl, header.seq, sentNs, wire, m_inFlight, &active.probe);
        active.packets++;
        active.bytes += wire;
        if (active.packets >= active.probe.min_packets && active.bytes >= active.probe.min_bytes)
            m_probes.pop_front();
    }
    else
        rtc_on_sent(m_ctl, header.seq, sentNs, wire, m_inFlight, nullptr);
    std::vector<uint8_t> bytes(piece.datagram, 0);
    std::memcpy(bytes.data(), &header, sizeof(header));
    if (m_socket->Send(Create<Packet>(bytes.data(), bytes.size())) >= 0)
        m_sentPackets++;
    m_sentBytes += wire;
}

void
RtFlowSender::OnFeedback(Ptr<Socket> socket)
{
    Ptr<Packet> packet;
    while ((packet = socket->Recv()))
    {
        std::vector<uint8_t> bytes(packet->GetSize());
        packet->CopyData(bytes.data(), bytes.size());
        if (bytes.size() < FEEDBACK_HEADER || bytes[0] != FEEDBACK)
            continue;
        uint64_t reportNs;
        uint16_t n;
        std::memcpy(&reportNs, &bytes[1], 8);
        std::memcpy(&n, &bytes[9], 2);
        if (bytes.size() < FEEDBACK_HEADER + n * sizeof(FeedbackEntry))
            continue;
        std::vector<std::pair<uint64_t, std::optional<uint64_t>>> entries;
        for (uint16_t i = 0; i < n; i++)
        {
            FeedbackEntry e;
            std::memcpy(&e, &bytes[FEEDBACK_HEADER + i * sizeof(FeedbackEntry)], sizeof(e));
            const uint64_t seq = e.seq, arrival = e.arrivalNs;
            entries.emplace_back(seq, e.received ? std::optional<uint64_t>(arrival) : std::nullopt);
        }
        Resolve(NowNs(), reportNs, entries);
    }
    if (!m_paceEvent.IsPending())
        Pace();
}

/*
 * rtflow's history: an RTT sample is the report's arrival less the send time and
 * the receiver's hold (its report time less the arrival, both on its clock).
 */
void
RtFlowSender::Resolve(uint64_t now, uint64_t reportNs,
                      const std::vector<std::pair<uint64_t, std::optional<uint64_t>>>& entries)
{
    std::vector<struct rtc_outcome> outcomes;
    std::vector<Piece> lost;
    for (const auto& [seq, arrival] : entries)
    {
        auto it = m_history.find(seq);
        if (it == m_history.end())
            continue;
        const Record r = it->second;
        m_history.erase(it);
        m_inFlight -= r.wire;
        struct rtc_outcome o{seq, r.sendNs, r.wire, r.inFlight, arrival.has_value(), 0, 0,
                             r.probe.has_value(), r.probe.value_or(rtc_probe{-1, 0, 0, 0})};
        if (arrival)
        {
            const uint64_t hold = reportNs > *arrival ? reportNs - *arrival : 0;
            o.arrival_ns = *arrival;
            o.rtt_ns = now - r.sendNs > hold ? now - r.sendNs - hold : 0;
            // rtflow's history: an EWMA of 1/8, and acknowledged wire bytes
            m_srttNs = m_srttNs ? *m_srttNs + (o.rtt_ns - *m_srttNs) / 8.0 : double(o.rtt_ns);
            m_ackedBytes += r.wire;
            m_received++;
        }
        else
        {
            m_lost++;
            if (r.media)
                lost.push_back(*r.media);
        }
        outcomes.push_back(o);
    }
    if (!outcomes.empty())
        rtc_on_feedback(m_ctl, now, outcomes.data(), outcomes.size(), m_inFlight);
    Resend(now, lost);
}

/*
 * rtflow's NACK and RTX (udp_send.rs report, pacer.rs retransmit): the loss report is
 * the NACK; each lost piece of a frame still recent enough to be shown goes to the
 * front of the pacer's queue once, in its order, ahead of new media as libwebrtc's.
 */
void
RtFlowSender::Resend(uint64_t now, const std::vector<Piece>& lost)
{
    const uint64_t window = m_retransmitWindow.GetNanoSeconds();
    for (auto it = lost.rbegin(); it != lost.rend(); ++it)
    {
        if (it->resent || now - it->header.captureNs >= window)
            continue;
        Piece again = *it;
        again.resent = true;
        m_queue.push_front(again);
    }
}

void
RtFlowSender::ForgetStale(uint64_t now)
{
    std::vector<std::pair<uint64_t, std::optional<uint64_t>>> lost;
    for (const auto& [seq, r] : m_history)
    {
        if (now - r.sendNs < FORGET_AFTER_NS)
            break;
        lost.emplace_back(seq, std::nullopt);
    }
    if (!lost.empty())
        Resolve(now, now, lost);
}

/* ---------------------------------------------------------------- receiver */

NS_OBJECT_ENSURE_REGISTERED(RtFlowReceiver);

TypeId
RtFlowReceiver::GetTypeId()
{
    static TypeId tid = TypeId("ns3::RtFlowReceiver")
                            .SetParent<RtVideoReceiver>()
                            .SetGroupName("Applications")
                            .AddConstructor<RtFlowReceiver>();
    return tid;
}

RtFlowReceiver::RtFlowReceiver()
    : m_nextSeq(0),
      m_request{0, 50}
{
}

void
RtFlowReceiver::StartApplication()
{
    m_socket = Socket::CreateSocket(GetNode(), UdpSocketFactory::GetTypeId());
    m_socket->Bind(InetSocketAddress(Ipv4Address::GetAny(), m_port));
    m_socket->SetRecvCallback(MakeCallback(&RtFlowReceiver::OnMedia, this));
}

void
RtFlowReceiver::StopApplication()
{
    m_reportEvent.Cancel();
    if (m_socket)
        m_socket->Close();
}

void
RtFlowReceiver::OnMedia(Ptr<Socket> socket)
{
    Ptr<Packet> packet;
    Address from;
    while ((packet = socket->RecvFrom(from)))
    {
        m_rx(packet->GetSize() + IP_UDP_OVERHEAD);
        MediaHeader h;
        if (packet->GetSize() < sizeof(h))
            continue;
        packet->CopyData(reinterpret_cast<uint8_t*>(&h), sizeof(h));
        const uint64_t now = NowNs();
        m_sender = from;
        m_request = {h.everyPackets, h.intervalMs};
        // Packets skipped over are reported lost (the path does not reorder).
        for (; m_nextSeq < h.seq; m_nextSeq++)
            m_unreported.emplace_back(m_nextSeq, std::nullopt);
        if (h.seq >= m_nextSeq)
        {
            m_unreported.emplace_back(h.seq, now);
            m_nextSeq = h.seq + 1;
        }
        if (h.kind == MEDIA)
        {
            auto [it, fresh] = m_frames.try_emplace(
                h.frame, FrameRecord{h.captureNs, h.key != 0, h.frameBytes, std::pair<uint16_t, uint16_t>{h.count, 0},
                                     now, now});
            it->second.packets->second++;
            it->second.lastNs = now;
        }
        if (m_request.every_packets && m_unreported.size() >= m_request.every_packets)
            Report();
        else if (!m_reportEvent.IsPending())
            m_reportEvent = Simulator::Schedule(MilliSeconds(m_request.interval_ms),
                                                &RtFlowReceiver::Report, this);
    }
}

void
RtFlowReceiver::Report()
{
    m_reportEvent.Cancel();
    const uint64_t now = NowNs();
    for (size_t start = 0; start < m_unreported.size(); start += ENTRIES_PER_REPORT)
    {
        const uint16_t n = static_cast<uint16_t>(std::min(ENTRIES_PER_REPORT, m_unreported.size() - start));
        std::vector<uint8_t> bytes(FEEDBACK_HEADER + n * sizeof(FeedbackEntry));
        bytes[0] = FEEDBACK;
        std::memcpy(&bytes[1], &now, 8);
        std::memcpy(&bytes[9], &n, 2);
        for (uint16_t i = 0; i < n; i++)
        {
            const auto& [seq, arrival] = m_unreported[start + i];
            FeedbackEntry e{seq, arrival.value_or(0), arrival.has_value()};
            std::memcpy(&bytes[FEEDBACK_HEADER + i * sizeof(FeedbackEntry)], &e, sizeof(e));
        }
        m_socket->SendTo(Create<Packet>(bytes.data(), bytes.size()), 0, m_sender);
    }
    m_unreported.clear();
}

} // namespace ns3
