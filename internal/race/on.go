//go:build race

package race

// Enabled: the race detector slows the simulated experiments about a
// hundredfold.
const Enabled = true
