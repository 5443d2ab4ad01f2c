package main

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/peersched/peersched/peer"
)

// TestEventsSnapshotWaitsForKillsToBeSeen: a snapshot waits until the host
// has seen every kill as a disconnection, so that the two agree in the
// report; a kill the host never sees is reported as it is, after
// settleTimeout.
func TestEventsSnapshotWaitsForKillsToBeSeen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newPeerEvents()
		e.connected("a")
		e.connected("b")
		e.killed("a")
		got := make(chan map[string]peerCounts, 1)
		go func() { got <- e.snapshot() }()
		synctest.Wait()
		select {
		case s := <-got:
			t.Fatalf("snapshot %+v before the host saw the kill", s)
		default:
		}
		e.disconnected("a")
		synctest.Wait()
		s := <-got
		if len(s) != 1 || s["a"].Kills != 1 || s["a"].Disconnections != 1 {
			t.Errorf("snapshot %+v", s)
		}

		start := time.Now()
		e.killed("b") // never seen
		s = e.snapshot()
		if waited := time.Since(start); waited != settleTimeout || s["b"].Kills != 1 || s["b"].Disconnections != 0 {
			t.Errorf("after %v: snapshot %+v", waited, s)
		}
	})
}

// TestEventsLive: a peer is live from its connection to its disconnection,
// and again after it reconnects; restarts count apart from failed ones.
func TestEventsLive(t *testing.T) {
	e := newPeerEvents()
	ids := []peer.ID{"a", "b", "c"}
	e.connected("a")
	e.connected("b")
	e.disconnected("b")
	if got := e.live(ids); len(got) != 1 || got[0] != "a" {
		t.Errorf("live %v, want [a]", got)
	}
	e.connected("b")
	if got := e.live(ids); len(got) != 2 || !e.everConnected("b") || e.everConnected("c") {
		t.Errorf("live %v, want [a b]", got)
	}
	e.restarted("a", nil)
	e.restarted("a", errors.New("port taken"))
	if c := e.snapshot()["a"]; c.Restarts != 1 || c.FailedRestarts != 1 {
		t.Errorf("counts %+v", c)
	}
}
