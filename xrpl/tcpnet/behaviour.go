package tcpnet

import (
	"math/rand/v2"
	"time"

	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/resource"
	"github.com/peersched/peersched/xrpl/simnet"
	"github.com/peersched/peersched/xrpl/wire"
)

// Behaviour is how a Server answers requests. It borrows the vocabulary of
// package simnet so that one description of a peer works over simulated and
// real networks alike. The zero Behaviour answers every request honestly and
// at once.
type Behaviour struct {
	// Latency delays each answer, measured from when the request is read;
	// with a Service, from the end of the request's service instead.
	Latency simnet.Latency

	// Service gives the server a finite capacity, as simnet.Service gives
	// a simulated peer. The capacity is the server's, shared by all its
	// connections: every request it reads joins one FIFO queue, each of
	// Service.Workers serves one request at a time for Service.Time (the
	// answer's size is that of the honest reply), and a request that finds
	// QueueLimit requests already waiting overflows. Pings never queue.
	// The zero Service is unlimited: every request is served at once, in no
	// time.
	//
	// Where it differs from simnet: a rejected request (OverflowReject) is
	// answered after Latency alone with a reply that holds no objects,
	// since rippled's TMGetObjectByHash has no "busy" status, and leaving
	// everything out, as a peer does with objects it lacks, is the closest
	// a real peer comes to saying "not now". Requests keep their place in
	// the queue when their connection closes (a server learns of it only
	// when it answers); only Kill, Close or DropAfter empty the queue, as a
	// crash would. And there is no Slowness to scale service times.
	Service simnet.Service

	// Loss is the probability that a request is never answered.
	Loss float64
	// Missing is the probability that the server lacks each object asked
	// for, and leaves it out of its reply as rippled does.
	Missing float64
	// Faults gives each fault's probability per request, as in
	// simnet.Profile, with two differences: WrongID answers under the ID
	// next below the request's (the scheduler issues IDs in order, so that
	// is the request sent just before, most likely to another peer, and it
	// shows up as a spoofed response), and UnknownID under an ID below
	// 2^24, which RequestIDs never issues.
	Faults simnet.FaultRates
	// LateBy is how much later a Late answer comes; 0 means DefaultLateBy.
	LateBy time.Duration

	// DropAfter, if positive, makes the server drop every connection and
	// stop listening once it has read that many requests: the peer that
	// goes away midway. It listens again on the same address after DownFor
	// (0 means never, until Restart), and drops again after as many more.
	DropAfter int
	// DropAfterObjects is DropAfter counted in the objects the requests
	// ask for, for a client whose requests vary in size: the server goes
	// down after the request that takes the count to a multiple of it, or
	// past one.
	DropAfterObjects int
	DownFor          time.Duration
}

// DefaultLateBy is the delay a Late answer gets when Behaviour.LateBy is 0:
// longer than the fetch's default request timeout (fetch.DefaultTimeout,
// 2 s).
const DefaultLateBy = 5 * time.Second

// validate checks b as simnet checks a Profile.
func (b *Behaviour) validate() error {
	return simnet.Profile{Latency: b.Latency, Service: b.Service, Loss: b.Loss, Missing: b.Missing, Faults: b.Faults, LateBy: b.LateBy}.Validate()
}

// reply is one answer a server will write: msg under id, after delay.
type reply struct {
	delay time.Duration
	id    uint64
	msg   any
}

// plan decides how to answer request id asking for req from nodes, read at now,
// and appends the replies to dst (none for a lost, dropped or ignored
// request); each reply's delay counts from now. An answer of more than
// resource.MaxReplyObjects objects is cut to them, and plan sets *truncated. q is the server's service
// queue, nil without a Service. plan draws from r in a fixed order (loss,
// fault, latency, missing objects, then whatever the fault needs; a request
// that overflows q draws only the latency of its rejection), so a seed and a
// sequence of requests replay.
func (b *Behaviour) plan(dst []reply, r *rand.Rand, nodes Nodes, q *serviceQueue, now time.Time, id uint64, req ledger.GetObjects, truncated *bool) []reply {
	if r.Float64() < b.Loss {
		return dst
	}
	if q != nil && !q.admit(now) {
		if b.Service.Overflow == simnet.OverflowReject {
			return append(dst, reply{b.Latency.Sample(r), id, ledger.Objects{}})
		}
		return dst
	}
	fault, faulty := pickFault(&b.Faults, r.Float64())
	delay := b.Latency.Sample(r)
	resp := answerFrom(nodes, req)
	if b.Missing > 0 {
		kept := resp.Items[:0]
		for _, it := range resp.Items {
			if r.Float64() >= b.Missing {
				kept = append(kept, it)
			}
		}
		resp.Items = kept
	}
	// rippled stops at resource.MaxReplyObjects objects found.
	kept, cut := resource.Truncate(len(resp.Items))
	resp.Items, *truncated = resp.Items[:kept], cut > 0
	resp = fitReply(resp, wire.DefaultMaxFrame)
	if q != nil {
		// Every admitted request takes a worker, even one the server then
		// ignores; its service produces the honest answer.
		delay += q.serve(now, len(req.Hashes), wire.MessageSize(id, resp))
	}
	if !faulty {
		return append(dst, reply{delay, id, resp})
	}
	switch fault {
	case simnet.Ignore:
		return dst
	case simnet.WrongID:
		return append(dst, reply{delay, neighbour(id), resp})
	case simnet.UnknownID:
		return append(dst, reply{delay, 1 + r.Uint64N(requestIDsFrom-1), resp})
	case simnet.WrongType:
		return append(dst, reply{delay, id, req})
	case simnet.Late:
		late := b.LateBy
		if late == 0 {
			late = DefaultLateBy
		}
		return append(dst, reply{delay + late, id, resp})
	case simnet.Duplicate:
		return append(dst, reply{delay, id, resp}, reply{delay + b.Latency.Sample(r), id, resp})
	case simnet.Corrupt:
		return append(dst, reply{delay, id, corrupt(resp, r)})
	}
	return append(dst, reply{delay, id, resp})
}

// pickFault maps a uniform draw u in [0, 1) to the fault it selects, or
// false: faults own consecutive slices of [0, 1) in Fault order, as in simnet.
func pickFault(rates *simnet.FaultRates, u float64) (simnet.Fault, bool) {
	for f, rate := range rates {
		if u < rate {
			return simnet.Fault(f), true
		}
		u -= rate
	}
	return 0, false
}

// neighbour returns the ID next below id, or next above if id is the first
// of RequestIDs.
func neighbour(id uint64) uint64 {
	if id > requestIDsFrom {
		return id - 1
	}
	return id + 1
}

// fitReply returns resp with the objects that would take its encoding past
// maxPayload bytes left out, as objects the server lacks are: the client
// asks for them again. A request for thousands of the largest entries would
// otherwise make a frame its peer refuses.
func fitReply(resp ledger.Objects, maxPayload int) ledger.Objects {
	// A reply's fields other than its objects take 12 bytes at most; an
	// object takes its data and at most 48 bytes around it (tags, lengths,
	// the hash).
	size := 12
	for i, it := range resp.Items {
		size += len(it.Data) + 48
		if size > maxPayload {
			resp.Items = resp.Items[:i]
			break
		}
	}
	return resp
}

// corrupt returns resp with one present object's bytes altered in a copy (the
// ledger's bytes are shared and must not change); resp itself if none is
// present.
func corrupt(resp ledger.Objects, r *rand.Rand) ledger.Objects {
	var present []int
	for i, it := range resp.Items {
		if len(it.Data) > 0 {
			present = append(present, i)
		}
	}
	if len(present) == 0 {
		return resp
	}
	i := present[r.IntN(len(present))]
	data := append([]byte(nil), resp.Items[i].Data...)
	data[r.IntN(len(data))] ^= 0xff
	resp.Items[i].Data = data
	return resp
}

// Misbehaviour returns fault rates adding up to rate, spread over the ways a
// peer can lie about its answers: spoofed and unknown request IDs,
// duplicates, corrupt objects and the wrong message type. Such a peer still
// answers honestly most of the time, so it keeps looking worth asking.
func Misbehaviour(rate float64) simnet.FaultRates {
	share := func(n float64) float64 { return rate * n / 30 }
	return simnet.FaultRates{
		simnet.WrongID:   share(8),
		simnet.UnknownID: share(4),
		simnet.Duplicate: share(8),
		simnet.Corrupt:   share(8),
		simnet.WrongType: share(2),
	}
}
