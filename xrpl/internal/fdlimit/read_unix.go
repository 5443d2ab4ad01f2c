//go:build unix

package fdlimit

import "syscall"

// Read returns this process's limit on open files.
func Read() Limit {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return Limit{}
	}
	return Limit{Cur: uint64(rl.Cur), Max: uint64(rl.Max), Known: true}
}
