package libp2pnet

import (
	"bufio"
	"sync"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/peersched/peersched/receiver"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/wire"
)

// Protocol is the libp2p protocol ID of the fetch: a stream on which the
// dialer sends TMGetObjectByHash queries and the listener answers each
// with its reply, in rippled's framing (package wire).
const Protocol protocol.ID = "/peersched/getobjects/1.0.0"

// RequestIDs returns the range of request IDs a scheduler using this
// transport must issue (scheduler.Config.RequestIDs): the wire carries
// them in a 32-bit field, and a Conn refuses larger ones.
func RequestIDs() receiver.IDRange {
	return receiver.IDRange{Lo: 1, Hi: wire.MaxID + 1}
}

// Answerer answers a query for ledger objects. *ledger.Ledger is one.
type Answerer interface {
	Answer(req ledger.GetObjects) ledger.Objects
}

// ServerConfig tunes a Server. The zero value uses the defaults.
type ServerConfig struct {
	// MaxFrame caps the payload of a query read (wire.ReadFrame); 0 means
	// wire.DefaultMaxFrame.
	MaxFrame int
	// MaxItems caps the hashes of a query (wire.DecodeMessage); 0 means
	// wire.DefaultMaxItems.
	MaxItems int
}

// Server answers the fetch's queries on the streams of Protocol that a
// libp2p host accepts, one query at a time per stream, in order, and
// answers pings. A stream that sends a reply, or a frame that does not
// decode, is reset.
//
// Create one with Serve; the zero value is not usable.
type Server struct {
	h   host.Host
	src Answerer
	cfg ServerConfig
	wg  sync.WaitGroup // the stream handlers running

	mu sync.Mutex
	// The following fields are guarded by mu.
	closed  bool
	streams map[network.Stream]struct{}
}

// Serve starts answering Protocol's streams on h from src, until Close.
func Serve(h host.Host, src Answerer, cfg ServerConfig) *Server {
	s := &Server{h: h, src: src, cfg: cfg, streams: make(map[network.Stream]struct{})}
	h.SetStreamHandler(Protocol, s.handle)
	return s
}

// Close stops accepting streams, resets those being served and waits for
// their handlers to return. The Answerer must not be blocked for ever: a
// handler waits for its answer. It returns nil.
func (s *Server) Close() error {
	s.h.RemoveStreamHandler(Protocol)
	s.mu.Lock()
	s.closed = true
	for st := range s.streams {
		_ = st.Reset()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// handle serves one stream, on the goroutine libp2p gave it.
func (s *Server) handle(st network.Stream) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = st.Reset()
		return
	}
	s.streams[st] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.streams, st)
		s.mu.Unlock()
		_ = st.Reset()
		s.wg.Done()
	}()

	br := bufio.NewReaderSize(st, bufferSize)
	bw := bufio.NewWriterSize(st, bufferSize)
	for {
		f, err := wire.ReadFrame(br, s.cfg.MaxFrame)
		if err != nil {
			return
		}
		id, msg, err := wire.DecodeMessage(f, s.cfg.MaxItems)
		if err != nil {
			return
		}
		var reply []byte
		switch m := msg.(type) {
		case ledger.GetObjects:
			reply, err = wire.AppendMessage(nil, id, s.src.Answer(m))
		case wire.Ping:
			reply, err = wire.AppendMessage(nil, id, wire.Pong{})
		case wire.Pong:
			continue
		default:
			return // a reply, on a stream where this side answers
		}
		if err != nil {
			return
		}
		if _, err := bw.Write(reply); err != nil {
			return
		}
		// Flush once the queries already read are answered: a burst of
		// them costs one write.
		if br.Buffered() == 0 {
			if err := bw.Flush(); err != nil {
				return
			}
		}
	}
}
