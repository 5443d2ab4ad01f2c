// Package profile writes the xrpl commands' CPU and heap profiles, for go
// tool pprof, the same way in each.
package profile

import (
	"errors"
	"os"
	"runtime"
	"runtime/pprof"
)

// StartCPU profiles the process's CPU into file, created or truncated,
// until the returned function is called; it then stops and closes the
// file.
func StartCPU(file string) (stop func() error, err error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// WriteHeap collects garbage, so that the profile's in-use figures are
// the heap live now rather than at the last collection, and writes a heap
// profile to file, created or truncated. Its in-use figures count only
// what the Go runtime allocates: not what C code, such as Pebble's block
// cache and memtables when built with cgo, holds.
func WriteHeap(file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	runtime.GC()
	return errors.Join(pprof.WriteHeapProfile(f), f.Close())
}
