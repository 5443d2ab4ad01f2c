package scheduler

import "fmt"

// requestIDConfig checks cfg.RequestIDs and returns the cap on requests in
// flight that goes with it. With a range, the cap must not exceed the range's
// size, since no two outstanding requests may share an ID; a zero
// MaxRequests then means the smaller of DefaultMaxRequests and the size.
// Without one it returns cfg.MaxRequests unchanged. Errors wrap
// ErrBadConfig.
func requestIDConfig(cfg Config) (maxRequests int, err error) {
	r := cfg.RequestIDs
	if err := r.Validate(); err != nil {
		return 0, fmt.Errorf("%w: RequestIDs: %w", ErrBadConfig, withoutPrefix(err))
	}
	if r.IsZero() {
		return cfg.MaxRequests, nil
	}
	size := r.Size()
	if cfg.MaxRequests == 0 {
		return int(min(uint64(DefaultMaxRequests), size)), nil
	}
	if cfg.MaxRequests > 0 && uint64(cfg.MaxRequests) > size {
		return 0, fmt.Errorf("%w: MaxRequests %d above the %d IDs in RequestIDs [%d, %d)",
			ErrBadConfig, cfg.MaxRequests, size, r.Lo, r.Hi)
	}
	return cfg.MaxRequests, nil
}
