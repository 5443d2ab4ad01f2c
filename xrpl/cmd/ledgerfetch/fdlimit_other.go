//go:build !unix

package main

// openFileLimit knows no limit where there is no RLIMIT_NOFILE.
func openFileLimit() fileLimit { return fileLimit{} }
