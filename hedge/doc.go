// Package hedge holds the library's hedging arithmetic. Hedging asks a
// second peer for what a first is slow to answer, and takes whichever
// answer comes first; it cuts the tail of response times for a little more
// traffic, as long as that little is bounded.
//
// When a request is slow is its soft deadline (package rto). How many
// requests may be hedged is a Budget: a token budget in the manner of gRPC's
// retry throttling, in which every request sent earns a fraction of a token,
// every hedge spends a whole one, and unspent tokens are saved only up to a
// cap. At any moment the hedges sent are at most
//
//	Burst + ⌊PerThousand · requests / 1000⌋
//
// (5% of the requests by default, plus a burst of 10), however the requests
// and the hedges interleave. The cap only lowers that: it keeps a long quiet
// spell from funding a storm of hedges all at once, which is what a budget
// meant for a long-lived node needs; a sender that hedges only at the end of
// a finite job raises it, so that what the job earned is there at its end.
//
// Tokens are counted in thousandths, so the arithmetic is exact integer
// arithmetic, and a Budget's state depends only on the sequence of calls
// made to it. Nothing here reads a clock or takes a lock.
package hedge
