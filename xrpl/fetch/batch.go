package fetch

import (
	"math"
	"time"
)

// MaxAutoBatch is the largest request Run sizes itself (see
// Config.PeerRate): a reply of 1,024 objects fits package wire's 4 MiB
// frame cap while they average under about 4,050 bytes (tcpnet's server
// cuts a larger reply to fit), and a rippled peer's reply cap of 12,288
// objects is far above it.
const MaxAutoBatch = 1024

// batchSize is how many hashes Run asks one peer for in one request, when
// the peer is kept within a rate (Config.PeerRate) of perSecond requests a
// second: base while the peer's channels are what binds, and larger when
// its rate is, so that the fewer requests the rate lets go carry as many
// objects as the channels would. A peer with limit channels and response
// time rtt carries, by Little's law, limit/rtt requests a second; when
// that is more than perSecond, the rate binds, and each request asks for
// base·(limit/rtt)/perSecond hashes (rounded up), at most maxBatch. Larger
// answers take the peer longer, which lowers limit/rtt and the batch with
// it: the rule settles where the rate and the channels carry the same.
// Before the peer's first answer (rtt 0), and without a rate (perSecond
// 0), it is base.
func batchSize(base, maxBatch int, perSecond float64, limit int, rtt time.Duration) int {
	if perSecond <= 0 || rtt <= 0 || limit <= 0 {
		return base
	}
	carried := float64(limit) / rtt.Seconds() // requests a second the channels carry
	if carried <= perSecond {
		return base
	}
	n := math.Ceil(float64(base) * carried / perSecond)
	if n >= float64(maxBatch) {
		return maxBatch
	}
	return max(int(n), base)
}
