package fetch

import (
	"bytes"
	"errors"
	"sync"
	"testing"

	"github.com/peersched/peersched/xrpl/ledger"
)

// recordingStore is a NodeStore in memory that remembers the order of what
// was written to it, and can be made to fail.
type recordingStore struct {
	MemStore
	mu      sync.Mutex
	order   []ledger.Hash // guarded by mu
	batches int           // guarded by mu
	failAt  int           // the Write that fails (1 is the first); 0 never
}

var errDiskFull = errors.New("disk full")

func (s *recordingStore) Write(nodes []Node) error {
	s.mu.Lock()
	s.batches++
	if s.batches == s.failAt {
		s.mu.Unlock()
		return errDiskFull
	}
	for _, n := range nodes {
		s.order = append(s.order, n.Hash)
	}
	s.mu.Unlock()
	return s.MemStore.Write(nodes)
}

// prefix returns a store holding the first n nodes s had written, in their
// order: what a fetch killed after writing them leaves.
func (s *recordingStore) prefix(n int) *recordingStore {
	p := &recordingStore{}
	for _, h := range s.order[:n] {
		data, _ := s.MemStore.Get(h)
		p.Put(h, data)
	}
	return p
}

// fullFetch fetches simLedger into a new recording store.
func fullFetch(t *testing.T) *recordingStore {
	t.Helper()
	st := &recordingStore{}
	cfg := quick
	cfg.Store = st
	o := runSim(t, sim{strategy: "scheduler", peers: honest(3), seed: 1, cfg: cfg})
	mustComplete(t, o, nil)
	return st
}

// TestStoreGetsEveryNodeParentFirst: a fetch writes every node it verifies,
// once, in batches, each after its parent; the store rebuilds the ledger.
func TestStoreGetsEveryNodeParentFirst(t *testing.T) {
	for _, strategy := range []string{"scheduler", "peerset"} {
		t.Run(strategy, func(t *testing.T) {
			st := &recordingStore{}
			cfg := quick
			cfg.Store = st
			o := runSim(t, sim{strategy: strategy, peers: honest(3), seed: 1, cfg: cfg})
			mustComplete(t, o, nil)
			if len(st.order) != simLedger.Len() || st.Len() != simLedger.Len() {
				t.Fatalf("%d writes of %d nodes, ledger has %d", len(st.order), st.Len(), simLedger.Len())
			}
			if st.batches >= len(st.order) {
				t.Errorf("%d batches for %d nodes: not batched", st.batches, len(st.order))
			}
			written := map[ledger.Hash]bool{}
			for _, h := range st.order {
				written[h] = true
				data, _ := st.Get(h)
				n, err := ledger.Decode(data)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range n.Children {
					if written[c] {
						t.Fatalf("child %s written before its parent %s", c, h)
					}
				}
			}
			if root := rebuiltRoot(t, st, simLedger.Root()); root != simLedger.Root() {
				t.Fatal("the store does not rebuild the ledger")
			}
		})
	}
}

// TestResumeAsksOnlyForWhatTheStoreLacks: given what a fetch killed midway
// left in its store (its first writes, at several points), a fetch resumes
// with those nodes, fetches exactly the others, and completes the store.
func TestResumeAsksOnlyForWhatTheStoreLacks(t *testing.T) {
	full := fullFetch(t)
	total := simLedger.Len()
	for _, strategy := range []string{"scheduler", "peerset"} {
		for _, kept := range []int{0, 1, 17, total / 2, total - 1, total} {
			st := full.prefix(kept)
			cfg := quick
			cfg.Store = st
			o := runSim(t, sim{strategy: strategy, peers: honest(3), seed: 2, cfg: cfg})
			if o.err != nil || !o.rep.Complete {
				t.Fatalf("%s, %d kept: %v, %+v", strategy, kept, o.err, o.rep)
			}
			if o.rep.Resumed != kept || o.rep.Objects != total-kept || o.rep.Known != total-kept {
				t.Fatalf("%s, %d kept: resumed %d, fetched %d of %d known; want %d resumed, %d fetched",
					strategy, kept, o.rep.Resumed, o.rep.Objects, o.rep.Known, kept, total-kept)
			}
			held := full.prefix(kept)
			for _, h := range st.order {
				if _, ok := held.Get(h); ok {
					t.Fatalf("%s, %d kept: wrote %s again, which the store held", strategy, kept, h)
				}
			}
			if len(st.order) != total-kept || st.Len() != total {
				t.Fatalf("%s, %d kept: wrote %d, store holds %d of %d", strategy, kept, len(st.order), st.Len(), total)
			}
		}
	}
}

// TestDamagedStoredNodeIsFetchedAgain: a stored value that is not its
// node, as a crash mid-write or a damaged disk leaves it, counts as absent:
// the fetch asks for it again and stores it whole.
func TestDamagedStoredNodeIsFetchedAgain(t *testing.T) {
	full := fullFetch(t)
	const kept = 40
	last := full.order[kept-1] // the write a crash interrupted
	good, _ := full.Get(last)
	other, _ := full.Get(full.order[0])
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0x10
	for _, c := range []struct {
		name  string
		value []byte
	}{
		{"half written", good[:len(good)/2]},
		{"empty", []byte{}},
		{"a bit flipped", flipped},
		{"another node", other},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := full.prefix(kept)
			st.Put(last, c.value)
			cfg := quick
			cfg.Store = st
			o := runSim(t, sim{strategy: "scheduler", peers: honest(3), seed: 3, cfg: cfg})
			if o.err != nil || !o.rep.Complete {
				t.Fatalf("%v, %+v", o.err, o.rep)
			}
			if o.rep.Resumed != kept-1 || o.rep.Objects != simLedger.Len()-kept+1 {
				t.Fatalf("resumed %d, fetched %d; want %d and %d", o.rep.Resumed, o.rep.Objects, kept-1, simLedger.Len()-kept+1)
			}
			if data, _ := st.Get(last); !bytes.Equal(data, good) {
				t.Fatal("the damaged node was not stored again whole")
			}
		})
	}
}

// TestStoreFailureEndsTheFetch: a Write that fails ends the fetch with its
// error; the writer's goroutine is gone when Run returns (goleak).
func TestStoreFailureEndsTheFetch(t *testing.T) {
	st := &recordingStore{failAt: 2}
	cfg := quick
	cfg.Store = st
	o := runSim(t, sim{strategy: "scheduler", peers: honest(3), seed: 1, cfg: cfg})
	if !errors.Is(o.err, errDiskFull) || o.rep.Complete {
		t.Fatalf("err %v, complete %v", o.err, o.rep.Complete)
	}
}
