// Package race reports whether the race detector is compiled in, so that
// tests it defeats can skip there and say why: the virtual-time
// experiments (too slow under it; the race-free runs pin their outcomes),
// allocation counts (its bookkeeping allocates), and harnesses whose
// processes are built without it.
package race
