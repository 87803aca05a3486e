// SPDX-License-Identifier: MIT
/*
 * What tools/rtflow's two modes share, in ns-3: frames captured at an fps with key
 * frames, sized by the rate the controller sets (rtflow's encoder.rs); the media
 * header each frame (UDP: each datagram) starts with (wire.rs); the receiver's frame
 * log (frames.rs, logs.rs) and the sender's rate log (logs.rs, udp_send.rs, tcp_send.rs).
 * RtVideoSender and RtVideoReceiver are the abstract
 * applications the UDP mode (rt-flow.h) and the TCP mode (rt-tcp-flow.h) derive
 * from, with their attributes: ns3::RtVideoSender::Fps sets both modes' frame rate.
 */
#ifndef CONFUCIUS_VIDEO_H
#define CONFUCIUS_VIDEO_H

#include "ns3/address.h"
#include "ns3/application.h"
#include "ns3/data-rate.h"
#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/traced-callback.h"

#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace ns3
{

/* rtflow's media header length (tools/rtflow/src/wire.rs). */
const uint32_t MEDIA_HEADER_LEN = 40;

enum MediaKind : uint8_t
{
    MEDIA = 1,
    PADDING = 2,
    FEEDBACK = 3,
};

/* The fields of a media header, in its first bytes (the rest of the 40 is zero). In TCP
 * mode `frameBytes` is the payload that follows the header: the stream's length prefix. */
struct MediaHeader
{
    uint8_t kind;
    uint8_t key;
    uint8_t everyPackets;
    uint16_t intervalMs;
    uint16_t index, count;
    uint32_t frameBytes;
    uint64_t seq, frame, captureNs;
};

static_assert(sizeof(MediaHeader) <= MEDIA_HEADER_LEN, "the header fits rtflow's");

/* One encoded frame: `bytes` is what it may occupy on the wire (rtflow's wire budget). */
struct VideoFrame
{
    uint64_t id;
    uint64_t captureNs;
    bool key;
    uint64_t bytes;
};

/* The simulator's clock, in nanoseconds. */
uint64_t NowNs();

/* One row of rtflow's rate log (RATE_LOG_HEADER): what a mode does not know is empty. */
struct RateRow
{
    double targetBps = 0, pacingBps = 0;
    std::optional<double> sentBps = {}, ackedBps = {}, srttMs = {}, loss = {};
    std::optional<uint64_t> inFlightBytes = {}, queueBytes = {}, cwndBytes = {};
};

/* Bytes over `intervalNs` as bit/s; none over an empty interval (rtflow's per_second). */
std::optional<double> PerSecond(uint64_t bytes, uint64_t intervalNs);

class RtVideoSender : public Application
{
  public:
    static TypeId GetTypeId();
    RtVideoSender();

    /* Packets the flow put on the network (TCP: data segments, retransmissions included). */
    virtual uint64_t SentPackets() const = 0;
    /* The controller's latest target rate (bit/s). */
    virtual double TargetBps() const = 0;
    uint64_t FramesCaptured() const;
    /* Frames captured but not yet wholly handed to the network (waiting in the sender). */
    virtual uint64_t FramesWaiting() const = 0;

  protected:
    /* Frames from now on, at start + id / fps (instants fixed in advance, as rtflow's);
     * the rate log's rows from now on, every LogInterval (the first now). */
    void StartCapture();
    void StopCapture();
    uint64_t FrameIntervalNs() const;
    virtual void OnFrame(const VideoFrame& frame) = 0;
    /* The rate log's row now, `intervalNs` after the last one (0: the first). */
    virtual RateRow RateLogRow(uint64_t intervalNs) = 0;
    void DoDispose() override;

    Address m_peer;
    uint32_t m_fps;
    Time m_keyInterval;
    double m_keyRatio;
    DataRate m_startRate, m_minRate, m_maxRate;

  private:
    void Capture();
    VideoFrame Encode(double targetBps) const;
    void LogRates();

    uint64_t m_startNs, m_frameId;
    EventId m_captureEvent;
    std::string m_rateLogPath;
    Time m_logInterval;
    std::ofstream m_rateLog;
    uint64_t m_loggedNs;
    EventId m_logEvent;
};

class RtVideoReceiver : public Application
{
  public:
    static TypeId GetTypeId();
    RtVideoReceiver();

    /* Whether frames were captured in [fromNs, toNs] and every one of them arrived whole
     * within lateNs of its capture (a frame none of whose bytes arrived is not known,
     * unless the mode can tell it is missing: FramesMissingBefore). */
    bool OnTimeBetween(uint64_t fromNs, uint64_t toNs, uint64_t lateNs) const;

    /* A packet of the flow arrived: its size with its IP and transport headers. */
    typedef void (*RxTracedCallback)(uint32_t wireBytes);

  protected:
    struct FrameRecord
    {
        uint64_t captureNs;
        bool key;
        uint32_t bytes;
        std::optional<std::pair<uint16_t, uint16_t>> packets; // UDP: in the frame, received
        uint64_t firstNs, lastNs;

        /* TCP frames are recorded once whole. */
        bool Complete() const
        {
            return !packets || packets->second >= packets->first;
        }
    };

    void DoDispose() override;
    /* Whether frames captured up to toNs are known to be missing from m_frames. */
    virtual bool FramesMissingBefore(uint64_t toNs) const;

    uint16_t m_port;
    std::map<uint64_t, FrameRecord> m_frames;
    TracedCallback<uint32_t> m_rx;

  private:
    void WriteFrameLog() const;

    std::string m_frameLog;
};

} // namespace ns3

#endif
