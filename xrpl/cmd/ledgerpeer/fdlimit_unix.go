//go:build unix

package main

import "syscall"

// fileLimit returns this process's limit on open files (RLIMIT_NOFILE's
// soft limit, which Go raises to the hard limit as it starts), or 0 if it
// cannot be read.
func fileLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return uint64(rl.Cur)
}
