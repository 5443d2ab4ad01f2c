package tcpnet

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/peersched/peersched/ledger"
	"github.com/peersched/peersched/simnet"
	"github.com/peersched/peersched/wire"
)

// TestPlanEachFault: each fault, at probability 1, changes the replies as
// documented.
func TestPlanEachFault(t *testing.T) {
	var hashes []ledger.Hash
	for h := range testLedger.Hashes() {
		hashes = append(hashes, h)
		if len(hashes) == 4 {
			break
		}
	}
	req := ledger.GetObjects{Hashes: hashes}
	const lat = 10 * time.Millisecond
	honest := func(t *testing.T, msg any) {
		t.Helper()
		resp, ok := msg.(ledger.Objects)
		if !ok || len(resp.Items) != len(hashes) {
			t.Fatalf("reply %T %+v", msg, msg)
		}
		for i, it := range resp.Items {
			if it.Hash != hashes[i] || !ledger.Verify(it.Hash, it.Data) {
				t.Fatalf("item %d not honest", i)
			}
		}
	}
	for _, c := range []struct {
		name  string
		b     Behaviour
		check func(t *testing.T, rs []reply)
	}{
		{"honest", Behaviour{Latency: simnet.Fixed(lat)}, func(t *testing.T, rs []reply) {
			if len(rs) != 1 || rs[0].delay != lat || rs[0].id != 1<<24+5 {
				t.Fatalf("%+v", rs)
			}
			honest(t, rs[0].msg)
		}},
		{"loss", Behaviour{Loss: 1}, func(t *testing.T, rs []reply) {
			if len(rs) != 0 {
				t.Fatalf("%+v", rs)
			}
		}},
		{"missing", Behaviour{Missing: 1}, func(t *testing.T, rs []reply) {
			if items := rs[0].msg.(ledger.Objects).Items; len(items) != 0 {
				t.Fatalf("%+v, want every object left out", items)
			}
		}},
		{"ignore", Behaviour{Faults: simnet.FaultRates{simnet.Ignore: 1}}, func(t *testing.T, rs []reply) {
			if len(rs) != 0 {
				t.Fatalf("%+v", rs)
			}
		}},
		{"wrong id", Behaviour{Faults: simnet.FaultRates{simnet.WrongID: 1}}, func(t *testing.T, rs []reply) {
			if len(rs) != 1 || rs[0].id != 1<<24+4 {
				t.Fatalf("%+v", rs)
			}
		}},
		{"unknown id", Behaviour{Faults: simnet.FaultRates{simnet.UnknownID: 1}}, func(t *testing.T, rs []reply) {
			if len(rs) != 1 || rs[0].id == 0 || RequestIDs().Lo <= rs[0].id {
				t.Fatalf("%+v, want an ID below the range", rs)
			}
		}},
		{"wrong type", Behaviour{Faults: simnet.FaultRates{simnet.WrongType: 1}}, func(t *testing.T, rs []reply) {
			if _, ok := rs[0].msg.(ledger.GetObjects); len(rs) != 1 || !ok {
				t.Fatalf("%+v", rs)
			}
		}},
		{"late", Behaviour{Latency: simnet.Fixed(lat), LateBy: time.Second, Faults: simnet.FaultRates{simnet.Late: 1}}, func(t *testing.T, rs []reply) {
			if len(rs) != 1 || rs[0].delay != lat+time.Second {
				t.Fatalf("%+v", rs)
			}
		}},
		{"duplicate", Behaviour{Latency: simnet.Fixed(lat), Faults: simnet.FaultRates{simnet.Duplicate: 1}}, func(t *testing.T, rs []reply) {
			if len(rs) != 2 || rs[0].id != rs[1].id || rs[1].delay != 2*lat {
				t.Fatalf("%+v", rs)
			}
			honest(t, rs[0].msg)
			honest(t, rs[1].msg)
		}},
		{"corrupt", Behaviour{Faults: simnet.FaultRates{simnet.Corrupt: 1}}, func(t *testing.T, rs []reply) {
			bad := 0
			for _, it := range rs[0].msg.(ledger.Objects).Items {
				if !ledger.Verify(it.Hash, it.Data) {
					bad++
				}
			}
			if bad != 1 {
				t.Fatalf("%d corrupt items, want 1", bad)
			}
			honest(t, testLedger.Answer(req)) // the ledger's own bytes are untouched
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.b.validate(); err != nil {
				t.Fatal(err)
			}
			c.check(t, c.b.plan(nil, rand.New(rand.NewPCG(1, 2)), testLedger, 1<<24+5, req))
		})
	}
	if err := (&Behaviour{Faults: simnet.FaultRates{simnet.Late: 0.7, simnet.Corrupt: 0.7}}).validate(); err == nil {
		t.Error("fault rates adding up to 1.4 were accepted")
	}
	if neighbour(1<<24) != 1<<24+1 || neighbour(1<<24+7) != 1<<24+6 {
		t.Error("neighbour")
	}
}

// TestFitReply: a reply is cut where its encoding would pass the cap, so
// what remains fits; one that fits is left whole.
func TestFitReply(t *testing.T) {
	big := make([]byte, 1000)
	var resp ledger.Objects
	for i := range 10 {
		resp.Items = append(resp.Items, ledger.Object{Hash: ledger.Hash{byte(i)}, Data: big})
	}
	kept := map[int]int{}
	for _, max := range []int{100, 1100, 5000, 20_000} {
		got := fitReply(ledger.Objects{Items: append([]ledger.Object(nil), resp.Items...)}, max)
		if size := wire.MessageSize(1<<32-1, got) - wire.HeaderSize; size > max {
			t.Errorf("cap %d: %d objects take %d bytes", max, len(got.Items), size)
		}
		kept[max] = len(got.Items)
	}
	if kept[100] != 0 || kept[1100] != 1 || kept[5000] < 4 || kept[20_000] != 10 {
		t.Errorf("objects kept by cap: %v", kept)
	}
}
