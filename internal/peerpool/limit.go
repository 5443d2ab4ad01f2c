package peerpool

import (
	"runtime/debug"

	"github.com/peersched/peersched/limit"
	"github.com/peersched/peersched/peer"
)

// This file is the pool's side of adaptive limits: how what the scheduler
// observes of a peer's requests moves its limit.

// clampLimit keeps a limit a Limiter gives within what the pool can count: at
// least one (a peer with no channel would never answer again, so its limit
// could never move) and at most MaxChannelsPerPeer.
func clampLimit(n int) int32 { return int32(min(max(n, 1), peer.MaxChannelsPerPeer)) }

// LimiterPanic describes a panic that a host's Limiter raised in Observe or
// Limit, recovered by the pool.
type LimiterPanic struct {
	Value any    // what it panicked with
	Stack []byte // the stack where it panicked
}

// Observe records how one message to the peer ref names ended, before its
// channel reopens. An answer or a timeout moves the peer's smoothed response
// time, as ObserveRTT does; a failure (limit.Failed: the peer refused the
// request) does not, because a refusal comes back fast precisely when the
// peer did no work, and would rank the most overloaded peer first. The
// peer's Limiter, if it has one, sees the sample (every outcome), with
// s.InFlight set to the peer's messages in flight (the ended one included),
// and may move the peer's limit. A higher limit opens channels at once, as
// far as the peer's allowance lets (and TakeOpened reports the peer); a lower one closes open channels and retires
// closed ones as their messages end (see Pool). Observe does nothing if the
// peer is gone. If the Limiter panics, the limit stays as it was and the
// panic is returned.
func (pl *Pool) Observe(ref Ref, s limit.Sample) *LimiterPanic {
	r := pl.live(ref)
	if r == nil {
		return nil
	}
	if s.Outcome == limit.Answered || s.Outcome == limit.TimedOut {
		pl.observeRTT(r, s.RTT)
	}
	if r.limiter == nil {
		return nil
	}
	s.InFlight = int(r.closed)
	n, p := observe(r.limiter, s)
	if p != nil {
		return p
	}
	pl.setLimit(ref.slot, r, clampLimit(n))
	return nil
}

// observe hands s to l and returns its limit after it, recovering a panic:
// the pool's state must stay consistent whatever a host's Limiter does.
func observe(l limit.Limiter, s limit.Sample) (n int, p *LimiterPanic) {
	defer func() {
		if v := recover(); v != nil {
			p = &LimiterPanic{Value: v, Stack: debug.Stack()}
		}
	}()
	l.Observe(s)
	return l.Limit(), nil
}

// FirstLimit reads l's limit before the peer it decides for is connected
// (see ConnectLimited), recovering a panic, which it returns instead: a
// host's Limiter must not be able to panic out of the scheduler.
func FirstLimit(l limit.Limiter) (n int, p *LimiterPanic) {
	defer func() {
		if v := recover(); v != nil {
			p = &LimiterPanic{Value: v, Stack: debug.Stack()}
		}
	}()
	return l.Limit(), nil
}

// setLimit gives the peer in slot, whose record is r, the limit n.
func (pl *Pool) setLimit(slot int32, r *record, n int32) {
	if n == r.limit {
		return
	}
	pl.settle()
	before := r.open()
	r.limit = n
	pl.reshape(slot, r, before)
}

// reshape brings the pool's count of open channels and its order up to
// date after the open channels of the peer in slot, whose record is r and
// whose closed channels did not change, went from before to r.open(), and
// reports whether they grew. Its rank is unchanged, so it keeps its place
// in the order if it stays there.
func (pl *Pool) reshape(slot int32, r *record, before int32) bool {
	after := r.open()
	pl.open += int(after - before)
	switch {
	case before == 0 && after > 0:
		pl.pushOrder(slot)
	case before > 0 && after == 0:
		pl.removeOrder(r.orderIndex)
	}
	if after > before {
		pl.grow(slot, r) // new channels: a sender passed over may want them
		return true
	}
	return false
}
