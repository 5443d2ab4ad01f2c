//go:build unix

package main

import "syscall"

// openFileLimit reads this process's RLIMIT_NOFILE.
func openFileLimit() fileLimit {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return fileLimit{}
	}
	return fileLimit{cur: uint64(rl.Cur), max: uint64(rl.Max), known: true}
}
