package node

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/ledger"
)

// refusingPeer is a peer whose host refuses every send.
type refusingPeer struct {
	id    peer.ID
	sends atomic.Int32
}

func (p *refusingPeer) ID() peer.ID { return p.id }
func (p *refusingPeer) Send(peer.RequestID, any) error {
	p.sends.Add(1)
	return errors.New("refused")
}

// TestLookupWhoseSendsFailIsTriedAgainThenFails: a lookup offered only
// channels whose sends fail spends a try each time, is tried again while
// tries are left, and then counts as failed, leaving no sender behind in
// the scheduler's queue. (Before: the failed offer parked the lookup's
// sender, which nothing asked to be offered again: it waited, parked, until
// the scheduler stopped, and its tries were never spent.)
//
// Both ways its ticket can come: inline, its OnOffer runs within the
// ScheduleWith that returns the ticket; on the drainer, it may run before
// or after.
func TestLookupWhoseSendsFailIsTriedAgainThenFails(t *testing.T) {
	for _, inline := range []bool{true, false} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { lookupWhoseSendsFail(t, inline) })
		})
	}
}

func lookupWhoseSendsFail(t *testing.T, inline bool) {
	mock := clock.NewMock()
	s, err := scheduler.New(scheduler.Config{Clock: mock, InlineCallbacks: inline, RankSeed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Shutdown(context.Background()) }()
	p := &refusingPeer{id: "p"}
	if err := s.Connect(p, 1); err != nil {
		t.Fatal(err)
	}
	cfg, err := Config{Lookups: 1, Keys: []ledger.Hash{{1}}, Clock: mock}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	c := &schedLookups{cfg: cfg, s: s, keys: newKeyPicker(cfg.Keys, 1)}
	l := &lookup{c: c, hash: c.keys.next(), wanted: mock.Now()}
	l.try(mock.Now())
	synctest.Wait() // the drainer's tries, without inline callbacks

	if n := int(p.sends.Load()); n != cfg.LookupTries {
		t.Errorf("%d sends, want one a try: %d", n, cfg.LookupTries)
	}
	c.rec.mu.Lock()
	defer c.rec.mu.Unlock()
	if c.rec.failed != 1 || c.rec.requests != 0 {
		t.Errorf("%d failed, %d sent; want the lookup failed once, nothing sent", c.rec.failed, c.rec.requests)
	}
	if st := s.Stats(); st.SendersWaiting != 0 || st.SendersParked != 0 {
		t.Errorf("%d senders waiting (%d parked), want none left behind", st.SendersWaiting, st.SendersParked)
	}
}
