package fetch

import (
	"context"
	"fmt"
	"time"
)

// Progress is a snapshot of a running fetch, handed to Config.Progress.
type Progress struct {
	Elapsed  time.Duration
	Verified int     // objects that arrived and verified
	Known    int     // hashes discovered so far
	Expected int     // Config.Expected, less the nodes resumed from Config.Store (0 if unknown)
	Rate     float64 // verified objects per second since the previous snapshot
	InFlight int     // requests in flight
	Peers    int     // peers connected
	Retries  int     // objects asked again so far
	Done     bool    // the fetch has ended; this is the last snapshot
}

// watch waits for the fetch to end and returns why it did not complete:
// nil if it completed, else the fatal error, the context's error, or a stall.
// It calls Config.Progress every ProgressEvery and checks for a stall at the
// same moments. peers counts the connected peers; it is called without mu.
func (s *state) watch(ctx context.Context, start time.Time, peers func() int) error {
	clk := s.cfg.Clock
	tick := clk.Ticker(s.cfg.ProgressEvery)
	defer tick.Stop()
	prevVerified, prevAt := 0, start
	for {
		select {
		case <-s.done:
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.fatal
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		n := peers()
		now := clk.Now()
		s.mu.Lock()
		p := s.progressLocked(now.Sub(start), n)
		stalled := now.Sub(s.lastVerified)
		s.mu.Unlock()
		if dt := now.Sub(prevAt); dt > 0 {
			p.Rate = float64(p.Verified-prevVerified) / dt.Seconds()
		}
		prevVerified, prevAt = p.Verified, now
		if s.cfg.Progress != nil {
			s.cfg.Progress(p)
		}
		if stalled >= s.cfg.StallTimeout {
			return fmt.Errorf("%w for %v", ErrStalled, stalled.Round(time.Millisecond))
		}
	}
}

// progressLocked returns a snapshot, without its Rate.
func (s *state) progressLocked(elapsed time.Duration, peers int) Progress {
	return Progress{
		Elapsed:  elapsed,
		Verified: s.front.verified,
		Known:    s.front.known(),
		Expected: max(s.cfg.Expected-s.resumed, 0), // what this run downloads
		InFlight: s.tally.inFlight,
		Peers:    peers,
		Retries:  s.tally.retries,
	}
}

// end finishes the fetch: callbacks stop changing anything, the last
// Progress goes out, and the Report and error are built. cause is what watch
// returned.
func (s *state) end(strategy string, start time.Time, cause error, peers int, dropped Dropped) (Report, error) {
	stored := s.stopWriter()
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	s.finished = true
	p := s.progressLocked(now.Sub(start), peers)
	p.Done = true
	if p.Elapsed > 0 {
		p.Rate = float64(p.Verified) / p.Elapsed.Seconds()
	}
	rep := s.reportLocked(strategy, now.Sub(start), dropped)
	var err error
	if !rep.Complete {
		if cause == nil {
			cause = fmt.Errorf("fetch ended early") // not reached: watch returns nil only when complete
		}
		err = s.incompleteLocked(cause, peers)
	} else if stored != nil {
		err = stored // every node verified, but the store lacks some
	}
	s.mu.Unlock()
	if s.cfg.Progress != nil {
		s.cfg.Progress(p)
	}
	return rep, err
}
