// Package libp2pnet runs the peersched scheduler over go-libp2p: the fetch
// protocol of package xrpl/fetch carried on libp2p streams, so that the
// scheduler's peer.Peer contract meets a peer-to-peer stack we did not
// design.
//
// A Client opens one stream of Protocol to each peer it is given and wraps
// it in a Conn, the peer.Peer the scheduler sees. A Conn's Send encodes the
// message in rippled's framing (package xrpl/wire) and queues it for the
// stream's writer goroutine: it never waits for the network, and a full
// queue refuses the send with ErrQueueFull. The stream's reader goroutine
// hands every response to the scheduler's Deliver. A Conn ends when it is
// closed, when its stream fails, or when libp2p's connection notifications
// (network.Notifiee's Disconnected) say that the connection under its
// stream closed; whichever comes first, the scheduler hears Disconnect
// once. A Server
// answers the queries on the streams a libp2p host accepts, from a ledger.
//
// The package is an example and lives in a module of its own
// (examples/libp2p), so that neither the library nor the XRP Ledger
// application depends on go-libp2p. NOTES.md beside it records what the
// peer.Peer contract made awkward here.
//
// Everything here runs on real time: libp2p's streams and timers are its
// own. Close what you start (Client.Close, Server.Close, and the libp2p
// hosts) and no goroutine of this package is left behind.
package libp2pnet
