//go:build !race

package lockorder

const raceEnabled = false
