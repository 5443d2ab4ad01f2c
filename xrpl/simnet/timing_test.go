package simnet

import (
	"testing"
	"time"
)

func TestTransmitTime(t *testing.T) {
	for _, c := range []struct {
		size      int
		bandwidth int64
		want      time.Duration
	}{
		{1000, 0, 0},
		{1000, 1000, time.Second},
		{1, 1000, time.Millisecond},
		{1, 3, 333333334 * time.Nanosecond}, // rounded up
		{0, 1000, 0},
		{4 << 20, 1 << 20, 4 * time.Second},
	} {
		if got := transmitTime(c.size, c.bandwidth); got != c.want {
			t.Errorf("transmitTime(%d, %d) = %v, want %v", c.size, c.bandwidth, got, c.want)
		}
	}
}

func TestTransmit(t *testing.T) {
	t0 := time.Unix(100, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	ms := time.Millisecond
	for _, c := range []struct {
		name             string
		ready, linkFree  time.Duration
		size             int
		bandwidth        int64
		arrive, freeWant time.Duration
	}{
		{"unlimited link: arrive when ready, link untouched", 10 * ms, 50 * ms, 500, 0, 10 * ms, 50 * ms},
		{"idle link", 10 * ms, 0, 500, 1000, 510 * ms, 510 * ms},
		{"busy link: wait for it", 10 * ms, 300 * ms, 500, 1000, 800 * ms, 800 * ms},
		{"link frees exactly when ready", 10 * ms, 10 * ms, 1000, 1000, 1010 * ms, 1010 * ms},
	} {
		arrive, free := transmit(at(c.ready), at(c.linkFree), c.size, c.bandwidth)
		if !arrive.Equal(at(c.arrive)) || !free.Equal(at(c.freeWant)) {
			t.Errorf("%s: arrive %v free %v, want %v %v", c.name, arrive.Sub(t0), free.Sub(t0), c.arrive, c.freeWant)
		}
	}
}

func TestSlowFactor(t *testing.T) {
	steps := []Slowdown{{At: 10 * time.Second, Factor: 4}, {At: 20 * time.Second, Factor: 0.5}}
	for _, c := range []struct {
		elapsed time.Duration
		want    float64
	}{
		{0, 1},
		{10*time.Second - 1, 1},
		{10 * time.Second, 4},
		{20*time.Second - 1, 4},
		{20 * time.Second, 0.5},
		{time.Hour, 0.5},
	} {
		if got := slowFactor(steps, c.elapsed); got != c.want {
			t.Errorf("slowFactor at %v = %v, want %v", c.elapsed, got, c.want)
		}
	}
	if got := slowFactor(nil, time.Hour); got != 1 {
		t.Errorf("no steps: %v", got)
	}
}

func TestScale(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		f    float64
		want time.Duration
	}{
		{10 * time.Millisecond, 3, 30 * time.Millisecond},
		{10 * time.Millisecond, 0.5, 5 * time.Millisecond},
		{time.Minute, 1e9, MaxLatency},
	} {
		if got := scale(c.d, c.f); got != c.want {
			t.Errorf("scale(%v, %v) = %v, want %v", c.d, c.f, got, c.want)
		}
	}
}

func TestFaultPick(t *testing.T) {
	rates := FaultRates{Late: 0.25, Corrupt: 0.5}
	for _, c := range []struct {
		u    float64
		want Fault
		ok   bool
	}{
		{0, Late, true},
		{0.2499, Late, true},
		{0.25, Corrupt, true},
		{0.7499, Corrupt, true},
		{0.75, 0, false},
		{0.99, 0, false},
	} {
		f, ok := rates.pick(c.u)
		if f != c.want || ok != c.ok {
			t.Errorf("pick(%v) = %v %v, want %v %v", c.u, f, ok, c.want, c.ok)
		}
	}
	var none FaultRates
	if _, ok := none.pick(0); ok {
		t.Error("zero rates picked a fault")
	}
}

func TestFaultString(t *testing.T) {
	names := map[string]bool{}
	for f := range Fault(NumFaults) {
		names[f.String()] = true
	}
	if len(names) != NumFaults {
		t.Errorf("fault names not distinct: %v", names)
	}
	if got := Fault(NumFaults).String(); got != "Fault(7)" {
		t.Errorf("got %q", got)
	}
}
