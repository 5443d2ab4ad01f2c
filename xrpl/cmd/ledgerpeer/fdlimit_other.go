//go:build !unix

package main

// fileLimit knows no limit where there is no RLIMIT_NOFILE.
func fileLimit() uint64 { return 0 }
