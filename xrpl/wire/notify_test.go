package wire

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAppendMessageFrame: a Frame of a type the package frames (a
// notification, such as a relayed status change) is written as it is, its
// size is MessageSize's, and a reader gets it back whole; a Frame of a type
// the package does not frame is refused with ErrUnknownType, leaving dst.
func TestAppendMessageFrame(t *testing.T) {
	chatter, err := AppendChatter(nil, TypeStatusChange, 7)
	require.NoError(t, err)
	f := Frame{Type: TypeStatusChange, Payload: chatter[HeaderSize:]}

	b, err := AppendMessage([]byte("x"), 0, f)
	require.NoError(t, err)
	require.Equal(t, append([]byte("x"), chatter...), b)
	require.Equal(t, len(chatter), MessageSize(0, f))

	got, err := ReadFrame(bytes.NewReader(b[1:]), 0)
	require.True(t, err == nil || errors.Is(err, ErrUnknownType), "%v", err)
	require.Equal(t, TypeStatusChange, got.Type)

	dst := []byte("keep")
	out, err := AppendMessage(dst, 0, Frame{Type: Type(999), Payload: []byte{1}})
	require.ErrorIs(t, err, ErrUnknownType)
	require.Equal(t, []byte("keep"), out)
	require.Zero(t, MessageSize(0, Frame{Type: Type(999)}))
}
