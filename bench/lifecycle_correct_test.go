package bench

import (
	"sync"
	"testing"

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
