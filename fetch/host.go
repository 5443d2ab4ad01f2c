package fetch

import (
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// Host is what a transport needs from whoever consumes its peers: the
// connections it brings up and tears down, and the responses it reads.
// *scheduler.Scheduler is a Host, and so is *Peerset.
type Host interface {
	Connect(p peer.Peer, channels int) error
	Disconnect(id peer.ID) error
	Deliver(from peer.ID, id receiver.RequestID, response any) error
}
