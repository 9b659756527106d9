package index

import (
	"cmp"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/docsift/docsift/analysis"
)

// BM25 parameters. docsift scores chunks, not whole documents: chunks are
// split to a similar size, so length says little about topicality and b is
// lower than the classic 0.75; k1 saturates repeated words sooner, as short
// passages need. These are the values Anserini settled on for passage
// collections (k1=0.9, b=0.4), fixed rather than tuned per owner.
const (
	bm25K1 = 0.9
	bm25B  = 0.4
)

// posting is one doc (a slot) containing a term, with the term's frequency.
type posting struct {
	doc uint32
	tf  uint32
}

// tally is one distinct term of a doc (by key) or of a query (by string)
// with its frequency.
type tally[T comparable] struct {
	of T
	tf uint32
}

// pairPrefix marks an indexed pair of adjacent terms. The byte cannot occur
// in an analysed term, so a pair never collides with a word.
const pairPrefix = "\x01"

// pairWeight scales the BM25 of adjacent-term pairs against single terms.
// Pairs are the ordered-window part of the sequential dependence model
// (Metzler & Croft, 2005): a query's words appearing side by side in a
// chunk is evidence a bag of words cannot see. The pair also counts through
// its two words, so its own weight stays small.
const pairWeight = 0.2

// pairing collects the terms of one field, each followed by the pair it
// makes with the term before it, all behind the field's prefix. Pairs are
// not counted in the field's length, nor are alternative forms (a
// compound's joined form), which take no position and make no pairs:
// length normalisation is about how much text there is, which the words
// already measure.
type pairing struct {
	prefix string
	terms  []string
	prev   string
	length uint32
}

// docTerms is pairing for an entry's fields, keyed as it goes: an entry's
// terms are only ever looked up by key, and making a string of each pair
// was, after the records' JSON, the most an ingest allocated.
type docTerms struct {
	prefix string
	keys   []termKey
	prev   string
	length uint32
}

func (f *docTerms) add(t analysis.Term) {
	f.keys = append(f.keys, keyOfField(f.prefix, t.Text))
	if t.Alt {
		return
	}
	f.length++
	if f.prev != "" {
		f.keys = append(f.keys, keyOfPair(f.prefix, f.prev, t.Text))
	}
	f.prev = t.Text
}

func (f *pairing) add(t analysis.Term) {
	f.terms = append(f.terms, f.prefix+t.Text)
	if t.Alt {
		return
	}
	f.length++
	if f.prev != "" {
		f.terms = append(f.terms, f.prefix+pairPrefix+f.prev+" "+t.Text)
	}
	f.prev = t.Text
}

func isPair(term string) bool { return len(term) > 0 && term[0] == pairPrefix[0] }

// termCounter counts the terms of one text after another with one map: Add
// counts thousands of texts per call, outside the writer lock, and a map
// per text was most of what a commit allocated, so most of the garbage
// collections that searches share the CPU with.
type termCounter struct {
	terms map[string]int  // term -> index in its tally
	keys  map[termKey]int // key -> index in its tally
}

// count tallies the distinct items of xs, in the order they first come,
// with *at as its scratch.
func count[T comparable](at *map[T]int, xs []T) []tally[T] {
	if *at == nil {
		*at = make(map[T]int, len(xs))
	}
	clear(*at)
	out := make([]tally[T], 0, len(xs)) // read once into the postings: one allocation, not a doubling series
	for _, x := range xs {
		if i, ok := (*at)[x]; ok {
			out[i].tf++
			continue
		}
		(*at)[x] = len(out)
		out = append(out, tally[T]{x, 1})
	}
	return out
}

// lexicon is the inverted index of a generation: for every term, the slots
// whose text contains it. Docs are slots, so a search needs no map from
// entry to doc, and a doc's length and deletion live with its slot.
//
// Searches read it without locks. Terms are found through termTable, an
// open-addressing hash table that only the writer inserts into; each term's
// postings are a slice published through an atomic pointer. Postings are
// appended in slot order, so a search reads a list up to its view's slot
// count and ignores what the writer has appended since.
type lexicon struct {
	// base, when set, holds the postings of the slots below base.n, read
	// in place from a snapshot (see frozen.go); table then holds only
	// the postings of later slots. It never changes once searched.
	base  *frozenLexicon
	table atomic.Pointer[termTable]
	// dfs caches, for the pruned lexical pass, how many docs of a common
	// word's list count (see lexSide.docFreq).
	dfs sync.Map

	// Writer only.
	terms int             // terms in table
	dirty []*termPostings // terms with postings staged since the last flush
	log   []*termPostings // terms flush published postings of, once a flush, while logging
	// logging is set from startLog to takeLog.
	logging bool
}

// termPostings is one term and its postings.
//
// An owner has millions of terms (most adjacent-word pairs occur once), so
// a term costs one 24-byte object besides its postings: its text is kept
// as a hash (see termKey), and the
// published postings are a pointer to the first of the backing array's
// and a count, not a slice header allocated at every publish. The writer
// stores a new array before it raises n past the old one's capacity, and
// a search loads n before data, so the array it reads holds n postings.
type termPostings struct {
	key    termKey
	data   atomic.Pointer[posting] // the backing array's first posting
	n      atomic.Uint32           // postings published
	staged uint32                  // writer only: postings in the backing array
}

// postingsCap is the capacity of a backing array holding n postings, the
// first of a fixed sequence at or above n: powers of two up to a page of
// them, then a quarter more at a time (rounded to a page), so short lists
// fit Go's size classes and long ones waste at most a fifth.
func postingsCap(n uint32) uint32 {
	const page = 4096 / 8 // postings in 4 KiB
	c := uint32(1)
	for c < n {
		if c < page {
			c *= 2
		} else {
			c += (c/4 + page - 1) / page * page
		}
	}
	return c
}

// termKey is a term as the lexicon keeps it: a 64-bit hash of its text
// instead of the text. Nine in ten of an owner's terms occur in one chunk
// (adjacent-word pairs, names, numbers), and their text and its string
// header were a third of the index's memory. Two terms that hash alike
// would share postings; among the ten million terms of a very large owner
// that happens with a probability of about one in three hundred thousand,
// and it would cost a chunk a few points of BM25 for a query with one of
// the two words, nothing more. The hash is fixed (FNV-1a, then a
// finaliser that spreads it over all 64 bits), so snapshots can store
// keys.
type termKey uint64

func keyOf(term string) termKey { return spread(fnv1a(fnvOffset, term)) }

// keyOfField is keyOf(prefix + term), and keyOfPair keyOf(prefix +
// pairPrefix + first + " " + second), with no string made: FNV-1a reads
// the bytes in order, whichever strings hold them.
func keyOfField(prefix, term string) termKey { return spread(fnv1a(fnv1a(fnvOffset, prefix), term)) }

func keyOfPair(prefix, first, second string) termKey {
	h := fnv1a(fnv1a(fnv1a(fnvOffset, prefix), pairPrefix), first)
	return spread(fnv1a(fnv1a(h, " "), second))
}

const fnvOffset = 14695981039346656037

func fnv1a(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// spread is splitmix64's finaliser.
func spread(h uint64) termKey {
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return termKey(h)
}

// termTable maps terms to their postings; linear probing, at most 3/4 full.
// Entries are only ever added, and a table that fills is replaced by a
// larger copy, so a reader holding either table finds every term that has
// postings in its view.
//
// Keys are placed by their bits mixed with a seed of the lexicon's own: a
// lexicon fills from another's terms in that one's table order (a snapshot,
// a compaction), and placing them by the key's own low bits would pile
// them into a few long runs, which linear probing then walks for every
// insert (a load took minutes).
type termTable struct {
	seed  uint64
	shift uint8                          // 64 − log2(len(slots))
	slots []atomic.Pointer[termPostings] // len is a power of two
}

func newTermTable(seed uint64, size int) *termTable {
	return &termTable{seed: seed, shift: uint8(64 - bits.Len(uint(size)-1)), slots: make([]atomic.Pointer[termPostings], size)}
}

// home is the slot k's probe sequence starts at.
func (t *termTable) home(k termKey) uint64 {
	return (uint64(k) ^ t.seed) * 0x9e3779b97f4a7c15 >> t.shift
}

// minTermSlots is the size of a new lexicon's table.
const minTermSlots = 64

func newLexicon() *lexicon {
	l := &lexicon{}
	l.table.Store(newTermTable(rand.Uint64(), minTermSlots))
	return l
}

// findKey returns the postings of the term with key k, or nil.
func (t *termTable) findKey(k termKey) *termPostings {
	mask := uint64(len(t.slots) - 1)
	for i := t.home(k); ; i = (i + 1) & mask {
		if e := t.slots[i].Load(); e == nil || e.key == k {
			return e
		}
	}
}

// put stores e in the first free slot of its probe sequence.
func (t *termTable) put(e *termPostings) {
	mask := uint64(len(t.slots) - 1)
	for i := t.home(e.key); ; i = (i + 1) & mask {
		if t.slots[i].Load() == nil {
			t.slots[i].Store(e)
			return
		}
	}
}

// each calls fn for every term with its postings, published or staged,
// in the base and in the table: writer only. Within a term, the base's
// postings come first, in slot order as everywhere.
func (l *lexicon) each(fn func(k termKey, base, added []posting)) {
	t := l.table.Load()
	if b := l.base; b != nil {
		for i, k := range b.keys {
			var added []posting
			if e := t.findKey(termKey(k)); e != nil {
				added = e.all()
			}
			fn(termKey(k), b.list(i), added)
		}
	}
	for i := range t.slots {
		if e := t.slots[i].Load(); e != nil && (l.base == nil || l.base.find(e.key) == nil) {
			fn(e.key, nil, e.all())
		}
	}
}

// postings returns the term's postings of slots below n: the base's,
// then those added since.
func (l *lexicon) postings(term string, n uint32) (base, added []posting) {
	k := keyOf(term)
	if l.base != nil {
		base = l.base.find(k)
	}
	if t := l.table.Load().findKey(k); t != nil {
		added = t.upTo(n)
	}
	return base, added
}

// termFor returns the postings of the term with key k, adding the term if
// it is new.
func (l *lexicon) termFor(k termKey) *termPostings { return l.termIn(k, nil) }

// termIn is termFor, a new term taking fresh (zero) when it is not nil.
func (l *lexicon) termIn(k termKey, fresh *termPostings) *termPostings {
	t := l.table.Load()
	if e := t.findKey(k); e != nil {
		return e
	}
	e := fresh
	if e == nil {
		e = &termPostings{}
	}
	e.key = k
	t.put(e)
	l.terms++
	if 4*l.terms > 3*len(t.slots) {
		bigger := newTermTable(t.seed, 2*len(t.slots))
		for i := range t.slots {
			if old := t.slots[i].Load(); old != nil {
				bigger.put(old)
			}
		}
		l.table.Store(bigger)
	}
	return e
}

// stage appends p to t's postings without publishing it. When the backing
// array is full, the postings move to a larger one, stored at once: its
// published postings are the same.
//
// Two terms of one slot whose keys collide (see termKey) give one posting
// with both frequencies, so that every list stays strictly in slot order,
// as snapshots are checked to be. No view covers the slot being indexed
// yet, so no search reads that posting while it changes.
func (l *lexicon) stage(t *termPostings, p posting) {
	if all := t.all(); len(all) > 0 && all[len(all)-1].doc == p.doc {
		all[len(all)-1].tf += p.tf
		return
	}
	if t.staged == t.n.Load() {
		l.dirty = append(l.dirty, t)
	}
	if t.staged == 0 || t.staged == postingsCap(t.staged) {
		grown := make([]posting, postingsCap(t.staged+1))
		copy(grown, t.all())
		t.data.Store(&grown[0])
	}
	unsafe.Slice(t.data.Load(), t.staged+1)[t.staged] = p
	t.staged++
}

// flush publishes every staged posting. Searches still read each list up
// to their view's slot count, so flushing ahead of a view is harmless.
func (l *lexicon) flush() {
	if l.logging {
		l.log = append(l.log, l.dirty...)
	}
	for i, t := range l.dirty {
		t.n.Store(t.staged)
		l.dirty[i] = nil
	}
	l.dirty = l.dirty[:0]
}

// startLog has flush note each term it publishes postings of, until
// takeLog: when no postings are staged, these are then all the terms with
// postings of the slots added since. A whole snapshot's move takes them
// with the writer lock held, where a walk of every term took 0.15 s at a
// million chunks (1.3 million terms in the heap).
func (l *lexicon) startLog() {
	l.logging, l.log = true, nil
}

// takeLog ends the log startLog started and returns its terms, each once;
// nil when none was started.
func (l *lexicon) takeLog() []*termPostings {
	log := l.log
	l.logging, l.log = false, nil
	slices.SortFunc(log, func(a, b *termPostings) int { return cmp.Compare(a.key, b.key) })
	return slices.Compact(log)
}

// tableTerms yields every term of the table.
func (l *lexicon) tableTerms(yield func(*termPostings) bool) {
	t := l.table.Load()
	for i := range t.slots {
		if p := t.slots[i].Load(); p != nil && !yield(p) {
			return
		}
	}
}

// all returns every posting of t, published or staged; writer only.
func (t *termPostings) all() []posting {
	if t.staged == 0 {
		return nil
	}
	return unsafe.Slice(t.data.Load(), t.staged)
}

// upTo returns t's published postings of slots below n. Only a search on
// a view older than the last publish finds any past n.
func (t *termPostings) upTo(n uint32) []posting {
	count := t.n.Load() // before data: see termPostings
	if count == 0 {
		return nil
	}
	ps := unsafe.Slice(t.data.Load(), count)
	if ps[len(ps)-1].doc < n {
		return ps
	}
	return ps[:sort.Search(len(ps), func(i int) bool { return ps[i].doc >= n })]
}

// lexScores is the BM25F score of every doc matching a query, kept dense so
// that fusion can look up any candidate's exact score, not only the top ones.
type lexScores struct {
	score   []float32 // doc number -> score; valid for docs in matched
	matched []uint32

	// Scratch for one query term: its weighted, normalised frequency in
	// each doc that has it (zero elsewhere), and those docs.
	tf      []float32
	touched []uint32
	kept    []posting   // a term's postings that count, when some do not
	runs    [][]posting // the same, as runs of its lists (see bodyRuns)
	skips   skips       // the docs skipped in them
}

var lexScoresPool = sync.Pool{New: func() any { return new(lexScores) }}

func (s *lexScores) release() {
	if s.dense() {
		clear(s.score) // in order, as top read them
	} else {
		for _, d := range s.matched {
			s.score[d] = 0
		}
	}
	s.matched = s.matched[:0]
	lexScoresPool.Put(s)
}

// scoreAll computes BM25F (see fields.go; Okapi BM25 with Lucene's
// non-negative IDF when a doc has no head) for every doc of v containing
// a query term in its text or head, counting each term only for the docs
// whose language's analysis of the query gave it (see queryTerms). Query
// terms repeated in the query count once per occurrence, as in classic
// BM25. Postings of deleted docs stay in the lists until compaction and are
// skipped here.
func (v *view) scoreAll(query []queryTerm) *lexScores { return v.scoreTerms(v.lookup(query)) }

// lookup returns query's terms with their postings of v's slots, leaving
// out those no doc holds.
func (v *view) lookup(query []queryTerm) []lexTerm {
	terms := make([]lexTerm, 0, len(query))
	lex := v.gen.lex
	for _, q := range query {
		t := lexTerm{q: q}
		t.body[0], t.body[1] = lex.postings(q.term, v.n)
		t.head[0], t.head[1] = lex.postings(headPrefix+q.term, v.n)
		if t.postings() > 0 {
			terms = append(terms, t)
		}
	}
	return terms
}

// scoreTerms is scoreAll of the terms lookup returned.
func (v *view) scoreTerms(terms []lexTerm) *lexScores {
	s := lexScoresPool.Get().(*lexScores)
	if cap(s.score) < int(v.n) {
		s.score = make([]float32, v.n)
	}
	s.score = s.score[:v.n]
	n := v.live
	if n == 0 {
		return s
	}
	avgLen := max(float64(v.totalLen)/float64(n), 1)
	avgHead := max(float64(v.lex.headLen)/float64(n), 1)
	present := v.lex.present()
	oneLang := present&(present-1) == 0
	for _, t := range terms {
		q := t.q
		bodyBase, body := t.body[0], t.body[1]
		headBase, head := t.head[0], t.head[1]
		f := v.filterFor(q.langs, oneLang)
		if !v.tuning.fieldPass && len(headBase)+len(head) == 0 {
			docs := n
			if !oneLang {
				docs = v.lex.count(q.langs) // n, by another sum: the field pass's
			}
			runs := v.bodyRuns(s, f, bodyBase, body)
			df := 0
			for _, r := range runs {
				df += len(r)
			}
			v.scoreBody(s, newBodyScorer(termWeight(q, docs, df), avgLen), runs)
			continue
		}
		// Each field's frequency, normalised by its length, summed
		// with the field weights, for the docs of the term's languages;
		// df is the docs with either field. Its scratch is made when
		// first needed: most owners' queries never come here.
		if cap(s.tf) < int(v.n) {
			s.tf = make([]float32, v.n)
		}
		s.tf = s.tf[:v.n]
		s.touched = s.touched[:0]
		for _, list := range [2][]posting{bodyBase, body} {
			for _, p := range list {
				if !f.keeps(v, p.doc) {
					continue
				}
				norm := 1 - bm25B + bm25B*float64(v.pages.docLen(p.doc))/avgLen
				s.tf[p.doc] = float32(float64(p.tf) / norm)
				s.touched = append(s.touched, p.doc)
			}
		}
		for _, list := range [2][]posting{headBase, head} {
			for _, p := range list {
				if !f.keeps(v, p.doc) {
					continue
				}
				if s.tf[p.doc] == 0 {
					s.touched = append(s.touched, p.doc)
				}
				norm := 1 - headB + headB*float64(v.pages.headLen(p.doc))/avgHead
				s.tf[p.doc] += float32(headWeight * float64(p.tf) / norm)
			}
		}
		if len(s.touched) == 0 {
			continue
		}
		// The term's IDF is that of the docs analysed in its languages:
		// a term is a string of one language's rules ("typ" is French
		// for "types"), so only those docs could have it, and among all
		// docs it would look rarer than it is. In an owner of one
		// language this is plain BM25.
		df, docs := len(s.touched), n
		if !oneLang {
			docs = v.lex.count(q.langs)
		}
		w := termWeight(q, docs, df)
		for _, d := range s.touched {
			x := s.tf[d]
			s.tf[d] = 0
			if s.score[d] == 0 {
				s.matched = append(s.matched, d)
			}
			s.score[d] += contribution(w, x)
		}
	}
	return s
}

// scoreBody adds a term's scores to s when the term is in no doc's head:
// every posting of runs counts (see bodyRuns). Its df is
// then known before the pass, and so its weight, and the pass scores each
// doc at once instead of gathering field frequencies first. That is the
// common case, and at a million chunks a common word's list is hundreds of
// thousands of postings: a search's time is spent here.
func (v *view) scoreBody(s *lexScores, c bodyScorer, runs [][]posting) {
	for _, list := range runs {
		// Every doc is written past the matched ones and counted only
		// when it scored nothing yet: whether it did is a coin toss for
		// a query's second word, and a branch on it stalled the pass
		// more than the arithmetic. The count is a local of the page's
		// loop: one the closure shares lives in memory, and each
		// posting waited for the last one's store to it.
		m := len(s.matched)
		s.matched = slices.Grow(s.matched, len(list))
		next := s.matched[:cap(s.matched)]
		v.pages.byPage(list, func(pg *page, first uint32, run []posting) {
			docLen, score, at := pg.docLen, s.score, m
			for _, p := range run {
				old := score[p.doc]
				next[at] = p.doc
				at += unscored(old)
				score[p.doc] = old + c.score(p.tf, docLen[p.doc-first])
			}
			m = at
		})
		s.matched = next[:m]
	}
}

// unscored is 1 when score is +0, as a doc's is until a term scores it
// (scores are never negative), else 0, without a branch: only 0 minus 1
// sets the top bit of a uint64.
func unscored(score float32) int {
	return int((uint64(math.Float32bits(score)) - 1) >> 63)
}

// bodyScorer is BM25 for a term found in a doc's body alone, arranged for
// one division a posting. With x = tf/norm, BM25's w·x·(k1+1)/(x+k1) is
// w·(k1+1)·tf / (tf + k1·norm), and k1·norm = k1·(1−b) + k1·b·len/avgLen
// is linear in the doc's length. It computes in float32, as scores are
// kept: in float64, with its conversions and slower division, the pass
// took a median 12% longer at a million chunks (BenchmarkSearchSnapshot/
// lexical, six alternated rounds), for no change in any judged ranking.
// The field pass (BM25F, for terms also in heads) computes x first in
// float64; the two agree to a few float32 roundings, and a term is always
// scored the same way in exhaustive and pruned passes (see
// lexSide.exact), so they agree to the bit.
type bodyScorer struct {
	w    float32 // the term's weight times k1+1
	base float32 // k1·(1−b)
	per  float32 // k1·b/avgLen
}

func newBodyScorer(w, avgLen float64) bodyScorer {
	return bodyScorer{w: float32(w * (bm25K1 + 1)), base: float32(bm25K1 * (1 - bm25B)), per: float32(bm25K1 * bm25B / avgLen)}
}

func (c bodyScorer) score(tf, docLen uint32) float32 {
	t := float32(tf)
	return c.w * t / (t + c.base + c.per*float32(docLen))
}

// postingFilter says which postings of a term count: not those of deleted
// docs, nor those of docs in a language whose analysis of the query did
// not give the term. An owner with any deletion, or with a few docs that
// detection put in another language (a handful among a million chunks is
// usual), filters every list.
type postingFilter struct {
	dead  bool
	langs langMask // zero: every language counts
}

func (v *view) filterFor(langs langMask, oneLang bool) postingFilter {
	f := postingFilter{dead: v.dead > 0}
	if !oneLang && v.lex.present()&^langs != 0 {
		f.langs = langs
	}
	return f
}

func (f postingFilter) any() bool { return f.dead || f.langs != 0 }

func (f postingFilter) keeps(v *view, d uint32) bool {
	p, off := pageOf(d)
	return f.keepsAt(v, v.pages[p], uint32(off))
}

// keepsAt is keeps of the slot at offset o of page pg.
func (f postingFilter) keepsAt(v *view, pg *page, o uint32) bool {
	return (!f.dead || v.aliveAt(pg, o)) && (f.langs == 0 || f.langs.has(analysis.Lang(pg.lang[o])))
}

// defaultSkipCost is what skipping one doc of a posting list costs (a
// galloping search from the last skipped) in postings asked one at a time, as
// measured on a million-chunk owner with 1,000 deletions and 600 docs in
// other languages (BenchmarkSearchSnapshot/lexical-deleted).
const defaultSkipCost = 4

// bodyRuns returns the postings of a term's body lists that f keeps: the
// lists themselves when every posting counts, else the runs between the
// docs that do not (see skipped), else the postings copied one by one into
// s.
func (v *view) bodyRuns(s *lexScores, f postingFilter, lists ...[]posting) [][]posting {
	s.runs = s.runs[:0]
	if !f.any() {
		return append(s.runs, lists...)
	}
	skip, ok := v.skipped(&s.skips, f, lists)
	if !ok {
		s.kept = f.keep(v, lists, s.kept[:0])
		return append(s.runs, s.kept)
	}
	for _, list := range lists {
		run := 0 // where the current run starts
		skipAt(list, skip, func(i int) {
			s.runs = append(s.runs, list[run:i])
			run = i + 1
		})
		s.runs = append(s.runs, list[run:])
	}
	return s.runs
}

// keptCount is how many postings of lists f keeps, where skipped lists the
// docs they drop: their number less those docs found among them.
func (v *view) keptCount(c *skips, f postingFilter, lists [2][]posting) (int, bool) {
	skip, ok := v.skipped(c, f, lists[:])
	if !ok {
		return 0, false
	}
	n := len(lists[0]) + len(lists[1])
	for _, list := range lists {
		skipAt(list, skip, func(int) { n-- })
	}
	return n, true
}

// skipAt calls found, in order, with the index of each posting of list
// whose doc is in skip (in order too).
func skipAt(list []posting, skip []uint32, found func(i int)) {
	from := 0 // where the search goes on
	for _, d := range skip {
		if from == len(list) {
			return
		}
		from += seek(list[from:], d)
		if from < len(list) && list[from].doc == d {
			found(from)
			from++
		}
	}
}

// skips is scratch for the docs skipped in a term's lists.
type skips struct{ skip, merged []uint32 }

// skipped returns, in order, the docs whose postings f drops from lists,
// where those docs are listed (the deleted ones, those of the languages
// that do not count) and few beside the postings; ok is false where the
// postings are better asked one by one.
func (v *view) skipped(c *skips, f postingFilter, lists [][]posting) (skip []uint32, ok bool) {
	postings, n := 0, 0
	for _, list := range lists {
		postings += len(list)
	}
	listed := true
	if f.dead {
		listed = len(v.deleted) == v.dead
		n += len(v.deleted)
	}
	var out langMask // the languages whose docs do not count
	if f.langs != 0 {
		out = v.lex.present() &^ f.langs
		listed = listed && out&v.langs.many == 0
		for l := range analysis.NumLangs {
			if out.has(l) {
				n += len(v.langs.slots[l])
			}
		}
	}
	if !listed || n*v.tuning.skipCost > postings {
		return nil, false
	}
	switch {
	case out == 0:
		return v.deleted, true
	case !f.dead && out&(out-1) == 0:
		return v.langs.slots[bits.TrailingZeros64(uint64(out))], true
	}
	// Merged once per view: every term of every query on it skips the
	// same docs, and at a million chunks merging them again for each
	// was a tenth of a search.
	key := skipKey{f.dead, out}
	if skip, ok := v.skips.Load(key); ok {
		return skip.([]uint32), true
	}
	skip = c.skip[:0]
	if f.dead {
		skip = append(skip, v.deleted...)
	}
	for l := range analysis.NumLangs {
		if out.has(l) {
			// Each list is in order: merged, not sorted again.
			c.merged = mergeSorted(c.merged[:0], skip, v.langs.slots[l])
			skip, c.merged = c.merged, skip
		}
	}
	c.skip = skip
	skip = slices.Clone(skip)
	v.skips.Store(key, skip)
	return skip, true
}

// skipKey names a list of docs skipped in posting lists (see skipped).
type skipKey struct {
	dead bool
	out  langMask
}

// seek returns the index of the first posting of list at or past doc d:
// a galloping search, which reads only near the start of the list when d
// is near, as the next doc to skip usually is.
func seek(list []posting, d uint32) int {
	lo, hi := 0, 1
	for hi < len(list) && list[hi].doc < d {
		lo, hi = hi, 2*hi
	}
	hi = min(hi+1, len(list))
	return lo + sort.Search(hi-lo, func(i int) bool { return list[lo+i].doc >= d })
}

// mergeSorted appends to dst the union of two sorted lists, in order.
func mergeSorted(dst, a, b []uint32) []uint32 {
	for len(a) > 0 && len(b) > 0 {
		if a[0] <= b[0] {
			dst, a = append(dst, a[0]), a[1:]
		} else {
			dst, b = append(dst, b[0]), b[1:]
		}
	}
	return append(append(dst, a...), b...)
}

// keep appends to kept the postings of lists that count, as keeps says.
func (f postingFilter) keep(v *view, lists [][]posting, kept []posting) []posting {
	for _, list := range lists {
		v.pages.byPage(list, func(pg *page, first uint32, run []posting) {
			for _, p := range run {
				if f.keepsAt(v, pg, p.doc-first) {
					kept = append(kept, p)
				}
			}
		})
	}
	return kept
}

// termWeight is q's weight among docs docs of which df hold it: its query
// frequency times its IDF (Lucene's non-negative form), pairs weighed
// down by pairWeight.
func termWeight(q queryTerm, docs, df int) float64 {
	idf := math.Log(1 + (float64(docs)-float64(df)+0.5)/(float64(df)+0.5))
	w := float64(q.tf) * idf
	if isPair(q.term) {
		w *= pairWeight
	}
	return w
}

// contribution is what a term of weight w adds to the score of a doc
// whose fields hold it with the weighted, normalised frequency x: BM25's
// saturation.
func contribution(w float64, x float32) float32 {
	tf := float64(x)
	return float32(w * tf * (bm25K1 + 1) / (tf + bm25K1))
}

// top returns the k best docs of s.
func (s *lexScores) top(k int) []scored {
	if k <= 0 {
		return nil
	}
	t := newTopK(k)
	if s.dense() {
		return s.topDense(t)
	}
	return s.topMatched(t)
}

// topMatched is top over the matched docs only.
func (s *lexScores) topMatched(t *topK) []scored {
	k := t.k
	// Once the heap is full, most of a large owner's matches score below
	// its worst: they are turned away by one comparison here.
	floor := float32(math.Inf(-1))
	for _, d := range s.matched {
		if x := s.score[d]; x >= floor && t.push(d, x) && len(t.heap) == k {
			floor = t.heap[0].score
		}
	}
	return t.sorted()
}

// denseTop: top reads every doc's score in order, eight at a time, when at
// least 1/denseTop of the docs matched, rather than fetch each matched
// one's, and release then clears them all. A query of common words
// matches half a large owner, and the fetches were a quarter of its BM25.
const denseTop = 8

func (s *lexScores) dense() bool { return len(s.matched) >= len(s.score)/denseTop }

// topDense is top over every doc, in slot order: a doc scores more than 0
// once matched, and a doc meeting an equal score later has a higher slot,
// which ranks it below (see topK), so only greater scores are offered.
func (s *lexScores) topDense(t *topK) []scored {
	floor := float32(math.SmallestNonzeroFloat32)
	for d := 0; ; d++ {
		i := atLeast(s.score[d:], floor)
		if d += i; d == len(s.score) {
			return t.sorted()
		}
		if t.push(uint32(d), s.score[d]) && len(t.heap) == t.k {
			floor = math.Nextafter32(t.heap[0].score, float32(math.Inf(1)))
		}
	}
}

// atLeastGo is atLeast, one float at a time.
func atLeastGo(xs []float32, floor float32) int {
	for i, x := range xs {
		if x >= floor {
			return i
		}
	}
	return len(xs)
}
