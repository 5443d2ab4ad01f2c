//go:build !race

package race

// Enabled: see on.go.
const Enabled = false
