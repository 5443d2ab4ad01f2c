package resource

import (
	"net"
	"sync"

	"github.com/benbjohnson/clock"
)

// Accounts is a peer's table of what each remote address has cost it: one
// decaying Sample per address, on the peer's clock. It is safe for
// concurrent use; every connection of a peer shares its Accounts, and so do
// the connections from one address, as in rippled.
//
// An address's account outlives its connections: a reconnect finds the
// balance where the last connection left it, less what has decayed since.
type Accounts struct {
	clock  clock.Clock
	limits bool

	mu     sync.Mutex // guards the fields below
	byAddr map[string]*account
	stats  Stats
}

// account is one address's sample and the second it was last warned in.
type account struct {
	sample     Sample
	warnedAt   int64
	everWarned bool
}

// Stats counts what a peer's accounts did.
type Stats struct {
	// Charges is the number of charges made, FeeDrop's included.
	Charges int64
	// Warnings counts, per address, each second in which a charge left the
	// balance at or over WarningThreshold and, with limits on, under
	// DropThreshold (a charge that drops is counted in Drops; rippled warns
	// at most once a second per endpoint). The sender is never told.
	Warnings int64
	// Drops counts connections the peer cut because a charge took their
	// address's balance to DropThreshold or over.
	Drops int64
	// Refused counts connections refused on arrival because their
	// address's balance was at or over DropThreshold; each was charged
	// FeeDrop.
	Refused int64
	// PeakBalance is the highest balance any address reached.
	PeakBalance int64
}

// NewAccounts returns an empty table on c (the real clock if c is nil). With
// limits false the peer never cuts or refuses a connection, to compare with
// one that does; charges, warnings and balances are still counted, as a
// peer that only logs would count them.
func NewAccounts(c clock.Clock, limits bool) *Accounts {
	if c == nil {
		c = clock.New()
	}
	return &Accounts{clock: c, limits: limits, byAddr: map[string]*account{}}
}

// Limits reports whether the accounts cut and refuse connections.
func (a *Accounts) Limits() bool { return a.limits }

// Key returns the account key of a remote network address: its host, without
// the port, since rippled keeps one balance for every connection from an
// address. An address without a port is its own key.
func Key(remote string) string {
	if host, _, err := net.SplitHostPort(remote); err == nil {
		return host
	}
	return remote
}

// Admit reports whether a new connection from the address with the account
// key is accepted. While the address's balance is at or over DropThreshold it
// is refused and charged FeeDrop, so that a client which keeps redialling
// stays shut out; with limits off every connection is accepted, and nothing is
// charged.
func (a *Accounts) Admit(key string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.limits {
		return true
	}
	now := a.nowLocked()
	acct := a.accountLocked(key)
	acct.sample = Decay(acct.sample, now)
	if DispositionOf(acct.sample.Balance()) != Drop {
		return true
	}
	a.stats.Refused++
	a.chargeLocked(acct, now, FeeDrop)
	return false
}

// Charge charges the address with the account key fee and returns what its
// balance now calls for. Drop means the peer cuts the connection: FeeDrop has
// then been charged as well, as rippled does when it cuts one. With limits
// off, Charge never returns Drop (it returns Warn instead).
func (a *Accounts) Charge(key string, fee Fee) Disposition {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.nowLocked()
	acct := a.accountLocked(key)
	d := DispositionOf(a.chargeLocked(acct, now, fee))
	if d == Drop && !a.limits {
		d = Warn
	}
	if d == Drop {
		a.stats.Drops++
		a.chargeLocked(acct, now, FeeDrop)
	}
	if d == Warn && (!acct.everWarned || acct.warnedAt != now) {
		acct.everWarned, acct.warnedAt = true, now
		a.stats.Warnings++
	}
	return d
}

// Balance returns the balance of the address with the account key now.
func (a *Accounts) Balance(key string) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	acct, ok := a.byAddr[key]
	if !ok {
		return 0
	}
	acct.sample = Decay(acct.sample, a.nowLocked())
	return acct.sample.Balance()
}

// Stats returns the counts so far.
func (a *Accounts) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats
}

// nowLocked is the clock's whole second.
func (a *Accounts) nowLocked() int64 { return a.clock.Now().Unix() }

// accountLocked returns the account of key, made empty as of now if new.
func (a *Accounts) accountLocked(key string) *account {
	acct, ok := a.byAddr[key]
	if !ok {
		acct = &account{sample: Sample{At: a.nowLocked()}}
		a.byAddr[key] = acct
	}
	return acct
}

// chargeLocked adds fee to acct at now, keeps the peaks and returns the
// balance after it.
func (a *Accounts) chargeLocked(acct *account, now int64, fee Fee) int64 {
	var balance int64
	acct.sample, balance = Charge(acct.sample, now, fee)
	a.stats.Charges++
	a.stats.PeakBalance = max(a.stats.PeakBalance, balance)
	return balance
}
