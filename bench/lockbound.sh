#!/bin/sh
# lockbound.sh measures what the scheduler's locks cost on its inline path,
# and how much of a request's work the offers lock serialises (issue 27,
# fourth round in BENCHMARKS.md). It runs on a scratch copy of the committed
# tree in which internal/lockorder's unchecked Mutex can be switched off
# (Lock and Unlock do nothing) and can time how long one named lock is held.
# That copy is for this measurement alone: with the switch off the
# scheduler is safe on one goroutine only, which is what the inline
# benchmarks are.
#
#   sh bench/lockbound.sh [count]
#
# count is how many rounds each benchmark runs (default 3). It prints, per
# round, floor, naive and the inline scheduler with its locks and without
# them, at 100 and 1,000,000 in flight and in BenchmarkPipelined's shape;
# then the time each lock is held per request, with the probe's own cost
# (an empty Lock and Unlock) measured beside it.
set -eu
count=${1:-3}
repo=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git -C "$repo" archive HEAD | tar -x -C "$work"

cat > "$work/internal/lockorder/lockorder_off.go" <<'EOF'
//go:build !lockorder

package lockorder

import (
	"sync"
	"time"
)

const Enabled = false

// Off makes Lock and Unlock do nothing. Probe times how long each Mutex
// named ProbeName is held, adding to Held and Holds.
var (
	Off       bool
	Probe     bool
	ProbeName string
	Held      time.Duration
	Holds     int64
	epoch     = time.Now()
)

type Mutex struct {
	mu    sync.Mutex
	name  string
	since time.Duration
}

func (m *Mutex) Init(name string, rank Rank) { m.name = name }

func (m *Mutex) Lock() {
	if !Off {
		m.mu.Lock()
	}
	if Probe && m.name == ProbeName {
		m.since = time.Since(epoch)
	}
}

func (m *Mutex) Unlock() {
	if Probe && m.name == ProbeName {
		Held += time.Since(epoch) - m.since
		Holds++
	}
	if !Off {
		m.mu.Unlock()
	}
}

func (m *Mutex) AssertHeld() {}
EOF

cat > "$work/bench/lockbound_test.go" <<'EOF'
package bench

import (
	"fmt"
	"testing"

	"github.com/peersched/peersched/internal/lockorder"
)

func BenchmarkLockBound(b *testing.B) {
	for _, inflight := range []int{100, 1_000_000} {
		for _, impl := range []string{"floor", "naive"} {
			b.Run(fmt.Sprintf("inflight=%d/impl=%s", inflight, impl), func(b *testing.B) {
				fs, err := fillSystem(impl, inflight, false)
				if err != nil {
					b.Fatal(err)
				}
				defer fs.close()
				timeSteps(b, fs)
			})
		}
		for _, off := range []bool{false, true} {
			b.Run(fmt.Sprintf("inflight=%d/impl=scheduler-inline/locksoff=%v", inflight, off), func(b *testing.B) {
				fs, err := fillSystem("scheduler-inline", inflight, false)
				if err != nil {
					b.Fatal(err)
				}
				defer fs.close()
				lockorder.Off = off
				defer func() { lockorder.Off = false }()
				timeSteps(b, fs)
			})
		}
	}
	b.Run("pipelined/impl=naive", func(b *testing.B) {
		p, err := newPipeline("naive", pipelinedInflight)
		if err != nil {
			b.Fatal(err)
		}
		defer p.close()
		b.ResetTimer()
		if err := p.run(b.N); err != nil {
			b.Fatal(err)
		}
	})
	for _, off := range []bool{false, true} {
		b.Run(fmt.Sprintf("pipelined/impl=scheduler-inline/locksoff=%v", off), func(b *testing.B) {
			p, err := newPipeline("scheduler-inline", pipelinedInflight)
			if err != nil {
				b.Fatal(err)
			}
			defer p.close()
			lockorder.Off = off
			defer func() { lockorder.Off = false }()
			b.ResetTimer()
			if err := p.run(b.N); err != nil {
				b.Fatal(err)
			}
		})
	}
}

func TestLockBoundHeld(t *testing.T) {
	const steps = 2_000_000
	var probe lockorder.Mutex
	probe.Init("probe", 0)
	for _, name := range []string{"probe", "offers", "requests", "callbacks"} {
		fs, err := fillSystem("scheduler-inline", 100, false)
		if err != nil {
			t.Fatal(err)
		}
		lockorder.Off, lockorder.Probe, lockorder.ProbeName = true, true, name
		lockorder.Held, lockorder.Holds = 0, 0
		for range steps {
			if name == "probe" {
				probe.Lock()
				probe.Unlock()
			}
			if err := fs.step(); err != nil {
				t.Fatal(err)
			}
		}
		lockorder.Off, lockorder.Probe = false, false
		fs.close()
		fmt.Printf("held %-9s %.0f times a request, %.1f ns a request\n", name,
			float64(lockorder.Holds)/steps, float64(lockorder.Held.Nanoseconds())/steps)
	}
}
EOF

cd "$work"
echo "# nproc $(nproc); $(uptime)"
go test -count=1 -run '^TestLockBoundHeld$' -v ./bench | grep '^held'
go test -run '^$' -bench '^BenchmarkLockBound$' -benchtime 1s -count "$count" ./bench | grep '^Benchmark'
echo "# $(uptime)"
