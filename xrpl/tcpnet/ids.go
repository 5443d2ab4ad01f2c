package tcpnet

import "github.com/peersched/peersched/receiver"

// requestIDsFrom is the first ID of RequestIDs.
const requestIDsFrom = 1 << 24

// RequestIDs returns the range of request IDs a scheduler using this
// transport must issue (scheduler.Config.RequestIDs): [2^24, 2^32).
// TMGetObjectByHash carries the ID in its uint32 seq, and rippled keeps low
// values of such fields for its own uses. A Conn refuses to send an ID
// above 32 bits (wire.ErrIDRange).
func RequestIDs() receiver.IDRange {
	return receiver.IDRange{Lo: requestIDsFrom, Hi: 1 << 32}
}
