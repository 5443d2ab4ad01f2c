package main

import (
	"context"
	"errors"
	"testing"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/fetch"
)

// plainHost takes no refusals: it is a tcpnet.Host and nothing more.
type plainHost struct{}

func (plainHost) Connect(peer.Peer, int) error               { return nil }
func (plainHost) Disconnect(peer.ID) error                   { return nil }
func (plainHost) Deliver(peer.ID, peer.RequestID, any) error { return nil }

// TestRefusalsReachTheHost: simulated peers hand their refusals to either
// strategy's host, which checks them (an unknown request here), and answer
// empty to a host that takes none.
func TestRefusalsReachTheHost(t *testing.T) {
	s, err := scheduler.New(scheduler.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Shutdown(context.Background()) }()
	ps, err := fetch.NewPeerset(fetch.Config{Root: smallLedger(t, 1).Root()})
	if err != nil {
		t.Fatal(err)
	}
	for name, host := range map[string]interface {
		fetch.Host
		fetch.Refuser
	}{"scheduler": s, "peerset": ps} {
		refuse := refusalsTo(host)
		if refuse == nil {
			t.Fatalf("%s: refusals go nowhere", name)
		}
		refuse("p00", 42)
		if name == "scheduler" && s.Stats().Unknown != 1 {
			t.Errorf("the scheduler did not see the refusal of an unknown request: %+v", s.Stats())
		}
		if err := host.Refuse("p00", 42); !errors.Is(err, receiver.ErrUnknownRequest) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if refusalsTo(plainHost{}) != nil {
		t.Errorf("a host that takes no refusals was handed some")
	}
}
