package requests

import (
	"strconv"
	"testing"
	"time"

	"github.com/peersched/peersched/internal/peerpool"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// BenchmarkTableRoundTrip measures a request's life in the table alone (Add,
// Sent, Respond) with inflight requests outstanding, the oldest answered each
// time, with 64-bit handles as IDs and with IDs from a 32-bit range: what
// the range costs (a map insert, delete and lookup per request).
func BenchmarkTableRoundTrip(b *testing.B) {
	for _, c := range []struct {
		name string
		r    receiver.IDRange
	}{{"handles", receiver.IDRange{}}, {"range", receiver.IDRange{Lo: 1 << 24, Hi: 1 << 32}}} {
		for _, inflight := range []int{100, 10_000} {
			b.Run(c.name+"/inflight="+strconv.Itoa(inflight), func(b *testing.B) {
				tab, ref := benchFixture(b, c.r)
				var rec receiver.Receiver = nobody // boxed once, not per Add
				ids := make([]peer.RequestID, inflight)
				for i := range ids {
					ids[i] = tab.Add(rec, ref, 0, time.Hour, Terms{}, nil)
					tab.Sent(ids[i])
				}
				for i := 0; b.Loop(); i++ {
					j := i % inflight
					if _, ended, err := tab.Respond(ids[j], "A", nil); err != nil || !ended {
						b.Fatal(err)
					}
					ids[j] = tab.Add(rec, ref, 0, time.Hour, Terms{}, nil)
					tab.Sent(ids[j])
				}
			})
		}
	}
}

// benchFixture is a table with IDs from r and one registered peer, "A".
func benchFixture(b *testing.B, r receiver.IDRange) (*Table, peerpool.Ref) {
	var pool peerpool.Pool
	var tab Table
	tab.SetIDRange(r)
	ref, err := pool.Connect(nopPeer("A"), "A", 1)
	if err != nil {
		b.Fatal(err)
	}
	tab.Register(ref, "A")
	return &tab, ref
}
