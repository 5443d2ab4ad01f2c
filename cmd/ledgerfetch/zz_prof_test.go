package main

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
)

func TestZZProfile(t *testing.T) {
	a := os.Getenv("LF_ARGS")
	if a == "" {
		t.Skip()
	}
	if code := run(context.Background(), strings.Fields(a), io.Discard, io.Discard); code != 0 {
		t.Fatal(code)
	}
}
