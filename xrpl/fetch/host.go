package fetch

import (
	"github.com/peersched/peersched/peer"
)

// Host is what a transport needs from whoever consumes its peers: the
// connections it brings up and tears down, and the responses it reads.
// *scheduler.Scheduler is a Host, and so are *Peerset and *Rippled.
//
// A transport whose wire can say "busy" (a peer turning a request away
// rather than answering it) hands that to a Host that is also a Refuser;
// to any other Host it hands what the wire carried, as a response.
type Host interface {
	Connect(p peer.Peer, channels int) error
	Disconnect(id peer.ID) error
	Deliver(from peer.ID, id peer.RequestID, response any) error
}

// Refuser is a Host that can be told that a peer refused request id: it
// would not serve it, being overloaded. The refusal is the request's one
// answer, checked as Deliver checks a response (same errors); the request
// fails, its objects are asked again, of another peer if one can take them,
// and the Report counts it in Refused, not in Timeouts. *scheduler.Scheduler
// and *Peerset are Refusers.
//
// It is a separate interface, found with a type assertion, so that Hosts
// written before it (wrappers around a scheduler, hosts of other
// transports) still compile and still serve; a wrapper passes it on by
// implementing it too.
type Refuser interface {
	Refuse(from peer.ID, id peer.RequestID) error
}
