package index

import (
	"sync"
	"weak"
)

// Resolved filters are kept. A filter is resolved by asking every
// document of the owner and looking at every slot: at a million chunks,
// three quarters of a filtered query's CPU, which took 8–12 ms where an
// unfiltered one took 1.2–1.4. Yet filters repeat: a team's
// queries carry its filter, and the questions about one document its
// id. So the set a filter allows is kept under the key the caller names
// it by (Query.FilterKey), and a search of a later version of the same
// generation only asks about the slots added since, whose documents are
// the only ones that can have come.
//
// A kept set may hold slots deleted since it was resolved: every search
// within a set skips slots that are not alive in its view (scanAllowed
// asks; the graph walk and BM25 always do). A search of an older version
// than the set's resolves its own, which is not kept: the set may lack
// documents deleted after that version, which it must still see.
const maxKeptFilters = 16

// keptFilters is an index's resolved filters, by key.
type keptFilters struct {
	mu      sync.Mutex
	entries map[string]*keptFilter
	uses    uint64 // a clock for evicting the least recently used
}

// keptFilter is one filter resolved in the version of a generation
// published at epoch, whose slots are those below n; it does not keep
// the generation alive.
type keptFilter struct {
	gen     weak.Pointer[generation]
	epoch   uint64
	n       uint32
	a       *allowed // kept: never released to the pool
	lastUse uint64
}

// allowedFor is v.allow(f), kept under key when key is not empty.
func (x *OwnerIndex) allowedFor(v *view, f Filter, key string) *allowed {
	if key == "" {
		return v.allow(f, x.scanAllowedMax)
	}
	k := &x.filters
	k.mu.Lock()
	e := k.entries[key]
	if e != nil {
		k.uses++
		e.lastUse = k.uses
	}
	k.mu.Unlock()
	switch {
	case e == nil || e.gen.Value() != v.gen:
		a := v.allow(f, x.scanAllowedMax)
		a.kept = true
		e = &keptFilter{gen: weak.Make(v.gen), epoch: v.epoch, n: v.n, a: a}
	case e.epoch == v.epoch:
		return e.a
	case e.epoch > v.epoch: // kept for a later version than v
		return v.allow(f, x.scanAllowedMax)
	case e.n == v.n: // only deletions since: the searches skip those
		e = &keptFilter{gen: e.gen, epoch: v.epoch, n: v.n, a: e.a}
	default:
		e = &keptFilter{gen: e.gen, epoch: v.epoch, n: v.n, a: v.extendAllowed(e.a, e.n, f, x.scanAllowedMax)}
	}
	k.keep(key, e)
	return e.a
}

// keep stores e under key unless a set of the same or a later version
// of its generation is there already, evicting the least recently used
// when full.
func (k *keptFilters) keep(key string, e *keptFilter) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if old := k.entries[key]; old != nil && old.gen == e.gen && old.epoch >= e.epoch {
		return
	}
	if k.entries == nil {
		k.entries = make(map[string]*keptFilter)
	}
	if _, ok := k.entries[key]; !ok && len(k.entries) >= maxKeptFilters {
		var oldest string
		for key, o := range k.entries {
			if oldest == "" || o.lastUse < k.entries[oldest].lastUse {
				oldest = key
			}
		}
		delete(k.entries, oldest)
	}
	k.uses++
	e.lastUse = k.uses
	k.entries[key] = e
}

// extendAllowed is a, which f allowed among the slots below n, with the
// slots from n to v.n that f allows added: a copy, as searches may be
// reading a.
func (v *view) extendAllowed(a *allowed, n uint32, f Filter, scanMax int) *allowed {
	b := &allowed{set: make(slotSet, (v.n+63)/64), count: a.count, kept: true}
	copy(b.set, a.set)
	if a.slots != nil {
		b.slots = append(make([]uint32, 0, len(a.slots)+int(v.n-n)), a.slots...)
	}
	asked := map[uint32]bool{} // document ordinal -> allowed
	for s := n; s < v.n; s++ {
		p, off := pageOf(s)
		ref := v.pages[p].doc[off]
		if ref == 0 || v.dead > 0 && !v.alive(s) {
			continue
		}
		ok, seen := asked[ref-1]
		if !seen {
			dead := v.docs.pages.deadAt(ref - 1).Load()
			ok = (dead == 0 || dead > v.epoch) && f(v.docs.pages.doc(ref-1))
			asked[ref-1] = ok
		}
		if !ok {
			continue
		}
		b.set.add(s)
		b.count++
		if b.slots != nil || a.count == 0 {
			b.slots = append(b.slots, s)
		}
	}
	if b.count > scanMax {
		b.slots = nil
	}
	return b
}
