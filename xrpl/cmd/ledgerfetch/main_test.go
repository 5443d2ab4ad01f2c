package main

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if args, ok := childArgs(); ok {
		os.Exit(runChild(args)) // a test's child process (see crash_test.go)
	}
	goleak.VerifyTestMain(m)
}
