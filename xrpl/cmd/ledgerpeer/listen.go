package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// maxListeners bounds a -listen range: one peer per port, each with its
// own connections, is a few file descriptors and goroutines at rest.
const maxListeners = 1024

// listenAddrs expands -listen: HOST:PORT, or HOST:FIRST-LAST for one
// address per port from FIRST to LAST (inclusive).
func listenAddrs(listen string) ([]string, error) {
	host, ports, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, err
	}
	first, last, isRange := strings.Cut(ports, "-")
	if !isRange {
		return []string{listen}, nil
	}
	lo, err1 := strconv.Atoi(first)
	hi, err2 := strconv.Atoi(last)
	switch {
	case err1 != nil || err2 != nil || lo < 1 || hi > 65535:
		return nil, fmt.Errorf("port range %q: want FIRST-LAST, ports from 1 to 65535", ports)
	case lo > hi:
		return nil, fmt.Errorf("port range %q: the first port is above the last", ports)
	case hi-lo+1 > maxListeners:
		return nil, fmt.Errorf("port range %q: %d ports, want at most %d", ports, hi-lo+1, maxListeners)
	}
	addrs := make([]string, 0, hi-lo+1)
	for p := lo; p <= hi; p++ {
		addrs = append(addrs, net.JoinHostPort(host, strconv.Itoa(p)))
	}
	return addrs, nil
}
