package resource_test

import (
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/xrpl/resource"
)

func TestKey(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:51234": "127.0.0.1",
		"[::1]:7001":      "::1",
		"p03":             "p03",
	} {
		if got := resource.Key(in); got != want {
			t.Errorf("Key(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestDropThenRedial: a burst of 3,200 queries cuts the connection and
// charges FeeDrop; a reconnect in the same second finds the balance and is
// refused, charged FeeDrop again; a client that waits a second finds the
// balance decayed under the threshold and is let back in.
func TestDropThenRedial(t *testing.T) {
	c := clock.NewMock()
	a := resource.NewAccounts(c, true)
	const addr = "10.0.0.7"
	for i := range 3199 {
		if d := a.Charge(addr, resource.FeeQuery); d == resource.Drop {
			t.Fatalf("query %d dropped, at balance %d", i+1, a.Balance(addr))
		}
	}
	if d := a.Charge(addr, resource.FeeQuery); d != resource.Drop {
		t.Fatalf("query 3,200: %v, want drop", d)
	}
	if got, want := a.Balance(addr), int64(3200*250+6000)/32; got != want {
		t.Fatalf("balance after the drop = %d, want %d (the queries and FeeDrop)", got, want)
	}
	if !a.Admit("10.0.0.8") {
		t.Fatal("another address was refused")
	}
	if a.Admit(addr) {
		t.Fatalf("redial in the same second admitted at balance %d", a.Balance(addr))
	}
	if got, want := a.Balance(addr), int64(3200*250+2*6000)/32; got != want {
		t.Fatalf("balance after the refusal = %d, want %d (charged FeeDrop again)", got, want)
	}
	st := a.Stats()
	if st.Drops != 1 || st.Refused != 1 {
		t.Fatalf("stats %+v, want 1 drop and 1 refusal", st)
	}
	c.Add(time.Second)
	if !a.Admit(addr) {
		t.Fatalf("refused after waiting a second, at balance %d", a.Balance(addr))
	}
}

// TestRedialsKeepItShutOut: each refused redial charges FeeDrop (187.5 of
// balance), so a client that redials 20 times a second from the moment it
// is cut adds more than a second's decay at the threshold (about 781) takes
// away, and never gets back in.
func TestRedialsKeepItShutOut(t *testing.T) {
	c := clock.NewMock()
	a := resource.NewAccounts(c, true)
	const addr = "10.0.0.9"
	for a.Charge(addr, resource.FeeQuery) != resource.Drop {
	}
	for second := range 300 {
		for range 20 { // within one second: the balance ages a whole second at a time
			if a.Admit(addr) {
				t.Fatalf("admitted after %d s of redials, balance %d", second, a.Balance(addr))
			}
		}
		c.Add(time.Second)
	}
	if got := a.Stats().Refused; got != 300*20 {
		t.Fatalf("refused %d, want %d", got, 300*20)
	}
}

func TestWarningsOncePerSecond(t *testing.T) {
	c := clock.NewMock()
	a := resource.NewAccounts(c, true)
	for range 700 { // 640 reach the warning; 60 more in the same second
		a.Charge("a", resource.FeeQuery)
	}
	if got := a.Stats().Warnings; got != 1 {
		t.Fatalf("warnings in one second = %d, want 1", got)
	}
	c.Add(time.Second)
	a.Charge("a", resource.FeeQuery)
	a.Charge("b", resource.FeeQuery)
	if got := a.Stats().Warnings; got != 2 {
		t.Fatalf("warnings = %d, want 2 (a again in a new second; b is under)", got)
	}
}

func TestLimitsOff(t *testing.T) {
	c := clock.NewMock()
	a := resource.NewAccounts(c, false)
	for i := range 10000 {
		if d := a.Charge("x", resource.FeeQuery); d == resource.Drop {
			t.Fatalf("query %d dropped with limits off", i+1)
		}
	}
	if !a.Admit("x") {
		t.Fatal("refused with limits off")
	}
	st := a.Stats()
	if st.Drops != 0 || st.Refused != 0 || st.Warnings != 1 || st.PeakBalance != 10000*250/32 {
		t.Fatalf("stats %+v: want no drop or refusal, one warning, peak %d", st, 10000*250/32)
	}
}

func TestReconnectFindsTheBalance(t *testing.T) {
	c := clock.NewMock()
	a := resource.NewAccounts(c, true)
	for range 639 {
		a.Charge(resource.Key("127.0.0.1:4000"), resource.FeeQuery)
	}
	// A new connection from the same host, another port: same account.
	if d := a.Charge(resource.Key("127.0.0.1:4001"), resource.FeeQuery); d != resource.Warn {
		t.Fatalf("query 640 from another port: %v, want warn", d)
	}
}
