package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/simnet"
	"github.com/peersched/peersched/xrpl/tcpnet"
)

// network is a set of running peers, wired to a host.
type network interface {
	// events stops injecting faults (-chaos over TCP; simulated outages
	// stop only at close) and returns what happened to each peer so far
	// (see peerEvents.snapshot).
	events() map[string]peerCounts
	// close stops the peers (disconnecting them from the host) and waits
	// for every goroutine they started.
	close()
	// disconnect disconnects the peer named id for good, as the fetch asks
	// of a peer it judged useless (fetch.Config.Disconnect). It returns at
	// once and may be called from the host's callbacks.
	disconnect(id peer.ID)
	// said returns, by peer, what the peers said of us (see peerSaid):
	// the frames of unknown types we skipped, and, for in-process peers
	// (counted true), what their own counters say; external peers'
	// counters are theirs.
	said() (byPeer map[peer.ID]peerSaid, counted bool)
}

// startNetwork starts the peers o describes serving l, wires them to host
// (counting their TCP traffic in meter),
// and waits until they have all connected, so that both strategies start
// from the same place. It returns the roles of in-process peers, by ID.
func startNetwork(ctx context.Context, o options, l *ledger.Ledger, host tcpnet.Host, meter *trafficMeter, warn func(string)) (network, map[peer.ID]role, error) {
	ready := &readyHost{Host: withLimits(host, o), want: o.peers, ready: make(chan struct{}), events: newPeerEvents()}
	var net network
	roles := map[peer.ID]role{}
	switch {
	case o.connect != nil:
		client := tcpnet.NewClient(ready, clientConfig(o, ready.events, meter))
		for _, addr := range o.connect {
			client.Add(peer.ID(addr), addr)
		}
		net = &tcpNetwork{client: client, counts: ready.events}
	case o.transport == "mem":
		peers := demoPeers(o, l.Len())
		sim, err := simnet.New(simnet.Config{
			Ledger:  l,
			Seed:    o.seed,
			Deliver: func(from peer.ID, id peer.RequestID, r any) { _ = host.Deliver(from, id, r) },
			Refuse:  refusalsTo(host),
			OnDisconnect: func(p *simnet.Peer) {
				if o.chaos {
					ready.events.killed(p.ID())
				}
				ready.events.ended(p.ID(), tcpnet.Reason(p.Down()))
				_ = ready.Disconnect(p.ID())
			},
			OnReconnect: func(p *simnet.Peer) {
				if o.chaos {
					ready.events.restarted(p.ID(), nil)
				}
				_ = ready.Connect(p, o.peerChannels())
			},
		})
		if err != nil {
			return nil, nil, err
		}
		for _, dp := range peers {
			roles[dp.id] = dp.role
			p, err := sim.AddPeer(dp.id, dp.profile(o.chaos, o.peers))
			if err == nil {
				err = ready.Connect(p, o.peerChannels())
			}
			if err != nil {
				sim.Close()
				return nil, nil, err
			}
		}
		net = memNetwork{sim: sim, counts: ready.events, host: ready}
	default:
		peers := demoPeers(o, l.Len())
		tn := &tcpNetwork{client: tcpnet.NewClient(ready, clientConfig(o, ready.events, meter)), counts: ready.events}
		for i, dp := range peers {
			roles[dp.id] = dp.role
			s, err := tcpnet.NewServer(tcpnet.ServerConfig{Ledger: l, Behaviour: dp.behaviour(), Seed: o.seed + uint64(i), LimitsOff: dp.limitsOff})
			if err == nil {
				err = s.Listen("127.0.0.1:0")
			}
			if err != nil {
				tn.close()
				return nil, nil, fmt.Errorf("peer %s: %w", dp.id, err)
			}
			tn.servers, tn.serverIDs = append(tn.servers, s), append(tn.serverIDs, dp.id)
			tn.client.Add(dp.id, s.Addr())
		}
		if o.chaos {
			tn.startChaos(o.seed, ready.events)
		}
		net = tn
	}

	t := time.NewTimer(o.wait)
	defer t.Stop()
	select {
	case <-ready.ready:
		return net, roles, nil
	case <-ctx.Done():
		net.close()
		return nil, nil, ctx.Err()
	case <-t.C:
	}
	n := ready.connected()
	if o.connect == nil || n == 0 {
		net.close()
		if o.connect != nil {
			return nil, nil, fmt.Errorf("could not connect to any peer within %v (-wait):\n  %s", o.wait, strings.Join(dialFailures(o.connect, ready.events.everConnected), "\n  "))
		}
		return nil, nil, fmt.Errorf("only %d of %d in-process peers connected within %v", n, o.peers, o.wait)
	}
	warn(fmt.Sprintf("only %d of %d peers connected within %v (-wait); fetching from those. Not connected:\n  %s", n, o.peers, o.wait,
		strings.Join(dialFailures(o.connect, ready.events.everConnected), "\n  ")))
	return net, roles, nil
}

// refusalsTo returns what simnet calls with a peer's refusal: host's
// Refuse, if it takes refusals (both strategies' hosts do, see
// fetch.Refuser), or nil, which makes simulated peers answer empty instead.
// Over TCP there are no refusals to pass on: rippled's TMGetObjectByHash
// has no "busy" status, so a tcpnet server that turns a request away
// answers it empty (see tcpnet.Behaviour.Service).
func refusalsTo(host tcpnet.Host) func(from peer.ID, id peer.RequestID) {
	r, ok := host.(fetch.Refuser)
	if !ok {
		return nil
	}
	return func(from peer.ID, id peer.RequestID) { _ = r.Refuse(from, id) }
}

// readyHost passes everything to its Host, closes ready once want peers
// have connected, and counts every connection and disconnection in events.
type readyHost struct {
	tcpnet.Host
	want   int
	ready  chan struct{}
	events *peerEvents

	mu sync.Mutex
	n  int // guarded by mu
}

func (h *readyHost) Connect(p peer.Peer, channels int) error {
	if err := h.Host.Connect(p, channels); err != nil {
		return err
	}
	h.events.connected(p.ID())
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	if h.n == h.want {
		close(h.ready)
	}
	return nil
}

func (h *readyHost) Disconnect(id peer.ID) error {
	err := h.Host.Disconnect(id)
	if err == nil {
		h.events.disconnected(id)
	}
	return err
}

func (h *readyHost) connected() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

type memNetwork struct {
	sim    *simnet.Network
	counts *peerEvents
	host   tcpnet.Host // the host as the peers see it, to disconnect one
}

func (m memNetwork) events() map[string]peerCounts { return m.counts.snapshot() }
func (m memNetwork) close()                        { m.sim.Close() }

// disconnect takes the simulated peer off the host; simulated peers do not
// redial (only -chaos brings a peer back, after its outage, and a peer that
// cut us off for our charges lets a modelled redial back in).
func (m memNetwork) disconnect(id peer.ID) { _ = m.host.Disconnect(id) }

func (m memNetwork) said() (map[peer.ID]peerSaid, bool) {
	out := map[peer.ID]peerSaid{}
	for _, p := range m.sim.Peers() {
		st := p.Stats()
		out[p.ID()] = peerSaid{Warnings: st.Resources.Warnings, Drops: st.Resources.Drops, RedialsRefused: st.Resources.Refused,
			BalancePeak: st.Resources.PeakBalance, QueriesDropped: st.BusyDrops}
	}
	return withUnknown(out, m.counts), true
}

// tcpNetwork is in-process servers (none with -connect) and the client
// connected to them.
type tcpNetwork struct {
	servers   []*tcpnet.Server
	serverIDs []peer.ID // the peer each server is, by index
	client    *tcpnet.Client
	counts    *peerEvents
	stopChaos chan struct{}
	chaosDone chan struct{}
}

// disconnect closes the peer's connection and stops the client dialling it.
func (n *tcpNetwork) disconnect(id peer.ID) { n.client.Remove(id) }

func (n *tcpNetwork) events() map[string]peerCounts {
	n.stopFaults()
	return n.counts.snapshot()
}

// stopFaults stops the chaos, if any, so that it kills no more peers.
func (n *tcpNetwork) stopFaults() {
	if n.stopChaos != nil {
		close(n.stopChaos)
		<-n.chaosDone
		n.stopChaos = nil
	}
}

func (n *tcpNetwork) said() (map[peer.ID]peerSaid, bool) {
	out := map[peer.ID]peerSaid{}
	for i, s := range n.servers {
		st := s.Stats()
		out[n.serverIDs[i]] = peerSaid{Warnings: st.Resources.Warnings, Drops: st.Resources.Drops, RedialsRefused: st.Resources.Refused,
			BalancePeak: st.Resources.PeakBalance, QueriesDropped: st.BusyDrops}
	}
	return withUnknown(out, n.counts), len(n.servers) > 0
}

func (n *tcpNetwork) close() {
	n.stopFaults()
	n.client.Close()
	for _, s := range n.servers {
		s.Close()
	}
}
