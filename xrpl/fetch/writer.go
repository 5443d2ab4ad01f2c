package fetch

import (
	"fmt"
	"sync"
)

// Bounds on the nodes verified and not yet written, in bytes of node data.
const (
	// writeBatchBytes is the most one Write carries: batches amortise the
	// store's per-write cost, and stay small enough that a crash loses
	// little.
	writeBatchBytes = 1 << 20
	// maxUnwrittenBytes is how much may wait for the writer before the
	// fetch's answers wait for it instead (see storeWriter.waitRoom): the
	// fetch's memory stays bounded when the disk is slower than the peers.
	maxUnwrittenBytes = 16 << 20
)

// storeWriter writes the nodes a fetch verifies to its NodeStore from a
// goroutine of its own, in batches, in the order they verified: the fetch
// hands each node over under its lock (add, which only appends) and never
// waits for the disk there. Nodes verify parent before children, so the
// store holds, at every moment, a tree hanging from the root: what a
// resumed fetch walks (see resumeWalk).
type storeWriter struct {
	store NodeStore
	fail  func(error) // called once, from the writer's goroutine, if a Write fails

	mu sync.Mutex
	// The following fields are guarded by mu.
	cond     *sync.Cond // signalled when nodes arrive, room frees up, or the writer stops
	queue    []Node
	queued   int // bytes of data in queue
	started  bool
	stopping bool
	err      error // the first failed Write's; nothing is written after it

	done chan struct{} // closed when the goroutine has returned
}

// newWriter returns a writer to store, not started. fail is told of a
// failed Write.
func newWriter(store NodeStore, fail func(error)) *storeWriter {
	w := &storeWriter{store: store, fail: fail, done: make(chan struct{})}
	w.cond = sync.NewCond(&w.mu)
	return w
}

// start starts the goroutine that writes; stop stops it.
func (w *storeWriter) start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.started {
		w.started = true
		go w.loop()
	}
}

// add queues verified nodes to be written, in order. It does not block,
// and does not keep nodes (the slice; their Data it keeps).
func (w *storeWriter) add(nodes []Node) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil || w.stopping || len(nodes) == 0 {
		return
	}
	idle := len(w.queue) == 0 // the loop waits only for an empty queue to fill
	w.queue = append(w.queue, nodes...)
	for _, n := range nodes {
		w.queued += len(n.Data)
	}
	if idle {
		w.cond.Broadcast()
	}
}

// waitRoom blocks while more than maxUnwrittenBytes wait to be written:
// a fetch calls it before it applies an answer, outside its lock, so that
// a slow disk slows the fetch instead of filling its memory.
func (w *storeWriter) waitRoom() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.queued > maxUnwrittenBytes && w.err == nil && !w.stopping {
		w.cond.Wait()
	}
}

// stop writes what is queued, stops the goroutine, and returns the first
// Write's error, if one failed.
func (w *storeWriter) stop() error {
	w.mu.Lock()
	w.stopping = true
	w.cond.Broadcast()
	started := w.started
	w.mu.Unlock()
	if started {
		<-w.done
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *storeWriter) loop() {
	defer close(w.done)
	var batch []Node
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && !w.stopping {
			w.cond.Wait()
		}
		if len(w.queue) == 0 || w.err != nil {
			w.mu.Unlock()
			return
		}
		batch, w.queue = w.takeBatchLocked(batch[:0])
		w.mu.Unlock()

		err := w.store.Write(batch)
		clear(batch) // let the written nodes' data go

		w.mu.Lock()
		if err != nil {
			w.err = fmt.Errorf("fetch: writing %d nodes to the store: %w", len(batch), err)
			w.queue, w.queued = nil, 0
		}
		w.cond.Broadcast()
		failed := w.err
		w.mu.Unlock()
		if err != nil {
			w.fail(failed)
			return
		}
	}
}

// takeBatchLocked moves up to writeBatchBytes of the queue's oldest nodes
// (one at least) into dst, and returns dst and what is left of the queue.
func (w *storeWriter) takeBatchLocked(dst []Node) ([]Node, []Node) {
	n, bytes := 0, 0
	for n < len(w.queue) && (n == 0 || bytes+len(w.queue[n].Data) <= writeBatchBytes) {
		bytes += len(w.queue[n].Data)
		n++
	}
	dst = append(dst, w.queue[:n]...)
	clear(w.queue[:n]) // the queue's array must not keep them alive
	w.queued -= bytes
	rest := w.queue[n:]
	if len(rest) == 0 {
		rest = w.queue[:0]
	}
	return dst, rest
}
