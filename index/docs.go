package index

import (
	"sync/atomic"
	"time"
)

// Document is what a filter sees of the document a chunk belongs to. The
// index keeps a copy of it, shared by every chunk of it and every version
// that holds them; a Document the index returns must not be changed.
type Document struct {
	ID        string
	CreatedAt time.Time
	Metadata  map[string]string

	// fields is Metadata as the index's copy holds it: a short list with
	// each string shared by every document that has it. A filter asks
	// every document of an owner for a key; looking through a few
	// pairs whose strings stay in cache is several times faster than a
	// map lookup per document (see Meta).
	fields []metaField
}

type metaField struct{ key, value string }

// Meta returns the value of a metadata key and whether the document has
// it. Filters should use it: on the index's documents it is faster than
// reading Metadata.
func (d *Document) Meta(key string) (string, bool) {
	if d.fields == nil {
		v, ok := d.Metadata[key]
		return v, ok
	}
	for _, f := range d.fields {
		if f.key == key {
			return f.value, true
		}
	}
	return "", false
}

// Filter reports whether a filtered search may return the chunks of d. It
// is called concurrently, at most once per document and search, and must
// not change d.
type Filter func(d *Document) bool

// The document table. Every generation numbers the documents of its slots
// (ordinals, in the order their first chunk was added) and keeps them in
// pages laid out as the slots' are (see pageOf), so that searches read the
// documents of their view without a lock while the writer appends: a
// document is appended before the first slot that refers to it, and a view
// covers both, so a search never meets a slot whose document it cannot
// read. A document is deleted, like a slot, by marking it with the epoch
// of the version that no longer has any of its chunks.
//
// A slot refers to its document by ordinal+1 (page.doc); 0 is a slot with
// no document (an entry added without one), which no filter allows.

// docPage holds the documents of a run of consecutive ordinals.
type docPage struct {
	docs   []*Document
	deadAt []atomic.Uint64 // first epoch without the document; 0 = live
}

// docPages is a directory of document pages; a view keeps the header it
// was published with, as with pages.
type docPages []*docPage

func (dp docPages) doc(o uint32) *Document {
	p, off := pageOf(o)
	return dp[p].docs[off]
}

func (dp docPages) deadAt(o uint32) *atomic.Uint64 {
	p, off := pageOf(o)
	return &dp[p].deadAt[off]
}

// docScope is the part of the document table a view may read: ordinals
// below n, of which those not deleted by the view's epoch are alive.
type docScope struct {
	pages docPages
	n     uint32
}

// appendDoc stores a copy of d under the next ordinal and returns it. It
// is not searchable before a view covering it is published.
func (g *generation) appendDoc(d *Document) uint32 {
	return g.adoptDoc(&Document{ID: d.ID, CreatedAt: d.CreatedAt, Metadata: d.Metadata})
}

// adoptDoc is appendDoc of a document no one else holds: d itself is kept
// (a snapshot's load makes a million of them).
func (g *generation) adoptDoc(d *Document) uint32 {
	o := g.nDocs
	p, off := pageOf(o)
	if p == len(g.docs) {
		n := pageSlots(p)
		g.docs = append(g.docs, &docPage{docs: make([]*Document, n), deadAt: make([]atomic.Uint64, n)})
	}
	if len(d.Metadata) > 0 {
		d.fields = make([]metaField, 0, len(d.Metadata))
	}
	for k, v := range d.Metadata {
		d.fields = append(d.fields, metaField{g.intern(k), g.intern(v)})
	}
	g.docs[p].docs[off] = d
	g.docLive = append(g.docLive, 0)
	g.nDocs++
	return o
}

// intern returns the generation's one copy of s. Documents of an owner
// mostly share their keys and many of their values.
func (g *generation) intern(s string) string {
	if is, ok := g.interned[s]; ok {
		return is
	}
	if g.interned == nil {
		g.interned = make(map[string]string)
	}
	g.interned[s] = s
	return s
}

// slotDoc returns the ordinal of slot s's document, if it has one.
func (ps pages) slotDoc(s uint32) (uint32, bool) {
	p, off := pageOf(s)
	ref := ps[p].doc[off]
	return ref - 1, ref != 0
}

func (ps pages) setSlotDoc(s, o uint32) {
	p, off := pageOf(s)
	ps[p].doc[off] = o + 1
}

// attachDoc makes d the document of slot s, which the writer has just
// appended to g (its generation, or the one a rebuild fills); a document
// seen for the first time is appended to g's table. The caller holds mu.
func (x *OwnerIndex) attachDoc(g *generation, s uint32, d *Document) {
	if d == nil {
		return
	}
	docOf := x.docIndex()
	o, ok := docOf[d.ID]
	if !ok {
		o = g.appendDoc(d)
		docOf[d.ID] = o
	}
	g.pages.setSlotDoc(s, o)
	g.docLive[o]++
}

// detachDoc drops slot s, which the writer is deleting, from its
// document's count, and deletes the document from the next version on
// when that was its last chunk. The caller holds mu.
func (x *OwnerIndex) detachDoc(s uint32) {
	o, ok := x.gen.pages.slotDoc(s)
	if !ok {
		return
	}
	if x.gen.docLive[o]--; x.gen.docLive[o] == 0 {
		x.gen.docs.deadAt(o).Store(x.epoch + 1)
		docOf, id := x.docIndex(), x.gen.docs.doc(o).ID
		if docOf[id] == o {
			delete(docOf, id)
		}
	}
}

// docIndex returns x.docOf, the ordinals of gen's live documents by ID,
// making it first when a load left it out: searches never use it, and
// made while a snapshot is read it was a fifth of the load at a million
// documents, which a restart is then answering sooner by. Should an ID be
// listed twice (which only a writer's bug could make: a damaged file
// fails its checksum), the first is found by it; the other goes on
// serving its own chunks. The caller holds mu, or has x alone.
func (x *OwnerIndex) docIndex() map[string]uint32 {
	if x.docOf != nil {
		return x.docOf
	}
	g := x.gen
	x.docOf = make(map[string]uint32, g.nDocs)
	for o := range g.nDocs {
		if g.docLive[o] == 0 {
			continue
		}
		id := g.docs.doc(o).ID
		if _, twice := x.docOf[id]; !twice {
			x.docOf[id] = o
		}
	}
	return x.docOf
}

// Document returns the document of entry id as the writer sees it, or nil
// when id is absent or was added without one.
func (x *OwnerIndex) Document(id uint64) *Document {
	x.mu.Lock()
	defer x.mu.Unlock()
	s, ok := x.slotOf[id]
	if !ok {
		return nil
	}
	o, ok := x.gen.pages.slotDoc(s)
	if !ok {
		return nil
	}
	return x.gen.docs.doc(o)
}

// docAlive reports whether document o (below v.docs.n) is alive in v.
func (v *view) docAlive(o uint32) bool {
	dead := v.docs.pages.deadAt(o).Load()
	return dead == 0 || dead > v.epoch
}
