// SPDX-License-Identifier: MIT

package main

import (
	"sort"

	"github.com/pion/rtcp"
)

// outcome is what rtflow's receiver reported for one packet: its transport-wide sequence
// number and its arrival time on the receiver's clock, or lost.
type outcome struct {
	seq       uint64
	arrivalUs int64
	lost      bool
}

// referenceUnitUs is the unit of a TWCC report's reference time (64 ms).
const referenceUnitUs = 64_000

// smallDeltaMaxUs is the largest receive delta a one-byte (small) delta carries: 255 × 250 µs.
const smallDeltaMaxUs = 255 * 250

// twccReports turns one batch of outcomes into TWCC feedback packets, one per run of
// consecutive sequence numbers. A report covers a contiguous range, and Pion counts every
// sequence number of that range that it still remembers: a gap (a packet reported in an
// earlier batch) inside one report would be counted as lost a second time.
//
// Receive deltas keep microseconds: the packets are handed to Pion as structures, never
// serialised, so they need not be rounded to the wire's 250 µs (goog_cc gets microseconds
// too, which keeps the two controllers' inputs the same).
func twccReports(outcomes []outcome) []rtcp.Packet {
	sorted := append([]outcome(nil), outcomes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].seq < sorted[j].seq })
	var reports []rtcp.Packet
	for start := 0; start < len(sorted); {
		end := start + 1
		for end < len(sorted) && sorted[end].seq == sorted[end-1].seq+1 && end-start < 0xffff {
			end++
		}
		reports = append(reports, twccReport(sorted[start:end]))
		start = end
	}
	return reports
}

// twccReport is the TWCC packet for outcomes of consecutive sequence numbers.
func twccReport(run []outcome) *rtcp.TransportLayerCC {
	report := &rtcp.TransportLayerCC{
		BaseSequenceNumber: uint16(run[0].seq),
		PacketStatusCount:  uint16(len(run)),
	}
	reference, found := firstArrivalUs(run)
	if found {
		reference -= reference % referenceUnitUs
		report.ReferenceTime = uint32(reference/referenceUnitUs) & 0xffffff
	}
	previous := reference
	for _, o := range run {
		symbol := rtcp.TypeTCCPacketNotReceived
		if !o.lost {
			delta := o.arrivalUs - previous
			previous = o.arrivalUs
			symbol = rtcp.TypeTCCPacketReceivedLargeDelta
			if delta >= 0 && delta <= smallDeltaMaxUs {
				symbol = rtcp.TypeTCCPacketReceivedSmallDelta
			}
			report.RecvDeltas = append(report.RecvDeltas, &rtcp.RecvDelta{Type: symbol, Delta: delta})
		}
		report.PacketChunks = appendStatus(report.PacketChunks, symbol)
	}
	return report
}

func firstArrivalUs(run []outcome) (int64, bool) {
	for _, o := range run {
		if !o.lost {
			return o.arrivalUs, true
		}
	}
	return 0, false
}

// appendStatus adds one packet's status, lengthening the last run-length chunk when it
// has the same symbol.
func appendStatus(chunks []rtcp.PacketStatusChunk, symbol uint16) []rtcp.PacketStatusChunk {
	if n := len(chunks); n > 0 {
		if last, ok := chunks[n-1].(*rtcp.RunLengthChunk); ok && last.PacketStatusSymbol == symbol && last.RunLength < 0x1fff {
			last.RunLength++
			return chunks
		}
	}
	return append(chunks, &rtcp.RunLengthChunk{Type: rtcp.TypeTCCRunLengthChunk, PacketStatusSymbol: symbol, RunLength: 1})
}
