package fetch

import (
	"context"
	"fmt"
	"time"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/penalty"
)

// Progress is a snapshot of a running fetch, handed to Config.Progress.
type Progress struct {
	Elapsed  time.Duration
	Verified int     // objects that arrived and verified
	Known    int     // hashes discovered so far
	Expected int     // Config.Expected, less the nodes resumed from Config.Store (0 if unknown)
	Rate     float64 // verified objects per second since the previous snapshot; in the last (Done), over the whole fetch
	// InFlight counts the fetch's requests in flight: sent, not ended, and
	// holding a channel of the host's. It is never more than Channels (see
	// inFlightOf).
	InFlight int
	// Channels counts the channels of the host's connected peers: each
	// peer's limit, or its channels open and closed where more are (while
	// messages sent before its limit fell are in flight). It is the most
	// requests the host lets be in flight at once, rates aside: a paced
	// peer's channels that its rate does not pay for now count too, though
	// no offer lists them. With the scheduler's adaptive limits it moves
	// as they do.
	Channels int
	Peers    int  // peers connected
	Retries  int  // objects asked again so far
	Done     bool // the fetch has ended; this is the last snapshot
}

// hostLoad is what the host says of its peers at one moment: how many are
// connected, their channels, and how many of those are closed (carrying a
// request of the fetch's, or of another sender's where the host is shared).
type hostLoad struct{ peers, channels, closed int }

// usageLoad sums the scheduler's PeerUsage into a hostLoad.
func usageLoad(usage []peer.Usage) hostLoad {
	l := hostLoad{peers: len(usage)}
	for _, u := range usage {
		l.channels += max(u.Channels, u.Limit)
		l.closed += u.ChannelsClosed
	}
	return l
}

// inFlightOf is Progress.InFlight: the fetch's requests not yet ended,
// tallied, but never more than the channels the host holds closed. The
// tally counts a request until the fetch has taken in its end, but the
// scheduler reopens a request's channel as its response arrives, before
// its receiver runs, and may send another request on that channel first:
// counted alone, the tally runs ahead of the channels by the answers still
// waiting for their receivers (70 on 64 channels, say).
func inFlightOf(tallied int, l hostLoad) int {
	return max(min(tallied, l.closed), 0)
}

// watched is what watch saw: why the fetch ended (nil if it completed, see
// watch) and the host's channels at every snapshot, for the report's bound.
type watched struct {
	cause    error
	channels channelMean
}

// channelMean is the mean of the channel counts seen at the snapshots,
// taken every ProgressEvery, so it weighs every moment of the fetch alike.
type channelMean struct {
	sum, n int
}

func (m *channelMean) add(channels int) { m.sum, m.n = m.sum+channels, m.n+1 }

func (m channelMean) mean() float64 {
	if m.n == 0 {
		return 0
	}
	return float64(m.sum) / float64(m.n)
}

// watch waits for the fetch to end and returns why it did not complete:
// nil if it completed, else the fatal error, the context's error, or a stall.
// It calls Config.Progress every ProgressEvery and checks for a stall at the
// same moments. load reads the host; it is called without mu.
func (s *state) watch(ctx context.Context, start time.Time, load func() hostLoad) watched {
	clk := s.cfg.Clock
	tick := clk.Ticker(s.cfg.ProgressEvery)
	defer tick.Stop()
	var w watched
	prevVerified, prevAt := 0, start
	for {
		select {
		case <-s.done:
			s.mu.Lock()
			defer s.mu.Unlock()
			w.cause = s.fatal
			return w
		case <-ctx.Done():
			w.cause = ctx.Err()
			return w
		case <-tick.C:
		}
		l := load()
		w.channels.add(l.channels)
		var traffic map[peer.ID]penalty.Traffic
		if s.cfg.Traffic != nil {
			traffic = s.cfg.Traffic()
		}
		now := clk.Now()
		s.mu.Lock()
		s.judgeTrafficLocked(traffic, now)
		useless := s.takeDisconnectsLocked()
		p := s.progressLocked(now.Sub(start), l)
		stalled := now.Sub(s.lastVerified)
		s.mu.Unlock()
		s.disconnect(useless)
		if dt := now.Sub(prevAt); dt > 0 {
			p.Rate = float64(p.Verified-prevVerified) / dt.Seconds()
		}
		prevVerified, prevAt = p.Verified, now
		if s.cfg.Progress != nil {
			s.cfg.Progress(p)
		}
		if stalled >= s.cfg.StallTimeout {
			w.cause = fmt.Errorf("%w for %v", ErrStalled, stalled.Round(time.Millisecond))
			return w
		}
	}
}

// progressLocked returns a snapshot, without its Rate.
func (s *state) progressLocked(elapsed time.Duration, l hostLoad) Progress {
	return Progress{
		Elapsed:  elapsed,
		Verified: s.front.verified,
		Known:    s.front.known(),
		Expected: s.expectedLocked(), // what this run downloads
		InFlight: inFlightOf(s.tally.inFlight, l),
		Channels: l.channels,
		Peers:    l.peers,
		Retries:  s.tally.retries,
	}
}

// end finishes the fetch: callbacks stop changing anything, the last
// Progress goes out, and the Report and error are built. w is what watch
// returned; l is the host's load now.
func (s *state) end(strategy string, start time.Time, w watched, l hostLoad, dropped Dropped) (Report, error) {
	stored := s.stopWriter()
	now := s.cfg.Clock.Now()
	w.channels.add(l.channels)
	s.mu.Lock()
	s.finished = true
	s.stopWakeLocked()
	p := s.progressLocked(now.Sub(start), l)
	p.Done = true
	if p.Elapsed > 0 {
		p.Rate = float64(p.Verified) / p.Elapsed.Seconds()
	}
	rep := s.reportLocked(strategy, now.Sub(start), dropped)
	batch := float64(s.cfg.Batch)
	if !s.cfg.PeerRate.IsZero() && rep.BatchMean > 0 {
		batch = rep.BatchMean // Run sized its requests itself
	}
	rep.bound(w.channels.mean(), batch)
	var err error
	if !rep.Complete {
		cause := w.cause
		if cause == nil {
			cause = fmt.Errorf("fetch ended early") // not reached: watch returns nil only when complete
		}
		err = s.incompleteLocked(cause, l.peers)
	} else if stored != nil {
		err = stored // every node verified, but the store lacks some
	}
	s.mu.Unlock()
	if s.cfg.Progress != nil {
		s.cfg.Progress(p)
	}
	return rep, err
}
