// Package fdlimit reads the process's limit on open files, for the
// commands that size what they open by it (ledgerfetch checks its peers fit
// under it; ledgerpeer keeps its store's files open within it).
package fdlimit

// Limit is the process's limit on open files (RLIMIT_NOFILE): the current
// one, which a process may raise itself up to Max. Go raises it to Max at
// start-up, so both are usually equal.
type Limit struct {
	Cur, Max uint64
	// Known is false where the platform has no such limit, or it could
	// not be read: Cur and Max are then 0.
	Known bool
}
