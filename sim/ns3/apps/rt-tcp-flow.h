// SPDX-License-Identifier: MIT
/*
 * rtflow's TCP mode in ns-3 (tools/rtflow/README.md "TCP mode", src/tcp_send.rs): the
 * same frames as the UDP mode (video.h), each a 40-byte media header whose frame size
 * is the length of the payload after it, written into one TCP connection that runs
 * ns-3's TcpBbr, TcpCubic or TcpVegas. As rtflow's socket with TCP_NOTSENT_LOWAT, this
 * one is handed bytes only while fewer than NotSentLowat of them wait unsent in it, so
 * frames that cannot leave wait in the application; the TCP mode's rate adapter (the
 * same Rust code as rtflow's, tools/rtcontrol's tcp_rate through its C ABI) follows
 * the longest wait and the bytes the peer acknowledged. Its rate log has rtflow's
 * TCP_INFO columns from the socket's state. The receiver reads the stream back into
 * frames and logs them as rtflow's receiver does.
 */
#ifndef CONFUCIUS_RT_TCP_FLOW_H
#define CONFUCIUS_RT_TCP_FLOW_H

#include "video.h"

#include "ns3/sequence-number.h"
#include "ns3/socket.h"
#include "ns3/tcp-header.h"
#include "ns3/tcp-socket-base.h"

#include "rtcontrol.h"

#include <array>
#include <deque>
#include <optional>
#include <vector>

namespace ns3
{

class RtTcpFlowSender : public RtVideoSender
{
  public:
    static TypeId GetTypeId();
    RtTcpFlowSender();

    uint64_t SentPackets() const override;
    double TargetBps() const override;
    uint64_t FramesWaiting() const override;

  private:
    struct Pending; // a frame in the application, perhaps partly written

    void StartApplication() override;
    void StopApplication() override;
    void DoDispose() override;
    void OnFrame(const VideoFrame& frame) override;
    RateRow RateLogRow(uint64_t intervalNs) override;
    double PacingBps() const;
    void Connected(Ptr<Socket> socket);
    void ConnectFailed(Ptr<Socket> socket);
    void Write();
    void WakeWriter();
    void NoteWait();
    void Step();
    uint64_t Unsent() const;
    uint64_t Acked() const;
    void OnHighestSequence(SequenceNumber32 before, SequenceNumber32 after);
    void OnSegment(Ptr<const Packet> p, const TcpHeader& header, Ptr<const TcpSocketBase> socket);
    void OnRetransmission(Ptr<const Packet> p, const TcpHeader& header, const Address& from, const Address& to,
                          Ptr<const TcpSocketBase> socket);
    void Trace(const std::string& source, const CallbackBase& callback);

    TypeId m_cca;
    uint32_t m_lowat;

    struct rtc_tcp_adapter* m_adapter;
    Ptr<TcpSocketBase> m_socket;
    bool m_connected;
    bool m_blocked; // the socket refused bytes: no writes until it wakes the writer
    SequenceNumber32 m_highTxMark;
    std::deque<Pending> m_queue;
    uint64_t m_written, m_sentPackets;
    EventId m_stepEvent, m_writeEvent;
    /* For the rate log (rtflow's TCP_INFO columns): the socket's latest state, and
     * counts at the last row. */
    uint32_t m_cwnd, m_ssthresh;
    std::optional<Time> m_srtt;
    std::optional<DataRate> m_pacingRate;
    uint64_t m_retransmitted, m_loggedWritten, m_loggedAcked, m_loggedPackets, m_loggedRetransmitted;
};

class RtTcpFlowReceiver : public RtVideoReceiver
{
  public:
    static TypeId GetTypeId();
    RtTcpFlowReceiver();

  private:
    void StartApplication() override;
    void StopApplication() override;
    bool FramesMissingBefore(uint64_t toNs) const override;
    void Accepted(Ptr<Socket> socket, const Address& from);
    void OnData(Ptr<Socket> socket);
    void Consume(const uint8_t* data, size_t size, uint64_t now);
    void OnSegment(Ptr<const Packet> p, const TcpHeader& header, Ptr<const TcpSocketBase> socket);

    Ptr<Socket> m_listener, m_connection;
    std::vector<uint8_t> m_header;       // the next frame's header, as far as it arrived
    uint64_t m_headerStartedNs;
    std::optional<std::pair<MediaHeader, uint64_t>> m_current; // the frame being read, first byte
    uint64_t m_remaining;                // of its payload
};

} // namespace ns3

#endif
