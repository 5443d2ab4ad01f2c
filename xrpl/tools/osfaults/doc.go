// Package osfaults is a test harness, built only with -tags osfaults, that
// runs ledgerpeer and ledgerfetch as separate processes and injects faults
// through the operating system rather than through our code:
//
//   - each ledgerpeer runs in a network namespace of its own, joined to the
//     fetch's namespace by a veth pair shaped by tc: netem latency, jitter,
//     loss and a rate where the kernel has netem; where it has not, a tbf
//     rate limit, with the latency and jitter added by the peers themselves
//     (ledgerpeer -latency -jitter), as the test's log says;
//   - a hung peer is SIGSTOPped for a few seconds, then SIGCONTed;
//   - a crashed peer is SIGKILLed (frozen first until it holds an unread
//     request, so that the crash loses one) and started again on the same
//     address;
//   - a cut link drops every packet (netem loss 100%, or the link set down
//     where the kernel lacks netem) for a few seconds, then carries them again.
//
// Each fetch must complete and verify, and its JSON report's counters must
// show the fault: timeouts for a hung peer or a cut link, with no
// disconnection; a disconnection for a crashed peer, which the fetch then
// dials again.
//
// It needs root, ip and tc (it tries apt-get install iproute2 when they are
// missing) and skips with the reason otherwise:
//
//	go test -tags osfaults -count=1 -v ./xrpl/tools/osfaults/
//
// The namespaces are all its own (named osfaults-<pid>-...), the addresses
// live only on their private links, and it removes every namespace and
// process it made, even when a test fails; namespaces left by a run that was
// killed are removed by the next run.
package osfaults
