// SPDX-License-Identifier: MIT

package main

import (
	"testing"

	"github.com/pion/rtcp"
)

func TestReportsSplitAtGapsAndKeepMicroseconds(t *testing.T) {
	reports := twccReports([]outcome{
		{seq: 12, arrivalUs: 130_500},
		{seq: 10, arrivalUs: 128_001},
		{seq: 11, lost: true},
		{seq: 20, arrivalUs: 300_000},
		{seq: 21, arrivalUs: 200_000},
	})
	if len(reports) != 2 {
		t.Fatalf("want one report per run of consecutive numbers, got %d", len(reports))
	}
	first := reports[0].(*rtcp.TransportLayerCC)
	if first.BaseSequenceNumber != 10 || first.PacketStatusCount != 3 || first.ReferenceTime != 2 {
		t.Fatalf("first report: base %d count %d reference %d", first.BaseSequenceNumber,
			first.PacketStatusCount, first.ReferenceTime)
	}
	symbols := []uint16{}
	for _, chunk := range first.PacketChunks {
		run := chunk.(*rtcp.RunLengthChunk)
		for i := uint16(0); i < run.RunLength; i++ {
			symbols = append(symbols, run.PacketStatusSymbol)
		}
	}
	want := []uint16{rtcp.TypeTCCPacketReceivedSmallDelta, rtcp.TypeTCCPacketNotReceived,
		rtcp.TypeTCCPacketReceivedSmallDelta}
	if len(symbols) != len(want) || symbols[0] != want[0] || symbols[1] != want[1] || symbols[2] != want[2] {
		t.Fatalf("statuses %v, want %v", symbols, want)
	}
	if first.RecvDeltas[0].Delta != 1 || first.RecvDeltas[1].Delta != 2_499 {
		t.Fatalf("deltas %d %d", first.RecvDeltas[0].Delta, first.RecvDeltas[1].Delta)
	}
	second := reports[1].(*rtcp.TransportLayerCC)
	if d := second.RecvDeltas[1]; d.Delta != -100_000 || d.Type != rtcp.TypeTCCPacketReceivedLargeDelta {
		t.Fatalf("a reordered arrival needs a negative large delta, got %+v", d)
	}
}

func TestEstimatorRegistersPacketsAndTakesFeedback(t *testing.T) {
	e, err := newEstimator(1_000_000, 100_000, 10_000_000)
	if err != nil {
		t.Fatal(err)
	}
	defer e.bwe.Close()
	for seq := uint64(65_530); seq < 65_540; seq++ { // across the 16-bit wrap
		if err := e.onSent(seq, 1228); err != nil {
			t.Fatal(err)
		}
	}
	outcomes := []outcome{}
	for seq := uint64(65_530); seq < 65_540; seq++ {
		outcomes = append(outcomes, outcome{seq: seq, arrivalUs: int64(seq) * 1000})
	}
	if err := e.onFeedback(outcomes); err != nil {
		t.Fatal(err)
	}
	if got := e.bwe.GetTargetBitrate(); got < 100_000 || got > 10_000_000 {
		t.Fatalf("target %d outside the bounds", got)
	}
}
