// SPDX-License-Identifier: MIT
/*
 * The real-time video flow of tools/rtflow in ns-3, driven by the same rate
 * controllers (tools/rtcontrol through its C ABI): frames at an fps with key
 * frames, sized by the controller's target; a pacer at its pacing rate (probe
 * clusters padded when there is no media); per-packet feedback from the
 * receiver on the controller's schedule; the receiver's frame log in rtflow's
 * format.
 */
#ifndef CONFUCIUS_RT_FLOW_H
#define CONFUCIUS_RT_FLOW_H

#include "ns3/address.h"
#include "ns3/application.h"
#include "ns3/data-rate.h"
#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/socket.h"
#include "ns3/traced-callback.h"

#include "rtcontrol.h"

#include <deque>
#include <map>
#include <optional>
#include <vector>

namespace ns3
{

class RtFlowSender : public Application
{
  public:
    static TypeId GetTypeId();
    RtFlowSender();

    uint64_t SentPackets() const;
    /* The controller's latest target rate (bit/s). */
    double TargetBps() const;

  private:
    struct Piece; // one datagram of a frame, or padding
    struct Record;
    struct ActiveProbe;

    void StartApplication() override;
    void StopApplication() override;
    void DoDispose() override;
    void Capture();
    void Tick();
    void Pace();
    double PacerRate() const;
    void SendPiece(const Piece& piece);
    void OnFeedback(Ptr<Socket> socket);
    void Resolve(uint64_t now, uint64_t reportNs, const std::vector<std::pair<uint64_t, std::optional<uint64_t>>>& entries);
    void ForgetStale(uint64_t now);
    uint64_t QueueBytes() const;

    Address m_peer;
    std::string m_mode;
    uint32_t m_fps;
    Time m_keyInterval;
    double m_keyRatio;
    DataRate m_startRate, m_minRate, m_maxRate;
    double m_pacingFactor, m_copaDelta;

    struct rtc_controller* m_ctl;
    Ptr<Socket> m_socket;
    uint64_t m_frameId, m_seq, m_inFlight, m_sentPackets, m_startNs;
    double m_tokens; // the pacer's balance, bytes
    uint64_t m_refilledNs;
    std::deque<Piece> m_queue;
    std::map<uint64_t, Record> m_history;
    std::deque<ActiveProbe> m_probes;
    EventId m_captureEvent, m_tickEvent, m_paceEvent;
};

class RtFlowReceiver : public Application
{
  public:
    static TypeId GetTypeId();
    RtFlowReceiver();

    /* Whether frames were captured in [fromNs, toNs] and every one of them arrived whole
     * within lateNs of its capture (a frame none of whose packets arrived is not known). */
    bool OnTimeBetween(uint64_t fromNs, uint64_t toNs, uint64_t lateNs) const;

  private:
    struct FrameRecord;

    void StartApplication() override;
    void StopApplication() override;
    void DoDispose() override;
    void OnMedia(Ptr<Socket> socket);
    void Report();
    void WriteFrameLog();

    uint16_t m_port;
    std::string m_frameLog;
    Ptr<Socket> m_socket;
    Address m_sender;
    uint64_t m_nextSeq;
    std::vector<std::pair<uint64_t, std::optional<uint64_t>>> m_unreported;
    struct rtc_feedback_request m_request;
    EventId m_reportEvent;
    std::map<uint64_t, FrameRecord> m_frames;
    TracedCallback<Ptr<const Packet>, const Address&> m_rx;
};

} // namespace ns3

#endif
