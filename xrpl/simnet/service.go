package simnet

import (
	"fmt"
	"time"
)

// Service gives a simulated peer a finite capacity to serve requests, so
// that pushing more requests than it can serve makes them wait, and past a
// limit turns them away, as a real overloaded peer does.
//
// A request reaches the peer when it is sent and joins a FIFO queue in front
// of Workers workers. The first free worker takes the request at the head of
// the queue and serves it for its service time:
//
//	PerRequest + PerObject·(objects requested) + (answer's wire size)/BytesPerSecond
//
// scaled by the profile's Slowness in force when the request arrives, and
// capped at MaxLatency. When service ends, the answer is ready: Latency (the
// network's part of the round trip) and then the uplink (Bandwidth) follow.
// So a request's response time is its queueing delay, plus its service time,
// plus its latency and transmission; unloaded, the queueing delay is zero.
//
// A request that arrives when QueueLimit requests are already waiting (not
// counting those being served) overflows, and Overflow says what the peer
// does with it. Overflowed requests use no worker and draw no randomness
// beyond what Overflow needs.
//
// A disconnection empties the queue and frees every worker: the requests in
// it are lost with the connection.
//
// The zero Service is unlimited capacity: every request is served at once in
// no time, as if the peer had no Service at all.
type Service struct {
	// Workers is how many requests the peer serves at once; 0 means
	// unlimited capacity, and then every other field must be zero. At most
	// MaxWorkers.
	Workers int
	// PerRequest is the service time every request takes, >= 0.
	PerRequest time.Duration
	// PerObject is the service time each requested object adds, >= 0.
	PerObject time.Duration
	// BytesPerSecond, if positive, adds the time to produce the answer's
	// wire size (wire.MessageSize) at this rate, per
	// worker; 0 adds nothing.
	BytesPerSecond int64
	// QueueLimit is the most requests that may wait for a worker; 0 means
	// the queue is unbounded.
	QueueLimit int
	// Overflow is what happens to a request that finds the queue full.
	Overflow Overflow
}

// Overflow is what an overloaded peer does with a request its queue has no
// room for.
type Overflow uint8

const (
	// OverflowDrop drops the request: it is never answered, and the
	// requester learns of the overload only by timing out. This is what a
	// peer does that reads requests faster than it serves them and sheds
	// what it cannot queue.
	OverflowDrop Overflow = iota
	// OverflowReject answers at once (after Latency, through the uplink)
	// with a reply that leaves every requested object out, and no service
	// time: an explicit "not now", cheap for the peer and fast for the
	// requester. Its objects do not count in Stats.Missing. If the
	// network's Config.Refuse is set, the answer comes through it as a
	// refusal of the request instead, at the same instant.
	OverflowReject
)

func (o Overflow) String() string {
	switch o {
	case OverflowDrop:
		return "drop"
	case OverflowReject:
		return "reject"
	}
	return fmt.Sprintf("Overflow(%d)", uint8(o))
}

// MaxWorkers caps Service.Workers: a peer's workers are simulated one by one.
const MaxWorkers = 1 << 16

// validate reports parameters that make no capacity.
func (s Service) validate() error {
	switch {
	case s.Workers < 0 || s.Workers > MaxWorkers:
		return fmt.Errorf("service workers %d outside [0, %d]", s.Workers, MaxWorkers)
	case s.PerRequest < 0 || s.PerObject < 0 || s.BytesPerSecond < 0:
		return fmt.Errorf("negative service time: per request %v, per object %v, %d bytes/s", s.PerRequest, s.PerObject, s.BytesPerSecond)
	case s.QueueLimit < 0:
		return fmt.Errorf("negative queue limit %d", s.QueueLimit)
	case s.Overflow > OverflowReject:
		return fmt.Errorf("unknown overflow %v", s.Overflow)
	case s.Workers == 0 && s != Service{}:
		return fmt.Errorf("service times, queue limit or overflow without workers")
	}
	return nil
}

// Time is how long one worker of s spends on a request for objects objects
// whose answer is size bytes on the wire (wire.MessageSize), before any
// Profile.Slowness: PerRequest + PerObject·objects + size/BytesPerSecond
// (rounded up to the nanosecond), capped at MaxLatency. Other transports that
// borrow Service (package tcpnet) use it so that their service times are
// simnet's.
func (s Service) Time(objects, size int) time.Duration {
	d := min(s.PerRequest, MaxLatency)
	if s.PerObject > 0 && objects > 0 {
		if time.Duration(objects) > MaxLatency/s.PerObject {
			return MaxLatency
		}
		d += s.PerObject * time.Duration(objects)
	}
	d += transmitTime(size, s.BytesPerSecond)
	return min(d, MaxLatency)
}
