package tcpnet

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/peersched/peersched/xrpl/wire"
)

// Reason names why a connection ended, in the words a report uses.
type Reason string

// The reasons a Conn ends for (see EndError).
const (
	ReasonClosed        Reason = "closed by us"       // Close, or the Client let the peer go
	ReasonPeerClosed    Reason = "peer closed"        // the peer ended or reset the connection (a clean end inside a frame is ReasonCutMidFrame)
	ReasonCutMidFrame   Reason = "cut mid-frame"      // the peer ended it inside a frame
	ReasonOversized     Reason = "frame over the cap" // a frame's size above ConnConfig.MaxFrame
	ReasonTooManyItems  Reason = "too many objects"   // a message with more items than ConnConfig.MaxItems
	ReasonMalformed     Reason = "malformed frame"    // a frame or message that does not parse
	ReasonIdle          Reason = "idle timeout"       // asked, and sent no frame for ConnConfig.AnswerTimeout, or took longer over one frame
	ReasonReadFailed    Reason = "read failed"        // any other read error
	ReasonWriteFailed   Reason = "write failed"       // a write error
	ReasonDialFailed    Reason = "dial failed"        // not a Conn's: a Client's dial that failed
	ReasonRefusedByHost Reason = "refused by host"    // not a Conn's: the Host refused a Client's new Conn
)

// EndError is why a Conn ended, as Conn.Err returns it: the Reason, and
// the error behind it (ErrClosed after Close), which errors.Is and
// errors.As see through.
type EndError struct {
	Peer   string
	Reason Reason
	Err    error
}

func (e *EndError) Error() string { return fmt.Sprintf("%s: %q: %v", e.Reason, e.Peer, e.Err) }
func (e *EndError) Unwrap() error { return e.Err }

// ReasonOf returns the Reason in err, an error from Conn.Err (or one a
// Client hands to ClientConfig.Ended), or "" for nil or an error of no
// Conn's.
func ReasonOf(err error) Reason {
	var e *EndError
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// readReason classifies an error of wire.ReadFrame.
func readReason(err error) Reason {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, net.ErrClosed):
		return ReasonPeerClosed
	case errors.Is(err, io.ErrUnexpectedEOF):
		return ReasonCutMidFrame
	case isTimeout(err):
		return ReasonIdle
	}
	return frameReason(err, ReasonOversized)
}

// frameReason classifies a frame the wire package refused; oversized says
// what its ErrOversized means where it was returned (a frame's size from
// ReadFrame, an item count from DecodeMessage).
func frameReason(err error, oversized Reason) Reason {
	switch {
	case errors.Is(err, wire.ErrOversized):
		return oversized
	case errors.Is(err, wire.ErrMalformed):
		return ReasonMalformed
	}
	return ReasonReadFailed
}

// brokeProtocol reports whether a connection that ended for r ended because
// the peer broke the protocol: sent a frame we cap or cannot parse.
func brokeProtocol(r Reason) bool {
	return r == ReasonOversized || r == ReasonTooManyItems || r == ReasonMalformed
}
