package pebblestore

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(killedWriterDir); dir != "" {
		writeAndDie(dir) // never returns: see TestWriteSurvivesKill
	}
	goleak.VerifyTestMain(m)
}
