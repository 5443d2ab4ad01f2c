package offer_test

import (
	"fmt"
	"time"

	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
	"github.com/peersched/peersched/scheduler"
)

// host stands in for a connection that accepts every message.
type host peer.ID

func (h host) ID() peer.ID                  { return peer.ID(h) }
func (host) Send(peer.RequestID, any) error { return nil }

// avoider sends one request to the best channel whose peer is not the one
// it avoids.
type avoider struct{ avoid peer.ID }

func (a avoider) OnOffer(o offer.Offer) {
	for i, c := range o.All() {
		fmt.Printf("channel %d: %s, %d of %d closed\n", i, c.Peer, c.ChannelsClosed, c.Limit)
	}
	for i, c := range o.All() {
		if c.Peer == a.avoid {
			continue
		}
		if _, err := o.Request(i, "object #7", receiver.Funcs{}, time.Second); err == nil {
			fmt.Println("sent to", c.Peer)
			return
		}
	}
}

func (avoider) OnDiscard() {}

// A sender walks its offer with All: the list is read once, and the loop
// may send on what it is shown.
func ExampleOffer_All() {
	s, err := scheduler.New(scheduler.Config{InlineCallbacks: true, RankSeed: 1})
	if err != nil {
		panic(err)
	}
	defer s.Stop()
	for _, id := range []peer.ID{"alice", "bob", "carol"} {
		if err := s.Connect(host(id), 1); err != nil {
			panic(err)
		}
	}
	if _, err := s.Schedule(avoider{avoid: "carol"}, 0); err != nil {
		panic(err)
	}
	// Output:
	// channel 0: carol, 0 of 1 closed
	// channel 1: bob, 0 of 1 closed
	// channel 2: alice, 0 of 1 closed
	// sent to bob
}
