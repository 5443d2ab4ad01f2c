//go:build race

package fetch

// raceEnabled: the race detector slows the simulated fetches about a
// hundredfold, which the capacity experiment's nine fetches cannot afford.
const raceEnabled = true
