package bench

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/peersched/peersched/offer"
)

// peersInflight is the number of requests outstanding in BenchmarkPeers.
const peersInflight = 10_000

// newPeersSystem spreads peersInflight requests over peers, each with its
// share of channels, as BenchmarkLifecycle does: at steady state the only
// open channel is the one the last response reopened, and every request
// closes and reopens a channel in the pool's order of peers, whose depth
// grows with the number of peers.
func newPeersSystem(peers int) (*schedSystem, error) {
	sys, err := newSchedSystem(schedOptions{
		inline: true, // what these measure, how costs grow, is the same in both modes;
		// inline keeps each step synchronous
		peers:            peers,
		channels:         peersInflight / peers,
		resendOnResponse: true,
	}, newFIFO(peersInflight+1, false))
	if err != nil {
		return nil, err
	}
	if err := sys.fill(peersInflight); err != nil {
		sys.close()
		return nil, err
	}
	return sys, nil
}

// BenchmarkPeers times the scheduler's request life as the number of peers
// grows, with peersInflight requests outstanding.
func BenchmarkPeers(b *testing.B) {
	for _, peers := range []int{10, 1000, 10_000} {
		name := fmt.Sprintf("peers=%d", peers)
		b.Run(name, func(b *testing.B) {
			sys := reuse(b, "Peers/"+name, func() (*schedSystem, func()) {
				sys, err := newPeersSystem(peers)
				if err != nil {
					b.Fatal(err)
				}
				return sys, sys.close
			})
			timeSteps(b, sys)
		})
	}
}

// offerInflight is the number of requests outstanding in BenchmarkOffer.
const offerInflight = 1000

// newOfferSystem fills offerInflight channels and then queues senders more
// senders, which wait: every channel is busy. If declining is not 0, it
// queues that many decliners ahead of them (senders that send nothing when
// offered channels) and answers one request, so that every decliner has
// been offered a channel and declined it before the timing starts.
func newOfferSystem(senders, declining int) (*schedSystem, error) {
	sys, err := newSchedSystem(schedOptions{
		inline: true, // what these measure, how costs grow, is the same in both modes;
		// inline keeps each step synchronous
		peers:            lifecyclePeers,
		channels:         offerInflight / lifecyclePeers,
		resendOnResponse: true,
	}, newFIFO(offerInflight+1, false))
	if err != nil {
		return nil, err
	}
	if err := sys.fill(offerInflight); err != nil {
		sys.close()
		return nil, err
	}
	d := decliner{offers: new(atomic.Int64)}
	sys.declined = d.offers
	for range declining {
		if _, err := sys.s.Schedule(d, 0); err != nil {
			sys.close()
			return nil, err
		}
	}
	for range senders {
		sys.schedule()
	}
	if declining > 0 {
		if err := sys.step(); err != nil {
			sys.close()
			return nil, err
		}
	}
	return sys, sys.err()
}

// decliner is a sender that never has anything to send. It counts the
// offers it declines; every decliner of a system shares one count.
type decliner struct{ offers *atomic.Int64 }

func (d decliner) OnOffer(offer.Offer) { d.offers.Add(1) }
func (decliner) OnDiscard()            {}

// BenchmarkOffer times serving waiting senders: each op answers a request,
// whose receiver queues a sender at the back, and the reopened channel is
// offered to the sender at the front, which sends on it. senders wait
// throughout.
//
// The declining=N cases time one channel opening while N senders that have
// declined wait ahead of the one sender that sends: each op answers a
// request, whose receiver queues the sender again, and the reopened channel
// ends with it. What a decliner costs there is what every waiting sender
// with nothing to do costs each time a channel opens anywhere.
func BenchmarkOffer(b *testing.B) {
	type offerCase struct{ senders, declining int }
	cases := []offerCase{{1, 0}, {100, 0}, {10_000, 0}, {0, 100}, {0, 1000}, {0, 4000}}
	for _, c := range cases {
		name := fmt.Sprintf("senders=%d", c.senders)
		if c.declining > 0 {
			name = fmt.Sprintf("declining=%d", c.declining)
		}
		b.Run(name, func(b *testing.B) {
			sys := reuse(b, "Offer/"+name, func() (*schedSystem, func()) {
				sys, err := newOfferSystem(c.senders, c.declining)
				if err != nil {
					b.Fatal(err)
				}
				return sys, sys.close
			})
			timeSteps(b, sys)
		})
	}
}

// Each victim of BenchmarkDisconnect has victimChannels requests pending
// when it is disconnected; victims are connected and sent to in batches of
// victimBatch, outside the timed region.
const (
	victimChannels = 8
	victimBatch    = 256
)

// disconnectSystem has pending requests to its own peers, which never
// answer, and a batch of victims to disconnect one by one.
type disconnectSystem struct {
	*schedSystem
	victims []*hostPeer
	next    int // the next victim to disconnect; len(victims) when all are
}

func newDisconnectSystem(pending int) (*disconnectSystem, error) {
	sys, err := newSchedSystem(schedOptions{
		inline: true, // what these measure, how costs grow, is the same in both modes;
		// inline keeps each step synchronous
		peers:    lifecyclePeers,
		channels: pending / lifecyclePeers,
	}, nil)
	if err != nil {
		return nil, err
	}
	if err := sys.fill(pending); err != nil {
		sys.close()
		return nil, err
	}
	victims := makePeers(victimBatch, "victim-", nil)
	return &disconnectSystem{schedSystem: sys, victims: victims, next: len(victims)}, nil
}

// connectVictims connects every victim and fills all their channels.
func (d *disconnectSystem) connectVictims() error {
	for _, v := range d.victims {
		if err := d.s.Connect(v, victimChannels); err != nil {
			return err
		}
	}
	d.next = 0
	return d.fill(len(d.victims) * victimChannels)
}

// benchTimer is the part of *testing.B that disconnectOne uses.
type benchTimer interface {
	StopTimer()
	StartTimer()
}

// disconnectOne disconnects the next victim, connecting a fresh batch
// first (with the timer stopped) if none is left.
func (d *disconnectSystem) disconnectOne(timer benchTimer) error {
	if d.next == len(d.victims) {
		timer.StopTimer()
		err := d.connectVictims()
		timer.StartTimer()
		if err != nil {
			return err
		}
	}
	v := d.victims[d.next]
	d.next++
	return d.s.Disconnect(v.id)
}

// BenchmarkDisconnect times disconnecting a peer with victimChannels
// requests pending while pending requests to other peers stay pending.
func BenchmarkDisconnect(b *testing.B) {
	for _, pending := range inflights {
		name := fmt.Sprintf("pending=%d", pending)
		b.Run(name, func(b *testing.B) {
			d := reuse(b, "Disconnect/"+name, func() (*disconnectSystem, func()) {
				d, err := newDisconnectSystem(pending)
				if err != nil {
					b.Fatal(err)
				}
				return d, d.close
			})
			b.ReportAllocs()
			for b.Loop() {
				if err := d.disconnectOne(b); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if err := d.err(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// In BenchmarkTimeoutFire requests are sent timeoutSpacing apart, each with
// a timeout of inflight*timeoutSpacing, and the clock moves on by
// timeoutBatch*timeoutSpacing at a time, so each firing of the timer
// expires about timeoutBatch requests.
const (
	timeoutSpacing = time.Microsecond
	timeoutBatch   = 64
)

// timeoutSystem is a scheduler on a stepped clock whose requests are never
// answered: each times out, and its receiver sends a replacement.
type timeoutSystem struct {
	*schedSystem
	clock *steppedClock
	seen  uint64 // timeouts already counted as ops
}

func newTimeoutSystem(inflight int) (*timeoutSystem, error) {
	clk := newSteppedClock()
	sys, err := newSchedSystem(schedOptions{
		inline: true, // what these measure, how costs grow, is the same in both modes;
		// inline keeps each step synchronous
		peers:           lifecyclePeers,
		channels:        inflight / lifecyclePeers,
		clock:           clk,
		timeout:         time.Duration(inflight) * timeoutSpacing,
		resendOnTimeout: true,
	}, nil)
	if err != nil {
		return nil, err
	}
	ts := &timeoutSystem{schedSystem: sys, clock: clk}
	for sent := 0; sent < inflight; sent += timeoutBatch {
		if err := sys.fill(min(timeoutBatch, inflight-sent)); err != nil {
			sys.close()
			return nil, err
		}
		clk.Add(timeoutBatch * timeoutSpacing)
	}
	ts.seen = sys.rcv.timeouts.Load()
	return ts, nil
}

// expireOne accounts for one expired request, moving the clock on until
// the timer has expired one not yet accounted for.
func (ts *timeoutSystem) expireOne() {
	for ts.rcv.timeouts.Load() == ts.seen {
		ts.clock.Add(timeoutBatch * timeoutSpacing)
	}
	ts.seen++
}

// BenchmarkTimeoutFire times a request timing out: its deadline fires, its
// receiver is told, and its channel reopens and carries a replacement,
// keeping inflight requests outstanding.
func BenchmarkTimeoutFire(b *testing.B) {
	for _, inflight := range inflights {
		name := fmt.Sprintf("inflight=%d", inflight)
		b.Run(name, func(b *testing.B) {
			ts := reuse(b, "TimeoutFire/"+name, func() (*timeoutSystem, func()) {
				ts, err := newTimeoutSystem(inflight)
				if err != nil {
					b.Fatal(err)
				}
				return ts, ts.close
			})
			b.ReportAllocs()
			for b.Loop() {
				ts.expireOne()
			}
			b.StopTimer()
			if err := ts.err(); err != nil {
				b.Fatal(err)
			}
		})
	}
}
