package main

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/fetch"
)

type idlePeer peer.ID

func (p idlePeer) ID() peer.ID                  { return peer.ID(p) }
func (idlePeer) Send(peer.RequestID, any) error { return nil }

// TestLimitsFollowChannelsFlag: by default the scheduler's peers connect with
// an adaptive limit, whatever count the transport passes; -channels N fixes
// it; the peer set always gets fixed channels.
func TestLimitsFollowChannelsFlag(t *testing.T) {
	for _, c := range []struct {
		flags        []string
		wantLimit    int // after a Connect that passes 7
		wantChannels int // what transports pass
	}{
		{nil, peer.DefaultStartLimit, 4}, // adaptive: Vegas starts at its default, not at 7
		{[]string{"-channels", "3"}, 7, 3},
	} {
		o, err := parseOptions(c.flags, &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := scheduler.New(scheduler.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if err := withLimits(s, o).Connect(idlePeer("a"), 7); err != nil {
			t.Fatal(err)
		}
		if u := s.PeerUsage(nil); len(u) != 1 || u[0].Limit != c.wantLimit {
			t.Errorf("%q: usage %+v, want limit %d", c.flags, u, c.wantLimit)
		}
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if o.peerChannels() != c.wantChannels {
			t.Errorf("%q: peer channels %d, want %d", c.flags, o.peerChannels(), c.wantChannels)
		}
	}
	ps, err := fetch.NewPeerset(fetch.Config{Root: smallLedger(t, 1).Root()})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := withLimits(ps, options{}).(*fetch.Peerset); !ok {
		t.Error("the peer set was wrapped: it has no adaptive limits")
	}
}

// TestRateLimitsFlag: by default every peer the scheduler sends to is kept
// within fetch.RippledRate, which pays for a burst of 64 requests: a peer
// with 100 fixed channels shows 64 open. -rate-limits off shows all 100;
// another value is refused.
func TestRateLimitsFlag(t *testing.T) {
	for _, c := range []struct {
		flags    []string
		wantOpen int
	}{
		{[]string{"-channels", "100"}, fetch.PoliteBurst},
		{[]string{"-channels", "100", "-rate-limits", "rippled"}, fetch.PoliteBurst},
		{[]string{"-channels", "100", "-rate-limits", "off"}, 100},
	} {
		o, err := parseOptions(c.flags, &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := scheduler.New(scheduler.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if err := withLimits(s, o).Connect(idlePeer("a"), o.peerChannels()); err != nil {
			t.Fatal(err)
		}
		if u := s.PeerUsage(nil); len(u) != 1 || u[0].Limit != 100 || u[0].ChannelsOpen != c.wantOpen {
			t.Errorf("%q: usage %+v, want limit 100 with %d open", c.flags, u, c.wantOpen)
		}
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := parseOptions([]string{"-rate-limits", "on"}, &bytes.Buffer{}); !errors.Is(err, errUsage) {
		t.Errorf("-rate-limits on: %v, want a usage error", err)
	}
}
