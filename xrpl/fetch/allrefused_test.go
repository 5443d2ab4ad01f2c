package fetch

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/simnet"
)

// closingPeer is a connection whose transport refuses every send, as one
// does while it closes, before its disconnect reaches the scheduler.
type closingPeer struct{ id peer.ID }

func (p closingPeer) ID() peer.ID                    { return p.id }
func (p closingPeer) Send(peer.RequestID, any) error { return errors.New("connection closing") }

// TestEverySendRefusedDoesNotStall: the first offer holds only a channel
// whose every send the host refuses, so the fetch sends nothing, and
// nothing of it is in flight to wake it when that ends; an honest peer
// connects a moment later. The fetch must still ask it, and complete.
// (Before: the sender stayed parked, nothing woke it, and the fetch
// stalled: ledgerfetch's TestHostilePeerBackedOffAndNamed did so in about
// one run in five, when the only channel offered was a hostile peer's
// dying connection.)
func TestEverySendRefusedDoesNotStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewMock()
		start := clk.Now()
		s, err := scheduler.New(scheduler.Config{Clock: clk, InlineCallbacks: true})
		if err != nil {
			t.Fatal(err)
		}
		net, err := simnet.New(simnet.Config{
			Ledger:  simLedger,
			Clock:   clk,
			Seed:    3,
			Deliver: func(from peer.ID, id peer.RequestID, r any) { _ = s.Deliver(from, id, r) },
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Connect(closingPeer{"closing"}, 1); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := Run(context.Background(), s, Config{Root: simLedger.Root(), Expected: simLedger.Len(), Clock: clk, Batch: 16})
			done <- err
		}()
		synctest.Wait() // offered the closing peer's channel, refused, sent nothing
		honest, err := net.AddPeer("honest", simnet.Profile{Latency: simnet.Fixed(5 * time.Millisecond), LimitsOff: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Connect(honest, 4); err != nil {
			t.Fatal(err)
		}
		var runErr error
	wait:
		for {
			synctest.Wait()
			select {
			case runErr = <-done:
				break wait
			default:
				if clk.Now().Sub(start) > 10*time.Second {
					s.Stop()
					<-done
					net.Close()
					t.Fatalf("no progress after %v: the fetch stalled with its sender parked", clk.Now().Sub(start))
				}
				clk.Add(time.Millisecond)
			}
		}
		net.Close()
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if runErr != nil {
			t.Fatalf("fetch failed after %v: %v", clk.Now().Sub(start), runErr)
		}
	})
}
