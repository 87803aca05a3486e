// SPDX-License-Identifier: MIT

// Command piongcc is Pion's send-side GCC (github.com/pion/interceptor/pkg/gcc) behind a
// small C ABI, built with -buildmode=c-archive and linked into rtflow as its pion-gcc
// controller. rtflow's frames, pacer, packets and feedback stay its own; this archive only
// turns "packet sent" and "what the receiver reported" into Pion's inputs (an RTP header
// with the transport-wide sequence number, TWCC feedback packets) and reads Pion's target.
package main

/*
#include <stdint.h>

// One reported packet: its transport-wide sequence number and its arrival time on the
// receiver's clock in microseconds, or lost.
typedef struct {
	uint64_t seq;
	int64_t arrival_us;
	uint8_t lost;
} piongcc_outcome;
*/
import "C"

import (
	"runtime/cgo"
	"unsafe"

	"github.com/pion/interceptor"
	"github.com/pion/interceptor/pkg/gcc"
	"github.com/pion/rtp"
)

// transportCCURI names the transport-wide sequence number header extension; Pion reads the
// sequence number of a sent packet from the extension registered under this URI.
const transportCCURI = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"

const (
	extensionID = 1
	ssrc        = 1
)

// estimator is one Pion SendSideBWE and the writer that registers sent packets with it.
type estimator struct {
	bwe    *gcc.SendSideBWE
	writer interceptor.RTPWriter
	header rtp.Header
}

// discard stands in for the network: rtflow has sent the packet already.
var discard = interceptor.RTPWriterFunc(func(_ *rtp.Header, payload []byte, _ interceptor.Attributes) (int, error) {
	return len(payload), nil
})

func newEstimator(startBps, minBps, maxBps int) (*estimator, error) {
	// Pion's own leaky-bucket pacer would pace a second time; rtflow's pacer does it, as in
	// its gcc mode, so Pion gets the pass-through pacer.
	bwe, err := gcc.NewSendSideBWE(
		gcc.SendSideBWEInitialBitrate(startBps),
		gcc.SendSideBWEMinBitrate(minBps),
		gcc.SendSideBWEMaxBitrate(maxBps),
		gcc.SendSideBWEPacer(gcc.NewNoOpPacer()),
	)
	if err != nil {
		return nil, err
	}
	info := &interceptor.StreamInfo{
		SSRC:                ssrc,
		RTPHeaderExtensions: []interceptor.RTPHeaderExtension{{URI: transportCCURI, ID: extensionID}},
	}
	writer := bwe.AddStream(info, discard)
	return &estimator{bwe: bwe, writer: writer, header: rtp.Header{Version: 2, SSRC: ssrc}}, nil
}

// onSent registers a packet of `wireBytes` bytes as sent now (Pion stamps it with its own
// clock, CLOCK_MONOTONIC as rtflow's). Pion counts the RTP header's size plus the payload,
// so the payload is the rest of the datagram's size.
func (e *estimator) onSent(seq uint64, wireBytes int) error {
	ext, err := rtp.TransportCCExtension{TransportSequence: uint16(seq)}.Marshal()
	if err != nil {
		return err
	}
	e.header.SequenceNumber = uint16(seq)
	if err := e.header.SetExtension(extensionID, ext); err != nil {
		return err
	}
	payload := make([]byte, max(wireBytes-e.header.MarshalSize(), 0))
	_, err = e.writer.Write(&e.header, payload, nil)
	return err
}

func (e *estimator) onFeedback(outcomes []outcome) error {
	return e.bwe.WriteRTCP(twccReports(outcomes), nil)
}

func lookup(handle C.uintptr_t) *estimator {
	return cgo.Handle(handle).Value().(*estimator)
}

//export piongcc_new
func piongcc_new(startBps, minBps, maxBps C.int64_t) C.uintptr_t {
	e, err := newEstimator(int(startBps), int(minBps), int(maxBps))
	if err != nil {
		return 0
	}
	return C.uintptr_t(cgo.NewHandle(e))
}

//export piongcc_on_sent
func piongcc_on_sent(handle C.uintptr_t, seq C.uint64_t, wireBytes C.uint32_t) C.int {
	if lookup(handle).onSent(uint64(seq), int(wireBytes)) != nil {
		return -1
	}
	return 0
}

//export piongcc_on_feedback
func piongcc_on_feedback(handle C.uintptr_t, reported *C.piongcc_outcome, count C.size_t) C.int {
	entries := unsafe.Slice(reported, int(count))
	outcomes := make([]outcome, len(entries))
	for i, entry := range entries {
		outcomes[i] = outcome{seq: uint64(entry.seq), arrivalUs: int64(entry.arrival_us), lost: entry.lost != 0}
	}
	if lookup(handle).onFeedback(outcomes) != nil {
		return -1
	}
	return 0
}

//export piongcc_target_bps
func piongcc_target_bps(handle C.uintptr_t) C.int64_t {
	return C.int64_t(lookup(handle).bwe.GetTargetBitrate())
}

//export piongcc_free
func piongcc_free(handle C.uintptr_t) {
	h := cgo.Handle(handle)
	_ = h.Value().(*estimator).bwe.Close()
	h.Delete()
}

func main() {}
