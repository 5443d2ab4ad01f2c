// Package resource keeps the accounts a rippled peer keeps of what each
// remote endpoint costs it, so that the peers this application runs (simnet's,
// tcpnet's server, ledgerpeer, the overlay's nodes) push back on a client
// exactly as a real rippled peer would, never more gently.
//
// Every message a peer receives charges its sender a Fee. The fees add up in a
// decaying Sample: each whole second the sum loses ⌈sum/32⌉, rounded up in
// integer arithmetic, and a gap of more than four windows (128 s) empties it.
// The sender's balance is the sum divided by the window, so in the steady
// state it is about the fee units charged per second. A balance of
// WarningThreshold (5,000) draws a warning, which the peer counts and the
// sender is never told of; a balance of DropThreshold (25,000) cuts the
// connection and charges FeeDrop on top. The balance belongs to the remote
// address, not to the connection: Accounts keeps it per address, so a
// reconnect finds it where it was, and a connection refused while the balance
// is at or over the drop threshold is charged FeeDrop again, so a client that
// keeps redialling keeps itself shut out.
//
// The arithmetic is pure (Charge and Decay take the time as an argument and
// return the new Sample); Accounts is the thread-safe table of samples by
// address, on an injected clock. With the thresholds met exactly: 639 queries
// (FeeQuery, 250) within one second leave a balance of 4,992 and 640 warn;
// 20 queries a second settle just under the warning and 21 warn; 100 a second
// settle at 24,999 and 101 are cut off.
package resource
