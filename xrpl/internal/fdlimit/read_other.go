//go:build !unix

package fdlimit

// Read knows no limit where there is no RLIMIT_NOFILE.
func Read() Limit { return Limit{} }
