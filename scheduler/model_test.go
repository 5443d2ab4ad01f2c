package scheduler

// The reference model: the simplest sequential description of what a user of
// the Scheduler can observe. It has no locks, no goroutines and no clock (time
// is a number it is told to advance), and no data structure cleverer than a
// slice: the queue is a sorted slice, the best channels are found by sorting
// every open channel, deadlines are found by scanning. FuzzScheduler runs it
// beside the real scheduler and checks, after every step, that both made the
// same callbacks in the same order and show the same counts.
//
// What it describes, in the order a reader meets it:
//
//   - Callbacks run one at a time, outside any call that causes them: a call
//     queues them, and the outermost call runs the queue (and then makes
//     offers, running the receiver callbacks that each offer causes before
//     the next) before it returns. A call from inside a callback only
//     queues. (The real scheduler may run the queue on its own goroutine;
//     the fuzzer waits for it after every step, so the order is the same.)
//   - A sender leaves the queue at its first send that the host accepts. If
//     its offer ends with sends still in the host's hands and none accepted,
//     it keeps its place but is passed over until they end; then it has
//     declined, or is discarded if the scheduler stopped meanwhile. A
//     sender that declined keeps its place, parked: it is not offered
//     anything until Reoffer, unless Reoffer was called while its offer
//     was running or its sends were in the host's hands. Reoffer of a
//     sender that is neither changes nothing (and offers follow). A
//     withdrawal succeeds while the sender is in the queue, and expires its
//     running offer.
//   - A request counts against MaxRequests until its receiver is called.
//   - Senders wait in priority order, FIFO within a priority. An offer goes
//     to the first waiting sender that is not parked and whose wants the
//     open channels meet: at least MinChannels (at least one) open
//     channels of its Only peers (any peer without), less its Avoid peers.
//     Its size is 1 if others wait (parked ones too), else every channel it
//     lists; it lists at most N of the open channels it wants
//     (MaxOfferChannels, 64 by default), best first: fewer closed (a peer's k-th channel counts k
//     more closed), then lower RTT as peerpool.CompareRTTs ranks them under
//     the rank seed (RTTs within a factor of two may count as equal), then
//     the peer not sent to for longer (those never sent to since they
//     connected first, in peerpool.TieKey order under the rank seed), then
//     lower ID.
//   - Request IDs are gen<<32 | slot+1; a new request takes the slot freed
//     last. A notification takes a slot too, until it is digested or its
//     peer disconnects, and a response naming it is unknown. A slot
//     remembers how the message it served just before its current one
//     ended; a response to an older request of the slot is late.
//   - A response to a request that expects a type (offer.Request.Expect)
//     is dropped and counted if its dynamic type is another (or, for an
//     interface type, does not implement it), after every other check: the
//     request stays as it was, live, and a response of the right type
//     still ends it. Refusals carry no response and are not checked.
//   - A refusal (Refuse) is checked, counted and held back like a response,
//     and is the request's one answer: a response or refusal after it is a
//     duplicate. It ends the request as a response does, with reason
//     Refused.
//   - A timeout feeds the peer's smoothed RTT, as a response does; a
//     refusal does not.
//   - A peer has a limit, fixed or set by its limiter, and as many open
//     channels as its limit leaves after its messages in flight, never
//     fewer than none. A response, a timeout or a refusal (Failed) (not a
//     disconnect, a stop or a send the host refused, nor a request ended
//     while it is being sent) is shown to the peer's limiter, before its
//     channel reopens: with its RTT, the peer's messages in flight (itself
//     included), and the time. A channel whose message
//     ends reopens only if the peer is within its limit, and only then is
//     it an opening; a higher limit that opens channels is one opening too.
//     A limiter whose limit cannot be read at connect (it panics) is a
//     refused connection: ErrLimiterPanicked, and one panic handled.
//   - A request being sent (the host's Send has not returned) keeps the first
//     outcome that comes for it and reports it when Send returns; if Send
//     fails, the outcome is dropped and the receiver never called.
//   - Deadlines fire in (deadline, order of arming); all those due at one
//     instant fire together, before anything else happens.
//   - A peer connected with a Rate is paced (promise 21): a bucket of its
//     units, full at first, gains PerSecond a second up to Burst, and each
//     send takes from it, when it begins, the cost its sender declared, or
//     Cost if it declared none. Its allowance, the whole messages the
//     bucket pays for at its unit (Cost, or the dearest cost any sender
//     has declared if that is more), is set when it connects, after every
//     send to it (which first takes one from it), after a send to it that
//     the host refused (whose charge, exactly, is given back), and when a
//     sender declares a dearer cost than any before; it caps the peer's
//     open channels. A negative declared cost, or one above limit.MaxBurst,
//     is refused first, after the size; one above a connected paced peer's
//     Burst is refused after the cap on senders; a peer whose Burst is
//     below the dearest cost declared is refused after the stop. When the
//     allowance is 0 the peer is held until the bucket pays for one
//     message at its unit; at that instant, after the deadlines due then,
//     its allowance is set again, and if its open channels grew, offers
//     follow.
//   - The budget: while the closed channels number MaxInFlight, or the
//     rate's bucket holds no whole token, the next sender is not offered
//     anything; in the bucket's case the offers resume when the next token
//     is due. An offer's size is cut to what the budget allows. A send
//     takes a token when it begins, and a send the host refuses gives it
//     back. With an in-flight cap or classes, any message's end (a
//     disconnect's too) is followed by offers.
//   - The byte budget: a sender declares a size for its messages when it is
//     scheduled (a negative one, or one above the byte burst, is refused
//     first, before anything else is checked but the nil sender). When the
//     next sender to be offered channels declares more bytes than the byte
//     bucket holds, nobody is offered anything until the bucket has them,
//     and offers resume then; its offer's size is cut to the messages the
//     bytes pay for. A send takes its sender's size when it begins, and a
//     send the host refuses gives it back. Withdrawing a sender is followed
//     by offers: the senders behind it may have waited for it.
//   - Classes: a message books its sender's class, and every ancestor, when
//     its send begins, and releases them when it ends, however it ends (a
//     refused send included). The next sender offered is the first that
//     may be, whose class and every ancestor are below their limits; its
//     offer's size is cut to the least room on that path.
//   - Counters by peer (PeerStats): every message counts against the peer
//     it was sent to, by ID, and every dropped response or refusal against
//     the peer that sent it. A response time is counted for each request
//     whose receiver got its response: from its send to the response, or
//     to the return of the host's Send for one that came while it ran.
//     A peer's counters start when it connects; when it disconnects they
//     are kept, and go on if it reconnects, until more than
//     KeepDepartedPeers peers have departed after it: then they are
//     forgotten, and counts for its ID, like counts for an ID that never
//     connected, go to no peer.

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"time"

	"github.com/peersched/peersched/internal/offerlink"
	"github.com/peersched/peersched/internal/peerpool"
	"github.com/peersched/peersched/limit"
	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

type model struct {
	maxSenders, maxRequests, maxOffer int
	rankSeed, sends                   uint64
	budget                            Budget
	bucket                            *limit.Bucket
	byteBucket                        *limit.Bucket // the byte rate's; nil without one
	dearest                           int64         // the highest cost any sender declared
	tokenDue                          bool          // senders wait for the next token, due at tokenAt
	tokenAt                           time.Duration
	classes                           []mClass

	now     time.Duration
	stopped bool
	peers   map[peer.ID]*mPeer

	queue   []*mSender // waiting senders, in priority order, first come first within one
	tickets offer.Ticket
	// passOverLimit is K of Config.PassOverLimit, 0 for strict priorities;
	// passedOver counts, by priority, how often the level was passed over
	// since its last offer (up to K). A level's count starts at zero when
	// its first sender arrives.
	passOverLimit int
	passedOver    map[int]int
	offer         *mOffer // the current or last offer
	// undecided are the offers whose sender's exit is open: the running
	// one, and those that ended with sends in progress.
	undecided []*mOffer

	slots     []mSlot // the request table: each slot's generation and last request
	free      []int   // free slots, the last freed at the end
	inFlight  int
	visited   int // requests disconnects have looked at: those of the peer, and no others
	deadlines []*mDeadline
	armed     uint64 // deadlines armed so far: the tie-break

	pending    []mCallback // callbacks waiting to run
	wantOffers bool
	draining   bool

	st Stats // the counters; the gauges are computed by Stats

	// The counters by peer: kept holds every connected peer's and the
	// departed ones' still kept, departed names those oldest first, at
	// most keep of them; others counts the rest. epoch is the real
	// scheduler's (for PeerStats.Since).
	kept     map[peer.ID]*PeerStats
	departed []peer.ID
	keep     int
	others   PeerStats
	epoch    time.Time
}

type mPeer struct {
	p             peer.Peer
	id            peer.ID
	limit, closed int
	limiter       limit.Limiter // nil for a fixed limit
	rtt           time.Duration
	tieKey        uint64 // peerpool.TieKey under the rank seed
	lastSend      uint64 // when it was last sent to, in sends since New; 0 for never
	gone          bool
	requests      []*mReq // outstanding, and notifications being digested, oldest first
	// Its pacing, if it connected with a Rate (cost > 0): the bucket of its
	// units, the messages it lets the peer be sent (set by pace, less one
	// a send), and whether, and until when, it pays for none.
	bucket    *limit.Bucket
	cost      int64
	unit      int64 // what each message of its allowance is counted at
	allowance int
	held      bool
	due       time.Duration
}

// mClass is a class: its parent is an index into model.classes, or -1.
type mClass struct {
	name            string
	limit, inFlight int
	parent          int
}

type mSender struct {
	s        offer.Sender
	priority int
	class    int   // index into model.classes plus one; 0 for none
	bytes    int64 // the size it declared; 0 without a byte rate
	cost     int64 // what it declared each message costs a paced peer; 0 for none
	ticket   offer.Ticket
	held     bool // its offer ended with sends in progress
	parked   bool // it declined, and has not called Reoffer since
	again    bool // Reoffer came while its offer ran or was held
	// Its wants: only and avoid as given, need at least 1.
	only, avoid []peer.ID
	need        int
}

type mOffer struct {
	generation uint64
	live       bool // OnOffer runs and the offer takes sends
	closed     bool // OnOffer has returned
	sender     *mSender
	channels   []mChannel
	used       []bool
	size, sent int   // sent: claims, in progress or accepted
	class      int   // the sender's
	bytes      int64 // the size the sender declared
	cost       int64 // what the sender declared each message costs a paced peer
	inProgress int   // sends the host has not returned from
	accepted   bool  // a send was accepted: the sender has left
	discard    bool  // stopped while undecided: discard unless a send is accepted
}

type mCallback struct {
	f        func()
	receiver bool // a receiver's call, owed until it starts
}

type mChannel struct {
	p *mPeer
	c peerpool.Choice // as the offer lists it; its Ref is not used
}

// outcome is how a request ended (or, while it is sent, will end).
type outcome uint8

const (
	none outcome = iota
	answered
	refused // the peer answered with a refusal
	timedOut
	disconnected
	shutDown
	unsentMsg // the host refused it: the peer never saw it
)

type mReq struct {
	note     bool // a notification: its slot is held until it is digested
	id       peer.RequestID
	r        receiver.Receiver // nil once withdrawn
	to       *mPeer
	sentAt   time.Duration
	class    int // the class it booked, as mSender.class
	deadline *mDeadline
	sending  bool
	held     outcome // the first outcome that came while sending
	// soft and hard are the deadlines of a request sent with a soft one
	// (soft 0: none), from sentAt; slow is where it stands with it.
	soft, hard time.Duration
	slow       slowPhase
	response   any
	ended      outcome
	expect     reflect.Type // the response's type, if it expects one
}

type slowPhase uint8

const (
	noSlow    slowPhase = iota
	softArmed           // its deadline is the soft one
	slowDone            // the soft deadline passed (and OnSlow, if any, was queued)
	slowHeld            // it passed while the request was being sent: queued once the send returns
)

type mSlot struct {
	generation uint32
	req        *mReq
	prev       *mReq // the request the slot served before req
}

type mDeadline struct {
	at time.Duration
	// armedAt and order break ties between equal deadlines, as the slab
	// does: the earlier armed first. A hard deadline armed when a soft one
	// passed counts as armed at the soft deadline.
	armedAt time.Duration
	order   uint64
	req     *mReq // a request's timeout, or the end of a notification's digest time
}

func newModel(cfg Config) *model {
	m := &model{maxSenders: cfg.MaxSenders, maxRequests: cfg.MaxRequests, maxOffer: cfg.MaxOfferChannels, peers: map[peer.ID]*mPeer{},
		offer: &mOffer{}, kept: map[peer.ID]*PeerStats{}, keep: max(cfg.KeepDepartedPeers, 0)}
	if cfg.KeepDepartedPeers == 0 {
		m.keep = DefaultKeepDepartedPeers
	}
	if m.maxSenders == 0 {
		m.maxSenders = DefaultMaxSenders
	}
	if m.maxRequests == 0 {
		m.maxRequests = DefaultMaxRequests
	}
	if m.maxOffer == 0 {
		m.maxOffer = DefaultMaxOfferChannels
	}
	m.rankSeed = cfg.RankSeed // it must be set: the model cannot know a drawn one
	m.budget = cfg.Budget
	m.passedOver = map[int]int{}
	switch {
	case cfg.PassOverLimit == 0:
		m.passOverLimit = DefaultPassOverLimit
	case cfg.PassOverLimit > 0:
		m.passOverLimit = cfg.PassOverLimit
	}
	for _, c := range cfg.Classes {
		m.classes = append(m.classes, mClass{name: c.Name, limit: c.Limit, parent: -1})
	}
	for i, c := range cfg.Classes {
		for j, p := range m.classes {
			if c.Parent == p.name {
				m.classes[i].parent = j
			}
		}
	}
	if b := cfg.Budget; b.Rate > 0 {
		m.bucket, _ = limit.NewBucket(b.Rate, max(b.Burst, 1))
	}
	if b := cfg.Budget; b.ByteRate > 0 {
		m.byteBucket, _ = limit.NewBucket(b.ByteRate, b.ByteBurst)
	}
	return m
}

// budgetRoom is how many sends of the given declared size the budget
// allows now, and if none because of a rate, how long until the tokens
// are there.
func (m *model) budgetRoom(bytes int64) (room int, wait time.Duration) {
	room = math.MaxInt
	if m.budget.MaxInFlight > 0 {
		closed := 0
		for _, p := range m.peers {
			closed += p.closed
		}
		if room = m.budget.MaxInFlight - closed; room <= 0 {
			return 0, 0
		}
	}
	if m.bucket != nil {
		tokens := m.bucket.Tokens(m.now)
		if tokens == 0 {
			wait, _ := m.bucket.Wait(m.now, 1)
			return 0, wait
		}
		room = min(room, int(tokens))
	}
	if m.byteBucket != nil && bytes > 0 {
		if m.byteBucket.Tokens(m.now) < bytes {
			wait, _ := m.byteBucket.Wait(m.now, bytes)
			return 0, wait
		}
		room = min(room, int(m.byteBucket.Tokens(m.now)/bytes))
	}
	return room, 0
}

// classRoom is how many more messages class (an index plus one, 0 for none)
// may have in flight: the least room on its path to its root.
func (m *model) classRoom(class int) int {
	room := math.MaxInt
	for c := class - 1; c >= 0 && class > 0; c = m.classes[c].parent {
		room = min(room, m.classes[c].limit-m.classes[c].inFlight)
	}
	return room
}

// book and unbook count a message in its class and every ancestor.
func (m *model) book(class int) {
	for c := class - 1; c >= 0 && class > 0; c = m.classes[c].parent {
		m.classes[c].inFlight++
	}
}

func (m *model) unbook(class int) {
	for c := class - 1; c >= 0 && class > 0; c = m.classes[c].parent {
		m.classes[c].inFlight--
	}
}

// spend and refund charge a send of bytes to the rates, and give it back.
func (m *model) spend(bytes int64) {
	if m.bucket != nil {
		_, _ = m.bucket.Take(m.now, 1)
	}
	if m.byteBucket != nil && bytes > 0 {
		_, _ = m.byteBucket.Take(m.now, bytes)
	}
}

func (m *model) refund(bytes int64) {
	if m.bucket != nil {
		_ = m.bucket.Give(1)
	}
	if m.byteBucket != nil && bytes > 0 {
		_ = m.byteBucket.Give(bytes)
	}
}

// --- running callbacks and making offers ---

// run is what every public call does last: unless a callback is already
// running (then this call came from inside it), run queued callbacks and make
// offers until neither is left.
func (m *model) run() {
	if m.draining {
		return
	}
	m.draining = true
	for {
		if len(m.pending) > 0 {
			c := m.pending[0]
			m.pending = m.pending[1:]
			m.call(c.f)
			continue
		}
		if m.wantOffers {
			m.wantOffers = false
			for {
				if m.owed() > 0 {
					m.wantOffers = true
					break
				}
				if !m.offerNext() {
					break
				}
			}
			continue
		}
		break
	}
	m.draining = false
}

func (m *model) want() { m.wantOffers = true; m.run() }

// owed counts the receiver calls queued.
func (m *model) owed() (n int) {
	for _, c := range m.pending {
		if c.receiver {
			n++
		}
	}
	return n
}

// call runs user code, recovering a panic: it is counted and forgotten.
func (m *model) call(f func()) {
	defer func() {
		if recover() != nil {
			m.st.PanicsHandled++
		}
	}()
	f()
}

func (p *mPeer) open() int {
	n := max(p.limit-p.closed, 0)
	if p.cost > 0 {
		n = min(n, p.allowance)
	}
	return n
}

// pace sets p's allowance to the messages its bucket pays for now, and
// holds it until the bucket pays for one if that is none.
func (m *model) pace(p *mPeer) {
	p.unit = max(p.cost, m.dearest)
	n := m.paceTokens(p) / p.unit
	p.allowance = int(min(n, peer.MaxChannelsPerPeer))
	p.held = n == 0
	if p.held {
		wait, _ := p.bucket.Wait(m.now, p.unit)
		p.due = m.now + wait
	}
}

func (m *model) paceTokens(p *mPeer) int64 { return p.bucket.Tokens(m.now) }

// charge charges paced p for a send that begins now, of a message its
// sender declared costs declared (0: p's Cost), and returns the charge;
// uncharge gives it back for a send the host refused, if p is still
// connected.
func (m *model) charge(p *mPeer, declared int64) int64 {
	if p.cost == 0 {
		return 0
	}
	cost := declared
	if cost == 0 {
		cost = p.cost
	}
	p.allowance--
	if wait, _ := p.bucket.Take(m.now, cost); wait != 0 {
		panic(fmt.Sprintf("model: %s charged %d units it does not hold", p.id, cost))
	}
	m.pace(p)
	return cost
}

func (m *model) uncharge(p *mPeer, charged int64) {
	if charged > 0 && !p.gone {
		_ = p.bucket.Give(charged)
		m.pace(p)
	}
}

// declareCost takes cost, declared by a sender being scheduled, as the
// dearest if it is more than any before, and re-counts every paced peer's
// allowance at it; it fails with ErrBadCost, changing nothing, if a
// connected paced peer's burst is below it.
func (m *model) declareCost(cost int64) error {
	if cost <= m.dearest {
		return nil
	}
	for _, p := range m.peers {
		if p.cost > 0 && cost > p.bucket.Burst() {
			return ErrBadCost
		}
	}
	m.dearest = cost
	for _, id := range slices.Sorted(maps.Keys(m.peers)) {
		if p := m.peers[id]; p.cost > 0 && p.unit < cost {
			m.pace(p)
		}
	}
	return nil
}

func (m *model) open() (n int) {
	for _, p := range m.peers {
		n += p.open()
	}
	return n
}

// mayBeOffered reports whether s may be offered channels now, if any are
// open: it is neither held nor parked, its class has room, and enough of
// the open channels are ones it wants.
func (m *model) mayBeOffered(s *mSender) bool {
	return !s.held && !s.parked && m.classRoom(s.class) > 0 && len(m.wanted(s)) >= s.need
}

// wants reports whether s may be offered channels of p.
func (s *mSender) wants(p *mPeer) bool {
	return !slices.Contains(s.avoid, p.id) && (len(s.only) == 0 || slices.Contains(s.only, p.id))
}

// wanted lists every open channel s wants, a peer once per open channel,
// in no order.
func (m *model) wanted(s *mSender) []*mPeer {
	var out []*mPeer
	for _, p := range m.peers {
		if s.wants(p) {
			for range p.open() {
				out = append(out, p)
			}
		}
	}
	return out
}

func (m *model) offerNext() bool {
	if m.stopped || m.open() == 0 {
		return false
	}
	i := m.nextSender()
	if i < 0 {
		return false
	}
	snd := m.queue[i]
	room, wait := m.budgetRoom(snd.bytes)
	if room == 0 {
		if wait > 0 {
			m.tokenDue, m.tokenAt = true, m.now+wait
		}
		return false
	}
	m.passOver(snd.priority)
	room = min(room, m.classRoom(snd.class))
	size := 1
	if len(m.queue) == 1 {
		size = min(m.open(), room)
	}
	chans := m.best(snd)
	o := &mOffer{generation: m.offer.generation + 1, live: true, sender: snd, channels: chans,
		used: make([]bool, len(chans)), size: min(size, len(chans)), class: snd.class, bytes: snd.bytes, cost: snd.cost}
	m.offer = o
	m.undecided = append(m.undecided, o)
	m.call(func() { snd.s.OnOffer(newOffer((*modelCarrier)(m), o.generation)) })
	o.live, o.closed = false, true
	if o.inProgress > 0 {
		if !o.accepted {
			snd.held = true
		}
		return true
	}
	m.settle(o)
	return true
}

// nextSender returns the index of the sender the next offer goes to: the
// first that may be offered channels in the highest starving level (passed
// over K times), or else the first that may be; -1 if none may.
func (m *model) nextSender() int {
	first := slices.IndexFunc(m.queue, m.mayBeOffered)
	if first < 0 || m.passOverLimit == 0 {
		return first
	}
	for i := first; i < len(m.queue); i++ {
		if s := m.queue[i]; m.passedOver[s.priority] >= m.passOverLimit && m.mayBeOffered(s) {
			return i
		}
	}
	return first
}

// passOver records an offer to a sender of the given priority: a starving
// level's count starts again; an offer to any other passes over every lower
// level with senders waiting.
func (m *model) passOver(priority int) {
	if m.passOverLimit == 0 {
		return
	}
	if m.passedOver[priority] >= m.passOverLimit {
		m.passedOver[priority] = 0
		return
	}
	seen := map[int]bool{}
	for _, s := range m.queue {
		if p := s.priority; p < priority && !seen[p] {
			seen[p] = true
			m.passedOver[p] = min(m.passedOver[p]+1, m.passOverLimit)
		}
	}
}

// settle decides the exit of the sender of o, closed with no send in progress.
func (m *model) settle(o *mOffer) {
	m.undecided = slices.DeleteFunc(m.undecided, func(u *mOffer) bool { return u == o })
	snd := o.sender
	switch k := slices.Index(m.queue, snd); {
	case o.accepted:
	case o.discard:
		m.pending = append(m.pending, mCallback{f: snd.s.OnDiscard})
	case k >= 0:
		snd.held = false
		snd.parked = !snd.again
		snd.again = false
	}
}

// sendEnded records the end of a send claimed through o.
func (m *model) sendEnded(o *mOffer, ok bool) {
	o.inProgress--
	if ok && !o.accepted {
		o.accepted = true
		if k := slices.Index(m.queue, o.sender); k >= 0 {
			m.queue = slices.Delete(m.queue, k, k+1)
		}
	}
	if o.closed && o.inProgress == 0 {
		m.settle(o)
	}
}

// best lists the open channels snd wants, best first, cut to the offer's N.
func (m *model) best(snd *mSender) []mChannel {
	type cand struct {
		p *mPeer
		k int
	}
	var all []cand
	for _, p := range m.peers {
		if !snd.wants(p) {
			continue
		}
		for k := range p.open() {
			all = append(all, cand{p, k})
		}
	}
	slices.SortFunc(all, func(a, b cand) int {
		return cmp.Or(cmp.Compare(a.p.closed+a.k, b.p.closed+b.k), peerpool.CompareRTTs(m.rankSeed, a.p.rtt, b.p.rtt),
			cmp.Compare(a.p.lastSend, b.p.lastSend), cmp.Compare(a.p.tieKey, b.p.tieKey),
			cmp.Compare(a.p.id, b.p.id), cmp.Compare(a.k, b.k))
	})
	if len(all) > m.maxOffer {
		all = all[:m.maxOffer]
	}
	out := make([]mChannel, len(all))
	for i, c := range all {
		out[i] = mChannel{c.p, peerpool.Choice{ID: c.p.id, Closed: c.p.closed, Limit: c.p.limit, RTT: c.p.rtt}}
	}
	return out
}

// sent records a send to p, for the ranking.
func (m *model) sent(p *mPeer) {
	m.sends++
	p.lastSend = m.sends
}

// --- peers ---

func (m *model) Connect(p peer.Peer, channels int) error {
	if p == nil {
		return peer.ErrNilPeer
	}
	id := p.ID()
	switch {
	case m.stopped:
		return ErrStopped
	case channels < 1:
		return peer.ErrBadChannels
	case m.peers[id] != nil:
		return peer.ErrAlreadyConnected
	}
	m.peers[id] = &mPeer{p: p, id: id, limit: channels, tieKey: peerpool.TieKey(m.rankSeed, id)}
	m.peerConnected(id)
	m.want()
	return nil
}

// ConnectWith is Connect with the peer's limit from its limiter (clamped to
// at least one).
func (m *model) ConnectWith(p peer.Peer, opts peer.Options) error {
	if p == nil {
		return peer.ErrNilPeer
	}
	if err := opts.Rate.Validate(); err != nil {
		return err
	}
	l, err := opts.NewLimiter()
	if err != nil {
		return err
	}
	start, panicked := readLimit(l)
	if panicked {
		m.st.PanicsHandled++
		return ErrLimiterPanicked
	}
	id := p.ID()
	switch {
	case m.stopped:
		return ErrStopped
	case !opts.Rate.IsZero() && opts.Rate.Burst < m.dearest:
		return ErrBadCost
	case m.peers[id] != nil:
		return peer.ErrAlreadyConnected
	}
	mp := &mPeer{p: p, id: id, limit: max(start, 1), limiter: l, tieKey: peerpool.TieKey(m.rankSeed, id)}
	if r := opts.Rate; !r.IsZero() {
		mp.bucket, _ = limit.NewBucket(r.PerSecond, r.Burst)
		mp.cost = r.Cost
		m.pace(mp)
	}
	m.peers[id] = mp
	m.peerConnected(id)
	m.want()
	return nil
}

// readLimit reads l's limit, or reports that reading it panicked.
func readLimit(l limit.Limiter) (n int, panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	return l.Limit(), false
}

func (m *model) Disconnect(id peer.ID) error {
	p := m.peers[id]
	switch {
	case m.stopped:
		return ErrStopped
	case p == nil:
		return peer.ErrUnknownPeer
	}
	delete(m.peers, id)
	p.gone = true
	m.visited += len(p.requests)
	for _, q := range slices.Backward(slices.Clone(p.requests)) { // newest first
		if q.note {
			m.release(q, unsentMsg)
		} else if q.sending {
			m.hold(q, disconnected)
			m.disarm(q)
			p.requests = slices.DeleteFunc(p.requests, func(x *mReq) bool { return x == q })
		} else {
			m.finish(q, disconnected)
		}
	}
	m.peerDeparted(id)
	m.after(m.budget.MaxInFlight > 0 || len(m.classes) > 0) // its messages freed budget
	return nil
}

// endMessage takes one message off p: its channel reopens if p is
// connected and within its limit.
func (m *model) endMessage(p *mPeer) {
	if p.gone || p.closed == 0 {
		return
	}
	p.closed--
}

// after runs what follows a step: offers too if a message ended.
func (m *model) after(ended bool) {
	if ended {
		m.want()
		return
	}
	m.run()
}

// --- senders ---

func (m *model) Schedule(s offer.Sender, priority int) (offer.Ticket, error) {
	return m.ScheduleWith(s, priority, offer.Options{})
}

func (m *model) ScheduleWith(s offer.Sender, priority int, opts offer.Options) (offer.Ticket, error) {
	class := 0
	if opts.Class != "" {
		class = 1 + slices.IndexFunc(m.classes, func(c mClass) bool { return c.name == opts.Class })
	}
	switch {
	case s == nil:
		return 0, offer.ErrNilSender
	case opts.Bytes < 0 || (m.byteBucket != nil && opts.Bytes > m.budget.ByteBurst):
		return 0, ErrBadBytes
	case opts.Cost < 0 || opts.Cost > limit.MaxBurst:
		return 0, ErrBadCost
	case opts.MinChannels < 0 || opts.MinChannels > m.maxOffer:
		return 0, ErrBadWants
	case len(opts.Only) > 0 && !slices.ContainsFunc(opts.Only, func(id peer.ID) bool { return !slices.Contains(opts.Avoid, id) }):
		return 0, ErrBadWants
	case m.stopped:
		return 0, ErrStopped
	case opts.Class != "" && class == 0:
		return 0, limit.ErrUnknownClass
	case len(m.queue) >= m.maxSenders:
		return 0, offer.ErrTooManySenders
	}
	if err := m.declareCost(opts.Cost); err != nil {
		return 0, err
	}
	m.tickets++
	if !slices.ContainsFunc(m.queue, func(w *mSender) bool { return w.priority == priority }) {
		m.passedOver[priority] = 0 // a new level
	}
	t, at := m.tickets, len(m.queue)
	for at > 0 && m.queue[at-1].priority < priority {
		at--
	}
	snd := &mSender{s: s, priority: priority, ticket: t, class: class,
		only: slices.Clone(opts.Only), avoid: slices.Clone(opts.Avoid), need: max(opts.MinChannels, 1)}
	if m.byteBucket != nil {
		snd.bytes = opts.Bytes
	}
	snd.cost = opts.Cost
	m.queue = slices.Insert(m.queue, at, snd)
	m.want()
	return t, nil
}

func (m *model) WithdrawSender(t offer.Ticket) bool {
	k := slices.IndexFunc(m.queue, func(s *mSender) bool { return s.ticket == t })
	if k < 0 {
		return false
	}
	if m.offer.live && m.offer.sender == m.queue[k] {
		m.offer.live = false
	}
	m.queue = slices.Delete(m.queue, k, k+1)
	if m.byteBucket != nil {
		m.want()
	}
	return true
}

func (m *model) Reoffer(t offer.Ticket) bool {
	k := slices.IndexFunc(m.queue, func(s *mSender) bool { return s.ticket == t })
	if k < 0 {
		return false
	}
	switch snd := m.queue[k]; {
	case snd.parked:
		snd.parked = false
	case snd.held || (m.offer.live && m.offer.sender == snd):
		snd.again = true
	}
	m.want()
	return true
}

// --- the offer, as its sender sees it ---

type modelCarrier model

func (c *modelCarrier) current(generation uint64) bool {
	return c.offer.live && c.offer.generation == generation
}

func (c *modelCarrier) OfferStatus(generation uint64) offerlink.Status {
	if !c.current(generation) {
		return offerlink.Status{}
	}
	return offerlink.Status{Live: true, Len: len(c.offer.channels), Size: c.offer.size, Sent: c.offer.sent}
}

func (c *modelCarrier) OfferChannel(generation uint64, i int) (peerpool.Choice, bool) {
	if !c.current(generation) || i < 0 || i >= len(c.offer.channels) {
		return peerpool.Choice{}, false
	}
	return c.offer.channels[i].c, true
}

func (c *modelCarrier) OfferChannels(generation uint64, dst []peerpool.Choice) []peerpool.Choice {
	if !c.current(generation) {
		return dst
	}
	for _, ch := range c.offer.channels {
		dst = append(dst, ch.c)
	}
	return dst
}

func (c *modelCarrier) claim(generation uint64, i int) (*mPeer, error) {
	o := c.offer
	switch {
	case c.stopped:
		return nil, ErrStopped
	case !c.current(generation):
		return nil, offer.ErrExpired
	case i < 0 || i >= len(o.channels):
		return nil, offer.ErrNoSuchChannel
	case o.used[i]:
		return nil, offer.ErrChannelUsed
	case o.sent >= o.size:
		return nil, offer.ErrSizeExceeded
	case o.channels[i].p.gone:
		return nil, offer.ErrPeerGone
	case o.channels[i].p.open() == 0:
		return nil, offer.ErrPeerAtLimit
	}
	o.used[i] = true
	o.sent++
	o.inProgress++
	return o.channels[i].p, nil
}

// unclaim undoes a claim on o whose send failed.
func (c *modelCarrier) unclaim(o *mOffer, i int) {
	if o.live && o.used[i] {
		o.used[i] = false
		o.sent--
	}
	(*model)(c).sendEnded(o, false)
}

func (c *modelCarrier) OfferRequest(generation uint64, i int, req offerlink.Request) (peer.RequestID, error) {
	m := (*model)(c)
	r, soft, timeout, message := req.Receiver, req.Soft, req.Timeout, req.Message
	if r == nil {
		return 0, receiver.ErrNilReceiver
	}
	if timeout <= 0 {
		return 0, receiver.ErrBadTimeout
	}
	p, err := c.claim(generation, i)
	if err != nil {
		return 0, err
	}
	o := c.offer
	if m.inFlight+m.owed() >= m.maxRequests {
		c.unclaim(o, i)
		return 0, receiver.ErrTooManyRequests
	}
	p.closed++
	charged := m.charge(p, o.cost)
	m.sent(p)
	m.spend(o.bytes)
	m.book(o.class)
	q := m.add(r, p)
	q.class, q.expect = o.class, req.Expect
	if soft > 0 {
		q.soft, q.hard, q.slow = soft, timeout, softArmed
		q.deadline = m.arm(soft, q)
	} else {
		q.deadline = m.arm(timeout, q)
	}
	if err := m.hostSend(p, peer.RequestID(q.id), message); err != nil {
		m.disarm(q)
		m.forget(q)
		if !p.gone {
			p.closed-- // never really taken: not an opening
		}
		m.uncharge(p, charged)
		m.refund(o.bytes)
		c.unclaim(o, i)
		m.st.SendErrors++
		m.peerStats(p.id).SendErrors++
		m.want()
		return 0, fmt.Errorf("send to %q: %w", p.id, err)
	}
	m.sendEnded(o, true)
	m.st.Sent++
	m.peerStats(p.id).Sent++
	q.sending = false
	switch {
	case q.held != none:
		m.finish(q, q.held)
		m.endMessage(p)
		m.want()
	case q.slow == slowHeld:
		q.slow = slowDone
		m.queueSlow(q)
		m.run()
	}
	return q.id, nil
}

func (c *modelCarrier) OfferNotify(generation uint64, i int, message any, digest time.Duration) error {
	m := (*model)(c)
	if digest <= 0 {
		return receiver.ErrBadTimeout
	}
	p, err := c.claim(generation, i)
	if err != nil {
		return err
	}
	o := c.offer
	p.closed++
	charged := m.charge(p, o.cost)
	m.sent(p)
	m.spend(o.bytes)
	m.book(o.class)
	if err := m.hostSend(p, 0, message); err != nil {
		if !p.gone {
			p.closed--
		}
		m.uncharge(p, charged)
		m.refund(o.bytes)
		m.unbook(o.class)
		c.unclaim(o, i)
		m.st.SendErrors++
		m.peerStats(p.id).SendErrors++
		m.want()
		return fmt.Errorf("send to %q: %w", p.id, err)
	}
	m.sendEnded(o, true)
	m.st.Notified++
	m.peerStats(p.id).Notified++
	if m.stopped || p.gone {
		m.endMessage(p)
		m.unbook(o.class) // it has ended already
	} else {
		q := m.add(nil, p)
		q.note, q.sending, q.class = true, false, o.class
		m.inFlight--
		q.deadline = m.arm(digest, q)
	}
	return nil
}

func (m *model) hostSend(p *mPeer, id peer.RequestID, message any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			m.st.PanicsHandled++
			err = fmt.Errorf("%w: %v", ErrSendPanicked, r)
		}
	}()
	return p.p.Send(id, message)
}

// --- requests ---

func (m *model) add(r receiver.Receiver, p *mPeer) *mReq {
	var slot int
	if n := len(m.free); n > 0 {
		slot, m.free = m.free[n-1], m.free[:n-1]
	} else {
		slot = len(m.slots)
		m.slots = append(m.slots, mSlot{})
	}
	s := &m.slots[slot]
	s.prev = s.req
	s.generation++
	if s.generation == 0 {
		s.generation = 1
	}
	q := &mReq{id: peer.RequestID(uint64(s.generation)<<32 | uint64(slot+1)), r: r, to: p, sentAt: m.now, sending: true}
	s.req = q
	p.requests = append(p.requests, q)
	m.inFlight++
	return q
}

func (m *model) lookup(id peer.RequestID) *mReq {
	slot := int64(uint32(id)) - 1
	if slot < 0 || slot >= int64(len(m.slots)) || m.slots[slot].generation != uint32(id>>32) {
		return nil
	}
	return m.slots[slot].req
}

// hold records the first outcome of a request that is being sent.
func (m *model) hold(q *mReq, o outcome) {
	if q.held == none {
		q.held = o
	}
}

// release ends q and frees its slot, without telling anyone.
func (m *model) release(q *mReq, o outcome) {
	q.ended = o
	m.unbook(q.class)
	m.disarm(q)
	q.to.requests = slices.DeleteFunc(q.to.requests, func(x *mReq) bool { return x == q })
	m.free = append(m.free, int(uint32(q.id))-1)
	if !q.note {
		m.inFlight--
	}
}

// forget drops a request whose host send failed.
func (m *model) forget(q *mReq) { m.release(q, unsentMsg) }

// finish ends q with o, counts it, and queues its receiver's call.
func (m *model) finish(q *mReq, o outcome) {
	m.release(q, o)
	r, id, from := q.r, q.id, q.to.id
	ps := m.peerStats(from)
	switch {
	case r == nil:
		m.st.WithdrawnEnded++
		ps.WithdrawnEnded++
		return
	case o == answered:
		m.st.Succeeded++
		ps.Succeeded++
		observeModel(&m.st.ResponseTimes, m.now-q.sentAt)
		observeModel(&ps.ResponseTimes, m.now-q.sentAt)
		resp := q.response
		m.pending = append(m.pending, mCallback{f: func() { r.OnResponse(id, from, resp) }, receiver: true})
		return
	}
	var reason receiver.Reason
	switch o {
	case timedOut:
		m.st.TimedOut++
		ps.TimedOut++
		reason = receiver.Timeout
	case refused:
		m.st.Refused++
		ps.Refused++
		reason = receiver.Refused
	case disconnected:
		m.st.Disconnected++
		ps.Disconnected++
		reason = receiver.Disconnected
	case shutDown:
		m.st.Shutdown++
		ps.Shutdown++
		reason = receiver.Shutdown
	}
	m.pending = append(m.pending, mCallback{f: func() { r.OnFailure(id, from, reason) }, receiver: true})
}

func (m *model) WithdrawReceiver(id peer.RequestID) bool {
	q := m.lookup(id)
	if q == nil || q.ended != none || q.r == nil {
		return false
	}
	q.r = nil
	return true
}

func (m *model) Deliver(from peer.ID, id peer.RequestID, response any) error {
	return m.answer(from, id, answered, response)
}

func (m *model) Refuse(from peer.ID, id peer.RequestID) error {
	return m.answer(from, id, refused, nil)
}

// answer is Deliver (how is answered) and Refuse (how is refused).
func (m *model) answer(from peer.ID, id peer.RequestID, how outcome, response any) error {
	if m.stopped {
		return ErrStopped
	}
	ended := m.expire()
	q := m.lookup(id)
	slot := int64(uint32(id)) - 1
	reused := q == nil && slot >= 0 && slot < int64(len(m.slots)) && uint32(id>>32) != 0 && uint32(id>>32) < m.slots[slot].generation
	if reused {
		if prev := m.slots[slot].prev; prev != nil && prev.id == id {
			// The slot remembers the request it served just before: that
			// one is classified by how it ended, like any ended request.
			q, reused = prev, false
		}
	}
	// An ended request (even one whose outcome is held back while it is
	// sent) answers duplicate or late, whoever responds: duplicate if the
	// peer has answered it already, with a response or a refusal.
	var err error
	ps := m.peerStats(from) // a dropped answer counts against its sender
	switch {
	case reused:
		err = receiver.ErrLateResponse
		m.st.Late++
		ps.Late++
	case q == nil || q.note || q.ended == unsentMsg:
		err = receiver.ErrUnknownRequest
		m.st.Unknown++
		ps.Unknown++
	case q.ended == answered || q.held == answered || q.ended == refused || q.held == refused:
		err = receiver.ErrDuplicateResponse
		m.st.Duplicate++
		ps.Duplicate++
	case q.ended != none || q.held != none:
		err = receiver.ErrLateResponse
		m.st.Late++
		ps.Late++
	case q.to.id != from:
		err = receiver.ErrWrongPeer
		m.st.WrongPeer++
		ps.WrongPeer++
	case how == answered && !expected(q.expect, response):
		err = receiver.ErrWrongResponseType
		m.st.WrongType++
		ps.WrongType++
	}
	switch {
	case err != nil:
	case q.sending:
		q.held, q.response = how, response
	default:
		q.response = response
		m.finish(q, how)
		if how == refused {
			m.observe(q, limit.Failed)
		} else {
			m.observe(q, limit.Answered)
		}
		m.endMessage(q.to)
		ended = true
	}
	m.after(ended)
	return err
}

// expected reports whether response is of the type want, or implements
// it if it is an interface type; a nil want takes anything.
func expected(want reflect.Type, response any) bool {
	if want == nil {
		return true
	}
	got := reflect.TypeOf(response)
	if want.Kind() == reflect.Interface {
		return got != nil && got.Implements(want)
	}
	return got == want
}

// observe shows how q ended to its peer: its smoothed RTT, and its limiter.
func (m *model) observe(q *mReq, outcome limit.Outcome) {
	p := q.to
	if p.gone {
		return
	}
	if outcome != limit.Failed { // a fast "no" says nothing of how fast the peer serves
		m.observeRTT(p, m.now-q.sentAt)
	}
	if p.limiter != nil {
		p.limiter.Observe(limit.Sample{Outcome: outcome, RTT: m.now - q.sentAt, InFlight: p.closed, Now: m.now})
		p.limit = min(max(p.limiter.Limit(), 1), peer.MaxChannelsPerPeer)
	}
}

// observeRTT folds a sample into the peer's smoothed RTT: 1/8 weight, and 0
// means "no sample yet".
func (m *model) observeRTT(p *mPeer, sample time.Duration) {
	if p.rtt == 0 {
		p.rtt = sample
	} else if p.rtt += (sample - p.rtt) >> 3; p.rtt <= 0 {
		p.rtt = 1
	}
}

// --- time ---

func (m *model) arm(after time.Duration, q *mReq) *mDeadline {
	return m.armAt(m.now, after, q)
}

func (m *model) armAt(at, after time.Duration, q *mReq) *mDeadline {
	m.armed++
	d := &mDeadline{at: at + after, armedAt: at, order: m.armed, req: q}
	m.deadlines = append(m.deadlines, d)
	return d
}

// queueSlow queues OnSlow for q, past its soft deadline, if its receiver
// wants it; the call checks, when it runs, that q is still live and not
// withdrawn.
func (m *model) queueSlow(q *mReq) {
	sr, ok := q.r.(receiver.SlowReceiver)
	if !ok {
		return
	}
	id, from := q.id, q.to.id
	m.pending = append(m.pending, mCallback{f: func() {
		if q.ended == none && q.r != nil {
			sr.OnSlow(id, from)
		}
	}})
}

func (m *model) disarm(q *mReq) {
	m.deadlines = slices.DeleteFunc(m.deadlines, func(d *mDeadline) bool { return d == q.deadline })
	q.deadline = nil
}

// expire fires every deadline at or before now, one at a time in
// (deadline, arming) order, ending each message (its limiter told first)
// before the next, and reports whether any ended. A soft deadline re-arms
// its request for the hard one and queues OnSlow.
func (m *model) expire() (ended bool) {
	for len(m.deadlines) > 0 {
		slices.SortFunc(m.deadlines, func(a, b *mDeadline) int {
			return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.armedAt, b.armedAt), cmp.Compare(a.order, b.order))
		})
		d := m.deadlines[0]
		if d.at > m.now {
			break
		}
		m.deadlines = m.deadlines[1:]
		switch q := d.req; {
		case q.note:
			m.release(q, unsentMsg)
			m.endMessage(q.to)
			ended = true
		case q.slow == softArmed:
			q.deadline = m.armAt(q.sentAt+q.soft, q.hard-q.soft, q)
			if q.sending {
				q.slow = slowHeld
			} else {
				q.slow = slowDone
				m.queueSlow(q)
			}
		case q.sending:
			m.hold(q, timedOut)
			q.deadline = nil
		default:
			m.finish(q, timedOut)
			m.observe(q, limit.TimedOut) // a timeout is a sample too
			m.endMessage(q.to)
			ended = true
		}
	}
	return ended
}

// advance moves time on by d, firing deadlines at their own instants.
func (m *model) advance(d time.Duration) {
	end := m.now + d
	for !m.stopped {
		next := time.Duration(-1)
		for _, dl := range m.deadlines {
			if next < 0 || dl.at < next {
				next = dl.at
			}
		}
		if m.tokenDue && (next < 0 || m.tokenAt < next) {
			next = m.tokenAt
		}
		for _, p := range m.peers {
			if p.held && (next < 0 || p.due < next) {
				next = p.due
			}
		}
		if next < 0 || next > end {
			break
		}
		m.now = next
		ended := m.expire()
		if m.tokenDue && m.now >= m.tokenAt {
			m.tokenDue, ended = false, true
		}
		for _, id := range slices.Sorted(maps.Keys(m.peers)) {
			if p := m.peers[id]; p.held && p.due <= m.now {
				before := p.open()
				m.pace(p)
				ended = ended || p.open() > before
			}
		}
		m.after(ended)
	}
	m.now = end
}

// --- stop and state ---

func (m *model) Stop() {
	if !m.stopped {
		m.stopped = true
		for _, o := range m.undecided {
			if k := slices.Index(m.queue, o.sender); k >= 0 && !o.accepted {
				o.discard = true
				m.queue = slices.Delete(m.queue, k, k+1)
			}
		}
		for _, s := range m.queue {
			m.pending = append(m.pending, mCallback{f: s.s.OnDiscard})
		}
		m.queue = nil
		for _, s := range m.slots { // in slot order
			switch q := s.req; {
			case q == nil || q.ended != none:
			case q.note:
				m.release(q, unsentMsg)
				m.endMessage(q.to)
			case q.sending:
				m.hold(q, shutDown)
			default:
				m.finish(q, shutDown)
				m.endMessage(q.to)
			}
		}
		for _, d := range m.deadlines {
			d.req.deadline = nil
		}
		m.deadlines = nil
	}
	m.run()
}

// stranded reports whether, with no callback running, a sender waits that
// could be offered an open channel: the one thing the drainer must never
// leave behind.
func (m *model) stranded() bool {
	i := m.nextSender()
	if m.stopped || m.open() == 0 || i < 0 {
		return false
	}
	room, _ := m.budgetRoom(m.queue[i].bytes)
	return room > 0
}

func (m *model) Stats() Stats {
	st := m.st
	st.Peers, st.SendersWaiting, st.RequestsInFlight, st.Stopped = len(m.peers), len(m.queue), m.inFlight, m.stopped
	for _, s := range m.queue {
		if s.parked {
			st.SendersParked++
		}
	}
	for _, p := range m.peers {
		st.ChannelsOpen += p.open()
		st.ChannelsClosed += p.closed
	}
	return st
}

func (m *model) ClassUsage(dst []ClassUsage) []ClassUsage {
	for _, c := range m.classes {
		dst = append(dst, ClassUsage{Name: c.name, Limit: c.limit, InFlight: c.inFlight})
	}
	return dst
}

func (m *model) PeerUsage(dst []peer.Usage) []peer.Usage {
	for _, id := range slices.Sorted(maps.Keys(m.peers)) {
		p := m.peers[id]
		dst = append(dst, peer.Usage{ID: p.id, Channels: p.open() + p.closed, ChannelsOpen: p.open(), ChannelsClosed: p.closed, Limit: p.limit, RTT: p.rtt})
	}
	return dst
}

// --- counters by peer ---

// peerStats returns the counters of the peer named id: its own, if kept,
// or the others'.
func (m *model) peerStats(id peer.ID) *PeerStats {
	if ps := m.kept[id]; ps != nil {
		return ps
	}
	return &m.others
}

// peerConnected gives the peer named id, just connected, its counters: the
// ones it had, if kept, or new ones.
func (m *model) peerConnected(id peer.ID) {
	if ps := m.kept[id]; ps != nil {
		m.departed = slices.DeleteFunc(m.departed, func(d peer.ID) bool { return d == id })
		ps.Connected = true
		return
	}
	m.kept[id] = &PeerStats{ID: id, Connected: true, Since: m.epoch.Add(m.now)}
}

// peerDeparted keeps the counters of the peer named id, just disconnected,
// and forgets the oldest kept ones beyond m.keep, adding them to the
// others'.
func (m *model) peerDeparted(id peer.ID) {
	m.kept[id].Connected = false
	m.departed = append(m.departed, id)
	for len(m.departed) > m.keep {
		old := m.kept[m.departed[0]]
		m.departed = m.departed[1:]
		delete(m.kept, old.ID)
		addPeerStats(&m.others, old)
	}
}

func (m *model) PeerStats(dst []PeerStats) []PeerStats {
	for _, id := range slices.Sorted(maps.Keys(m.kept)) {
		dst = append(dst, *m.kept[id])
	}
	return dst
}

// observeModel counts a response time in h the slow way: in every bucket
// whose bound is at least d.
func observeModel(h *Histogram, d time.Duration) {
	for i, bound := range HistogramBounds() {
		if d <= bound {
			h.Cumulative[i]++
		}
	}
	h.Count++
	h.Sum += d
}

// addPeerStats adds src's counters to dst's.
func addPeerStats(dst, src *PeerStats) {
	dst.Sent += src.Sent
	dst.Notified += src.Notified
	dst.SendErrors += src.SendErrors
	dst.Succeeded += src.Succeeded
	dst.TimedOut += src.TimedOut
	dst.Refused += src.Refused
	dst.Disconnected += src.Disconnected
	dst.Shutdown += src.Shutdown
	dst.WithdrawnEnded += src.WithdrawnEnded
	dst.Late += src.Late
	dst.Unknown += src.Unknown
	dst.WrongPeer += src.WrongPeer
	dst.Duplicate += src.Duplicate
	for i := range dst.ResponseTimes.Cumulative {
		dst.ResponseTimes.Cumulative[i] += src.ResponseTimes.Cumulative[i]
	}
	dst.ResponseTimes.Count += src.ResponseTimes.Count
	dst.ResponseTimes.Sum += src.ResponseTimes.Sum
}
