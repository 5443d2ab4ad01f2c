package simnet

import (
	"errors"
	"testing"
	"time"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/resource"
	"github.com/peersched/peersched/xrpl/wire"
)

// sendAtRate sends rate one-hash requests at the start of each second for
// seconds seconds, or until the peer cuts the host off, and returns how
// many seconds it sent for.
func sendAtRate(h *harness, p *Peer, rate, seconds int, id *uint64) int {
	h.t.Helper()
	for s := range seconds {
		for range rate {
			*id++
			err := p.Send(peer.RequestID(*id), request(int(*id), 1))
			if errors.Is(err, ErrDisconnected) {
				return s
			}
			if err != nil {
				h.t.Fatal(err)
			}
		}
		h.advance(time.Second)
		h.records()
	}
	return seconds
}

// TestRateSettlesOrCuts: 100 queries a second settle just under the drop
// threshold (24,999 in the limit) and are never cut off; 101 a second are cut off, after about
// 145 s, and the host is told why.
func TestRateSettlesOrCuts(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		p := h.addPeer("a", Profile{})
		var id uint64
		if s := sendAtRate(h, p, 100, 300, &id); s != 300 {
			t.Fatalf("100 queries a second cut off after %d s", s)
		}
		if st := p.Stats(); st.Resources.Drops != 0 || st.Resources.PeakBalance < 24_990 || st.Resources.PeakBalance > 24_999 || st.Disconnects != 0 {
			t.Fatalf("100/s: %+v, want no drop and a peak balance just under 25,000", st)
		}
	})
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		p := h.addPeer("a", Profile{})
		var down DownReason
		h.net.onDown = func(p *Peer) { down = p.Down() }
		var id uint64
		s := sendAtRate(h, p, 101, 300, &id)
		if s < 140 || s > 150 {
			t.Fatalf("101 queries a second cut off after %d s, want about 145", s)
		}
		if st := p.Stats(); st.Resources.Drops != 1 || st.Disconnects != 1 || down != DownCharges {
			t.Fatalf("101/s: %+v, host told %q; want 1 drop, 1 disconnect, told %q", st, down, DownCharges)
		}
	})
}

// cutOff sends 3,200 one-hash queries within a second, 100 a millisecond
// so that the answers leave (a full send queue would drop queries for 1
// instead of charging 250), which cuts the host off, and returns the peer.
func cutOff(t *testing.T, h *harness, prof Profile) *Peer {
	t.Helper()
	p := h.addPeer("a", prof)
	for id := range uint64(3200) {
		if err := p.Send(peer.RequestID(id+1), request(int(id), 1)); err != nil {
			t.Fatalf("query %d: %v", id+1, err)
		}
		if id%100 == 99 && id < 3199 {
			h.advance(time.Millisecond)
		}
	}
	if err := p.Send(3201, request(0, 1)); !errors.Is(err, ErrDisconnected) {
		t.Fatalf("the 3,201st query: %v, want ErrDisconnected", err)
	}
	return p
}

// TestRedialsWhileCutOff: a host that redials every 50ms keeps itself shut
// out (each refused redial charges FeeDrop); one that backs off as
// tcpnet's Client does is let back in once the balance has decayed, and
// finds its balance where it was: 640 queries cut it off again at once.
func TestRedialsWhileCutOff(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarnessConfig(t, 1, false, func(c *Config) { c.RedialMin, c.RedialMax = 50*time.Millisecond, 50*time.Millisecond })
		p := cutOff(t, h, Profile{Latency: Fixed(time.Millisecond)})
		h.advance(5 * time.Minute)
		st := p.Stats()
		if p.Connected() || st.Reconnects != 0 {
			t.Fatalf("a host redialling 20 to 40 times a second was let back in: %+v", st)
		}
		if st.Redials < 6000 || st.Resources.Refused != int64(st.Redials) {
			t.Fatalf("%d redials, %d refused; want every one of at least 6,000 refused", st.Redials, st.Resources.Refused)
		}
		recs := h.records()
		if len(recs) == 0 || recs[len(recs)-1].kind != "down" {
			t.Fatalf("the host was not told of the cut: %v", recs[max(len(recs)-3, 0):])
		}
	})
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		p := cutOff(t, h, Profile{Latency: Fixed(time.Millisecond)})
		for range 100 {
			if p.Connected() {
				break
			}
			h.advance(100 * time.Millisecond)
		}
		st := p.Stats()
		if !p.Connected() || st.Reconnects != 1 || st.Redials < 2 || st.Resources.Refused != int64(st.Redials-1) {
			t.Fatalf("a host backing off was not let back in once: %+v", st)
		}
		for id := range uint64(640) {
			if err := p.Send(peer.RequestID(5000+id), request(int(id), 1)); err != nil {
				if errors.Is(err, ErrDisconnected) && id > 0 {
					return // cut again: the balance was kept
				}
				t.Fatal(err)
			}
		}
		t.Fatalf("640 queries after the reconnect did not cut it off: balance not kept? %+v", p.Stats().Resources)
	})
}

// TestBusyPeerDropsQueries: with answers a second away, 192 queries fill
// the send queue and the 193rd is dropped unanswered, charged 1; once the
// answers have left, a query is answered again. Limits off, all are
// answered.
func TestBusyPeerDropsQueries(t *testing.T) {
	for _, off := range []bool{false, true} {
		bubble(t, func(t *testing.T) {
			h := newHarness(t, 1)
			p := h.addPeer("a", Profile{Latency: Fixed(time.Second), LimitsOff: off})
			for id := range uint64(193) {
				h.send(p, id+1, 1)
			}
			h.advance(time.Second)
			recs := h.records()
			want, dropped := 192, 1
			if off {
				want, dropped = 193, 0
			}
			st := p.Stats()
			if len(recs) != want || st.BusyDrops != dropped || st.Requests != 193 {
				t.Fatalf("limits off %v: %d answers, %+v; want %d answers, %d dropped", off, len(recs), st, want, dropped)
			}
			if !off && st.Resources.PeakBalance != (192*250+1)/32 {
				t.Fatalf("peak balance %d, want %d: the dropped query costs 1", st.Resources.PeakBalance, (192*250+1)/32)
			}
			h.send(p, 500, 1)
			h.advance(time.Second)
			if recs := h.records(); len(recs) != 1 || recs[0].id != 500 {
				t.Fatalf("after the queue drained: %v", recs)
			}
		})
	}
}

// TestAnswersTruncated: a query for 12,289 objects is answered with the
// first 12,288.
func TestAnswersTruncated(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		p := h.addPeer("a", Profile{})
		req := request(0, 12_289)
		if err := p.Send(1, req); err != nil {
			t.Fatal(err)
		}
		h.advance(0)
		recs := h.records()
		if len(recs) != 1 {
			t.Fatalf("%d answers", len(recs))
		}
		got := recs[0].msg.(ledger.Objects)
		if len(got.Items) != resource.MaxReplyObjects {
			t.Fatalf("%d objects, want %d", len(got.Items), resource.MaxReplyObjects)
		}
		checkHonest(t, ledger.GetObjects{Hashes: req.Hashes[:resource.MaxReplyObjects]}, got)
		if st := p.Stats(); st.Truncated != 1 || st.Missing != 0 {
			t.Fatalf("stats %+v, want 1 truncated, none missing", st)
		}
	})
}

// TestPeerSpeaksRippled: a Ping is answered with a Pong and charged as a
// query; a frame of a type the peer does not decode is skipped at no
// charge; a reply or a pong sent to it is charged as useless; none is an
// error.
func TestPeerSpeaksRippled(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		p := h.addPeer("a", Profile{Latency: Fixed(time.Millisecond)})
		status, err := wire.AppendChatter(nil, wire.TypeStatusChange, 1)
		if err != nil {
			t.Fatal(err)
		}
		for id, msg := range []any{
			wire.Ping{},
			wire.Frame{Type: wire.TypeStatusChange, Payload: status[wire.HeaderSize:]},
			wire.Frame{Type: 77},
			ledger.Objects{},
			wire.Pong{},
		} {
			if err := p.Send(peer.RequestID(id+1), msg); err != nil {
				t.Fatalf("Send(%T): %v", msg, err)
			}
		}
		h.advance(time.Millisecond)
		recs := h.records()
		if len(recs) != 1 || recs[0].id != 1 || recs[0].msg != (wire.Pong{}) {
			t.Fatalf("got %v, want a pong to 1", recs)
		}
		st := p.Stats()
		if st.Skipped != 2 || st.Useless != 2 || st.Resources.Charges != 3 {
			t.Fatalf("stats %+v: want 2 skipped, 2 useless, 3 charges", st)
		}
		if want := int64(250+2*150) / 32; st.Resources.PeakBalance != want {
			t.Fatalf("balance %d, want %d", st.Resources.PeakBalance, want)
		}
	})
}
