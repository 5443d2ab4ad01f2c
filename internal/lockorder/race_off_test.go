//go:build lockorder && !race

package lockorder

const raceEnabled = false
