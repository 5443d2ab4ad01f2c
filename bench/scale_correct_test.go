package bench

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The harnesses of BenchmarkPeers, BenchmarkOffer, BenchmarkDisconnect and
// BenchmarkTimeoutFire do the work they are timed on.

func TestPeersHarnessKeepsItsRequestsOutstanding(t *testing.T) {
	sys, err := newPeersSystem(1000)
	require.NoError(t, err)
	defer sys.close()
	for range 5000 {
		require.NoError(t, sys.step())
	}
	require.NoError(t, sys.err())
	st := sys.s.Stats()
	require.Equal(t, peersInflight, st.RequestsInFlight)
	require.Equal(t, uint64(5000), st.Succeeded)
	require.Zero(t, st.ChannelsOpen, "every channel carries a request")
}

func TestOfferHarnessKeepsItsSendersWaiting(t *testing.T) {
	const senders = 100
	sys, err := newOfferSystem(senders, 0)
	require.NoError(t, err)
	defer sys.close()
	for range 5000 {
		require.NoError(t, sys.step())
	}
	require.NoError(t, sys.err())
	st := sys.s.Stats()
	require.Equal(t, senders, st.SendersWaiting)
	require.Equal(t, offerInflight, st.RequestsInFlight)
	require.Equal(t, uint64(5000), st.Succeeded)
}

// The decliners of BenchmarkOffer's declining cases wait throughout, each
// offered channels once before the timing starts, and every op serves the
// one sender that sends.
func TestOfferHarnessKeepsItsDeclinersWaiting(t *testing.T) {
	const declining = 50
	sys, err := newOfferSystem(0, declining)
	require.NoError(t, err)
	defer sys.close()
	require.Equal(t, int64(declining), sys.declined.Load(), "each decliner declined once while the harness was built")
	for range 500 {
		require.NoError(t, sys.step())
	}
	require.NoError(t, sys.err())
	st := sys.s.Stats()
	require.Equal(t, declining, st.SendersWaiting)
	require.Equal(t, offerInflight, st.RequestsInFlight)
	require.Equal(t, uint64(501), st.Succeeded)
}

type noTimer struct{}

func (noTimer) StopTimer()  {}
func (noTimer) StartTimer() {}

func TestDisconnectHarnessFailsOnlyTheVictimsRequests(t *testing.T) {
	const pending, victims = 1000, 2*victimBatch + 1
	d, err := newDisconnectSystem(pending)
	require.NoError(t, err)
	defer d.close()
	for range victims {
		require.NoError(t, d.disconnectOne(noTimer{}))
	}
	require.NoError(t, d.err())
	st := d.s.Stats()
	require.Equal(t, uint64(victims*victimChannels), st.Disconnected)
	stillConnected := victimBatch - 1 // of the third batch, one was disconnected
	require.Equal(t, pending+stillConnected*victimChannels, st.RequestsInFlight)
	require.Equal(t, lifecyclePeers+stillConnected, st.Peers)
	require.Zero(t, st.ChannelsOpen)
}

func TestTimeoutHarnessExpiresAndReplaces(t *testing.T) {
	const inflight = 1000
	ts, err := newTimeoutSystem(inflight)
	require.NoError(t, err)
	defer ts.close()
	for range 5000 {
		ts.expireOne()
	}
	require.NoError(t, ts.err())
	st := ts.s.Stats()
	require.GreaterOrEqual(t, st.TimedOut, uint64(5000))
	require.Equal(t, st.TimedOut, ts.rcv.timeouts.Load())
	require.Equal(t, inflight, st.RequestsInFlight, "each timeout was replaced")
	require.Zero(t, st.Succeeded)
}
