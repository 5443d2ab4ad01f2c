package node

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBusiest(t *testing.T) {
	at := func(ms ...int) []time.Time {
		var out []time.Time
		for _, m := range ms {
			out = append(out, time.Unix(0, 0).Add(time.Duration(m)*time.Millisecond))
		}
		return out
	}
	for _, c := range []struct {
		name  string
		sends []time.Time
		want  int
	}{
		{"none", nil, 0},
		{"one", at(5), 1},
		{"a second apart is two windows", at(0, 1000), 1},
		{"just inside one window", at(0, 999), 2},
		{"the busiest is found late", at(0, 1500, 1600, 1700, 2499, 2500), 4},
		{"simultaneous", at(10, 10, 10), 3},
	} {
		t.Run(c.name, func(t *testing.T) { require.Equal(t, c.want, busiest(c.sends, time.Second)) })
	}
}
