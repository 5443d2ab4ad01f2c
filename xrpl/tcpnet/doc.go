// Package tcpnet carries the fetch protocol over TCP as rippled's peer
// protocol frames it: TMGetObjectByHash queries and replies (see package
// wire), each carrying its request ID in a 32-bit seq, so the scheduler that
// uses a Client must issue IDs from RequestIDs.
//
// The host's side is a Conn: a peer.Peer over one net.Conn. Its Send encodes
// the message and queues it for a writer goroutine, so it never blocks on the
// network (a full queue is an error, not a wait); a reader goroutine hands
// every response to the Host's Deliver. A frame of a type it does not decode
// (rippled sends every peer status changes, manifests, endpoints and more,
// unprompted) is skipped and counted (ConnConfig.Skipped), and a pong it
// sent no ping for is reported as unwanted traffic; neither is fatal. A
// frame that is malformed or oversized, like any read or write error,
// closes the connection and disconnects the peer from the Host; so does a
// peer that, asked something, sends nothing for ConnConfig.AnswerTimeout. Conn.Err names the
// Reason. A Client keeps one Conn per peer address up, dialling again after
// a connection is lost, after a back-off that doubles while the peer keeps
// failing (a failed dial, a connection that ends at once), with seeded
// jitter; ConnConfig.Traffic reports every answer's bytes and whether the
// Host took it, so the fetch can count unwanted bytes against the peer.
//
// The other side is a Server, which serves a ledger to every connection it
// accepts: a *ledger.Ledger in memory, or any Nodes, such as a node store
// on disk, which several servers may share. Its Behaviour can make it slow, lossy, faulty (the faults of
// package simnet, over real sockets), give it a finite capacity shared by
// all its connections (simnet's Service: workers, service times and a
// bounded queue that drops or rejects, with queueing delays in
// ServerStats), or drop all its connections midway and come back, for
// demonstrations and tests. By default it limits its clients as a rippled
// peer does (package resource): it charges each query and ping, cuts a
// client whose balance reaches the drop threshold and refuses its redials
// while it stays there, drops queries when a connection's send queue is
// long, caps replies at resource.MaxReplyObjects objects, skips frames of
// unknown types and charges unsolicited replies and pongs; its replies echo
// their queries' fields as rippled's do (ServerConfig.LimitsOff turns the
// cuts and drops off, to compare). ServerConfig.Chatty makes it interleave
// rippled's unprompted messages with its replies. Its ServerLimits bound what hostile clients can
// make it hold: connections per address and in all, idle connections and
// half-sent frames, replies waiting and being written; an Accept error is
// retried after a back-off.
//
// Everything here runs on real time, since it talks to real sockets (inside
// a testing/synctest bubble, over net.Pipe, that is the bubble's virtual
// time); close what you start (Conn.Close, Client.Close, Server.Close) and no
// goroutine is left behind.
package tcpnet
