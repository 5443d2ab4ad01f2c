package tcpnet

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/simnet"
	"github.com/peersched/peersched/xrpl/wire"
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
			c.check(t, c.b.plan(nil, rand.New(rand.NewPCG(1, 2)), testLedger, nil, time.Time{}, 1<<24+5, req, new(bool)))
		})
	}
	if err := (&Behaviour{Faults: simnet.FaultRates{simnet.Late: 0.7, simnet.Corrupt: 0.7}}).validate(); err == nil {
		t.Error("fault rates adding up to 1.4 were accepted")
	}
	if neighbour(1<<24) != 1<<24+1 || neighbour(1<<24+7) != 1<<24+6 {
		t.Error("neighbour")
	}
}

// TestPlanService: with a Service, each reply waits for its request's
// service (its wire size counting at BytesPerSecond) before its latency,
// every admitted request takes a worker (even one the server ignores), and a
// rejection waits for the latency alone.
func TestPlanService(t *testing.T) {
	req := ledger.GetObjects{Hashes: []ledger.Hash{testLedger.Root()}}
	const id = 1<<24 + 5
	const lat = 10 * time.Millisecond
	svc := simnet.Service{Workers: 1, PerRequest: time.Millisecond, PerObject: time.Millisecond, BytesPerSecond: 1000, QueueLimit: 2, Overflow: simnet.OverflowReject}
	service := svc.Time(1, wire.MessageSize(id, testLedger.Answer(req)))
	if service <= 2*time.Millisecond {
		t.Fatalf("service time %v does not count the answer's size", service)
	}
	now := time.Unix(1000, 0)
	q := newServiceQueue(svc)
	r := rand.New(rand.NewPCG(1, 2))
	plan := func(b Behaviour) []reply {
		b.Latency, b.Service = simnet.Fixed(lat), svc
		return b.plan(nil, r, testLedger, q, now, id, req, new(bool))
	}
	delays := func(rs []reply) []time.Duration {
		var ds []time.Duration
		for _, r := range rs {
			ds = append(ds, r.delay)
		}
		return ds
	}
	if got := delays(plan(Behaviour{})); !slices.Equal(got, []time.Duration{service + lat}) {
		t.Errorf("first request: %v", got)
	}
	if got := plan(Behaviour{Faults: simnet.FaultRates{simnet.Ignore: 1}}); len(got) != 0 {
		t.Errorf("ignored request answered: %+v", got)
	}
	if got := delays(plan(Behaviour{Faults: simnet.FaultRates{simnet.Duplicate: 1}})); !slices.Equal(got, []time.Duration{3*service + lat, 3*service + 2*lat}) {
		t.Errorf("third request, duplicated, behind the first two: %v", got)
	}
	rejected := plan(Behaviour{})
	if len(rejected) != 1 || rejected[0].delay != lat || len(rejected[0].msg.(ledger.Objects).Items) != 0 {
		t.Errorf("fourth request, two waiting: %+v, want an empty reply after the latency", rejected)
	}
	var st ServerStats
	q.copyStats(&st)
	if st.Served != 3 || st.Overflowed != 1 || st.MaxQueueDelay != 2*service {
		t.Errorf("stats %+v", st)
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
