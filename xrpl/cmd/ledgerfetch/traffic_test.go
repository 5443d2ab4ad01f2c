package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/penalty"
	"github.com/peersched/peersched/xrpl/tcpnet"
)

// TestTrafficMeter: frames the host took and refused add up by peer, over
// its connections, and totals is a copy.
func TestTrafficMeter(t *testing.T) {
	m := newTrafficMeter()
	m.count("a", 100, nil)
	m.count("a", 40, receiver.ErrLateResponse)
	m.count("b", 7, errors.New("anything refused"))
	m.count("a", 1, nil)
	got := m.totals()
	if got["a"] != (penalty.Traffic{Wanted: 101, Unwanted: 40}) || got["b"] != (penalty.Traffic{Unwanted: 7}) || len(got) != 2 {
		t.Fatalf("totals %+v", got)
	}
	got["a"] = penalty.Traffic{}
	if m.totals()["a"].Wanted != 101 {
		t.Fatal("totals is not a copy")
	}
}

// TestReportNamesDisconnectReasons: each peer's line says why its
// connections ended, most frequent first, and the JSON carries them.
func TestReportNamesDisconnectReasons(t *testing.T) {
	e := newPeerEvents()
	var id peer.ID = "10.0.0.9:51235"
	e.connected(id)
	e.disconnected(id)
	for _, r := range []tcpnet.Reason{tcpnet.ReasonOversized, tcpnet.ReasonPeerClosed, tcpnet.ReasonOversized, tcpnet.ReasonIdle, ""} {
		e.ended(id, r)
	}
	events := e.snapshot()
	if got := events[string(id)].Reasons; len(got) != 3 || got["frame over the cap"] != 2 || got["idle timeout"] != 1 || got["peer closed"] != 1 {
		t.Fatalf("reasons %v", got)
	}
	var out strings.Builder
	writeReport(&out, result{Report: fetch.Report{Strategy: "scheduler", Disconnects: 3}, Events: events})
	want := "    10.0.0.9:51235         disconnected 1 (frame over the cap 2, idle timeout 1, peer closed 1)\n"
	if !strings.Contains(out.String(), want) {
		t.Errorf("report lacks\n%s\nin\n%s", want, out.String())
	}
}
