package node

import (
	"math"

	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/wire"
)

// Budget returns the scheduler budget that caps the node at messages a
// second (0: no cap), with a burst of a tenth of a second's worth (at
// least 1), and at bytes a second of requests and notifications (0: no
// cap), with a burst of one second's worth, which is also the largest
// message a component may declare (see FetchBytes).
func Budget(messages, bytes int64) scheduler.Budget {
	var b scheduler.Budget
	if messages > 0 {
		b.Rate, b.Burst = messages, BudgetBurst(messages)
	}
	if bytes > 0 {
		b.ByteRate, b.ByteBurst = bytes, bytes
	}
	return b
}

// BudgetBurst is the burst Budget allows a rate of messages a second: a
// tenth of a second's worth, at least 1.
func BudgetBurst(messages int64) int64 { return max(1, messages/10) }

// FetchBytes is the wire size of a fetch request of batch hashes: what the
// fetch declares to a byte budget (fetch.Config.Bytes) when its requests
// hold at most batch hashes.
func FetchBytes(batch int) int64 {
	return int64(wire.MessageSize(math.MaxUint32, ledger.GetObjects{Hashes: make([]ledger.Hash, batch)}))
}
