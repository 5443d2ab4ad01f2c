// Package race reports whether the race detector is compiled in, so that
// tests too slow under it (the virtual-time experiments, whose outcomes the
// race-free runs pin) can skip there and say why.
package race
