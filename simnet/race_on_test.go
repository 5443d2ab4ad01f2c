//go:build race

package simnet_test

// raceEnabled: the race detector slows the herding experiment's 56 runs of
// 50 schedulers from seconds to minutes.
const raceEnabled = true
