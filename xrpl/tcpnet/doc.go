// Package tcpnet carries the fetch protocol over TCP as rippled's peer
// protocol frames it: TMGetObjectByHash queries and replies (see package
// wire), each carrying its request ID in a 32-bit seq, so the scheduler that
// uses a Client must issue IDs from RequestIDs.
//
// The host's side is a Conn: a peer.Peer over one net.Conn. Its Send encodes
// the message and queues it for a writer goroutine, so it never blocks on the
// network (a full queue is an error, not a wait); a reader goroutine hands
// every response to the Host's Deliver. A frame that is malformed, oversized
// or of an unknown type, like any read or write error, closes the connection
// and disconnects the peer from the Host; so does a peer that, asked
// something, sends nothing for ConnConfig.AnswerTimeout. Conn.Err names the
// Reason. A Client keeps one Conn per peer address up, dialling again after
// a connection is lost, after a back-off that doubles while the peer keeps
// failing (a failed dial, a connection that ends at once), with seeded
// jitter; ConnConfig.Traffic reports every answer's bytes and whether the
// Host took it, so the fetch can count unwanted bytes against the peer.
//
// The other side is a Server, which serves a ledger to every connection it
// accepts. Its Behaviour can make it slow, lossy, faulty (the faults of
// package simnet, over real sockets), give it a finite capacity shared by
// all its connections (simnet's Service: workers, service times and a
// bounded queue that drops or rejects, with queueing delays in
// ServerStats), or drop all its connections midway and come back, for
// demonstrations and tests. Its ServerLimits bound what hostile clients can
// make it hold: connections per address and in all, idle connections and
// half-sent frames, replies waiting and being written; an Accept error is
// retried after a back-off.
//
// Everything here runs on real time, since it talks to real sockets (inside
// a testing/synctest bubble, over net.Pipe, that is the bubble's virtual
// time); close what you start (Conn.Close, Client.Close, Server.Close) and no
// goroutine is left behind.
package tcpnet
