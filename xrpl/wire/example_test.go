package wire_test

import (
	"bytes"
	"fmt"

	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/wire"
)

// A TCP host's two halves: encode a message under the scheduler's request ID,
// and on the other side read a frame with a cap and decode it. Any error from
// ReadFrame or DecodeMessage means: close the connection.
func Example() {
	var conn bytes.Buffer // stands in for a net.Conn

	req := ledger.GetObjects{Hashes: []ledger.Hash{{0xab}, {0xcd}}}
	frame, err := wire.AppendMessage(nil, 1<<24+17, req)
	if err != nil {
		panic(err)
	}
	conn.Write(frame)

	f, err := wire.ReadFrame(&conn, wire.DefaultMaxFrame)
	if err != nil {
		panic(err)
	}
	id, msg, err := wire.DecodeMessage(f, wire.DefaultMaxItems)
	if err != nil {
		panic(err)
	}
	got := msg.(ledger.GetObjects)
	fmt.Println(f.Type, id, len(got.Hashes), got.Hashes[1])
	// Output: GetObjectByHash 16777233 2 cd000000
}
