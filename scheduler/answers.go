package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/peersched/peersched/internal/peerpool"
	"github.com/peersched/peersched/internal/requests"
	"github.com/peersched/peersched/limit"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// WithdrawReceiver takes the receiver away from request id. If it returns
// true, none of the receiver's methods will be called for id. The request
// keeps its channel closed until its response or deadline comes. It returns
// false if the request has already ended (its callback has run or is about
// to) or was already withdrawn.
func (s *Scheduler) WithdrawReceiver(id peer.RequestID) bool {
	s.requestsMu.Lock()
	defer s.requestsMu.Unlock()
	return s.table.Withdraw(id)
}

// Deliver hands the scheduler a response that the peer named from sent for
// request id. It never runs user code (unless callbacks are inline): the
// receiver is called later, on the callback goroutine. The response is
// accepted only from the peer the request was sent to, only once, and only
// before the request's deadline, and, if the request expects a type
// (offer.Request.Expect), only of that type; then the request's receiver
// gets it and the channel reopens. Otherwise it is dropped, counted (but
// not once the scheduler has stopped), and Deliver returns why:
// receiver.ErrUnknownRequest, receiver.ErrWrongPeer,
// receiver.ErrDuplicateResponse, receiver.ErrLateResponse,
// receiver.ErrWrongResponseType (the request stays live: its right
// response may still come), or ErrStopped.
func (s *Scheduler) Deliver(from peer.ID, id peer.RequestID, response any) error {
	return s.answer(from, id, response, false)
}

// Refuse tells the scheduler that the peer named from answered request id
// with a refusal: it would not serve it (it is overloaded, or busy). The
// refusal is accepted, or dropped and counted, exactly as Deliver accepts
// or drops a response, with the same errors; it is the peer's one answer,
// so a response or refusal after it is a duplicate. An accepted refusal
// ends the request as a response does (its channel reopens, within the
// peer's limit, and its class and budget are released), its receiver gets
// OnFailure with reason receiver.Refused, and Stats counts it in Refused.
// A refusal that comes while the host's Send of the request has not yet
// returned waits for it, as an early response does.
//
// The peer's Limiter sees the refusal as limit.Failed, with the time from
// send to refusal, and backs off. The peer's smoothed response time, which
// ranks its channels in offers, does not take it: a refusal comes back
// fast because the peer did no work, and would make the most overloaded
// peer look like the best one.
func (s *Scheduler) Refuse(from peer.ID, id peer.RequestID) error {
	return s.answer(from, id, nil, true)
}

// answer is Deliver (a response) and Refuse (refused set).
func (s *Scheduler) answer(from peer.ID, id peer.RequestID, response any, refused bool) error {
	// Both locks at once: the request ends (requests) and its channel
	// reopens (offers) in one step. This is the hottest path there is, and
	// taking each lock once is cheaper than handing the channel over in a
	// second round trip.
	s.lockForAnswer()
	s.requestsMu.Lock()
	if s.stopped {
		s.requestsMu.Unlock()
		s.unlockAfterAnswer()
		return ErrStopped
	}
	now := s.now()
	// Deadlines that have passed are enforced first, so a response that
	// comes after its deadline is late even if the timer has not fired yet.
	reopened := s.expireDueLocked(now)
	var f requests.Finished
	ended, err := s.table.Answer(id, from, response, refused, &f)
	if err != nil {
		s.countDroppedLocked(from, err)
		s.requestsMu.Unlock()
		s.unlockAfterAnswer()
		s.logDropped(from, id, refused, err)
		s.afterReopening(reopened)
		return err
	}
	if ended {
		s.countEndLocked(&f, now)
		s.releaseLocked(f.Terms)
		outcome := limit.Answered
		if f.Reason == receiver.Refused {
			outcome = limit.Failed
		}
		s.observeLocked(&f, outcome, now)
		reopened = s.endLocked(f.Peer) || reopened
	}
	// One acquisition of the callback queue both queues the receiver's
	// call and runs the drainer; the other locks go first, as the drainer
	// needs them free.
	s.callbacksMu.Lock()
	if ended {
		s.oweLocked(&f)
	}
	if reopened {
		s.dispatchWanted = true
		s.offersDue = true
	}
	s.requestsMu.Unlock()
	s.unlockAfterAnswer()
	s.runLocked()
	s.callbacksMu.Unlock()
	return nil
}

// lockForAnswer takes offersMu for an answer: after answersMu, where
// answers queue, if the scheduler was made with many processors (see
// queueAnswersFrom).
//
// Why answersMu: a host may answer from many goroutines at once (a reader
// per connection). If each of them waited on offersMu, the one goroutine
// that runs callbacks and makes offers, which takes offersMu for every
// offer and send, would wait behind all of them each time. With answers
// queued on answersMu first, at most one of them waits on offersMu beside
// the drainer.
func (s *Scheduler) lockForAnswer() {
	if s.queueAnswers {
		s.answersMu.Lock()
	}
	s.offersMu.Lock()
}

// unlockAfterAnswer releases what lockForAnswer took.
func (s *Scheduler) unlockAfterAnswer() {
	s.offersMu.Unlock()
	if s.queueAnswers {
		s.answersMu.Unlock()
	}
}

// queueAnswersFrom is the least GOMAXPROCS at New for which answers queue
// on answersMu. Measured with 2 goroutines a processor answering
// (BENCHMARKS.md): at 16 processors the queue took a fifth off a
// request's life (21 % in both callback modes), at 8, 5 to 14 %; at 2 it
// cost 3 % (one uncontended lock more an answer), and 4 % on the inline
// path of one goroutine alone. Queueing only when offersMu was
// found taken (TryLock) gained 3 to 10 % at 16: answers that found it free
// still piled up on it.
const queueAnswersFrom = 8

// endLocked ends the message on a closed channel of the peer ref and reports
// whether offers may follow: if its channel reopened, or, under an in-flight
// budget or with classes (whose room the message frees), in any case.
// Caller holds offersMu.
func (s *Scheduler) endLocked(ref peerpool.Ref) bool {
	return s.pool.Reopen(ref) || s.gated
}

// afterReopening runs the callbacks and, if a channel reopened, the offers
// that follow a step.
func (s *Scheduler) afterReopening(reopened bool) {
	if reopened {
		s.wantOffers()
		return
	}
	s.run()
}

// oweLocked queues the receiver call for a finished request, if it still has
// a receiver (a withdrawn request has none), and counts it as owed until the
// drainer starts it. Caller holds callbacksMu.
func (s *Scheduler) oweLocked(f *requests.Finished) {
	if f.Receiver != nil {
		s.pending.pushFinished(f)
		s.owed.Add(1)
	}
}

// settleEndedLocked settles the message f that an event other than its own
// answer or deadline ended (a disconnect, a stop): its class and budget are
// released and, for a request, its end counted and its receiver's call
// queued. Caller holds offersMu, requestsMu and callbacksMu.
func (s *Scheduler) settleEndedLocked(f *requests.Finished) {
	s.releaseLocked(f.Terms)
	if !f.Notification {
		s.countEndLocked(f, 0) // no answer: its time is not read
		s.oweLocked(f)
	}
}

// countEndLocked counts how request f ended at now, in all and for its
// peer. now is read only for an answered request, for its response time.
// Caller holds offersMu.
func (s *Scheduler) countEndLocked(f *requests.Finished, now time.Duration) {
	peer := s.peers.of(f.Peer, f.PeerID)
	if f.Receiver != nil && f.Answered() {
		took := now - f.SentAt
		bucket := bucketOf(took)
		s.counts.answered(took, bucket)
		peer.answered(took, bucket)
		return
	}
	s.counts.failed(f)
	peer.failed(f)
}

// logDropped reports a response (or a refusal) that Deliver (or Refuse)
// dropped. An unknown ID or the wrong peer points at a misbehaving host or
// peer and is a warning; late and duplicate responses happen in healthy
// networks and are debug records. The level is checked first so that a
// silent logger costs nothing.
func (s *Scheduler) logDropped(from peer.ID, id peer.RequestID, refusal bool, err error) {
	level := slog.LevelDebug
	if errors.Is(err, receiver.ErrUnknownRequest) || errors.Is(err, receiver.ErrWrongPeer) || errors.Is(err, receiver.ErrWrongResponseType) {
		level = slog.LevelWarn
	}
	if ctx := context.Background(); s.log.Enabled(ctx, level) {
		msg := "peersched: dropped a response"
		if refusal {
			msg = "peersched: dropped a refusal"
		}
		s.log.Log(ctx, level, msg, "from", string(from), "request", uint64(id), "reason", err.Error())
	}
}

// countDroppedLocked counts a response or refusal from the peer named from
// that was dropped for err, in all and against that peer. Caller holds
// offersMu.
func (s *Scheduler) countDroppedLocked(from peer.ID, err error) {
	s.counts.dropped(err)
	s.peers.ofID(from).dropped(err)
}
