package requests

import (
	"github.com/peersched/peersched/internal/peerpool"
	"github.com/peersched/peersched/peer"
)

// Register records that the peer ref, named id, is connected, so responses
// from it can be checked against the requests sent to it.
func (t *Table) Register(ref peerpool.Ref, id peer.ID) {
	slot := ref.Slot()
	for len(t.owners) <= slot {
		t.owners = append(t.owners, owner{head: -1})
	}
	t.owners[slot] = owner{id: id, ref: ref, head: -1}
}

// registered reports whether ref names the peer registered in its slot.
func (t *Table) registered(ref peerpool.Ref) bool {
	slot := ref.Slot()
	return ref != (peerpool.Ref{}) && slot < len(t.owners) && t.owners[slot].ref == ref
}

func (t *Table) peerID(e *entry) peer.ID {
	if !e.linked {
		return ""
	}
	return t.owners[e.peer].id
}

func (t *Table) peerRef(e *entry) peerpool.Ref {
	if !e.linked {
		return peerpool.Ref{}
	}
	return t.owners[e.peer].ref
}

// link puts e, the record in slot, at the head of the list of ref's peer.
func (t *Table) link(e *entry, slot int32, ref peerpool.Ref) {
	e.peer = int32(ref.Slot())
	o := &t.owners[e.peer]
	e.prev, e.next = -1, o.head
	if o.head >= 0 {
		_, head := t.slab.At(o.head)
		head.prev = slot
	}
	o.head = slot
	e.linked = true
}

// unlink takes e out of its peer's list.
func (t *Table) unlink(e *entry) {
	if e.prev >= 0 {
		_, p := t.slab.At(e.prev)
		p.next = e.next
	} else {
		t.owners[e.peer].head = e.next
	}
	if e.next >= 0 {
		_, n := t.slab.At(e.next)
		n.prev = e.prev
	}
	e.prev, e.next, e.linked = -1, -1, false
}
