package bench

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A benchmark must not measure broken code: each implementation answers
// exactly the requests it sends, keeps the number outstanding constant, and
// sees no error, serially and with two goroutines stepping at once.
func TestEachImplementationAnswersExactlyWhatItSends(t *testing.T) {
	const inflight, steps = 100, 1000
	for _, impl := range impls {
		for _, shared := range []bool{false, true} {
			name := impl + "/serial"
			if shared {
				name = impl + "/parallel"
			}
			t.Run(name, func(t *testing.T) {
				sys, err := buildSystem(impl, inflight, shared)
				require.NoError(t, err)
				defer sys.close()
				require.NoError(t, sys.fill(inflight))
				require.Equal(t, inflight, sys.outstanding())
				require.Zero(t, sys.answered())

				if shared {
					var wg sync.WaitGroup
					errs := make(chan error, 2)
					for range 2 {
						wg.Go(func() {
							for range steps / 2 {
								if err := stepShared(sys); err != nil {
									errs <- err
									return
								}
							}
						})
					}
					wg.Wait()
					close(errs)
					for err := range errs {
						require.NoError(t, err)
					}
				} else {
					for range steps {
						require.NoError(t, sys.step())
					}
				}
				// With callbacks on the scheduler's goroutine, the last
				// responses may still be in its hands: let it catch up.
				// A request is outstanding from the moment it is in the
				// table, but counted as sent only once the host's Send has
				// returned: wait for both.
				caughtUp(t, func() bool {
					if sys.answered() != steps || sys.outstanding() != inflight {
						return false
					}
					if s, ok := sys.(*schedSystem); ok {
						st := s.s.Stats()
						return st.Sent == uint64(inflight+steps) && st.SendersWaiting == 0
					}
					return true
				})
				require.NoError(t, sys.err())
				require.Equal(t, uint64(steps), sys.answered())
				require.Equal(t, inflight, sys.outstanding())

				if s, ok := sys.(*schedSystem); ok {
					st := s.s.Stats()
					require.Equal(t, uint64(inflight+steps), st.Sent)
					require.Equal(t, uint64(steps), st.Succeeded)
					require.Zero(t, st.ChannelsOpen, "every channel carries a request")
					require.Zero(t, st.SendersWaiting)
					require.Zero(t, s.rcv.failures.Load())
				}
			})
		}
	}
}

// caughtUp yields until done reports true, failing the test if that takes a
// whole minute of wall time (a scheduler that lost work never catches up).
func caughtUp(t *testing.T, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatal("the system did not catch up")
		}
		runtime.Gosched()
	}
}

// BenchmarkPipelined must not measure broken code either: its read loop
// answers exactly the responses it asks for, every receiver's replacement is
// sent, and nothing fails.
func TestPipelinedAnswersExactlyWhatItSends(t *testing.T) {
	const inflight, answers = 100, 5000
	for _, impl := range pipelinedImpls {
		t.Run(impl, func(t *testing.T) {
			p, err := newPipeline(impl, inflight)
			require.NoError(t, err)
			defer p.close()
			require.Equal(t, inflight, p.outstanding())
			for _, n := range []int{1, answers - 1} {
				require.NoError(t, p.run(n))
			}
			require.Equal(t, uint64(answers), p.answered())
			require.Equal(t, inflight, p.outstanding())
			require.Equal(t, inflight, p.wire.n, "every replacement is on the wire")
			require.GreaterOrEqual(t, p.meanBatch(), 1.0)
			if s, ok := p.system.(*schedSystem); ok {
				caughtUp(t, func() bool { return s.s.Stats().SendersWaiting == 0 })
				st := s.s.Stats()
				require.Equal(t, uint64(inflight+answers), st.Sent)
				require.Equal(t, uint64(answers), st.Succeeded)
				require.Zero(t, st.ChannelsOpen, "every channel carries a request")
				require.Zero(t, s.rcv.failures.Load())
			}
		})
	}
}
