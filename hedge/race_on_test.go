//go:build race

package hedge_test

// raceEnabled: the race detector slows the simulated streams many times
// over, which the tail experiment's 100,000-request streams cannot afford.
const raceEnabled = true
