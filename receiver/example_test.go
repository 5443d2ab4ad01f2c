package receiver_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// A receiver's failure reason is an error: errors.Is tells the reasons
// apart, and a timeout matches context.DeadlineExceeded as well, so code
// that handles deadlines the Go way handles this one too.
func ExampleReason() {
	r := receiver.Funcs{Failure: func(id receiver.RequestID, from peer.ID, reason receiver.Reason) {
		err := fmt.Errorf("request %d to %s: %w", id, from, reason)
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			fmt.Println("deadline:", err)
		case errors.Is(err, receiver.Disconnected):
			fmt.Println("ask another peer:", err)
		}
	}}
	r.OnFailure(7, "A", receiver.Timeout)
	r.OnFailure(8, "B", receiver.Disconnected)
	// Output:
	// deadline: request 7 to A: timeout
	// ask another peer: request 8 to B: disconnected
}
