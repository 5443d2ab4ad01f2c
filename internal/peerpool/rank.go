package peerpool

// This file holds the parts of a peer's rank other than its load: the class
// of its smoothed response time, within which response times count as
// equal, and its tie key, which orders peers equal in load and class.

import (
	"math"
	"math/bits"
	"time"

	"github.com/peersched/peersched/peer"
)

// Response-time classes are octaves on a grid that each pool shifts by a
// factor drawn from its rank seed. A fixed grid would put the same
// boundary between the same two response times in every pool: peers of
// equal speed whose estimates straddle it (by noise, or by a queue
// that a burst left) would look slower to every node at once, and every
// node would avoid them together. Shifted grids make it a matter of
// chance per pool, a chance that grows with the ratio of the two times.
//
// A pool whose grid factor is g (in [1, 2]) puts a response time d in
// class bits.Len64(⌊d·g⌋): two response times are in one class when d·g
// and d'·g lie in one octave [2^k, 2^(k+1)). Class 0 is "no sample yet",
// below every other.
//
// So two response times whose ratio is 2 or more are never equal, and two
// whose ratio is ρ < 2 count as different for a share log2(ρ) of the
// seeds: 14 % at 10 % apart, 58 % at 1.5×. Among peers of one class the
// ranking takes turns (see TieKey), so a peer that a pool counts as equal
// to the fastest keeps being asked, and keeps being measured.

// rttGridSalt keeps the grid's draw apart from the tie keys'.
const rttGridSalt = 0x5f0e1d2c3b4a6978

// rttGrid returns the grid factor of a pool whose rank seed is seed, in
// 32.32 fixed point: 2^u for u drawn uniformly from [0, 1) (rounded, so 2
// itself is possible), so that the boundaries fall uniformly in the
// logarithm of the response time.
func rttGrid(seed uint64) uint64 {
	u := float64(mix64(seed^rttGridSalt)>>11) / (1 << 53)
	return uint64(math.Ldexp(math.Exp2(u), 32))
}

// rttClass returns the class of the smoothed response time rtt on the
// grid whose factor is grid (from rttGrid).
func rttClass(rtt time.Duration, grid uint64) int32 {
	if rtt <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(rtt), grid) // below 2^95: rtt < 2^63, grid ≤ 2^33
	return int32(bits.Len64(hi<<32 | lo>>32))
}

// CompareRTTs compares two smoothed response times as a Pool whose rank
// seed is seed ranks them: -1 if a ranks first (is faster), +1 if b does,
// and 0 if they count as equal (see the grid above; 0 means no sample yet,
// ranked first).
func CompareRTTs(seed uint64, a, b time.Duration) int {
	grid := rttGrid(seed)
	ca, cb := rttClass(a, grid), rttClass(b, grid)
	switch {
	case ca < cb:
		return -1
	case ca > cb:
		return 1
	}
	return 0
}

// TieKey is the tie key a peer named id gets when it connects to a Pool
// whose rank seed is seed: a number below 2^56 that looks random, a pure
// function of the two. Among peers equal in load and response-time class,
// the pool lists first those it has not sent to since they connected, in
// the order of their tie keys, and then the others, the one it sent to
// least recently first. So equal peers take turns, round and round in an
// order that starts from a permutation the seed picks (design seed 000:
// permute, so that competitors do not all try the same item first): two
// pools with different seeds that see the same peers alike most likely
// start on different peers.
func TieKey(seed uint64, id peer.ID) uint64 {
	// FNV-1a of the ID, then mixed with the seed.
	h := uint64(14695981039346656037)
	for i := range len(id) {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	return mix64(h^mix64(seed)) >> (64 - keyBits + 1)
}

// keyBits is the width of a tie key: TieKeys lie below 2^(keyBits-1), and
// sentKeys above, so that a key and an RTT class pack into one uint64 (see
// rank).
const keyBits = 57

// sentKey is the tie key of a peer whose channel was the pool's n-th Close:
// above every TieKey, and in the order of the sends (n < 2^56: more sends
// than a pool makes in centuries).
func sentKey(n uint64) uint64 { return 1<<(keyBits-1) | n&(1<<(keyBits-1)-1) }

// rank packs a peer's RTT class and tie key in the order the ranking
// compares them, so that ordering equally loaded peers is one comparison.
// A class is at most 64, which fits in the 7 bits above the key.
func rank(class int32, key uint64) uint64 { return uint64(class)<<keyBits | key }

// rankClass is the RTT class in a rank.
func rankClass(rank uint64) int32 { return int32(rank >> keyBits) }

// rankKey is the tie key in a rank.
func rankKey(rank uint64) uint64 { return rank & (1<<keyBits - 1) }

// mix64 is SplitMix64's finalizer: a bijection on 64 bits whose every
// output bit depends on every input bit.
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
