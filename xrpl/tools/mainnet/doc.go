// Package mainnet is a test harness for a fetch at the XRP Ledger
// mainnet's scale: ledgerpeer and ledgerfetch as separate processes, the
// peers serving from a node store on disk, one process for all of them
// (ledgerpeer -store -listen HOST:A-B). TestStorePeers builds the store,
// restarts the peers on it, fetches the whole ledger once, then fetches it
// again into a store of its own, kills that fetch with SIGKILL about half
// way and runs it again. It checks what the issue promises at every size:
//
//   - the peers' store is built once (streamed in: no tree in memory) and
//     reused when they restart;
//   - every fetch completes and verifies every node;
//   - the resumed run resumes exactly the nodes the killed one stored and
//     fetches exactly the others (resumed + fetched = the ledger's nodes),
//     and the peers' own counters of objects sent agree with the fetch's;
//   - peak RSS (the kernel's, from wait4): the peers' process at most 500
//     MB while it builds and 300 MB while it only serves, the fetcher at
//     most 300 MB;
//
// and logs the times, rates, peak RSS and CPU time (wait4's) of each
// step, the CPU also a node: the fetcher's per node fetched, the peers'
// per node sent. CI runs it at
// 200,000 entries (it skips under -race, where the processes are not
// raced anyway, and with -short):
//
//	go test -count=1 -run TestStorePeers -v ./xrpl/tools/mainnet/
//
// At mainnet's size (19 million entries, about 26 million nodes) it takes
// tens of minutes on a small machine:
//
//	MAINNET_OBJECTS=19000000 nice go test -count=1 -timeout 3h -run TestStorePeers -v ./xrpl/tools/mainnet/
//
// MAINNET_PEERS sets the number of peers (16 by default), and MAINNET_DIR
// a directory to keep the peers' store in between runs (a temporary one
// by default): a second run with the same count reuses it.
package mainnet
