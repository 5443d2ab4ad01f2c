package hedge_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/hedge"
	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
	"github.com/peersched/peersched/scheduler"
)

// A sender records every request it sends and asks the budget before each
// hedge: with 5% and a burst of 2, the first two hedges go at once, and
// after that one more for every twenty requests.
func ExampleBudget() {
	b, err := hedge.NewBudget(hedge.BudgetConfig{PerThousand: 50, Burst: 2})
	if err != nil {
		panic(err)
	}
	fmt.Println(b.Spend(), b.Spend(), b.Spend())
	for range 20 {
		b.Sent()
	}
	fmt.Println(b.Spend(), b.Spend())
	// Output:
	// true true false
	// true false
}

// link stands in for a host's connection: it hands what it is asked to
// send to the example, which plays the network.
type link struct {
	id   peer.ID
	sent chan<- string
}

func (l link) ID() peer.ID { return l.id }

func (l link) Send(requestID peer.RequestID, message any) error {
	l.sent <- fmt.Sprintf("%s %d %v", l.id, requestID, message) // the example reads the ID back
	return nil
}

type sendTo func(offer.Offer)

func (f sendTo) OnOffer(o offer.Offer) { f(o) }
func (sendTo) OnDiscard()              {}

// A request to a slow peer is hedged at its soft deadline: the same
// message goes to another peer, whose answer comes first, and the receiver
// gets it under the call's ID, the one Request returned.
func ExampleHedger() {
	clk := clock.NewMock()
	s, _ := scheduler.New(scheduler.Config{Clock: clk, RankSeed: 1})
	defer s.Shutdown(context.Background())
	h, _ := hedge.NewHedger(s, nil, hedge.Options{}) // the default budget: 5%, after 10
	sent := make(chan string, 2)
	s.Connect(link{"slow", sent}, 1)
	s.Connect(link{"quick", sent}, 1)

	var call hedge.CallID
	answered := make(chan string)
	r := receiver.Funcs{Response: func(id peer.RequestID, from peer.ID, response any) {
		answered <- fmt.Sprintf("%v from %s, for the call: %v", response, from, hedge.CallID(id) == call)
	}}
	s.Schedule(sendTo(func(o offer.Offer) {
		for i, c := range o.All() {
			if c.Peer == "slow" {
				call, _ = h.Request(o, i, "get x", r, 100*time.Millisecond, time.Second)
			}
		}
	}), 0)
	fmt.Println("sent to", strings.Fields(<-sent)[0])

	clk.Add(100 * time.Millisecond) // the soft deadline: no answer yet
	hedged := strings.Fields(<-sent)
	fmt.Println("hedged to", hedged[0])
	id, _ := strconv.ParseUint(hedged[1], 10, 64)
	s.Deliver("quick", peer.RequestID(id), "x")
	fmt.Println(<-answered)
	fmt.Printf("%+v\n", h.Stats())
	// Output:
	// sent to slow
	// hedged to quick
	// x from quick, for the call: true
	// {Requests:1 Slow:1 Hedges:1 Denied:0 Unqueued:0 HedgeWins:1 Live:0 Waiting:0 Tokens:9}
}
