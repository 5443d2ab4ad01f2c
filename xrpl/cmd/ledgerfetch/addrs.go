package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/peersched/peersched/peer"
)

// checkAddrs checks the form of -connect's addresses: each must be
// HOST:PORT with a host and a port from 1 to 65535. The error lists every
// address that is not, each with its reason.
func checkAddrs(addrs []string) error {
	var bad []string
	for _, a := range addrs {
		if err := checkAddr(a); err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", a, err))
		}
	}
	return addrsError(bad, len(addrs))
}

// checkAddr checks one address's form.
func checkAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) {
			return fmt.Errorf("want HOST:PORT (%s)", ae.Err)
		}
		return fmt.Errorf("want HOST:PORT (%v)", err)
	}
	n, err := strconv.Atoi(port)
	switch {
	case port == "":
		return errors.New("no port after the colon")
	case err != nil:
		return fmt.Errorf("port %q is not a number", port)
	case n < 1 || n > 65535:
		return fmt.Errorf("port %d is out of range: want 1 to 65535", n)
	case host == "":
		return errors.New("no host before the port")
	}
	return nil
}

// addrsError is the error for the unusable addresses bad, of n: nil if
// there are none.
func addrsError(bad []string, n int) error {
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("-connect: %d of %d addresses unusable:\n  %s", len(bad), n, strings.Join(bad, "\n  "))
}

// lookupTimeout bounds the resolution of all of -connect's host names.
const lookupTimeout = 10 * time.Second

// resolveAll checks that the host of each of addrs, which checkAddrs has
// accepted, resolves, with lookup (net.DefaultResolver.LookupHost). IP
// addresses need no lookup. The error lists every address whose host does
// not resolve, each with the resolver's reason.
func resolveAll(ctx context.Context, addrs []string, lookup func(context.Context, string) ([]string, error)) error {
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	var bad []string
	for _, a := range addrs {
		host, _, _ := net.SplitHostPort(a)
		if net.ParseIP(host) != nil {
			continue
		}
		if _, err := lookup(ctx, host); err != nil {
			bad = append(bad, fmt.Sprintf("%s: host %q does not resolve (%v)", a, host, err))
		}
	}
	return addrsError(bad, len(addrs))
}

// probeTimeout bounds the dial that asks why a peer did not connect.
const probeTimeout = time.Second

// dialFailures names each of addrs (the peers' IDs with -connect) that up
// says has not connected, with the reason a dial to it fails now (the
// client keeps redialling and does not say), or that it answers a dial
// now, if it does.
func dialFailures(addrs []string, up func(peer.ID) bool) []string {
	var lines []string
	for _, a := range addrs {
		if up(peer.ID(a)) {
			continue
		}
		c, err := net.DialTimeout("tcp", a, probeTimeout)
		if err != nil {
			lines = append(lines, fmt.Sprintf("%s: %v", a, err))
			continue
		}
		_ = c.Close()
		lines = append(lines, a+": accepts connections now, but had not connected")
	}
	return lines
}
