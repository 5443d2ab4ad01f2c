package main

import (
	"fmt"

	"github.com/peersched/peersched/xrpl/internal/fdlimit"
)

// filesReserved is the open files the process needs besides its peers':
// the standard streams, the poller, the ledger files and some spare.
const filesReserved = 64

// checkOpenFiles checks that peers peers, perPeer open files each, fit
// within limit, so that a run with too many fails at once with the reason
// instead of midway with "too many open files".
func checkOpenFiles(peers, perPeer int, limit fdlimit.Limit) error {
	if !limit.Known || perPeer == 0 {
		return nil
	}
	need := uint64(peers)*uint64(perPeer) + filesReserved
	if need <= limit.Cur {
		return nil
	}
	how := "raise it with ulimit -n before running (up to its hard limit, " + commas(int(min(limit.Max, 1<<62))) + "; above that as root, or in /etc/security/limits.conf)"
	if need <= limit.Max {
		how = "raise it with ulimit -n " + commas(int(need)) + " before running"
	}
	return fmt.Errorf("-peers %d: they need about %s open files (%d each, and %d for the rest), above this process's limit of %s (RLIMIT_NOFILE): %s, or use fewer peers%s",
		peers, commas(int(need)), perPeer, filesReserved, commas(int(min(limit.Cur, 1<<62))), how, memHint(perPeer))
}

// memHint suggests simulated peers, which need no files, when the peers
// are in-process ones over TCP (3 files each).
func memHint(perPeer int) string {
	if perPeer == 3 {
		return ", or simulated ones (-transport mem)"
	}
	return ""
}
