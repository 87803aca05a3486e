// SPDX-License-Identifier: MIT
#include "rt-tcp-flow.h"

#include "app-parts.h"

#include "ns3/abort.h"
#include "ns3/boolean.h"
#include "ns3/inet-socket-address.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"
#include "ns3/tcp-bbr.h"
#include "ns3/tcp-cubic.h"
#include "ns3/tcp-l4-protocol.h"
#include "ns3/tcp-socket-factory.h"
#include "ns3/tcp-tx-buffer.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cstring>

namespace ns3
{

namespace
{

/*
 * The socket buffers Linux's autotuning may grow to (Debian's tcp_wmem and tcp_rmem
 * maxima), as the lab's rtflow runs with: the congestion window, not a buffer, limits
 * what is in flight. (ns-3's default of 128 KiB would cap the window near one
 * bandwidth-delay product at 20 Mbit/s and 40 ms.)
 */
const uint32_t SEND_BUFFER = 4 << 20;
const uint32_t RECEIVE_BUFFER = 6 << 20;
/* IPv4's header; the TCP header's own length comes with each segment. */
const uint32_t IP_HEADER = 20;

} // namespace

/* ------------------------------------------------------------------ sender */

struct RtTcpFlowSender::Pending
{
    std::array<uint8_t, MEDIA_HEADER_LEN> header;
    uint64_t size;    // header and payload
    uint64_t written; // of them, handed to the socket
    uint64_t captureNs;
};

NS_OBJECT_ENSURE_REGISTERED(RtTcpFlowSender);

TypeId
RtTcpFlowSender::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::RtTcpFlowSender")
            .SetParent<RtVideoSender>()
            .SetGroupName("Applications")
            .AddConstructor<RtTcpFlowSender>()
            .AddAttribute("CongestionControl", "The connection's TCP congestion control (ns3::TcpBbr, "
                          "ns3::TcpCubic, ns3::TcpVegas, ...)",
                          TypeIdValue(TcpCubic::GetTypeId()), MakeTypeIdAccessor(&RtTcpFlowSender::m_cca),
                          MakeTypeIdChecker())
            .AddAttribute("NotSentLowat", "Bytes the socket may hold unsent (TCP_NOTSENT_LOWAT; rtflow's "
                          "--notsent-lowat default)",
                          UintegerValue(rtc_tcp_notsent_lowat()), MakeUintegerAccessor(&RtTcpFlowSender::m_lowat),
                          MakeUintegerChecker<uint32_t>(1));
    return tid;
}

RtTcpFlowSender::RtTcpFlowSender()
    : m_lowat(rtc_tcp_notsent_lowat()),
      m_adapter(nullptr),
      m_connected(false),
      m_blocked(false),
      m_written(0),
      m_sentPackets(0),
      m_cwnd(0),
      m_ssthresh(UINT32_MAX),
      m_retransmitted(0),
      m_loggedWritten(0),
      m_loggedAcked(0),
      m_loggedPackets(0),
      m_loggedRetransmitted(0)
{
}

uint64_t
RtTcpFlowSender::SentPackets() const
{
    return m_sentPackets;
}

double
RtTcpFlowSender::TargetBps() const
{
    return m_adapter ? rtc_tcp_target_bps(m_adapter) : m_startRate.GetBitRate();
}

uint64_t
RtTcpFlowSender::FramesWaiting() const
{
    return m_queue.size();
}

/* The connection first, as rtflow's sender: frames start once it is up. The congestion
 * control is this socket's alone (the page's connections keep theirs). */
void
RtTcpFlowSender::StartApplication()
{
    m_adapter = rtc_tcp_new(m_startRate.GetBitRate(), m_minRate.GetBitRate(), m_maxRate.GetBitRate(),
                            FrameIntervalNs());
    NS_ABORT_MSG_UNLESS(m_adapter, "RtTcpFlowSender: rates must be 0 < MinRate <= StartRate <= MaxRate");
    m_socket = DynamicCast<TcpSocketBase>(GetNode()->GetObject<TcpL4Protocol>()->CreateSocket(m_cca));
    m_socket->SetAttribute("SndBufSize", UintegerValue(SEND_BUFFER));
    m_socket->SetAttribute("TcpNoDelay", BooleanValue(true));
    // Linux's BBR paces its own packets; ns-3's BBR expects pacing on.
    if (m_cca == TcpBbr::GetTypeId())
        m_socket->SetPacingStatus(true);
    Trace("HighestSequence", MakeCallback(&RtTcpFlowSender::OnHighestSequence, this));
    Trace("Tx", MakeCallback(&RtTcpFlowSender::OnSegment, this));
    // What TCP_INFO gives rtflow's rate log, as the socket's state changes.
    Trace("Retransmission", MakeCallback(&RtTcpFlowSender::OnRetransmission, this));
    Trace("CongestionWindow", Callback<void, uint32_t, uint32_t>([this](uint32_t, uint32_t cwnd) { m_cwnd = cwnd; }));
    Trace("RTT", Callback<void, Time, Time>([this](Time, Time srtt) { m_srtt = srtt; }));
    Trace("SlowStartThreshold", Callback<void, uint32_t, uint32_t>([this](uint32_t, uint32_t ssthresh) {
        m_ssthresh = ssthresh;
    }));
    Trace("PacingRate", Callback<void, DataRate, DataRate>([this](DataRate, DataRate rate) { m_pacingRate = rate; }));
    m_socket->SetConnectCallback(MakeCallback(&RtTcpFlowSender::Connected, this),
                                 MakeCallback(&RtTcpFlowSender::ConnectFailed, this));
    m_socket->SetSendCallback([this](Ptr<Socket>, uint32_t) { WakeWriter(); });
    m_socket->Bind();
    m_socket->Connect(m_peer);
}

void
RtTcpFlowSender::Connected(Ptr<Socket>)
{
    m_connected = true;
    StartCapture();
    m_stepEvent = Simulator::Schedule(NanoSeconds(rtc_tcp_interval_ns()), &RtTcpFlowSender::Step, this);
}

void
RtTcpFlowSender::ConnectFailed(Ptr<Socket>)
{
    NS_ABORT_MSG("RtTcpFlowSender: cannot connect to the receiver");
}

/* As rtflow's sender at its end: no more frames; what the socket holds still goes out. */
void
RtTcpFlowSender::StopApplication()
{
    StopCapture();
    m_stepEvent.Cancel();
    m_writeEvent.Cancel();
    m_connected = false;
    if (m_socket)
        m_socket->Close();
}

void
RtTcpFlowSender::DoDispose()
{
    rtc_tcp_free(m_adapter);
    m_adapter = nullptr;
    m_socket = nullptr;
    RtVideoSender::DoDispose();
}

void
RtTcpFlowSender::OnFrame(const VideoFrame& frame)
{
    const uint64_t payload = std::max<uint64_t>(1, frame.bytes > MEDIA_HEADER_LEN ? frame.bytes - MEDIA_HEADER_LEN : 0);
    const MediaHeader h{MEDIA, frame.key, 0, 0, 0, 1, uint32_t(payload), frame.id, frame.id, frame.captureNs};
    Pending pending{{}, MEDIA_HEADER_LEN + payload, 0, frame.captureNs};
    std::memcpy(pending.header.data(), &h, sizeof(h));
    m_queue.push_back(pending);
    if (m_blocked)
        NoteWait();
    else
        Write();
}

/*
 * Bytes not yet sent once: the tx buffer holds every byte from the first unacknowledged
 * to the last written; the highest sequence sent (SND.NXT before any retransmission,
 * the "HighestSequence" trace) splits it. This is what Linux compares with
 * TCP_NOTSENT_LOWAT (write_seq - snd_nxt).
 */
uint64_t
RtTcpFlowSender::Unsent() const
{
    return m_socket->GetTxBuffer()->SizeFromSequence(m_highTxMark);
}

/*
 * TCP_INFO's tcpi_bytes_acked, the running total the peer acknowledged: every byte
 * written less those still in the tx buffer, which drops a byte once it is cumulatively
 * acknowledged (so SACKed bytes count only when the hole before them is filled, as in
 * Linux).
 */
uint64_t
RtTcpFlowSender::Acked() const
{
    return m_written - m_socket->GetTxBuffer()->Size();
}

/*
 * Hands the socket the waiting frames' bytes while it holds fewer than the lowat unsent
 * (Linux's write path); once it refuses, the sender is blocked, as rtflow's after
 * EWOULDBLOCK, until the socket wakes it (WakeWriter).
 */
void
RtTcpFlowSender::Write()
{
    while (m_connected && !m_queue.empty())
    {
        const uint64_t unsent = Unsent();
        const uint64_t room = std::min<uint64_t>(m_lowat > unsent ? m_lowat - unsent : 0, m_socket->GetTxAvailable());
        m_blocked = room == 0;
        if (m_blocked)
            break;
        Pending& front = m_queue.front();
        const uint32_t n = static_cast<uint32_t>(std::min(room, front.size - front.written));
        Ptr<Packet> bytes;
        if (front.written < MEDIA_HEADER_LEN)
        {
            std::vector<uint8_t> chunk(n, 0);
            std::memcpy(chunk.data(), front.header.data() + front.written,
                        std::min<uint64_t>(n, MEDIA_HEADER_LEN - front.written));
            bytes = Create<Packet>(chunk.data(), n);
        }
        else
            bytes = Create<Packet>(n); // payload: zeros, as rtflow's
        NS_ABORT_MSG_UNLESS(m_socket->Send(bytes, 0) == int(n), "RtTcpFlowSender: the socket refused bytes it had room for");
        front.written += n;
        m_written += n;
        if (front.written == front.size)
            m_queue.pop_front();
    }
    NoteWait();
}

/*
 * Linux wakes a blocked writer (EPOLLOUT) only once fewer than half the lowat wait unsent
 * (tcp_stream_memory_free with wake = 1); the writer then runs after the event that made
 * room, as a woken process would.
 */
void
RtTcpFlowSender::WakeWriter()
{
    if (m_connected && m_blocked && 2 * Unsent() < m_lowat && m_socket->GetTxAvailable() > 0 &&
        !m_writeEvent.IsPending())
        m_writeEvent = Simulator::ScheduleNow(&RtTcpFlowSender::Write, this);
}

void
RtTcpFlowSender::OnHighestSequence(SequenceNumber32, SequenceNumber32 after)
{
    m_highTxMark = after;
    WakeWriter();
}

void
RtTcpFlowSender::Trace(const std::string& source, const CallbackBase& callback)
{
    NS_ABORT_MSG_UNLESS(m_socket->TraceConnectWithoutContext(source, callback),
                        "RtTcpFlowSender: the socket has no trace source " << source);
}

void
RtTcpFlowSender::OnRetransmission(Ptr<const Packet>, const TcpHeader&, const Address&, const Address&,
                                  Ptr<const TcpSocketBase>)
{
    m_retransmitted++;
}

/*
 * TCP_INFO's pacing rate: the paced socket's own (BBR); for one ns-3 does not pace
 * (Cubic, Vegas), the rate Linux computes for every socket all the same
 * (tcp_update_pacing_rate: the window over the smoothed RTT, twice that in slow start,
 * 1.2 times after), which rtflow logs in the lab whether or not anything applies it.
 */
double
RtTcpFlowSender::PacingBps() const
{
    if (m_pacingRate)
        return m_pacingRate->GetBitRate();
    if (!m_srtt || !m_srtt->IsStrictlyPositive())
        return 0;
    const double ratio = m_cwnd < m_ssthresh / 2 ? 2.0 : 1.2;
    return ratio * m_cwnd * 8 / m_srtt->GetSeconds();
}

/*
 * rtflow's TCP sender (tcp_send.rs log_rates) from TCP_INFO; here from the socket's state:
 * the adapter's target, the socket's pacing rate, bytes written and acknowledged since
 * the last row, the smoothed RTT, retransmitted over sent data segments, the bytes sent
 * and not yet acknowledged (tcpi_unacked), those waiting in the application and unsent in
 * the socket (tcpi_notsent_bytes), and the congestion window.
 */
RateRow
RtTcpFlowSender::RateLogRow(uint64_t intervalNs)
{
    const uint64_t acked = Acked(), segments = m_sentPackets - m_loggedPackets;
    RateRow row{.targetBps = TargetBps(), .pacingBps = PacingBps()};
    row.sentBps = PerSecond(m_written - m_loggedWritten, intervalNs);
    row.ackedBps = PerSecond(acked - m_loggedAcked, intervalNs);
    if (m_srtt)
        row.srttMs = m_srtt->GetSeconds() * 1e3;
    if (segments)
        row.loss = double(m_retransmitted - m_loggedRetransmitted) / segments;
    const uint64_t unsent = Unsent();
    row.inFlightBytes = m_socket->GetTxBuffer()->Size() - unsent;
    uint64_t waiting = 0;
    for (const auto& p : m_queue)
        waiting += p.size - p.written;
    row.queueBytes = waiting + unsent;
    row.cwndBytes = m_cwnd;
    m_loggedWritten = m_written;
    m_loggedAcked = acked;
    m_loggedPackets = m_sentPackets;
    m_loggedRetransmitted = m_retransmitted;
    return row;
}

void
RtTcpFlowSender::OnSegment(Ptr<const Packet> p, const TcpHeader&, Ptr<const TcpSocketBase>)
{
    if (p->GetSize() > 0)
        m_sentPackets++;
}

/* How long the oldest frame not yet wholly in the socket has waited so far. */
void
RtTcpFlowSender::NoteWait()
{
    if (!m_queue.empty())
        rtc_tcp_note_wait(m_adapter, NowNs() - m_queue.front().captureNs);
}

void
RtTcpFlowSender::Step()
{
    NoteWait();
    rtc_tcp_update(m_adapter, NowNs(), Acked());
    m_stepEvent = Simulator::Schedule(NanoSeconds(rtc_tcp_interval_ns()), &RtTcpFlowSender::Step, this);
}

/* ---------------------------------------------------------------- receiver */

NS_OBJECT_ENSURE_REGISTERED(RtTcpFlowReceiver);

TypeId
RtTcpFlowReceiver::GetTypeId()
{
    static TypeId tid = TypeId("ns3::RtTcpFlowReceiver")
                            .SetParent<RtVideoReceiver>()
                            .SetGroupName("Applications")
                            .AddConstructor<RtTcpFlowReceiver>();
    return tid;
}

RtTcpFlowReceiver::RtTcpFlowReceiver()
    : m_headerStartedNs(0),
      m_remaining(0)
{
}

void
RtTcpFlowReceiver::StartApplication()
{
    m_listener = Socket::CreateSocket(GetNode(), TcpSocketFactory::GetTypeId());
    // Accepted connections copy the listener's buffer, and so the window scale it implies.
    m_listener->SetAttribute("RcvBufSize", UintegerValue(RECEIVE_BUFFER));
    m_listener->Bind(InetSocketAddress(Ipv4Address::GetAny(), m_port));
    m_listener->Listen();
    m_listener->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
                                  MakeCallback(&RtTcpFlowReceiver::Accepted, this));
}

void
RtTcpFlowReceiver::StopApplication()
{
    for (Ptr<Socket> s : {m_connection, m_listener})
        if (s)
            s->Close();
}

/* One stream at a time, as rtflow's receiver: a second connection is closed at once. */
void
RtTcpFlowReceiver::Accepted(Ptr<Socket> socket, const Address&)
{
    if (m_connection)
    {
        socket->Close();
        return;
    }
    m_connection = socket;
    socket->SetRecvCallback(MakeCallback(&RtTcpFlowReceiver::OnData, this));
    socket->TraceConnectWithoutContext("Rx", MakeCallback(&RtTcpFlowReceiver::OnSegment, this));
}

void
RtTcpFlowReceiver::OnSegment(Ptr<const Packet> p, const TcpHeader& header, Ptr<const TcpSocketBase>)
{
    if (p->GetSize() > 0)
        m_rx(p->GetSize() + IP_HEADER + header.GetLength() * 4);
}

void
RtTcpFlowReceiver::OnData(Ptr<Socket> socket)
{
    Ptr<Packet> packet;
    std::vector<uint8_t> bytes;
    while ((packet = socket->Recv()))
    {
        bytes.resize(packet->GetSize());
        packet->CopyData(bytes.data(), bytes.size());
        Consume(bytes.data(), bytes.size(), NowNs());
    }
}

/* rtflow's TcpFrames: a header, then its frame size of payload; a frame is logged whole,
 * its first arrival that of its header's first byte. */
void
RtTcpFlowReceiver::Consume(const uint8_t* data, size_t size, uint64_t now)
{
    while (size > 0)
    {
        if (!m_current)
        {
            if (m_header.empty())
                m_headerStartedNs = now;
            const size_t take = std::min<size_t>(MEDIA_HEADER_LEN - m_header.size(), size);
            m_header.insert(m_header.end(), data, data + take);
            data += take;
            size -= take;
            if (m_header.size() < MEDIA_HEADER_LEN)
                return;
            MediaHeader h;
            std::memcpy(&h, m_header.data(), sizeof(h));
            NS_ABORT_MSG_UNLESS(h.kind == MEDIA, "RtTcpFlowReceiver: the TCP peer does not speak rtflow");
            m_header.clear();
            m_current = {h, m_headerStartedNs};
            m_remaining = h.frameBytes;
        }
        const uint64_t take = std::min<uint64_t>(m_remaining, size);
        m_remaining -= take;
        data += take;
        size -= take;
        if (m_remaining == 0)
        {
            const auto& [h, first] = *m_current;
            m_frames[h.frame] = FrameRecord{h.captureNs, h.key != 0, h.frameBytes, std::nullopt, first, now};
            m_current.reset();
        }
    }
}

/* The stream is in order: frames after the newest that arrived have not, and the next
 * was captured one frame interval (the last two frames' distance) after it. */
bool
RtTcpFlowReceiver::FramesMissingBefore(uint64_t toNs) const
{
    if (m_frames.size() < 2)
        return m_frames.empty() || m_frames.rbegin()->second.captureNs < toNs;
    const auto newest = m_frames.rbegin(), previous = std::next(newest);
    const uint64_t interval = newest->second.captureNs - previous->second.captureNs;
    return newest->second.captureNs + interval <= toNs;
}

} // namespace ns3
