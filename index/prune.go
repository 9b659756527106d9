package index

import (
	"slices"
	"sort"
)

// The lexical side of a hybrid search needs BM25F's top pool and the exact
// score of every fusion candidate. Scoring every doc that holds a query
// word costs a read of each word's postings, and a common word is in most
// docs of a large owner while adding almost nothing to a score (its IDF is
// near 0). So, as in MaxScore (Turtle & Flood, 1995), the words whose
// scores together cannot lift a doc into the pool are left out of the
// first pass: the rare words' lists are scored in full, giving each doc
// that holds one of them a partial score, and only the docs whose partial
// score leaves them a chance are scored exactly, one binary search per
// list. A doc holding none of the rare words scores at most what the
// common ones could give it, and the pass is only trusted when that is
// below the pool's worst partial score; otherwise every doc is scored.
// The pool and every score are those exhaustive scoring gives, to the bit:
// a doc's terms are added in the same order, with the same float rounding.

// pruneSlack widens every bound the pruned pass trusts, so that float
// rounding (scores are float32 sums added in other orders) never drops a
// doc that belongs in the pool.
const pruneSlack = 1e-4

// lexTerm is a query term prepared for scoring: its postings in each field
// (the frozen base's, then those added since) and its weight, query
// frequency times IDF.
type lexTerm struct {
	q          queryTerm
	body, head [2][]posting
	w          float64
}

func (t *lexTerm) postings() int {
	return len(t.body[0]) + len(t.body[1]) + len(t.head[0]) + len(t.head[1])
}

// bound is more than t can add to any doc's score: BM25's saturation
// tf·(k1+1)/(tf+k1) stays below k1+1.
func (t *lexTerm) bound() float64 { return t.w * (bm25K1 + 1) }

// lexSide is the lexical side of one search.
type lexSide struct {
	top []scored
	// Exhaustive: every matching doc's score. Pruned: the terms, in
	// query order, to score a doc with.
	all             *lexScores
	v               *view
	terms           []lexTerm
	avgLen, avgHead float64
	oneLang         bool
	skips           skips // scratch for docFreq
}

// lexical returns the lexical side of a search for query on v, its pool
// the k docs ranked first among those a allows (nil: all).
func (v *view) lexical(query []queryTerm, k int, a *allowed) *lexSide {
	terms := v.lookup(query)
	if a == nil {
		if l := v.pruned(terms, k); l != nil {
			return l
		}
	}
	all := v.scoreTerms(terms)
	return &lexSide{all: all, top: all.topAllowed(k, a)}
}

// score is d's exact BM25F.
func (l *lexSide) score(d uint32) float32 {
	if l.all != nil {
		return l.all.score[d]
	}
	return l.exact(d)
}

func (l *lexSide) release() {
	if l.all != nil {
		l.all.release()
	}
}

// pruned is the pruned lexical side of a query's terms (as lookup returns
// them; it leaves them as they are), or nil where it does not apply: a
// query without common words to leave out, or a first pass that cannot
// rule out the docs it did not score.
func (v *view) pruned(terms []lexTerm, k int) *lexSide {
	if v.live == 0 || k <= 0 {
		return nil
	}
	present := v.lex.present()
	l := &lexSide{
		v:       v,
		avgLen:  max(float64(v.totalLen)/float64(v.live), 1),
		avgHead: max(float64(v.lex.headLen)/float64(v.live), 1),
		oneLang: present&(present-1) == 0,
	}
	// Each term weighed first by its postings, as if every one counted:
	// counting those that do (docFreq) asks each posting of most lists
	// of an owner with deletions or more than one language, and most
	// queries have no common word to leave out.
	l.terms = slices.Clone(terms)
	docs := make([]int, len(terms)) // the docs each term counts in
	for i := range l.terms {
		t := &l.terms[i]
		docs[i] = v.live
		if !l.oneLang {
			docs[i] = v.lex.count(t.q.langs)
		}
		t.w = termWeight(t.q, docs[i], t.postings())
	}
	if _, _, _, ok := l.split(); !ok {
		return nil
	}
	l.terms = make([]lexTerm, 0, len(terms))
	for i, t := range terms {
		if df := l.docFreq(&t, keyOf(t.q.term)); df > 0 {
			t.w = termWeight(t.q, docs[i], df)
			l.terms = append(l.terms, t)
		}
	}
	order, common, rest, ok := l.split()
	if !ok {
		return nil
	}
	rareAt := slices.Clone(order[common:])
	slices.Sort(rareAt) // in query order, as scoreAll adds them
	rare := make([]lexTerm, len(rareAt))
	for i, at := range rareAt {
		rare[i] = l.terms[at]
	}

	// The first pass: the rare words' scores of the docs holding them.
	part := v.scoreTerms(rare)
	defer part.release()
	if len(part.matched) < k {
		return nil // docs holding only common words may belong in the pool
	}
	floor := float64(part.top(k)[k-1].score) * (1 - pruneSlack)
	if rest*(1+pruneSlack) >= floor {
		return nil
	}
	top := newTopK(k)
	for _, d := range part.matched {
		if float64(part.score[d])+rest*(1+pruneSlack) >= floor {
			top.push(d, l.exact(d))
		}
	}
	l.top = top.sorted()
	return l
}

// split orders l.terms by bound, ascending, and finds the common words:
// the most, in that order, whose bounds sum (rest) to at most half the
// least bound of the others (a rule of thumb: the first pass must leave
// them little to add). Leaving them out is worth it (ok) only when they
// hold most of the postings.
func (l *lexSide) split() (order []int, common int, rest float64, ok bool) {
	order = make([]int, len(l.terms))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmpFloat(l.terms[a].bound(), l.terms[b].bound()) })
	for common < len(order)-1 && rest+l.terms[order[common]].bound() <= 0.5*l.terms[order[common+1]].bound() {
		rest += l.terms[order[common]].bound()
		common++
	}
	left, read := 0, 0
	for i, o := range order {
		if i < common {
			left += l.terms[o].postings()
		} else {
			read += l.terms[o].postings()
		}
	}
	return order, common, rest, common > 0 && left >= read
}

// exact is d's BM25F as scoreAll computes it: each term's fields'
// normalised frequencies summed in float32, body first, and the terms'
// contributions added in query order.
func (l *lexSide) exact(d uint32) float32 {
	if l.v.dead > 0 && !l.v.alive(d) {
		return 0
	}
	pages := l.v.pages
	lang := pages.slotLang(d)
	var s float32
	for i := range l.terms {
		t := &l.terms[i]
		if !l.oneLang && !t.q.langs.has(lang) {
			continue
		}
		if len(t.head[0])+len(t.head[1]) == 0 {
			// As scoreAll scores a term in no head: scoreBody.
			if tf := tfOf(t.body, d); tf > 0 {
				s += newBodyScorer(t.w, l.avgLen).score(tf, pages.docLen(d))
			}
			continue
		}
		var x float32
		found := false
		if tf := tfOf(t.body, d); tf > 0 {
			norm := 1 - bm25B + bm25B*float64(pages.docLen(d))/l.avgLen
			x, found = float32(float64(tf)/norm), true
		}
		if tf := tfOf(t.head, d); tf > 0 {
			norm := 1 - headB + headB*float64(pages.headLen(d))/l.avgHead
			x += float32(headWeight * float64(tf) / norm)
			found = true
		}
		if found {
			s += contribution(t.w, x)
		}
	}
	return s
}

// counts reports whether doc d counts for t: it is alive, and of one of
// t's languages.
func (l *lexSide) counts(t *lexTerm, d uint32) bool {
	v := l.v
	return (v.dead == 0 || v.alive(d)) && (l.oneLang || t.q.langs.has(v.pages.slotLang(d)))
}

// docFreq is the number of docs that count for t and hold it in either
// field. With no deleted docs in an owner of one language that is the
// body list's length plus the head's docs without a body posting;
// otherwise the body list's length less the docs skipped in it (see
// view.skipped), or, where those are not listed, every posting is asked
// whether it counts; either count of a long list is kept for the view's
// version (a common word's list is counted so by every query that holds
// it, and skipping a million-chunk owner's docs of other languages was
// a twentieth of a search).
func (l *lexSide) docFreq(t *lexTerm, k termKey) int {
	v := l.v
	every := v.dead == 0 && l.oneLang
	headOnly := 0
	for _, list := range t.head {
		for _, p := range list {
			if (every || l.counts(t, p.doc)) && !hasDoc(t.body[0], p.doc) && !hasDoc(t.body[1], p.doc) {
				headOnly++
			}
		}
	}
	if every {
		return len(t.body[0]) + len(t.body[1]) + headOnly
	}
	key := dfKey{k, t.q.langs}
	n := len(t.body[0]) + len(t.body[1])
	if n >= dfCacheMin {
		if c, ok := v.gen.lex.dfs.Load(key); ok {
			if c := c.(dfCount); c.n == v.n && c.epoch == v.epoch {
				return c.df + headOnly
			}
		}
	}
	df, ok := v.keptCount(&l.skips, v.filterFor(t.q.langs, l.oneLang), t.body)
	if !ok {
		df = 0
		for _, list := range t.body {
			for _, p := range list {
				if l.counts(t, p.doc) {
					df++
				}
			}
		}
	}
	if n >= dfCacheMin {
		v.gen.lex.dfs.Store(key, dfCount{n: v.n, epoch: v.epoch, df: df})
	}
	return df + headOnly
}

// dfCacheMin is the shortest body list whose count of docs that count is
// kept (see docFreq): fewer postings are cheaper to count again than to
// remember, and the kept counts stay as many as the owner's common words.
const dfCacheMin = 4096

// dfKey is a term's body key and the languages its docs count in.
type dfKey struct {
	k     termKey
	langs langMask
}

// dfCount is a body list's count of docs that count in the version of n
// slots at deletion epoch epoch.
type dfCount struct {
	n     uint32
	epoch uint64
	df    int
}

// tfOf is d's frequency in a field's lists, 0 when it has none.
func tfOf(lists [2][]posting, d uint32) uint32 {
	for _, list := range lists {
		i := sort.Search(len(list), func(i int) bool { return list[i].doc >= d })
		if i < len(list) && list[i].doc == d {
			return list[i].tf
		}
	}
	return 0
}

// hasDoc reports whether list, in doc order, has a posting of d.
func hasDoc(list []posting, d uint32) bool {
	i := sort.Search(len(list), func(i int) bool { return list[i].doc >= d })
	return i < len(list) && list[i].doc == d
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
