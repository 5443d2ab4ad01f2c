package tcpnet_test

import (
	"context"
	"fmt"
	"time"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/tcpnet"
)

// Serve a ledger from two TCP servers on loopback and fetch it through a
// scheduler: the Client dials each server, connects a Conn per peer to the
// scheduler, and hands every response to its Deliver. The scheduler issues
// request IDs that fit TMGetObjectByHash's 32-bit seq.
func Example() {
	l, _ := ledger.Generate(1, 2000)
	var addrs []string
	for i := range 2 {
		srv, _ := tcpnet.NewServer(tcpnet.ServerConfig{Ledger: l, Seed: uint64(i)})
		if err := srv.Listen("127.0.0.1:0"); err != nil {
			fmt.Println(err)
			return
		}
		defer srv.Close()
		addrs = append(addrs, srv.Addr())
	}

	s, _ := scheduler.New(scheduler.Config{RequestIDs: tcpnet.RequestIDs()})
	defer s.Shutdown(context.Background())
	client := tcpnet.NewClient(s, tcpnet.ClientConfig{Channels: 4})
	defer client.Close() // first: its connections disconnect from s before s stops
	for i, addr := range addrs {
		client.Add(peer.ID(fmt.Sprintf("server-%d", i)), addr)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := fetch.Run(ctx, s, fetch.Config{Root: l.Root(), Expected: l.Len()})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("complete:", rep.Complete, "every object:", rep.Objects == l.Len())
	// Output: complete: true every object: true
}
