// SPDX-License-Identifier: MIT
/*
 * The real-time video flow of tools/rtflow in ns-3 over UDP, driven by the same
 * rate controllers (tools/rtcontrol through its C ABI): frames at an fps with key
 * frames, sized by the controller's target (video.h); a pacer at its pacing rate (probe
 * clusters padded when there is no media); per-packet feedback from the
 * receiver on the controller's schedule; lost pieces of recent frames sent again
 * ahead of new media (rtflow's NACK and RTX); the receiver's frame log and the
 * sender's rate log in rtflow's formats.
 */
#ifndef CONFUCIUS_RT_FLOW_H
#define CONFUCIUS_RT_FLOW_H

#include "video.h"

#include "ns3/socket.h"

#include "rtcontrol.h"

#include <deque>
#include <map>
#include <optional>
#include <vector>

namespace ns3
{

class RtFlowSender : public RtVideoSender
{
  public:
    static TypeId GetTypeId();
    RtFlowSender();

    uint64_t SentPackets() const override;
    double TargetBps() const override;
    uint64_t FramesWaiting() const override;

  private:
    struct Piece; // one datagram of a frame, or padding
    struct Record;
    struct ActiveProbe;

    void StartApplication() override;
    void StopApplication() override;
    void DoDispose() override;
    void OnFrame(const VideoFrame& frame) override;
    RateRow RateLogRow(uint64_t intervalNs) override;
    void Tick();
    void Pace();
    double PacerRate() const;
    void SendPiece(const Piece& piece);
    uint64_t Departure(uint64_t now, uint32_t wire);
    void OnFeedback(Ptr<Socket> socket);
    void Resolve(uint64_t now, uint64_t reportNs, const std::vector<std::pair<uint64_t, std::optional<uint64_t>>>& entries);
    void ForgetStale(uint64_t now);
    uint64_t QueueBytes() const;
    void Resend(uint64_t now, const std::vector<Piece>& lost);

    std::string m_mode;
    double m_pacingFactor, m_copaDelta;
    Time m_retransmitWindow; // resend a lost piece of a frame younger than this (0: never)

    struct rtc_controller* m_ctl;
    Ptr<Socket> m_socket;
    uint64_t m_seq, m_inFlight, m_sentPackets;
    double m_tokens; // the pacer's balance, bytes
    uint64_t m_refilledNs;
    uint64_t m_linkBps;    // the node's link (0: none known)
    uint64_t m_linkFreeNs; // when it has sent the datagrams handed to it so far
    std::deque<Piece> m_queue;
    std::map<uint64_t, Record> m_history;
    std::deque<ActiveProbe> m_probes;
    EventId m_tickEvent, m_paceEvent;
    /* For the rate log, as rtflow's history: since its last row, and the smoothed RTT. */
    uint64_t m_sentBytes, m_ackedBytes, m_received, m_lost;
    std::optional<double> m_srttNs;
};

class RtFlowReceiver : public RtVideoReceiver
{
  public:
    static TypeId GetTypeId();
    RtFlowReceiver();

  private:
    void StartApplication() override;
    void StopApplication() override;
    void OnMedia(Ptr<Socket> socket);
    void Report();

    Ptr<Socket> m_socket;
    Address m_sender;
    uint64_t m_nextSeq;
    std::vector<std::pair<uint64_t, std::optional<uint64_t>>> m_unreported;
    struct rtc_feedback_request m_request;
    EventId m_reportEvent;
};

} // namespace ns3

#endif
