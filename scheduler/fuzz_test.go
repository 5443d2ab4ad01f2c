package scheduler

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/limit"
	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// FuzzScheduler decodes its input into a program of operations and runs it
// twice: against the real Scheduler (in a synctest bubble, on a mock clock,
// driven by this goroutine alone) and against the reference model. The same
// harness objects (senders, receivers, host peers) are handed to both; each
// decides what to do from its own copy of a few input bytes, so both sides
// see the same behaviour as long as they call it in the same order. After
// every top-level operation the two logs of callbacks, the Stats and the
// per-peer channel counts must be equal, and the checks that do not need the
// model (one exit per sender, one outcome per request, responses bound to
// their request, channels balanced, fair offers) must hold on both sides.
func FuzzScheduler(f *testing.F) {
	for _, seed := range fuzzSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Every program runs with callbacks on the scheduler's goroutine
		// (the default) and inline; both must match the model.
		runFuzzProgram(t, data, false)
		runFuzzProgram(t, data, true)
	})
}

// The operations a program (or a callback, from inside) can perform.
const (
	opConnect = iota
	opDisconnect
	opSchedule
	opDeliver        // a response from the peer the request went to
	opDeliverWrong   // a response from another peer
	opDeliverUnknown // a response to an ID never issued
	opAdvance
	opWithdrawSender
	opWithdrawReceiver
	opStop
	opUseKeptOffer // a send on an offer kept after its callback returned
	opStats
	// Extended programs only (see opOf): the refusals.
	opRefuse        // a refusal from the peer the request went to
	opRefuseWrong   // a refusal from another peer
	opRefuseUnknown // a refusal of an ID never issued
	// Programs with wants only (see opOf).
	opReoffer // a sender asks for another offer
)

var opNames = [...]string{"connect", "disconnect", "schedule", "deliver", "deliver from the wrong peer",
	"deliver to an unknown ID", "advance", "withdraw a sender", "withdraw a receiver", "stop", "use a kept offer", "stats",
	"refuse", "refuse from the wrong peer", "refuse an unknown ID", "reoffer"}

// opTable maps an input byte to an operation; common operations appear more
// than once. Stop is rare so that programs do something before it.
var opTable = [32]int{
	opConnect, opConnect, opConnect, opDisconnect, opDisconnect,
	opSchedule, opSchedule, opSchedule, opSchedule, opSchedule,
	opDeliver, opDeliver, opDeliver, opDeliver, opDeliverWrong, opDeliverUnknown,
	opAdvance, opAdvance, opAdvance, opAdvance, opAdvance,
	opWithdrawSender, opWithdrawSender, opWithdrawReceiver, opWithdrawReceiver,
	opUseKeptOffer, opStats, opStats, opSchedule, opDeliver, opAdvance, opStop,
}

// refusalBit, set in an extended program's operation byte that reads as a
// delivery, makes it the matching refusal. Programs that are not extended
// ignore it, so the operations they read are those they always read.
const refusalBit = 0x80

// reofferBit, set in the operation byte of a program with wants that reads
// as a sender's withdrawal, makes it that sender's Reoffer instead. Other
// programs ignore it.
const reofferBit = 0x40

// opOf is the operation the byte b names, in an extended program or not,
// with wants or not.
func opOf(b byte, extended, wants bool) int {
	op := opTable[b%32]
	if wants && op == opWithdrawSender && b&reofferBit != 0 {
		return opReoffer
	}
	if !extended || b&refusalBit == 0 {
		return op
	}
	switch op {
	case opDeliver:
		return opRefuse
	case opDeliverWrong:
		return opRefuseWrong
	case opDeliverUnknown:
		return opRefuseUnknown
	}
	return op
}

// fuzzRates are the Rates an extended program's paced peers may declare:
// a message every 20ms after a burst of 2; one every 6.67ms (rounded up to
// the nanosecond) after 3, with a unit left over; rippled's cost of a
// query at 16 queries a second, after 2; and one that is not valid
// (its burst pays for no message), which ConnectWith refuses.
var fuzzRates = [4]limit.Rate{
	{Cost: 1, PerSecond: 50, Burst: 2},
	{Cost: 2, PerSecond: 300, Burst: 7},
	{Cost: 250, PerSecond: 4000, Burst: 500},
	{Cost: 3, PerSecond: 10, Burst: 2},
}

// fuzzClasses are the class sets an extended program may declare: none, two
// flat classes, and a tree whose root caps its children together.
var fuzzClasses = [3][]limit.Class{
	nil,
	{{Name: "a", Limit: 1}, {Name: "b", Limit: 2}},
	{{Name: "x", Limit: 2, Parent: "total"}, {Name: "total", Limit: 3}, {Name: "y", Limit: 1, Parent: "x"},
		{Name: "z", Limit: limit.Unlimited, Parent: "total"}},
}

// fuzzByteBudgets are the byte budgets a program with bytes may declare
// ({ByteRate, ByteBurst}: 100 bytes every 10ms, or every 2.5ms), and
// fuzzSizes the sizes its senders declare: none, several that fit every
// burst, one that fits only the larger burst, one that fits none, and a
// negative one.
var (
	fuzzByteBudgets = [3][2]int64{{10_000, 1000}, {40_000, 2500}, {10_000, 2500}}
	fuzzSizes       = [8]int64{0, 100, 400, 1000, 2000, 2600, -1, 250}
)

// fuzzCosts are the costs a program with costs may have its senders
// declare, in the units of fuzzRates: none (each peer's Cost), one below
// every Rate's Cost but the first's, one dearer than the first two
// Rates' Costs, the second Rate's whole burst, one dearer than every
// Rate's Cost, the third Rate's whole burst, one no peer could pay, and
// a negative one.
var fuzzCosts = [8]int64{0, 1, 3, 7, 300, 500, limit.MaxBurst + 1, -1}

// fuzzMinChannels are the MinChannels a program with wants may give its
// senders: none, one to three, and two that ScheduleWith refuses.
var fuzzMinChannels = [8]int{0, 1, 2, 3, -1, 0, 2, 99}

// fuzzWants decodes a schedule's two bytes of wants in a program with
// wants: w's bit 0 gives the sender an Only peer (bits 2-4 name it), and
// bit 1 an Avoid peer (bits 5-7); m's bit 3 adds the next peer to Only, and
// m mod 8 picks fuzzMinChannels.
func fuzzWants(w, m byte) (only, avoid []peer.ID, minChannels int) {
	if w&1 != 0 {
		only = append(only, fuzzPeerName(w>>2&7))
		if m&8 != 0 {
			only = append(only, fuzzPeerName(w>>2&7+1))
		}
	}
	if w&2 != 0 {
		avoid = append(avoid, fuzzPeerName(w>>5))
	}
	return only, avoid, fuzzMinChannels[m%8]
}

var (
	fuzzTimeouts = [8]time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond, 40 * time.Millisecond,
		10 * time.Millisecond, 20 * time.Millisecond, 5 * time.Millisecond, 60 * time.Millisecond}
	fuzzDigests  = [4]time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond}
	fuzzAdvances = [8]time.Duration{0, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond,
		30 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 15 * time.Millisecond}
)

const (
	fuzzMaxSteps     = 400 // top-level operations per program
	fuzzNestedBudget = 300 // operations made from inside callbacks, per program
	fuzzHangAfter    = 20 * time.Second
)

// bytesIn reads a program; past its end it reads zeros.
type bytesIn struct {
	b []byte
	i int
}

func (in *bytesIn) next() byte {
	if in.i >= len(in.b) {
		return 0
	}
	c := in.b[in.i]
	in.i++
	return c
}

func (in *bytesIn) take(n int) bytesIn {
	end := min(in.i+n, len(in.b))
	out := bytesIn{b: in.b[min(in.i, end):end]}
	in.i = max(in.i, end)
	return out
}

// schedulerAPI is the Scheduler's public API; the model has it too.
type schedulerAPI interface {
	Connect(p peer.Peer, channels int) error
	ConnectWith(p peer.Peer, opts peer.Options) error
	Disconnect(id peer.ID) error
	Schedule(snd offer.Sender, priority int) (offer.Ticket, error)
	ScheduleWith(snd offer.Sender, priority int, opts offer.Options) (offer.Ticket, error)
	ClassUsage(dst []ClassUsage) []ClassUsage
	WithdrawSender(t offer.Ticket) bool
	WithdrawReceiver(id peer.RequestID) bool
	Deliver(from peer.ID, id peer.RequestID, response any) error
	Refuse(from peer.ID, id peer.RequestID) error
	Reoffer(t offer.Ticket) bool
	Stop()
	Stats() Stats
	PeerUsage(dst []peer.Usage) []peer.Usage
	PeerStats(dst []PeerStats) []PeerStats
}

// fuzzSide is one of the two runs of a program: the real scheduler or the
// model, with the harness's records of what happened to it.
type fuzzSide struct {
	name  string
	api   schedulerAPI
	mock  *clock.Mock // real side
	model *model      // model side
	cfg   Config
	// extended is set for programs that begin with extendedMarker: they
	// read more bytes for the traffic controls (see runFuzzProgram), where
	// the programs before them read none, so those keep their meaning.
	extended bool
	// withBytes is set for programs that begin with bytesMarker: extended
	// programs that also read a byte budget, and a size for each sender.
	withBytes bool
	// withWants is set for programs that begin with wantsMarker: programs
	// with bytes that also read wants for each sender, and may Reoffer.
	withWants bool
	// withCosts is set for programs that begin with costsMarker: programs
	// with wants that also read a cost for each sender.
	withCosts bool

	log        []string // every callback and every operation's result
	violations []string
	// afterTopLevelCall, if set, runs right after each call the driver
	// itself makes (not one from inside a callback).
	afterTopLevelCall func()
	inAdvance         atomic.Bool // a top-level advance is firing deadlines
	budget            int         // nested operations left

	senders    []*fuzzSender
	kept       []offer.Offer
	ids        []peer.RequestID // every request ID handed to a host, in order
	idPeer     map[peer.RequestID]peer.ID
	receivers  map[peer.RequestID]*fuzzReceiver
	accepted   map[peer.RequestID]string // response values Deliver accepted, and refusedMark for refusals Refuse accepted
	valueFor   map[string]peer.RequestID // every response value, and the request it was delivered for
	refusals   map[peer.RequestID]int    // refusals handed to Refuse, by the ID they named
	handedOver map[string]bool           // response values a receiver got
	sending    *fuzzReceiver             // the receiver of the request being sent
	offered    *fuzzSender               // the sender whose OnOffer is running
	connected  map[peer.ID]bool
	classNames []string // the classes the Config declares
	values     int
	messages   int
	sentAt     []time.Duration // when each send the host accepted began
	sentBytes  []int64         // and the size its sender declared
	paced      []*fuzzPeer     // the connections made with a Rate
}

// now is the time since the side's start.
func (sd *fuzzSide) now() time.Duration {
	if sd.mock != nil {
		return sd.mock.Now().Sub(time.Unix(0, 0)) // the mock starts at the epoch
	}
	return sd.model.now
}

func newFuzzSide(name string, api schedulerAPI, cfg Config) *fuzzSide {
	return &fuzzSide{name: name, api: api, cfg: cfg, budget: fuzzNestedBudget,
		idPeer: map[peer.RequestID]peer.ID{}, receivers: map[peer.RequestID]*fuzzReceiver{},
		accepted: map[peer.RequestID]string{}, connected: map[peer.ID]bool{},
		valueFor: map[string]peer.RequestID{}, handedOver: map[string]bool{}, refusals: map[peer.RequestID]int{}}
}

func (sd *fuzzSide) logf(format string, args ...any) {
	sd.log = append(sd.log, fmt.Sprintf(format, args...))
}

// returned is called after every API call exec makes; nested says whether
// the call came from inside a callback.
func (sd *fuzzSide) returned(nested bool) {
	if !nested && sd.afterTopLevelCall != nil {
		sd.afterTopLevelCall()
	}
}

func (sd *fuzzSide) violate(format string, args ...any) {
	sd.violations = append(sd.violations, fmt.Sprintf(format, args...))
}

func fuzzPeerName(b byte) peer.ID { return peer.ID(fmt.Sprintf("p%d", b%5)) }

// pickID returns one of the request IDs issued so far, or 0.
func (sd *fuzzSide) pickID(b byte) peer.RequestID {
	if len(sd.ids) == 0 {
		return 0
	}
	return sd.ids[len(sd.ids)-1-int(b)%len(sd.ids)]
}

// advance moves time on. From inside a callback run by a firing deadline it
// does nothing: the clock is already being moved by the top-level step.
func (sd *fuzzSide) advance(d time.Duration) {
	if sd.inAdvance.Load() {
		sd.logf("advance %v: skipped, already advancing", d)
		return
	}
	sd.inAdvance.Store(true)
	defer sd.inAdvance.Store(false)
	sd.logf("advance %v", d)
	if sd.mock != nil {
		// In a bubble, each timer the mock fires runs to its end before
		// Add goes on (the mock sleeps after firing), so deadlines fire
		// at their own instants, one batch each.
		sd.mock.Add(d)
	} else {
		sd.model.advance(d)
	}
}

// exec reads one operation from in and performs it. nested is true inside a
// callback; nested operations are limited in number.
func (sd *fuzzSide) exec(in *bytesIn, nested bool) {
	op := opOf(in.next(), sd.extended, sd.withWants)
	if nested {
		if sd.budget <= 0 {
			return
		}
		sd.budget--
	}
	switch op {
	case opConnect:
		id, channels := fuzzPeerName(in.next()), 1+int(in.next()%3)
		p := &fuzzPeer{sd: sd, id: id, plan: in.take(int(in.next() % 8))}
		connect, how := func() error { return sd.api.Connect(p, channels) }, ""
		if sd.extended {
			switch kind := in.next(); kind % 4 {
			case 1:
				l := &fuzzLimiter{sd: sd, peer: id, limit: channels, plan: in.take(int(kind>>2) % 16)}
				connect, how = func() error { return sd.api.ConnectWith(p, peer.Options{Limiter: l}) }, " driven"
			case 2:
				b := limit.Bounds{Min: 1, Start: channels, Max: channels + 3}
				connect, how = func() error { return sd.api.ConnectWith(p, peer.Options{Bounds: b}) }, " vegas"
			case 3:
				if kind>>2 >= 4 && kind>>2%4 == 0 {
					// A limiter with no limit to give: refused (promise 12).
					l := &trapLimiter{panicIn: "Limit"}
					connect, how = func() error { return sd.api.ConnectWith(p, peer.Options{Limiter: l}) }, " trapped"
					break
				}
				// Paced (promise 21), at a fixed limit: a Rate from the
				// kind's high bits, the last of them not valid.
				b := limit.Bounds{Min: channels, Start: channels, Max: channels}
				p.rate = fuzzRates[kind>>2%uint8(len(fuzzRates))]
				sd.paced = append(sd.paced, p)
				connect, how = func() error { return sd.api.ConnectWith(p, peer.Options{Bounds: b, Rate: p.rate}) }, fmt.Sprintf(" paced %+v", p.rate)
			}
		}
		// Offers may come before Connect returns.
		was := sd.connected[id]
		sd.connected[id] = true
		err := connect()
		sd.returned(nested)
		sd.logf("connect %s/%d%s: %s", id, channels, how, errClass(err))
		if err != nil {
			sd.connected[id] = was
		}
	case opDisconnect:
		id := fuzzPeerName(in.next())
		sd.disconnect(id, "disconnect "+string(id), nested)
	case opSchedule:
		priority := int(in.next() % 4)
		snd := &fuzzSender{sd: sd, n: len(sd.senders), plan: in.take(1 + int(in.next()%6))}
		sd.senders = append(sd.senders, snd)
		var opts offer.Options
		if sd.extended {
			// No class, one of those declared, or one that is not.
			names := append(slices.Clone(sd.classNames), "undeclared")
			if c := int(in.next()) % (len(names) + 1); c > 0 {
				opts.Class = names[c-1]
			}
		}
		if sd.withBytes {
			opts.Bytes = fuzzSizes[in.next()%8]
			snd.bytes = opts.Bytes
		}
		if sd.withWants {
			w := in.next()
			opts.Only, opts.Avoid, opts.MinChannels = fuzzWants(w, in.next())
			snd.only, snd.avoid, snd.need = opts.Only, opts.Avoid, max(opts.MinChannels, 1)
		}
		if sd.withCosts {
			opts.Cost = fuzzCosts[in.next()%8]
			snd.cost = opts.Cost
		}
		t, err := sd.api.ScheduleWith(snd, priority, opts)
		sd.returned(nested)
		sd.logf("schedule s%d prio %d class %q bytes %d cost %d only %v avoid %v min %d: %s", snd.n, priority, opts.Class,
			opts.Bytes, opts.Cost, opts.Only, opts.Avoid, opts.MinChannels, errClass(err))
		snd.ticket, snd.scheduled = t, err == nil
	case opDeliver, opDeliverWrong, opDeliverUnknown, opRefuse, opRefuseWrong, opRefuseUnknown:
		id := sd.pickID(in.next())
		from, ok := sd.idPeer[id]
		switch op {
		case opDeliverWrong, opRefuseWrong:
			if other := fuzzPeerName(in.next()); other != from {
				from = other
			} else {
				from += "x"
			}
		case opDeliverUnknown, opRefuseUnknown:
			id = [4]peer.RequestID{0, id + 1<<32, 1<<40 | 0xffff, id ^ 1<<63}[in.next()%4]
		}
		if !ok {
			from = fuzzPeerName(in.next())
		}
		if op >= opRefuse {
			sd.refuse(from, id, nested)
		} else {
			sd.deliver(from, id, nested)
		}
	case opAdvance:
		sd.advance(fuzzAdvances[in.next()%8])
		sd.returned(nested)
	case opWithdrawSender:
		b := in.next()
		if len(sd.senders) == 0 {
			return
		}
		snd := sd.senders[int(b)%len(sd.senders)]
		ok := sd.api.WithdrawSender(snd.ticket)
		sd.returned(nested)
		sd.logf("withdraw s%d: %v", snd.n, ok)
		if ok {
			snd.exit("withdrawn")
		}
	case opReoffer:
		b := in.next()
		if len(sd.senders) == 0 {
			return
		}
		snd := sd.senders[int(b)%len(sd.senders)]
		exits := snd.exits
		ok := sd.api.Reoffer(snd.ticket)
		sd.returned(nested)
		sd.logf("reoffer s%d: %v", snd.n, ok)
		// It may be offered channels, and leave, before Reoffer returns.
		if ok && exits > 0 {
			sd.violate("s%d reoffered after it left (%s)", snd.n, snd.exitedBy)
		}
	case opWithdrawReceiver:
		id := sd.pickID(in.next())
		ok := sd.api.WithdrawReceiver(id)
		sd.returned(nested)
		sd.logf("withdraw receiver %#x: %v", uint64(id), ok)
		if r := sd.receivers[id]; ok && r != nil {
			if r.outcomes > 0 {
				sd.violate("receiver of %#x withdrawn after its outcome", uint64(id))
			}
			r.withdrawn = true
		}
	case opStop:
		sd.api.Stop()
		sd.returned(nested)
		sd.logf("stop")
	case opUseKeptOffer:
		b := in.next()
		if snd := sd.offered; b%2 == 0 && snd != nil {
			// From inside a callback during an offer (even from the host's
			// send of another request of that offer): a send on it is the
			// offered sender's send.
			snd.request(int(b>>1)%4, &fuzzReceiver{sd: sd, plan: in.take(2)}, 0, fuzzTimeouts[b>>3%8], " during its offer")
			return
		}
		if len(sd.kept) == 0 {
			return
		}
		o := sd.kept[int(b)%len(sd.kept)]
		_, err := o.Request(0, "kept", &fuzzReceiver{sd: sd}, time.Second)
		sd.returned(nested)
		sd.logf("send on a kept offer: %s", errClass(err))
		if err == nil {
			sd.violate("a send on an offer kept after its callback succeeded")
		}
	case opStats:
		st := sd.api.Stats()
		sd.logf("stats: open %d closed %d waiting %d parked %d in flight %d", st.ChannelsOpen, st.ChannelsClosed, st.SendersWaiting,
			st.SendersParked, st.RequestsInFlight)
	}
}

// disconnect disconnects a peer; offers made before Disconnect returns
// must not list it.
func (sd *fuzzSide) disconnect(id peer.ID, what string, nested bool) {
	was := sd.connected[id]
	delete(sd.connected, id)
	err := sd.api.Disconnect(id)
	sd.returned(nested)
	sd.logf("%s: %s", what, errClass(err))
	if err != nil && was {
		sd.connected[id] = true
	}
}

func (sd *fuzzSide) deliver(from peer.ID, id peer.RequestID, nested bool) {
	sd.values++
	value := fmt.Sprintf("v%d", sd.values)
	sd.valueFor[value] = id
	// In an extended program every third response is a fuzzValue, not a
	// string: requests that expect a string refuse it, those that expect a
	// fmt.Stringer take only it (see fuzzSender.request).
	var response any = value
	if sd.extended && sd.values%3 == 0 {
		response = fuzzValue(value)
	}
	err := sd.api.Deliver(from, id, response)
	sd.returned(nested)
	sd.logf("deliver %s (%T) from %s to %#x: %s", value, response, from, uint64(id), errClass(err))
	if err != nil && sd.handedOver[value] {
		sd.violate("Deliver refused %s for %#x (%v), but a receiver got it", value, uint64(id), err)
	}
	// The type check, without the model: a response is refused for its
	// type exactly when its request, live, expects another.
	if r := sd.receivers[id]; r != nil && sd.idPeer[id] == from {
		if wrong := !expected(r.expect, response); errors.Is(err, receiver.ErrWrongResponseType) && !wrong {
			sd.violate("Deliver refused %s (%T) for %#x, which expects %v, as of the wrong type", value, response, uint64(id), r.expect)
		} else if err == nil && wrong {
			sd.violate("Deliver accepted %s (%T) for %#x, which expects %v", value, response, uint64(id), r.expect)
		}
	}
	if err == nil {
		if to, ok := sd.idPeer[id]; !ok || to != from {
			sd.violate("Deliver accepted %s from %s for %#x, sent to %q", value, from, uint64(id), to)
		}
		if prev, dup := sd.accepted[id]; dup {
			sd.violate("Deliver accepted %s and %s for %#x", prev, value, uint64(id))
		}
		sd.accepted[id] = value
	}
}

// refusedMark stands in sd.accepted for a refusal that Refuse accepted.
const refusedMark = "(refused)"

func (sd *fuzzSide) refuse(from peer.ID, id peer.RequestID, nested bool) {
	sd.refusals[id]++
	err := sd.api.Refuse(from, id)
	sd.returned(nested)
	sd.logf("refuse from %s of %#x: %s", from, uint64(id), errClass(err))
	if err == nil {
		if to, ok := sd.idPeer[id]; !ok || to != from {
			sd.violate("Refuse accepted a refusal from %s of %#x, sent to %q", from, uint64(id), to)
		}
		if prev, dup := sd.accepted[id]; dup {
			sd.violate("Refuse accepted a refusal of %#x, which already had %s", uint64(id), prev)
		}
		sd.accepted[id] = refusedMark
	}
}

// fuzzSender is a sender whose every decision comes from its plan.
type fuzzSender struct {
	sd        *fuzzSide
	n         int
	plan      bytesIn
	ticket    offer.Ticket
	scheduled bool
	exits     int
	exitedBy  string
	offers    int
	offer     offer.Offer // the open offer, during OnOffer
	bytes     int64       // the size it declared for each message
	cost      int64       // what it declared each message costs a paced peer
	sent      int         // sends through it
	// Its wants, as it scheduled them: every offer must meet them.
	only, avoid []peer.ID
	need        int
}

func (s *fuzzSender) exit(how string) {
	if s.exits > 0 {
		s.sd.violate("s%d left twice: %s, then %s", s.n, s.exitedBy, how)
	}
	s.exits++
	s.exitedBy = how
}

func (s *fuzzSender) OnOffer(o offer.Offer) {
	sd := s.sd
	s.offers++
	if s.exits > 0 {
		sd.violate("s%d offered channels after it left (%s)", s.n, s.exitedBy)
	}
	st, stats := o.Status(), sd.api.Stats()
	var view []string
	for i := range st.Len {
		c, _ := o.Channel(i)
		view = append(view, fmt.Sprintf("%s/%d/%d/%v", c.Peer, c.ChannelsClosed, c.Limit, c.RTT))
		if !sd.connected[c.Peer] {
			sd.violate("s%d offered a channel of %s, which is not connected", s.n, c.Peer)
		}
		if slices.Contains(s.avoid, c.Peer) || (len(s.only) > 0 && !slices.Contains(s.only, c.Peer)) {
			sd.violate("s%d offered a channel of %s; it wants only %v and avoids %v", s.n, c.Peer, s.only, s.avoid)
		}
	}
	if st.Len < s.need {
		sd.violate("s%d offered %d channels; it wants at least %d", s.n, st.Len, s.need)
	}
	sd.logf("s%d offer size %d of [%s]", s.n, st.Size, strings.Join(view, " "))
	// Promise 4, checked without the model.
	switch {
	case !st.Live || st.Sent != 0 || st.Size < 1 || st.Size > st.Len:
		sd.violate("s%d offered %+v", s.n, st)
	case stats.SendersWaiting > 1 && st.Size != 1:
		sd.violate("s%d offered size %d while %d senders wait", s.n, st.Size, stats.SendersWaiting)
	case stats.SendersWaiting == 1 && sd.cfg.Budget == (Budget{}) && sd.cfg.Classes == nil && st.Size != min(stats.ChannelsOpen, st.Len):
		sd.violate("s%d, alone, offered size %d of %d with %d open", s.n, st.Size, st.Len, stats.ChannelsOpen)
	case st.Size > min(stats.ChannelsOpen, st.Len):
		sd.violate("s%d offered size %d of %d with %d open", s.n, st.Size, st.Len, stats.ChannelsOpen)
	case sd.cfg.Budget.MaxInFlight > 0 && stats.ChannelsClosed+st.Size > sd.cfg.Budget.MaxInFlight:
		sd.violate("s%d offered size %d with %d in flight of %d", s.n, st.Size, stats.ChannelsClosed, sd.cfg.Budget.MaxInFlight)
	case st.Len > cmp.Or(sd.cfg.MaxOfferChannels, DefaultMaxOfferChannels):
		sd.violate("s%d offered %d channels, more than N=%d", s.n, st.Len, cmp.Or(sd.cfg.MaxOfferChannels, DefaultMaxOfferChannels))
	}

	s.offer, s.sent, sd.offered = o, 0, s
	defer func() { s.offer, sd.offered = offer.Offer{}, nil }()
	newReceiver := func() *fuzzReceiver { return &fuzzReceiver{sd: sd, plan: s.plan.take(2)} }
	b := s.plan.next()
	// Offer methods are safe for concurrent use: in some offers every send
	// is made from a helper goroutine that OnOffer waits for, as a sender
	// handing work to a pool would. Calls from the host's send on that
	// helper (Stop, Disconnect, withdrawals) must not deadlock.
	arg := s.plan.next()
	timeout := fuzzTimeouts[arg%8]
	// In an extended program, timeouts 4 and 5 (10 and 20ms, as 0 and 1)
	// come with a soft deadline at half of them.
	var soft time.Duration
	if sd.extended && (arg%8 == 4 || arg%8 == 5) {
		soft = timeout / 2
	}
	request := func(i int, r receiver.Receiver, timeout time.Duration) { s.request(i, r, soft, timeout, "") }
	if b/10%2 == 1 {
		request = func(i int, r receiver.Receiver, timeout time.Duration) {
			done := make(chan struct{})
			go func() {
				defer close(done)
				s.request(i, r, soft, timeout, "")
			}()
			<-done
		}
	}
	index := int(arg>>3) % max(st.Len, 1)
	switch b % 10 {
	case 0:
		request(index, newReceiver(), timeout)
	case 1: // decline; in a program with wants, perhaps asking for another offer
		if sd.withWants && arg&1 != 0 {
			ok := sd.api.Reoffer(s.ticket)
			sd.logf("s%d declines and asks again: %v", s.n, ok)
		}
	case 2:
		for i := range 1 + int(arg>>5)%4 {
			request(i, newReceiver(), timeout)
		}
	case 3:
		c, _ := o.Channel(index)
		sd.messages++
		exits := s.exits
		err := o.Notify(index, fmt.Sprintf("m%d", sd.messages), fuzzDigests[arg%4])
		sd.logf("s%d notify on %d (%s): %s", s.n, index, c.Peer, errClass(err))
		if err == nil {
			s.sentOne(exits)
		}
	case 4: // misuse: every one of these must fail and change nothing
		switch arg % 6 {
		case 4:
			sd.logf("s%d notify with digest 0: %s", s.n, errClass(o.Notify(index, "bad", 0)))
		case 5:
			sd.logf("s%d notify on %d: %s", s.n, st.Len, errClass(o.Notify(st.Len, "bad", time.Second)))
		case 0:
			request(index, nil, timeout)
		case 1:
			request(index, newReceiver(), 0)
		case 2:
			request(st.Len, newReceiver(), timeout)
		case 3:
			request(0, newReceiver(), timeout)
			request(0, newReceiver(), timeout)
		}
	case 5:
		sd.exec(&s.plan, true)
		request(0, newReceiver(), timeout)
	case 6:
		request(index, newReceiver(), timeout)
		panic("sender exploded")
	case 7:
		sd.kept = append(sd.kept, o)
	case 8:
		request(index, newReceiver(), timeout)
		sd.exec(&s.plan, true)
	case 9:
		ok := sd.api.WithdrawSender(s.ticket)
		sd.logf("s%d withdraws itself: %v", s.n, ok)
		if ok {
			s.exit("withdrawn")
		}
		request(0, newReceiver(), timeout)
	}
}

// request sends a request on channel i of the sender's open offer, with a
// soft deadline if soft is not 0.
func (s *fuzzSender) request(i int, r receiver.Receiver, soft, timeout time.Duration, how string) {
	sd := s.sd
	c, _ := s.offer.Channel(i)
	fr, _ := r.(*fuzzReceiver)
	outer := sd.sending // set if this send comes from inside the host's send of another
	if fr != nil {
		fr.to = c.Peer
		sd.sending = fr
	}
	sd.messages++
	exits := s.exits
	var id peer.RequestID
	var err error
	// In an extended program every other request declares the type of
	// its response, through Send: a string, or a fmt.Stringer (which only
	// a fuzzValue is).
	var expect reflect.Type
	if sd.extended {
		switch sd.messages % 4 {
		case 0:
			expect = reflect.TypeFor[string]()
		case 2:
			expect = reflect.TypeFor[fmt.Stringer]()
		}
	}
	if fr != nil {
		fr.expect = expect
	}
	switch message := fmt.Sprintf("m%d", sd.messages); {
	case expect != nil:
		id, err = s.offer.Send(i, offer.Request{Message: message, Receiver: r, Soft: soft, Timeout: timeout, Expect: expect})
	case soft > 0:
		id, err = s.offer.RequestSoft(i, message, r, soft, timeout)
	default:
		id, err = s.offer.Request(i, message, r, timeout)
	}
	sd.sending = outer
	sd.logf("s%d request on %d (%s)%s: %#x %s", s.n, i, c.Peer, how, uint64(id), errClass(err))
	if fr != nil {
		fr.id, fr.returned, fr.sendOK = id, true, err == nil
	}
	if err == nil {
		s.sentOne(exits)
	}
}

// sentOne records a send through the open offer: the first is the sender's
// exit.
// sentOne records a send the host accepted, which began when the sender
// had left exitsWhenBegun times. A withdrawal while the send was in the
// host's hands was the sender's exit: the send's success is then no second
// one (the request it carries lives on).
func (s *fuzzSender) sentOne(exitsWhenBegun int) {
	s.sent++
	if s.exits > exitsWhenBegun && s.exitedBy == "withdrawn" {
		return
	}
	if s.sent == 1 {
		s.exit("sent")
	}
}

func (s *fuzzSender) OnDiscard() {
	sd := s.sd
	sd.logf("s%d discarded", s.n)
	s.exit("discarded")
	switch s.plan.next() % 3 {
	case 1:
		sd.exec(&s.plan, true)
	case 2:
		panic("discard exploded")
	}
}

// fuzzReceiver is one request's receiver.
type fuzzReceiver struct {
	sd        *fuzzSide
	plan      bytesIn
	to        peer.ID
	id        peer.RequestID
	returned  bool // Request has returned
	sendOK    bool
	withdrawn bool
	outcomes  int
	outcome   string
	slows     int
	expect    reflect.Type // the type its request expects of the response; nil for any
}

// fuzzValue is a response of another type than the usual string.
type fuzzValue string

func (v fuzzValue) String() string { return string(v) }

// OnSlow checks promise 19: at most once, before the request's one outcome,
// never after a withdrawal or for a failed send.
func (r *fuzzReceiver) OnSlow(id peer.RequestID, from peer.ID) {
	sd := r.sd
	sd.logf("%#x: slow at %s", uint64(id), from)
	r.slows++
	switch {
	case r.slows > 1:
		sd.violate("%#x: reported slow twice", uint64(id))
	case r.outcomes > 0:
		sd.violate("%#x: reported slow after its outcome %q", uint64(id), r.outcome)
	case r.withdrawn:
		sd.violate("%#x: reported slow after its receiver was withdrawn", uint64(id))
	case r.returned && !r.sendOK:
		sd.violate("%#x: reported slow for a failed send", uint64(id))
	case r.returned && id != r.id, from != r.to:
		sd.violate("%#x at %s: reported slow for the request %#x to %s", uint64(id), from, uint64(r.id), r.to)
	}
}

func (r *fuzzReceiver) OnResponse(id peer.RequestID, from peer.ID, response any) {
	sd := r.sd
	r.record(id, from, fmt.Sprintf("response %v", response))
	var value string
	switch v := response.(type) {
	case string:
		value = v
	case fuzzValue:
		value = string(v)
	}
	if !expected(r.expect, response) {
		sd.violate("%#x, which expects %v, answered with %v (%T)", uint64(id), r.expect, response, response)
	}
	sd.handedOver[value] = true
	if want, ok := sd.accepted[id]; (ok && want != value) || sd.valueFor[value] != id {
		sd.violate("%#x answered with %v, which was delivered for %#x", uint64(id), response, uint64(sd.valueFor[value]))
	}
	r.act()
}

func (r *fuzzReceiver) OnFailure(id peer.RequestID, from peer.ID, reason receiver.Reason) {
	r.record(id, from, "failure "+reason.String())
	// Promise 8 for refusals: a request fails as refused only if a refusal
	// of it was handed to Refuse (with inline callbacks, Refuse has not
	// returned yet), and a request whose refusal Refuse accepted fails as
	// nothing else.
	switch sd := r.sd; {
	case reason == receiver.Refused && sd.refusals[id] == 0:
		sd.violate("%#x failed as refused, and nobody refused it", uint64(id))
	case reason != receiver.Refused && sd.accepted[id] == refusedMark:
		sd.violate("%#x failed with %v after Refuse accepted its refusal", uint64(id), reason)
	}
	r.act()
}

func (r *fuzzReceiver) record(id peer.RequestID, from peer.ID, what string) {
	sd := r.sd
	sd.logf("%#x: %s from %s", uint64(id), what, from)
	r.outcomes++
	switch {
	case r.outcomes > 1:
		sd.violate("%#x: a second outcome %q after %q", uint64(id), what, r.outcome)
	case r.withdrawn:
		sd.violate("%#x: outcome %q after its receiver was withdrawn", uint64(id), what)
	case r.returned && !r.sendOK:
		sd.violate("%#x: outcome %q for a failed send", uint64(id), what)
	case r.returned && id != r.id, from != r.to:
		sd.violate("%#x from %s: outcome for the request %#x to %s", uint64(id), from, uint64(r.id), r.to)
	}
	r.outcome = what
}

func (r *fuzzReceiver) act() {
	switch r.plan.next() % 5 {
	case 1:
		r.sd.exec(&r.plan, true)
	case 2:
		panic("receiver exploded")
	case 3:
		r.sd.exec(&r.plan, true)
		panic("receiver exploded after a call")
	}
}

// fuzzPeer is a host connection whose sends follow its plan.
type fuzzPeer struct {
	sd   *fuzzSide
	id   peer.ID
	plan bytesIn
	// rate is the Rate it connected with, if any, and sentAt when each send
	// to it that it accepted began (promise 21), and sentCost what each
	// cost it: its sender's declared cost, or the Rate's Cost.
	rate     limit.Rate
	sentAt   []time.Duration
	sentCost []int64
}

func (p *fuzzPeer) ID() peer.ID { return p.id }

func (p *fuzzPeer) Send(requestID peer.RequestID, message any) error {
	sd := p.sd
	sd.logf("%s send %#x %v", p.id, requestID, message)
	// Promise 15: the message's channel closed only because the peer had
	// fewer messages in flight than its limit.
	for _, u := range sd.api.PeerUsage(nil) {
		if u.ID == p.id && u.ChannelsClosed > u.Limit {
			sd.violate("%s sent a message with %d in flight, above its limit %d", p.id, u.ChannelsClosed, u.Limit)
		}
	}
	// Promise 16: the message's channel closed within the in-flight budget,
	// and its send began now, as it took a token.
	if st := sd.api.Stats(); sd.cfg.Budget.MaxInFlight > 0 && st.ChannelsClosed > sd.cfg.Budget.MaxInFlight {
		sd.violate("%s sent a message with %d in flight, above the budget %d", p.id, st.ChannelsClosed, sd.cfg.Budget.MaxInFlight)
	}
	// Promise 17: it booked its class, if any, within every limit.
	for _, c := range sd.api.ClassUsage(nil) {
		if c.InFlight > c.Limit || c.InFlight < 0 {
			sd.violate("%s sent a message with %d in flight in class %s, limit %d", p.id, c.InFlight, c.Name, c.Limit)
		}
	}
	began, bytes, cost := sd.now(), int64(0), p.rate.Cost
	if sd.offered != nil { // always, but for a bug: every send is made through an open offer
		bytes = sd.offered.bytes
		if sd.offered.cost != 0 {
			cost = sd.offered.cost
		}
	}
	err := p.send(requestID)
	if err == nil {
		sd.sentAt = append(sd.sentAt, began)
		sd.sentBytes = append(sd.sentBytes, bytes)
		if !p.rate.IsZero() {
			p.sentAt = append(p.sentAt, began)
			p.sentCost = append(p.sentCost, cost)
		}
	}
	return err
}

// send is Send's own behaviour, from its plan.
func (p *fuzzPeer) send(id peer.RequestID) error {
	sd := p.sd
	if id != 0 {
		sd.ids = append(sd.ids, id)
		sd.idPeer[id] = p.id
		if sd.sending != nil {
			sd.receivers[id] = sd.sending
			sd.sending.id = id
		}
	}
	switch p.plan.next() % 10 {
	case 3:
		return errRefused
	case 4:
		panic("host exploded")
	case 5: // the response comes before Send returns
		if id != 0 {
			sd.deliver(p.id, id, true)
		}
	case 6, 7: // up to three calls back in (a Deliver picks the request being sent first), then succeed or fail
		for range 1 + p.plan.next()%3 {
			sd.exec(&p.plan, true)
		}
		if p.plan.next()%2 == 1 {
			return errRefused
		}
	case 8:
		sd.disconnect(p.id, string(p.id)+" disconnects while sending", true)
	case 9: // a response, and a duplicate, before Send returns
		if id != 0 {
			sd.deliver(p.id, id, true)
			sd.deliver(p.id, id, true)
		}
	}
	return nil
}

// fuzzLimiter is a peer's limiter whose every decision comes from its plan:
// each observation is logged, so both sides must show the same samples in
// the same order, and moves the limit to the next value the plan names
// (which may be 0, for the scheduler to clamp; past its plan it holds).
type fuzzLimiter struct {
	sd    *fuzzSide
	peer  peer.ID
	plan  bytesIn
	limit int
}

func (l *fuzzLimiter) Limit() int { return l.limit }

func (l *fuzzLimiter) Observe(s limit.Sample) {
	l.sd.logf("%s limiter: %v after %v, %d in flight, at %v", l.peer, s.Outcome, s.RTT, s.InFlight, s.Now)
	if b := l.plan.next(); b != 0 {
		l.limit = int(b % 5) // 0 to 4
	}
}

var errClasses = []struct {
	name string
	err  error
}{
	{"stopped", ErrStopped}, {"nil peer", peer.ErrNilPeer}, {"bad channels", peer.ErrBadChannels}, {"bad rate", limit.ErrBadRate},
	{"already connected", peer.ErrAlreadyConnected}, {"unknown peer", peer.ErrUnknownPeer},
	{"nil sender", offer.ErrNilSender}, {"too many senders", offer.ErrTooManySenders},
	{"expired", offer.ErrExpired}, {"no such channel", offer.ErrNoSuchChannel}, {"channel used", offer.ErrChannelUsed},
	{"size exceeded", offer.ErrSizeExceeded}, {"peer gone", offer.ErrPeerGone}, {"peer at its limit", offer.ErrPeerAtLimit},
	{"unknown class", limit.ErrUnknownClass}, {"bad bytes", ErrBadBytes}, {"bad cost", ErrBadCost}, {"bad wants", ErrBadWants}, {"nil receiver", receiver.ErrNilReceiver},
	{"bad timeout", receiver.ErrBadTimeout}, {"too many requests", receiver.ErrTooManyRequests},
	{"unknown request", receiver.ErrUnknownRequest}, {"wrong peer", receiver.ErrWrongPeer},
	{"duplicate", receiver.ErrDuplicateResponse}, {"late", receiver.ErrLateResponse}, {"wrong type", receiver.ErrWrongResponseType},
	{"send panicked", ErrSendPanicked}, {"limiter panicked", ErrLimiterPanicked}, {"refused", errRefused},
}

// errClass names the sentinel an error wraps, so both sides' errors compare.
func errClass(err error) string {
	if err == nil {
		return "ok"
	}
	for _, c := range errClasses {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	return "unexpected error: " + err.Error()
}

var fuzzShowLog = flag.Bool("fuzz.log", false, "FuzzScheduler: log what each program did (the real side's log), to check a seed does what it says")

func runFuzzProgram(t *testing.T, data []byte, inline bool) {
	// A program that hangs would stall the fuzzer without a report; this
	// real-time watchdog, outside the bubble, crashes the worker instead,
	// which makes the fuzzer keep the input, and prints every stack.
	watchdog := time.AfterFunc(fuzzHangAfter, func() {
		debug.SetTraceback("all")
		panic(fmt.Sprintf("FuzzScheduler: program hung for %v: %q", fuzzHangAfter, data))
	})
	defer watchdog.Stop()
	synctest.Test(t, func(t *testing.T) {
		in := bytesIn{b: data}
		withCosts := len(data) > 0 && data[0] == costsMarker
		withWants := withCosts || len(data) > 0 && data[0] == wantsMarker
		withBytes := withWants || len(data) > 0 && data[0] == bytesMarker
		extended := withBytes || len(data) > 0 && data[0] == extendedMarker
		if extended {
			in.next()
		}
		cfg := Config{
			MaxSenders:  [4]int{0, 2, 3, 5}[in.next()%4],
			MaxRequests: [4]int{0, 0, 2, 4}[in.next()%4],
			RankSeed:    fuzzRankSeed(data), // the model must know it
		}
		// How many departed peers' counters are kept: from the seed, so
		// that the programs read no more bytes. The default (64) keeps
		// every one of the five peers a program names; 1 and 2 forget
		// some.
		cfg.KeepDepartedPeers = [4]int{0, 1, 2, -1}[cfg.RankSeed>>32%4]
		// The third byte's low bits cap offers; its next bits set the
		// pass-over limit: the default (too large for most programs to
		// reach), 1, 2, or strict priorities.
		b := in.next()
		cfg.MaxOfferChannels, cfg.PassOverLimit = int(b%4), [4]int{0, 1, 2, -1}[b>>2%4]
		if extended {
			cfg.Budget.MaxInFlight = [4]int{0, 1, 2, 4}[in.next()%4]
			if b := in.next(); b%4 >= 2 {
				// A token every 20ms or 5ms, in bursts of 1 to 3.
				cfg.Budget.Rate, cfg.Budget.Burst = [2]int64{50, 200}[b%2], 1+int64(b>>2)%3
			}
			cfg.Classes = fuzzClasses[in.next()%3]
		}
		if withBytes {
			if b := in.next(); b%4 != 0 {
				cfg.Budget.ByteRate, cfg.Budget.ByteBurst = fuzzByteBudgets[b%4-1][0], fuzzByteBudgets[b%4-1][1]
			}
		}
		mock := clock.NewMock()
		logs := &recordingHandler{}
		realCfg := cfg
		realCfg.Clock, realCfg.Logger, realCfg.InlineCallbacks = mock, logs.logger(), inline
		s, err := New(realCfg)
		if err != nil {
			t.Fatal(err)
		}
		m := newModel(cfg)
		m.epoch = mock.Now()
		rs, ms := newFuzzSide("real", s, cfg), newFuzzSide("model", m, cfg)
		rs.mock, ms.model = mock, m
		rs.extended, ms.extended = extended, extended
		rs.withBytes, ms.withBytes = withBytes, withBytes
		rs.withWants, ms.withWants = withWants, withWants
		rs.withCosts, ms.withCosts = withCosts, withCosts
		for _, c := range cfg.Classes {
			rs.classNames = append(rs.classNames, c.Name)
			ms.classNames = append(ms.classNames, c.Name)
		}

		var settle func()
		if !inline {
			// A top-level call's callbacks run on the scheduler's
			// goroutine; the driver lets them finish before it reads or
			// writes anything, so the log has them where the model,
			// whose callbacks finish within the call, has them.
			rs.afterTopLevelCall = func() { settle() }
		}
		settle = func() { settleScheduler(s) }
		check := func(step int, what string) {
			t.Helper()
			settle()
			for _, sd := range []*fuzzSide{rs, ms} {
				if len(sd.violations) > 0 {
					t.Fatalf("step %d (%s), %s side: %s\nlog:\n%s", step, what, sd.name, strings.Join(sd.violations, "\n"), tail(sd.log, 40))
				}
			}
			if i := firstDifference(rs.log, ms.log); i >= 0 {
				t.Fatalf("step %d (%s): the scheduler and the model disagree at log line %d\nreal:\n%s\nmodel:\n%s",
					step, what, i, around(rs.log, i), around(ms.log, i))
			}
			if got, want := s.Stats(), m.Stats(); got != want {
				t.Fatalf("step %d (%s): Stats\nreal:  %+v\nmodel: %+v\nlog:\n%s", step, what, got, want, tail(rs.log, 30))
			}
			if got, want := s.PeerUsage(nil), m.PeerUsage(nil); !slices.Equal(got, want) { // both sorted by ID
				t.Fatalf("step %d (%s): PeerUsage\nreal:  %+v\nmodel: %+v\nlog:\n%s", step, what, got, want, tail(rs.log, 30))
			}
			if got, want := s.PeerStats(nil), m.PeerStats(nil); !slices.Equal(got, want) {
				t.Fatalf("step %d (%s): PeerStats\nreal:  %+v\nmodel: %+v\nlog:\n%s", step, what, got, want, tail(rs.log, 30))
			}
			checkCountsAddUp(t, s)
			if got, want := s.ClassUsage(nil), m.ClassUsage(nil); !slices.Equal(got, want) {
				t.Fatalf("step %d (%s): ClassUsage\nreal:  %+v\nmodel: %+v\nlog:\n%s", step, what, got, want, tail(rs.log, 30))
			}
			checkBalanced(t, s)
			// Promise 4 (and the drainer's promise): a channel reopening
			// is offered at once, so when the dust settles no waiting sender
			// that may be offered a channel is left with one open.
			if m.stranded() {
				t.Fatalf("step %d (%s): a sender waits, may be offered, and a channel is open\n%s", step, what, tail(rs.log, 30))
			}
			// Promise 9's cost: each disconnect looked at its peer's
			// requests and no others.
			if got, want := visitedRequests(s), m.visited; got != want {
				t.Fatalf("step %d (%s): disconnects looked at %d requests; their peers had %d\n%s", step, what, got, want, tail(rs.log, 30))
			}
		}

		for step := 0; in.i < len(data) && step < fuzzMaxSteps; step++ {
			start := in.i
			rin, mdlIn := in, in
			rs.exec(&rin, false)
			settle()
			ms.exec(&mdlIn, false)
			if rin.i != mdlIn.i {
				t.Fatalf("step %d: the two sides read different amounts of the program", step)
			}
			in = rin
			check(step, opNames[opOf(data[start], extended, withWants)])
		}

		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		m.Stop()
		rs.logf("final stop")
		ms.logf("final stop")
		check(-1, "final stop")
		if *fuzzShowLog {
			t.Log("\n" + strings.Join(rs.log, "\n"))
		}
		finalChecks(t, rs, s.Stats())
		finalChecks(t, ms, m.Stats())
		// Promise 17: every booking was released, exactly once.
		for _, c := range s.ClassUsage(nil) {
			if c.InFlight != 0 {
				t.Fatalf("after Stop, class %s holds %d", c.Name, c.InFlight)
			}
		}
		if s.bookingErrors != 0 {
			t.Fatalf("%d bookings or releases refused by the classes", s.bookingErrors)
		}
		if n := logs.count("peersched: recovered a panic in user code"); uint64(n) != s.Stats().PanicsHandled {
			t.Fatalf("%d panics handled, %d logged", s.Stats().PanicsHandled, n)
		}
	})
}

// finalChecks: after Stop, every sender left exactly once and every request
// sent got exactly one outcome (none if withdrawn, none if its send failed).
func finalChecks(t *testing.T, sd *fuzzSide, st Stats) {
	t.Helper()
	for _, snd := range sd.senders {
		if !snd.scheduled && snd.exits+snd.offers != 0 {
			t.Fatalf("s%d was never scheduled but got callbacks", snd.n)
		}
		if snd.scheduled && snd.exits != 1 {
			t.Fatalf("s%d left %d times", snd.n, snd.exits)
		}
	}
	checkRate(t, sd)
	checkPeerRates(t, sd)
	for id, r := range sd.receivers {
		want := 1
		if r.withdrawn || !r.sendOK {
			want = 0
		}
		if r.outcomes != want {
			t.Fatalf("%#x (sent: %v, withdrawn: %v): %d outcomes, want %d", uint64(id), r.sendOK, r.withdrawn, r.outcomes, want)
		}
		v, ok := sd.accepted[id]
		wantOutcome := "response " + v
		if v == refusedMark {
			wantOutcome = "failure " + receiver.Refused.String()
		}
		if ok && want == 1 && r.outcome != wantOutcome {
			t.Fatalf("%#x: %s accepted, but the receiver got %q", uint64(id), v, r.outcome)
		}
	}
	if st.ChannelsClosed != 0 || st.RequestsInFlight != 0 || st.SendersWaiting != 0 || !st.Stopped {
		t.Fatalf("after Stop: %+v", st)
	}
	if ended := st.Succeeded + st.TimedOut + st.Refused + st.Disconnected + st.Shutdown + st.WithdrawnEnded; ended != st.Sent {
		t.Fatalf("%d requests sent, %d ended: %+v", st.Sent, ended, st)
	}
}

// checkPeerRates checks promise 21: in every window of time, the sends a
// paced connection accepted cost it at most its burst plus its rate times
// the window.
func checkPeerRates(t *testing.T, sd *fuzzSide) {
	t.Helper()
	for _, p := range sd.paced {
		if over := overspent(p.sentAt, p.sentCost, p.rate.PerSecond, p.rate.Burst); over != "" {
			t.Fatalf("%s: %s to %s, paced at %+v", sd.name, over, p.id, p.rate)
		}
	}
}

// checkRate checks promise 16's rates: in every window of time, the sends
// the host accepted number at most the budget's burst plus its rate times
// the window, and the bytes their senders declared add up to at most the
// byte burst plus the byte rate times the window.
func checkRate(t *testing.T, sd *fuzzSide) {
	t.Helper()
	b := sd.cfg.Budget
	if b.Rate > 0 {
		if over := overspent(sd.sentAt, nil, b.Rate, max(b.Burst, 1)); over != "" {
			t.Fatalf("%s: %s messages", sd.name, over)
		}
	}
	if b.ByteRate > 0 {
		if over := overspent(sd.sentAt, sd.sentBytes, b.ByteRate, b.ByteBurst); over != "" {
			t.Fatalf("%s: %s bytes", sd.name, over)
		}
	}
}

// overspent checks a token bucket's promise on a record of sends: in every
// window of time, the sends that began in it cost at most the burst plus
// the rate (per second) times the window. at holds when each send began,
// and cost what each cost (nil: one each). It describes the first window
// that breaks the promise, or returns "".
func overspent(at []time.Duration, cost []int64, rate, burst int64) string {
	order := make([]int, len(at))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return cmp.Compare(at[i], at[j]) })
	costOf := func(k int) int64 {
		if cost == nil {
			return 1
		}
		return cost[order[k]]
	}
	for i := range order {
		spent := int64(0)
		for j := i; j < len(order); j++ {
			spent += costOf(j)
			window := at[order[j]] - at[order[i]]
			if (spent-burst)*int64(time.Second) > rate*int64(window) {
				return fmt.Sprintf("%d spent between %v and %v, above %d/s in bursts of %d:", spent, at[order[i]], at[order[j]], rate, burst)
			}
		}
	}
	return ""
}

// checkCountsAddUp checks that the counters by peer add up to Stats':
// every peer's that PeerStats lists and those of no peer it lists (peers
// forgotten, IDs never connected), counter by counter and bucket by
// bucket.
func checkCountsAddUp(t *testing.T, s *Scheduler) {
	t.Helper()
	// The driver has let the scheduler settle: nothing changes the counts
	// between these reads.
	s.offersMu.Lock()
	sum := PeerStats{Counters: s.peers.others.counters()}
	s.offersMu.Unlock()
	for _, ps := range s.PeerStats(nil) {
		addPeerStats(&sum, &ps)
	}
	total := s.Stats()
	got := [...]uint64{sum.Sent, sum.Notified, sum.SendErrors, sum.Succeeded, sum.TimedOut, sum.Refused, sum.Disconnected,
		sum.Shutdown, sum.WithdrawnEnded, sum.Late, sum.Unknown, sum.WrongPeer, sum.Duplicate}
	want := [...]uint64{total.Sent, total.Notified, total.SendErrors, total.Succeeded, total.TimedOut, total.Refused, total.Disconnected,
		total.Shutdown, total.WithdrawnEnded, total.Late, total.Unknown, total.WrongPeer, total.Duplicate}
	if got != want || sum.ResponseTimes != total.ResponseTimes {
		t.Fatalf("the counters by peer add up to %+v\nStats: %+v", sum, total)
	}
}

// checkBalanced checks promise 3: open + closed = channels, for every peer
// and in total.
func checkBalanced(t *testing.T, s *Scheduler) {
	t.Helper()
	st := s.Stats()
	open, closed := 0, 0
	for _, u := range s.PeerUsage(nil) {
		// Per peer, PeerUsage is compared with the model's; here, that
		// the counts are sane and add up to Stats'.
		if u.ChannelsOpen < 0 || u.ChannelsClosed < 0 || u.ChannelsOpen > u.Limit {
			t.Fatalf("peer %s: %+v", u.ID, u)
		}
		open += u.ChannelsOpen
		closed += u.ChannelsClosed
	}
	if open != st.ChannelsOpen || closed != st.ChannelsClosed {
		t.Fatalf("peers have %d open, %d closed; Stats says %d, %d", open, closed, st.ChannelsOpen, st.ChannelsClosed)
	}
}

func firstDifference(a, b []string) int {
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return -1
}

func around(log []string, i int) string { return lines(log, i, 25) }

func tail(log []string, n int) string { return lines(log, len(log), n) }

// lines shows log around line i: before lines ahead of it, a few after.
func lines(log []string, i, before int) string {
	from, to := max(0, i-before), min(len(log), i+5)
	var b strings.Builder
	for j := from; j < to; j++ {
		mark := "   "
		if j == i {
			mark = ">> "
		}
		fmt.Fprintf(&b, "%s%4d %s\n", mark, j, log[j])
	}
	if i >= len(log) {
		fmt.Fprintf(&b, ">> %4d (end)\n", i)
	}
	return b.String()
}

func visitedRequests(s *Scheduler) int {
	s.requestsMu.Lock()
	defer s.requestsMu.Unlock()
	return s.table.Visited()
}

// fuzzSeeds start the corpus: short programs, written with the encoder
// below, that reach the interesting paths at once. The fuzzer grows the rest
// from them; testdata/fuzz/FuzzScheduler holds what it found.
var fuzzSeeds = [][]byte{
	// A request answered, one timed out, and a late answer.
	program(0, 0, 0, connectOp(1, 2), scheduleOp(0, 0, 0), deliverOp(0), advanceOp(3),
		scheduleOp(0, 0, 1), advanceOp(6), deliverOp(0), deliverOp(1)),
	// Fairness: senders of three priorities wait, then channels open.
	program(0, 0, 0, scheduleOp(0, 0, 3), scheduleOp(3, 0, 3), scheduleOp(1, 1, 0, 0, 0),
		scheduleOp(3, 2, 3<<5), connectOp(1, 3), connectOp(2, 1), advanceOp(6), advanceOp(6)),
	// Starvation bounded: while a high-priority request holds the one
	// channel, a low-priority sender and two more high ones wait; with a
	// pass-over limit of 1 (offer byte 1<<2) the low one gets the second
	// channel to open, with strict priorities (3<<2) the last.
	program(0, 0, 1<<2, connectOp(1, 1), scheduleOp(3, 0, 0), scheduleOp(0, 0, 0), scheduleOp(3, 0, 0),
		scheduleOp(3, 0, 0), deliverOp(0), deliverOp(1), deliverOp(2), deliverOp(3)),
	program(0, 0, 3<<2, connectOp(1, 1), scheduleOp(3, 0, 0), scheduleOp(0, 0, 0), scheduleOp(3, 0, 0),
		scheduleOp(3, 0, 0), deliverOp(0), deliverOp(1), deliverOp(2), deliverOp(3)),
	// The host answers, then the scheduler stops, while the request is sent.
	program(0, 0, 0, connectOp(1, 1, 6, 1, opByte(opDeliver), 0, opByte(opStop), 0), scheduleOp(0, 0, 0)),
	// The peer disconnects while its request is sent, then reconnects and answers.
	program(0, 0, 0, connectOp(0, 1, 6, 2, opByte(opDisconnect), 0, opByte(opConnect), 0, 0), scheduleOp(0, 0, 0),
		deliverOp(0)),
	// A request times out while it is sent.
	program(0, 0, 0, connectOp(1, 1, 6, 0, opByte(opAdvance), 6), scheduleOp(0, 0, 0), deliverOp(0)),
	// Notifications keep channels closed for their digest time.
	program(0, 0, 0, connectOp(1, 1), scheduleOp(0, 3, 0), scheduleOp(0, 0, 0), advanceOp(1), advanceOp(5)),
	// Withdrawals: a waiting sender, a pending receiver.
	program(0, 0, 0, connectOp(1, 1), scheduleOp(0, 0, 0), scheduleOp(0, 0, 0), withdrawSenderOp(1),
		withdrawReceiverOp(0), deliverOp(0), advanceOp(6)),
	// Panics: a host send, a sender after sending, a receiver.
	program(0, 0, 0, connectOp(1, 2, 4, 0, 0), scheduleOp(0, 0, 0), scheduleOp(0, 6, 0, 2, 2), deliverOp(0),
		advanceOp(6)),
	// Misuse: an offer kept and used later, a second send on one channel,
	// sends beyond the size, a nil receiver.
	program(0, 0, 0, connectOp(1, 2), scheduleOp(0, 7, 0), useKeptOp(0), scheduleOp(0, 4, 3), scheduleOp(0, 2, 3<<5),
		scheduleOp(0, 4, 0), advanceOp(6)),
	// Caps: two senders, two requests, offers of one channel.
	program(1, 2, 1, connectOp(1, 3), connectOp(2, 3), scheduleOp(0, 2, 3<<5), scheduleOp(0, 2, 3<<5),
		scheduleOp(0, 0, 0), scheduleOp(0, 0, 0), advanceOp(6)),
	// A send nested in a send: the host's send of one request sends another
	// on the same offer.
	program(0, 0, 0, connectOp(1, 2, 6, 0, opByte(opUseKeptOffer), 2), scheduleOp(0, 0, 0), deliverOp(0), deliverOp(1)),
	// Callbacks that call back in: a sender that disconnects a peer, a
	// receiver that schedules, a discarded sender that connects.
	program(0, 0, 0, connectOp(1, 2), connectOp(2, 2), scheduleOp(0, 5, 0, opByte(opDisconnect), 2),
		scheduleOp(0, 0, 0, 1, opByte(opSchedule)), advanceOp(6), scheduleOp(0, 1, 0, 1, opByte(opConnect)), stopOp()),

	// Extended programs.
	// Soft deadlines (timeout 4: soft 5ms, hard 10ms): reported slow, then
	// answered; passing while the host sends the request, reported after;
	// reported slow, then timed out; withdrawn while slow.
	extendedProgram(0, 0, 0, 0, 0, 0, connectFixedOp(1, 1), classedOp(0, 0, 0, 4), advanceOp(1), deliverOp(0)),
	// A limiter that panics when its limit is first read: the peer is
	// refused, and the same peer connects with a fixed limit after.
	extendedProgram(0, 0, 0, 0, 0, 0, connectTrappedOp(1, 1), classedOp(0, 0, 0, 4), connectFixedOp(1, 1), deliverOp(0)),
	extendedProgram(0, 0, 0, 0, 0, 0, connectFixedOp(1, 1, 6, 0, opByte(opAdvance), 1), classedOp(0, 0, 0, 4),
		deliverOp(0)),
	extendedProgram(0, 0, 0, 0, 0, 0, connectFixedOp(1, 2), classedOp(0, 0, 2, 4|1<<5), advanceOp(1),
		withdrawReceiverOp(0), advanceOp(1), deliverOp(1)),
	// A limit that falls with requests in flight, retiring their channels
	// as they end, then rises again; a timeout is shown to the limiter too.
	extendedProgram(0, 0, 0, 0, 0, 0, connectDrivenOp(1, 3, []byte{1, 1, 4, 3}), connectFixedOp(2, 1),
		classedOp(0, 0, 2, 3<<5), classedOp(0, 0, 0, 0), deliverOp(1), deliverOp(1), advanceOp(6),
		classedOp(0, 0, 2, 3<<5), deliverOp(0), advanceOp(6)),
	// The limit falls while an offer listing the peer's channel is open:
	// during the offer's first send the host delivers an earlier answer,
	// the limiter lowers the limit to 1, and the offer's second send finds
	// the peer at its limit.
	extendedProgram(0, 0, 0, 0, 0, 0, connectDrivenOp(1, 3, []byte{1}, 0, 6, 0, opByte(opDeliver), 1, 0),
		classedOp(0, 0, 0, 0), classedOp(0, 0, 2, 1<<5), advanceOp(6)),
	// An in-flight budget of 2 over two peers: one sender alone gets an
	// offer of 2; the others wait, and go as messages end, a disconnect's
	// included.
	extendedProgram(0, 0, 0, 2, 0, 0, connectFixedOp(1, 3), connectFixedOp(2, 3), classedOp(0, 0, 2, 3<<5),
		classedOp(1, 0, 0, 0), classedOp(0, 0, 3, 1), deliverOp(0), disconnectOp(1), advanceOp(6), advanceOp(6)),
	// A rate of 50/s in bursts of 2: a refused send gives its token back,
	// so the next sender goes at once; the others wait their turns, a
	// token every 20ms.
	extendedProgram(0, 0, 0, 0, 2|1<<2, 0, connectFixedOp(1, 3, 3, 0, 0, 0), classedOp(0, 0, 2, 1<<5),
		classedOp(0, 0, 0, 0), classedOp(0, 0, 0, 0), classedOp(0, 0, 0, 0), advanceOp(1), advanceOp(3), advanceOp(3), advanceOp(6)),
	// Paced peers (promise 21). p1 at a message every 20ms after a burst
	// of 2, 3 channels: its host refuses its second send, whose charge
	// comes back, so the next sender goes at once; the others wait for
	// its rate, not its channels, and an answer opens nothing; then a
	// notification; it disconnects while held and reconnects full; p2
	// declares a Rate that is not valid and is refused.
	extendedProgram(0, 0, 0, 0, 0, 0, connectPacedOp(1, 3, 0, 0, 3, 0, 0, 0, 0), classedOp(0, 0, 0, 0),
		classedOp(0, 0, 0, 0), classedOp(0, 0, 0, 0), classedOp(0, 0, 0, 0), classedOp(0, 0, 3, 2), deliverOp(0),
		advanceOp(2), advanceOp(1), advanceOp(3), disconnectOp(1), connectPacedOp(1, 3, 0), connectPacedOp(2, 2, 3),
		classedOp(0, 0, 2, 3<<5), advanceOp(6)),
	// A paced peer whose host calls back in while it sends its second
	// message, the last its burst pays for, advancing time past the moment
	// its rate pays again, beside an unpaced peer, under a budget rate.
	// (fuzzRates[1], with a unit left over, is left to the fuzzer.)
	extendedProgram(0, 0, 0, 0, 2|1<<2, 0, connectPacedOp(1, 3, 0, 0, 6, 0, opByte(opAdvance), 3, 0),
		connectFixedOp(2, 1), classedOp(0, 0, 2, 3<<5), classedOp(1, 0, 0, 0), classedOp(0, 0, 0, 0),
		classedOp(0, 0, 2, 3<<5), deliverOp(0), advanceOp(1), advanceOp(7), deliverOp(1), advanceOp(6)),
	// rippled's cost of a query at 16 a second, after a burst of 2.
	extendedProgram(0, 0, 0, 0, 0, 0, connectPacedOp(1, 3, 2), classedOp(0, 0, 2, 3<<5), classedOp(0, 0, 0, 0),
		advanceOp(5), advanceOp(2), deliverOp(0), advanceOp(6)),
	// Vegas, fed by answers and timeouts.
	extendedProgram(0, 0, 0, 0, 0, 0, connectVegasOp(1, 2), classedOp(0, 0, 2, 3<<5), deliverOp(0), deliverOp(1),
		classedOp(0, 0, 2, 3<<5), advanceOp(6), classedOp(0, 0, 2, 3<<5), deliverOp(0), advanceOp(6)),
	// A tree of classes (x and z under total, y under x): senders of a
	// full class are passed over, keeping their places, for those behind
	// them, and go first once a message of their class ends; an
	// undeclared class is refused.
	extendedProgram(0, 0, 0, 0, 0, 2, classedOp(3, 3, 0, 0), classedOp(3, 3, 0, 0), classedOp(2, 1, 0, 0),
		classedOp(0, 4, 0, 0), classedOp(0, 4, 0, 0), classedOp(0, 0, 0, 0), classedOp(0, 5, 0, 0),
		connectFixedOp(1, 3), connectFixedOp(2, 3), deliverOp(5), advanceOp(6), advanceOp(6)),
	// Two flat classes: a notification holds its class until digested, a
	// refused send releases its booking at once, and so does a disconnect.
	extendedProgram(0, 0, 0, 0, 0, 1, connectFixedOp(1, 3, 0, 3, 0, 0), classedOp(0, 1, 3, 1), classedOp(0, 1, 0, 0),
		classedOp(0, 2, 0, 0), classedOp(0, 2, 0, 0), advanceOp(2), disconnectOp(1), connectFixedOp(2, 1), advanceOp(6)),
	// A notification whose peer leaves while it is sent has ended: its
	// class is free for the next sender of the class.
	extendedProgram(0, 0, 0, 0, 0, 1, connectFixedOp(1, 2, 8), classedOp(0, 1, 3, 1), classedOp(0, 1, 0, 0),
		connectFixedOp(2, 1), advanceOp(6)),
	// Refusals: a Vegas peer refuses both its requests and its limit falls
	// (its RTT stays unset: a refusal is no response time); a second
	// refusal and a response after one are duplicates; a refusal from the
	// wrong peer or of a forged ID is dropped; a request answered, then
	// refused, is a duplicate too.
	extendedProgram(0, 0, 0, 0, 0, 0, connectVegasOp(1, 2), classedOp(0, 0, 2, 3<<5), advanceOp(1), refuseOp(0),
		refuseOp(1), refuseOp(0), deliverOp(0), refuseWrongOp(0, 2), refuseUnknownOp(0, 1), classedOp(0, 0, 0, 0),
		deliverOp(0), refuseOp(0), advanceOp(6)),
	// A refusal while the host sends the request waits for the send: the
	// receiver hears of it when Send returns, and no limiter does; if the
	// send then fails, the refusal is dropped with it. A refusal after the
	// send is shown to the peer's limiter as failed, with its RTT.
	extendedProgram(0, 0, 0, 0, 0, 0, connectDrivenOp(1, 1, []byte{1, 1}, 6, 0, refuseByte(opDeliver), 0, 1),
		connectFixedOp(2, 1, 6, 0, refuseByte(opDeliver), 0, 0), classedOp(0, 0, 0, 0), classedOp(0, 0, 0, 1<<3),
		advanceOp(1), refuseOp(0), advanceOp(6)),

	// Programs with bytes.
	// 100 bytes every 10ms, in bursts of 1000: a sender alone that declares
	// 400 bytes is offered 2 channels of 3; the next, of 400 too, waits
	// for the bytes, and one that declares none waits behind it. Their
	// requests time out at 10ms and channels reopen, but only at 20ms are
	// the bytes there: then both go, in their order.
	bytesProgram(0, 0, 0, 0, 0, 0, 1, connectFixedOp(1, 3), sizedOp(0, 0, 2, 2, 3<<5), sizedOp(0, 0, 2, 0, 0),
		sizedOp(0, 0, 0, 0, 0), advanceOp(1), advanceOp(1), advanceOp(1), advanceOp(1), advanceOp(6)),
	// In bursts of 2500: sizes above the burst and below zero are
	// refused; a send the host refuses gives its 2000 bytes back, so the
	// next sender of 2000 goes at once; a sender of 1000 at a higher
	// priority then waits, and one of 100 behind it too, until the first
	// is withdrawn: then the second goes at once.
	bytesProgram(0, 0, 0, 0, 0, 0, 3, connectFixedOp(1, 3, 3, 0, 0), sizedOp(0, 0, 5, 0, 0), sizedOp(0, 0, 6, 0, 0),
		sizedOp(0, 0, 4, 0, 7), sizedOp(0, 0, 4, 0, 7), sizedOp(3, 0, 3, 0, 7), sizedOp(0, 0, 1, 0, 7),
		withdrawSenderOp(4), advanceOp(6), advanceOp(6)),
	// Every control at once: two in flight, 50 messages a second in bursts
	// of 2, a tree of classes, and 100 bytes every 2.5ms in bursts of 2500;
	// notifications pay in bytes too.
	bytesProgram(0, 0, 0, 2, 2|1<<2, 2, 2, connectFixedOp(1, 3), connectVegasOp(2, 2), sizedOp(0, 1, 4, 2, 3<<5),
		sizedOp(1, 2, 3, 3, 1), sizedOp(0, 4, 7, 2, 3<<5), sizedOp(2, 0, 2, 0, 0), deliverOp(0), advanceOp(1),
		advanceOp(3), deliverOp(0), advanceOp(6), advanceOp(6)),

	// Programs with wants.
	// A sender that declines is parked: the channel closes, a sender
	// behind it waits, and the parked one asks again (Reoffer): when the
	// channel reopens it goes first, in its place, and sends; a Reoffer
	// after that finds it gone.
	wantsProgram(0, 0, 0, 0, 0, 0, 0, connectFixedOp(1, 1), wantedOp(0, 0, 0, 1, 0), wantedOp(0, 0, 0),
		wantedOp(0, 0, 0), statsOp(), reofferOp(0), statsOp(), advanceOp(6), advanceOp(6), reofferOp(0)),
	// Asking again from inside the offer it declines: offered again at
	// once, and it sends; a sender whose send the host refuses is parked.
	wantsProgram(0, 0, 0, 0, 0, 0, 0, connectFixedOp(1, 2, 0, 3, 0), wantedOp(0, 0, 0, 1, 1),
		wantedOp(1, 0, 0, 0, 0), statsOp(), advanceOp(6), advanceOp(6)),
	// Only and Avoid: a sender that wants only p2 waits while p1 alone is
	// open, keeping its place, and goes first when p2 connects; one that
	// avoids p1 takes p3 when it connects; one that wants p2 or p3 waits
	// for one of them to reopen; wants that can never be met are refused.
	wantsProgram(0, 0, 0, 0, 0, 0, 0, connectFixedOp(1, 3), wantedOp(0, 1|2<<2, 0), wantedOp(0, 2|1<<5, 0),
		wantedOp(0, 1|2<<2, 8), wantedOp(0, 0, 0), connectFixedOp(2, 1), connectFixedOp(3, 1),
		wantedOp(0, 1|2<<2|2|2<<5, 0), wantedOp(0, 0, 7), wantedOp(0, 0, 4), deliverOp(0), advanceOp(6)),
	// MinChannels 2 and 3, pass-over limit 1: with one channel open, passed
	// over for the senders behind; offered once enough open, with every
	// one listed; a parked sender in the lower level asks again.
	wantsProgram(0, 0, 1<<2, 0, 0, 0, 0, connectFixedOp(1, 1), wantedOp(1, 0, 2), wantedOp(1, 0, 3),
		wantedOp(0, 0, 0, 1, 0), wantedOp(1, 0, 0), connectFixedOp(2, 2), deliverOp(0), advanceOp(6),
		reofferOp(2), advanceOp(6)),

	// Programs with costs.
	// Rippled's units, 500 in the bucket: two requests of 1 unit leave
	// room for a query at once, and the next query waits for the 2 units
	// it lacks (0.5ms), not for a channel; a request of 1 unit waits, like
	// every message, until the peer holds a query's 250; the host refuses
	// it, which gives back exactly 1, so a query goes in the same instant;
	// a sender of 300 units makes the peer count at 300 from then on, and
	// is charged all of it; costs no peer could pay, or negative, are
	// refused, and so is a peer whose burst is below 300.
	costsProgram(0, 0, 0, 0, 0, 0, 0, connectPacedOp(1, 3, 2, 0, 0, 0, 0, 3, 0, 0), costedOp(0, 1), costedOp(0, 1),
		costedOp(0, 0), costedOp(0, 0), deliverOp(0), advanceOp(1), costedOp(0, 1), costedOp(0, 0), advanceOp(6),
		costedOp(0, 4), costedOp(0, 6), costedOp(0, 7), connectPacedOp(2, 1, 0), costedOp(0, 0), advanceOp(6),
		advanceOp(6)),
	// A cost above a connected peer's burst is refused; once that peer
	// has gone it is accepted, and the other paced peer counts at it:
	// 7 units, its whole burst, pay for one message at a time.
	costsProgram(0, 0, 0, 0, 0, 0, 0, connectPacedOp(1, 2, 0), connectPacedOp(2, 3, 1), costedOp(0, 2),
		disconnectOp(1), costedOp(0, 2), costedOp(0, 3), costedOp(0, 2), costedOp(0, 0), advanceOp(1), advanceOp(3),
		advanceOp(6)),
}

// extendedMarker, as a program's first byte, makes it an extended program:
// after the three bytes of the Config it reads two for the Budget (the
// in-flight cap, and a rate if the second is 2 or 3 mod 4) and one for the
// Classes (fuzzClasses, mod 3); its connects read one more byte, for the
// peer's limit (mod 4: 1 driven by a fuzzLimiter whose plan length is the
// byte's upper bits, 2 Vegas, 3 with upper bits 0 mod 4 a limiter that
// panics when its limit is first read, else fixed), and its schedules one more, for
// the sender's class (mod the classes plus 2: 0 none, then each declared
// class, then one that is not); and an operation byte that reads as a
// delivery and has refusalBit set is the matching refusal (see opOf).
// A program whose first byte is anything else reads as it always has.
const extendedMarker = 0xff

// bytesMarker, as a program's first byte, makes it an extended program
// with bytes: it reads as an extended program does, and more: one byte
// after the Classes' for the byte budget (mod 4: 0 none, else one of
// fuzzByteBudgets), and one more in each schedule, after the class's, for
// the size the sender declares (fuzzSizes, mod 8). A new marker, rather
// than more bytes read by extended programs, keeps what those read.
const bytesMarker = 0xfe

// wantsProgram is bytesProgram for a program with wants. Its schedules
// take wantedOp.
func wantsProgram(maxSenders, maxRequests, maxOffer, maxInFlight, rate, classes, byteBudget byte, ops ...[]byte) []byte {
	return slices.Concat([]byte{wantsMarker, maxSenders, maxRequests, maxOffer, maxInFlight, rate, classes, byteBudget}, slices.Concat(ops...))
}

// wantedOp is sizedOp in a program with wants, with no class, no size, and
// the two bytes of the sender's wants (see fuzzWants): w 1|k<<2 wants only
// p<k>, w 2|k<<5 avoids p<k>; m mod 8 indexes fuzzMinChannels, and m's bit 3
// adds p<k+1> to Only.
func wantedOp(priority, w, m byte, plan ...byte) []byte {
	if len(plan) == 0 {
		plan = []byte{0, 0}
	}
	return append(sizedOp(priority, 0, 0, plan...), w, m)
}

// reofferOp, in a program with wants, asks for another offer to the n-th
// sender scheduled (mod their number).
func reofferOp(n byte) []byte { return []byte{opByte(opWithdrawSender) | reofferBit, n} }

func statsOp() []byte { return []byte{opByte(opStats)} }

// wantsMarker, as a program's first byte, makes it a program with wants: it
// reads as a program with bytes does, and more: two bytes in each
// schedule, after the size's, for the sender's wants (see fuzzWants); an
// operation byte that reads as a sender's withdrawal and has reofferBit set
// is that sender's Reoffer; and a sender whose plan declines an offer with
// an odd argument asks for another offer as it declines.
const wantsMarker = 0xfd

// costsMarker, as a program's first byte, makes it a program with costs:
// it reads as a program with wants does, and one more byte in each
// schedule, after the wants', for the cost the sender declares
// (fuzzCosts, mod 8).
const costsMarker = 0xfc

// costsProgram is wantsProgram for a program with costs. Its schedules
// take costedOp.
func costsProgram(maxSenders, maxRequests, maxOffer, maxInFlight, rate, classes, byteBudget byte, ops ...[]byte) []byte {
	return slices.Concat([]byte{costsMarker, maxSenders, maxRequests, maxOffer, maxInFlight, rate, classes, byteBudget}, slices.Concat(ops...))
}

// costedOp is wantedOp in a program with costs, with no wants and the
// index in fuzzCosts of the cost the sender declares.
func costedOp(priority, cost byte, plan ...byte) []byte {
	return append(wantedOp(priority, 0, 0, plan...), cost)
}

// The program encoder: each function writes one operation as exec reads it.

func opByte(op int) byte { return byte(slices.Index(opTable[:], op)) }

// fuzzRankSeed is a program's rank seed: drawn from its bytes, so that
// programs see equal peers in different orders and each replays, and never
// 0, which would have New draw a seed the model cannot know.
func fuzzRankSeed(data []byte) uint64 {
	h := fnv.New64a()
	h.Write(data)
	return h.Sum64() | 1
}

// program encodes a program: the caps' bytes (maxOffer also carries the
// pass-over limit in bits 2-3: the default, 1, 2, strict) and the operations.
func program(maxSenders, maxRequests, maxOffer byte, ops ...[]byte) []byte {
	return slices.Concat(append([][]byte{{maxSenders, maxRequests, maxOffer}}, ops...)...)
}

// connectOp connects peer p<peer> with channels (1 to 3); the host's plan
// decides each send: 0 accept, 3 refuse, 4 panic, 5 answer at once, 6 call
// back in 1+n%3 times (n the next byte) then accept or refuse, 8 disconnect,
// 9 answer twice.
func connectOp(peer, channels byte, hostPlan ...byte) []byte {
	return slices.Concat([]byte{opByte(opConnect), peer, channels - 1, byte(len(hostPlan))}, hostPlan)
}

// scheduleOp schedules a sender whose plan (1 to 6 bytes) decides each
// offer: an action (0 request, 1 decline, 2 several requests, 3 notify, 4
// misuse, 5 call back in then request, 6 request then panic, 7 keep the
// offer, 8 request then call back in, 9 withdraw itself) and its argument
// (timeout index in the low 3 bits, channel index above); each request takes
// two more bytes for its receiver's plan.
func scheduleOp(priority byte, plan ...byte) []byte {
	return slices.Concat([]byte{opByte(opSchedule), priority, byte(len(plan) - 1)}, plan)
}

// extendedProgram is program for an extended program, with the Budget's
// two bytes, maxInFlight (0, 1, 2, 4) and rate (below 2 none, else 50/s if
// even and 200/s if odd, in bursts of 1+(rate>>2)%3), and the index of the
// fuzzClasses to declare. Its schedules take classedOp.
func extendedProgram(maxSenders, maxRequests, maxOffer, maxInFlight, rate, classes byte, ops ...[]byte) []byte {
	return slices.Concat([]byte{extendedMarker, maxSenders, maxRequests, maxOffer, maxInFlight, rate, classes}, slices.Concat(ops...))
}

// bytesProgram is extendedProgram for a program with bytes, with the byte
// budget's byte: 0 none, else fuzzByteBudgets[byteBudget-1]. Its schedules
// take sizedOp.
func bytesProgram(maxSenders, maxRequests, maxOffer, maxInFlight, rate, classes, byteBudget byte, ops ...[]byte) []byte {
	return slices.Concat([]byte{bytesMarker, maxSenders, maxRequests, maxOffer, maxInFlight, rate, classes, byteBudget}, slices.Concat(ops...))
}

// sizedOp is classedOp in a program with bytes, with the index in
// fuzzSizes of the size the sender declares.
func sizedOp(priority, class, size byte, plan ...byte) []byte {
	return append(classedOp(priority, class, plan...), size)
}

// classedOp is scheduleOp in an extended program, with the sender's class:
// 0 none, else the class-th declared (one past them: undeclared).
func classedOp(priority, class byte, plan ...byte) []byte {
	return append(scheduleOp(priority, plan...), class)
}

// connectFixedOp, connectDrivenOp and connectVegasOp are connectOp in an
// extended program, with a fixed limit, a limit driven by the values of
// limits (each byte mod 5; 0 holds), and a Vegas limit within [1,
// channels+3].
func connectFixedOp(peer, channels byte, hostPlan ...byte) []byte {
	return append(connectOp(peer, channels, hostPlan...), 0)
}

func connectDrivenOp(peer, channels byte, limits []byte, hostPlan ...byte) []byte {
	return slices.Concat(connectOp(peer, channels, hostPlan...), []byte{1 | byte(len(limits))<<2}, limits)
}

// connectTrappedOp connects a peer whose limiter panics when its limit is
// first read: the connection is refused.
func connectTrappedOp(peer, channels byte, hostPlan ...byte) []byte {
	return append(connectOp(peer, channels, hostPlan...), 3|4<<2)
}

func connectVegasOp(peer, channels byte, hostPlan ...byte) []byte {
	return append(connectOp(peer, channels, hostPlan...), 2)
}

// connectPacedOp is connectOp in an extended program, for a peer with a
// fixed limit paced at fuzzRates[rate] (the last: not valid).
func connectPacedOp(peer, channels, rate byte, hostPlan ...byte) []byte {
	return append(connectOp(peer, channels, hostPlan...), 3|rate<<2)
}

func disconnectOp(peer byte) []byte { return []byte{opByte(opDisconnect), peer} }

func deliverOp(recent byte) []byte { return []byte{opByte(opDeliver), recent} }

// refuseOp, refuseWrongOp and refuseUnknownOp, in an extended program,
// refuse one of the recent requests: from its peer, from the peer p<other>
// (or one named after its own if that is the same), or under a forged ID
// (which, mod 4: 0, the next generation, an ID no slot has, the top bit
// flipped).
func refuseOp(recent byte) []byte { return []byte{refuseByte(opDeliver), recent} }
func refuseWrongOp(recent, other byte) []byte {
	return []byte{refuseByte(opDeliverWrong), recent, other}
}
func refuseUnknownOp(recent, forged byte) []byte {
	return []byte{refuseByte(opDeliverUnknown), recent, forged}
}

// refuseByte is the operation byte of the refusal that matches delivery op.
func refuseByte(op int) byte                { return opByte(op) | refusalBit }
func advanceOp(index byte) []byte           { return []byte{opByte(opAdvance), index} }
func withdrawSenderOp(n byte) []byte        { return []byte{opByte(opWithdrawSender), n} }
func withdrawReceiverOp(recent byte) []byte { return []byte{opByte(opWithdrawReceiver), recent} }
func useKeptOp(n byte) []byte               { return []byte{opByte(opUseKeptOffer), n} }
func stopOp() []byte                        { return []byte{opByte(opStop)} }
