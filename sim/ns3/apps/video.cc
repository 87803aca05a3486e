// SPDX-License-Identifier: MIT
#include "video.h"

#include "app-parts.h"

#include "ns3/abort.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>

namespace ns3
{

uint64_t
NowNs()
{
    return static_cast<uint64_t>(Simulator::Now().GetNanoSeconds());
}

std::optional<double>
PerSecond(uint64_t bytes, uint64_t intervalNs)
{
    if (!intervalNs)
        return std::nullopt;
    return bytes * 8e9 / intervalNs;
}

namespace
{

/* rtflow's CSV fields (logs.rs): a float with `digits` decimals, an integer, or empty. */
void
Field(std::ostream& out, std::optional<double> value, int digits)
{
    out << ',';
    if (value && std::isfinite(*value))
        out << std::fixed << std::setprecision(digits) << *value << std::defaultfloat;
}

void
Field(std::ostream& out, std::optional<uint64_t> value)
{
    out << ',';
    if (value)
        out << *value;
}

} // namespace

/* ------------------------------------------------------------------ sender */

NS_OBJECT_ENSURE_REGISTERED(RtVideoSender);

TypeId
RtVideoSender::GetTypeId()
{
    static TypeId tid = [] {
        TypeId t = WithRemote(TypeId("ns3::RtVideoSender").SetParent<Application>().SetGroupName("Applications"),
                              "The receiver", &RtVideoSender::m_peer)
                       .AddAttribute("Fps", "Frames per second", UintegerValue(60),
                                     MakeUintegerAccessor(&RtVideoSender::m_fps),
                                     MakeUintegerChecker<uint32_t>(1, 1000))
                       .AddAttribute("KeyInterval", "Time between key frames (0: only the first)",
                                     TimeValue(Seconds(2)), MakeTimeAccessor(&RtVideoSender::m_keyInterval),
                                     MakeTimeChecker());
        AddRate(t, "StartRate", "The controller's first rate", "1Mbps", &RtVideoSender::m_startRate);
        AddRate(t, "MinRate", "The controller's least rate", "100kbps", &RtVideoSender::m_minRate);
        AddRate(t, "MaxRate", "The controller's greatest rate", "100Mbps", &RtVideoSender::m_maxRate);
        AddNumber(t, "KeyRatio", "A key frame's size relative to a delta frame", 4.0,
                  &RtVideoSender::m_keyRatio, 1.0);
        t.AddAttribute("RateLog", "rtflow's rate log (CSV), a row every LogInterval; empty: none",
                       StringValue(""), MakeStringAccessor(&RtVideoSender::m_rateLogPath), MakeStringChecker())
            .AddAttribute("LogInterval", "Time between rows of the rate log (rtflow's --log-interval)",
                          TimeValue(MilliSeconds(50)), MakeTimeAccessor(&RtVideoSender::m_logInterval),
                          MakeTimeChecker(NanoSeconds(1)));
        return t;
    }();
    return tid;
}

RtVideoSender::RtVideoSender()
    : m_fps(60),
      m_keyRatio(4.0),
      m_startNs(0),
      m_frameId(0),
      m_logInterval(MilliSeconds(50)),
      m_loggedNs(0)
{
}

uint64_t
RtVideoSender::FramesCaptured() const
{
    return m_frameId;
}

uint64_t
RtVideoSender::FrameIntervalNs() const
{
    return 1000000000ull / m_fps;
}

void
RtVideoSender::StartCapture()
{
    m_startNs = NowNs();
    Capture();
    if (m_rateLogPath.empty())
        return;
    m_rateLog.open(m_rateLogPath);
    NS_ABORT_MSG_UNLESS(m_rateLog, "RtVideoSender: cannot write " << m_rateLogPath);
    m_rateLog << "time_ns,target_bps,pacing_bps,sent_bps,acked_bps,srtt_ms,loss,in_flight_bytes,"
                 "queue_bytes,cwnd_bytes\n";
    m_loggedNs = m_startNs;
    LogRates();
}

void
RtVideoSender::StopCapture()
{
    m_captureEvent.Cancel();
    m_logEvent.Cancel();
}

/* A row as rtflow's senders write it (udp_send.rs, tcp_send.rs log_rates). */
void
RtVideoSender::LogRates()
{
    const uint64_t now = NowNs();
    const RateRow row = RateLogRow(now - m_loggedNs);
    m_loggedNs = now;
    m_rateLog << now;
    Field(m_rateLog, row.targetBps, 0);
    Field(m_rateLog, row.pacingBps, 0);
    Field(m_rateLog, row.sentBps, 0);
    Field(m_rateLog, row.ackedBps, 0);
    Field(m_rateLog, row.srttMs, 3);
    Field(m_rateLog, row.loss, 4);
    Field(m_rateLog, row.inFlightBytes);
    Field(m_rateLog, row.queueBytes);
    Field(m_rateLog, row.cwndBytes);
    m_rateLog << '\n';
    m_logEvent = Simulator::Schedule(m_logInterval, &RtVideoSender::LogRates, this);
}

void
RtVideoSender::DoDispose()
{
    m_logEvent.Cancel();
    m_rateLog.close();
    Application::DoDispose();
}

/* rtflow's encoder: a group of pictures averages the target; key frames are KeyRatio deltas. */
VideoFrame
RtVideoSender::Encode(double targetBps) const
{
    const uint64_t gop = static_cast<uint64_t>(std::llround(m_keyInterval.GetSeconds() * m_fps));
    const bool key = gop ? m_frameId % gop == 0 : m_frameId == 0;
    const double average = targetBps / 8.0 / m_fps;
    const double delta = gop > 1 ? average * gop / (gop - 1.0 + m_keyRatio) : average;
    const uint64_t bytes = std::max<uint64_t>(1, std::llround(key ? delta * m_keyRatio : delta));
    return VideoFrame{m_frameId, NowNs(), key, bytes};
}

void
RtVideoSender::Capture()
{
    const VideoFrame frame = Encode(TargetBps());
    m_frameId++;
    OnFrame(frame);
    const uint64_t next = m_startNs + m_frameId * 1000000000ull / m_fps;
    m_captureEvent = Simulator::Schedule(NanoSeconds(next - NowNs()), &RtVideoSender::Capture, this);
}

/* ---------------------------------------------------------------- receiver */

NS_OBJECT_ENSURE_REGISTERED(RtVideoReceiver);

TypeId
RtVideoReceiver::GetTypeId()
{
    static TypeId tid =
        WithPort(TypeId("ns3::RtVideoReceiver").SetParent<Application>().SetGroupName("Applications"),
                 "The port it listens on", 5000, &RtVideoReceiver::m_port)
            .AddAttribute("FrameLog", "rtflow's frame log (CSV) written here at the end; empty: none",
                          StringValue(""), MakeStringAccessor(&RtVideoReceiver::m_frameLog),
                          MakeStringChecker())
            .AddTraceSource("Rx", "A packet of the flow arrived: its size with its IP and transport headers",
                            MakeTraceSourceAccessor(&RtVideoReceiver::m_rx),
                            "ns3::RtVideoReceiver::RxTracedCallback");
    return tid;
}

RtVideoReceiver::RtVideoReceiver()
    : m_port(5000)
{
}

bool
RtVideoReceiver::FramesMissingBefore(uint64_t) const
{
    return false;
}

bool
RtVideoReceiver::OnTimeBetween(uint64_t fromNs, uint64_t toNs, uint64_t lateNs) const
{
    if (FramesMissingBefore(toNs))
        return false;
    bool any = false;
    for (auto it = m_frames.rbegin(); it != m_frames.rend() && it->second.captureNs >= fromNs; ++it)
    {
        const FrameRecord& f = it->second;
        if (f.captureNs > toNs)
            continue;
        if (!f.Complete() || f.lastNs - f.captureNs > lateNs)
            return false;
        any = true;
    }
    return any;
}

/* The log is written when the simulation is torn down, so that a run stopped early (after
 * a page's tail) logs its frames as one that ran to the receiver's stop time. */
void
RtVideoReceiver::DoDispose()
{
    WriteFrameLog();
    Application::DoDispose();
}

/* rtflow's frame log (tools/rtflow/src/logs.rs FRAME_LOG_HEADER): frames seen, in order;
 * the packet columns empty in TCP mode, as rtflow's. */
void
RtVideoReceiver::WriteFrameLog() const
{
    if (m_frameLog.empty())
        return;
    std::ofstream out(m_frameLog);
    NS_ABORT_MSG_UNLESS(out, "RtVideoReceiver: cannot write " << m_frameLog);
    out << "frame_id,capture_ns,key,size_bytes,packets,packets_received,first_arrival_ns,"
           "last_arrival_ns,delay_ms,complete\n";
    for (const auto& [id, f] : m_frames)
    {
        const bool complete = f.Complete();
        out << id << "," << f.captureNs << "," << (f.key ? 1 : 0) << "," << f.bytes << ",";
        if (f.packets)
            out << f.packets->first << "," << f.packets->second;
        else
            out << ",";
        out << "," << f.firstNs << "," << f.lastNs << ",";
        if (complete)
            out << std::fixed << std::setprecision(3) << (f.lastNs - f.captureNs) / 1e6
                << std::defaultfloat;
        out << "," << (complete ? 1 : 0) << "\n";
    }
}

} // namespace ns3
