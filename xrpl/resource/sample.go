package resource

// Sample is a decaying sum of fees as of a whole second. The zero value is
// an empty sum at second 0. A Sample is a value: Charge and Decay return a
// new one.
type Sample struct {
	// Sum is the decaying sum of fees, in fee units times DecayWindow's
	// worth of seconds: the balance is Sum / DecayWindow.
	Sum int64
	// At is the whole second the sum was last aged to.
	At int64
}

// Balance returns the balance the sum stands for: Sum / DecayWindow,
// rounded down.
func (s Sample) Balance() int64 { return s.Sum / DecayWindow }

// Decay returns s aged to the whole second now: the sum loses ⌈sum/32⌉ for
// each second since s.At, and is emptied when more than four windows (128
// seconds) have passed. A now at or before s.At leaves the sum as it is (a
// clock never runs back for an account; if it did, no time passed).
func Decay(s Sample, now int64) Sample {
	if now <= s.At {
		return s
	}
	elapsed := now - s.At
	s.At = now
	if s.Sum == 0 {
		return s
	}
	if elapsed > 4*DecayWindow {
		s.Sum = 0
		return s
	}
	for ; elapsed > 0 && s.Sum > 0; elapsed-- {
		s.Sum -= (s.Sum + DecayWindow - 1) / DecayWindow
	}
	return s
}

// Charge returns s aged to the whole second now with fee added, and the
// balance after the charge. A negative fee is treated as zero.
func Charge(s Sample, now int64, fee Fee) (Sample, int64) {
	s = Decay(s, now)
	if fee > 0 {
		s.Sum += int64(fee)
	}
	return s, s.Balance()
}
