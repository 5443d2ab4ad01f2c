package wire

import (
	"bytes"
	"testing"

	"github.com/peersched/peersched/xrpl/ledger"
)

// BenchmarkReply measures a reply of 64 objects of a generated ledger (the
// fetch's default batch) going through the codec: encoded by a server, read
// and decoded by the host.
func BenchmarkReply(b *testing.B) {
	l, err := ledger.Generate(1, 5000)
	if err != nil {
		b.Fatal(err)
	}
	var req ledger.GetObjects
	for h := range l.Hashes() {
		if len(req.Hashes) == 64 {
			break
		}
		req.Hashes = append(req.Hashes, h)
	}
	reply := l.Answer(req)
	frame, err := AppendMessage(nil, 1<<24, reply)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		b.SetBytes(int64(len(frame)))
		var buf []byte
		for b.Loop() {
			buf, _ = AppendMessage(buf[:0], 1<<24, reply)
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(frame)))
		for b.Loop() {
			f, err := ReadFrame(bytes.NewReader(frame), 0)
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := DecodeMessage(f, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
}
