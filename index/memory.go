package index

import "unsafe"

// MemoryPart is what one part of an index holds, in bytes: on the Go heap
// (anonymous memory, the process's own), and in mapped files (a snapshot
// read in place, or the scratch files of VectorFiles), which are the page
// cache's: the kernel drops their pages under memory pressure and reads
// them back when touched.
type MemoryPart struct {
	Part   string
	Heap   int64
	Mapped int64
}

// Memory parts, in the order Memory returns them.
const (
	MemVectors   = "vectors"   // float32 vectors, for re-scoring
	MemCodes     = "codes"     // their int8 codes, which searches scan
	MemSlots     = "slots"     // each slot's ID, deletion, lengths, language, document; which are deleted, and each language's
	MemGraph     = "graph"     // HNSW links and levels
	MemTerms     = "terms"     // the term dictionary
	MemPostings  = "postings"  // the posting lists
	MemDocuments = "documents" // documents, for filters
	MemEntries   = "entries"   // the map from entry IDs to slots
)

// Memory returns what the index holds by part, as its writer sees it:
// every slot of its current generation, deleted ones included, with the
// capacity allocated rather than the length used. Go's map overhead is
// estimated (per entry: key, value and a control byte, at 7/8 load); the
// garbage collector's headroom, which the runtime adds on top of the live
// heap, is not counted. It takes the writer lock.
func (x *OwnerIndex) Memory() []MemoryPart {
	x.mu.Lock()
	defer x.mu.Unlock()
	g := x.gen
	parts := []MemoryPart{{Part: MemVectors}, {Part: MemCodes}, {Part: MemSlots}, {Part: MemGraph}, {Part: MemTerms}, {Part: MemPostings}, {Part: MemDocuments}, {Part: MemEntries}}
	add := func(i int, mapped bool, bytes int64) {
		if mapped {
			parts[i].Mapped += bytes
		} else {
			parts[i].Heap += bytes
		}
	}
	for _, pg := range g.pages {
		inFile := pg.src != nil
		scratch := inFile || pg.scratchVecs
		add(0, scratch, int64(4*cap(pg.vecs)))
		add(1, inFile, int64(cap(pg.codes)))
		add(2, inFile, int64(4*cap(pg.scales)+8*cap(pg.ids)+4*cap(pg.docLen)+cap(pg.lang)+4*cap(pg.headLen)+4*cap(pg.doc)+8*cap(pg.deadAt)))
		add(3, inFile, int64(cap(pg.levels)+4*cap(pg.links0)))
		add(3, false, int64(24*cap(pg.upper)))
		for _, up := range pg.upper {
			add(3, false, int64(4*cap(up)))
		}
	}
	for _, l := range g.langs.slots {
		add(2, false, int64(4*cap(l)))
	}
	add(2, false, int64(4*(cap(g.dead.sorted)+cap(g.dead.pending))))
	t := g.lex.table.Load()
	add(4, false, int64(8*len(t.slots)))
	for i := range t.slots {
		if e := t.slots[i].Load(); e != nil {
			add(4, false, int64(unsafe.Sizeof(*e)))
			if e.staged > 0 {
				add(5, false, int64(8*postingsCap(e.staged)))
			}
		}
	}
	if b := g.lex.base; b != nil {
		add(4, true, int64(8*len(b.keys)+8*len(b.ends)))
		add(5, true, int64(8*len(b.postings)))
	}
	for _, dp := range g.docs {
		add(6, false, int64(8*cap(dp.docs)+8*cap(dp.deadAt)))
	}
	add(6, false, int64(4*cap(g.docLive)))
	for o := range g.nDocs {
		d := g.docs.doc(o)
		b := int64(unsafe.Sizeof(*d)) + int64(len(d.ID)) + int64(cap(d.fields))*int64(unsafe.Sizeof(metaField{}))
		for k, v := range d.Metadata {
			b += int64(len(k)+len(v)) + mapEntryBytes(16, 16)
		}
		add(6, false, b)
	}
	add(6, false, int64(len(x.docOf))*mapEntryBytes(16, 4))
	add(7, false, int64(len(x.slotOf))*mapEntryBytes(8, 4))
	return parts
}

// mapEntryBytes estimates what one entry of a Go map with keys and values
// of these sizes costs: both, aligned, plus a control byte, at 7/8 load.
func mapEntryBytes(key, value int64) int64 {
	slot := key + value
	if r := slot % 8; r != 0 {
		slot += 8 - r
	}
	return (slot + 1) * 8 / 7
}
