package scheduler

import (
	"errors"
	"time"

	"github.com/peersched/peersched/internal/requests"
	"github.com/peersched/peersched/receiver"
)

// messageCounts counts what happened to messages: the scheduler keeps one
// for all of them (Stats), one per peer (PeerStats) and one for the peers
// it no longer reports (see peerstats.go), so that, field by field, the
// first is the sum of the others. It is not safe for concurrent use; the
// scheduler guards every one with its offers lock.
type messageCounts struct {
	sent, notified, sendErrors                                      uint64
	succeeded, timedOut, refused, disconnected, shutdown, withdrawn uint64
	late, unknown, wrongPeer, duplicate, wrongType                  uint64
	responseTimes                                                   histogramCounts
}

// answered counts a request answered after took, which falls in bucket
// (bucketOf(took): the caller works it out once for every count it
// updates).
func (c *messageCounts) answered(took time.Duration, bucket int) {
	c.succeeded++
	// Masked so that the index needs no bounds check (see histogramCounts):
	// bucketOf's results are in range already.
	c.responseTimes.buckets[bucket&(len(c.responseTimes.buckets)-1)]++
	c.responseTimes.sum += took
}

// failed counts how request f ended, if not answered: failed, or withdrawn.
func (c *messageCounts) failed(f *requests.Finished) {
	switch {
	case f.Receiver == nil:
		c.withdrawn++
	case f.Reason == receiver.Timeout:
		c.timedOut++
	case f.Reason == receiver.Refused:
		c.refused++
	case f.Reason == receiver.Disconnected:
		c.disconnected++
	case f.Reason == receiver.Shutdown:
		c.shutdown++
	}
}

// dropped counts a response or refusal dropped for err, an error
// requests.Table's Respond or Refuse returned.
func (c *messageCounts) dropped(err error) {
	switch {
	case errors.Is(err, receiver.ErrLateResponse):
		c.late++
	case errors.Is(err, receiver.ErrWrongPeer):
		c.wrongPeer++
	case errors.Is(err, receiver.ErrDuplicateResponse):
		c.duplicate++
	case errors.Is(err, receiver.ErrWrongResponseType):
		c.wrongType++
	default:
		c.unknown++
	}
}

// add adds o's counts to c.
func (c *messageCounts) add(o *messageCounts) {
	c.sent += o.sent
	c.notified += o.notified
	c.sendErrors += o.sendErrors
	c.succeeded += o.succeeded
	c.timedOut += o.timedOut
	c.refused += o.refused
	c.disconnected += o.disconnected
	c.shutdown += o.shutdown
	c.withdrawn += o.withdrawn
	c.late += o.late
	c.unknown += o.unknown
	c.wrongPeer += o.wrongPeer
	c.duplicate += o.duplicate
	c.wrongType += o.wrongType
	c.responseTimes.add(&o.responseTimes)
}

// counters returns c's counts as the exported Counters.
func (c *messageCounts) counters() Counters {
	return Counters{
		Sent:           c.sent,
		Notified:       c.notified,
		SendErrors:     c.sendErrors,
		Succeeded:      c.succeeded,
		TimedOut:       c.timedOut,
		Refused:        c.refused,
		Disconnected:   c.disconnected,
		Shutdown:       c.shutdown,
		WithdrawnEnded: c.withdrawn,
		Late:           c.late,
		Unknown:        c.unknown,
		WrongPeer:      c.wrongPeer,
		Duplicate:      c.duplicate,
		WrongType:      c.wrongType,
		ResponseTimes:  c.responseTimes.snapshot(),
	}
}
