package index

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/docsift/docsift/analysis"
)

// textIndex returns an index of texts under IDs 1, 2, … with no vectors,
// which stays a scan however large.
func textIndex(t testing.TB, texts ...string) *OwnerIndex {
	t.Helper()
	x := testOpts.New("m", 0)
	x.graphFrom = math.MaxInt
	es := make([]Entry, len(texts))
	for i, text := range texts {
		es[i] = Entry{ID: uint64(i + 1), Vector: []float32{}, Text: text}
	}
	must(t, x.Add(es...))
	return x
}

// bm25 scores query against x's current version, by entry ID.
func bm25(x *OwnerIndex, query string) map[uint64]float32 {
	v := x.current.Load()
	s := v.scoreAll(v.queryTerms(query))
	defer s.release()
	out := map[uint64]float32{}
	for _, d := range s.matched {
		out[v.pages.id(d)] = s.score[d]
	}
	return out
}

func TestBM25HandExample(t *testing.T) {
	// Three docs, query "101", k1=0.9, b=0.4. N=3, df=2, avgdl=7/3.
	// Numbers, because a text of words this short is a coin toss for
	// language detection, and docs analysed in different languages
	// stem "apple" differently; digits are the same in every language.
	// idf = ln(1 + (3-2+0.5)/(2+0.5)) = ln 1.6
	// d1 (tf 1, len 2): idf·1·1.9/(1 + 0.9·(0.6+0.4·2/(7/3)))
	// d2 (tf 2, len 3): idf·2·1.9/(2 + 0.9·(0.6+0.4·3/(7/3)))
	// Pairs are indexed too, but a one-word query matches none, and
	// they do not count in a doc's length.
	if bm25K1 != 0.9 || bm25B != 0.4 {
		t.Fatal("hand example assumes k1=0.9, b=0.4")
	}
	x := textIndex(t, "101 202", "101 101 303", "303 404")
	idf := math.Log(1.6)
	want := map[uint64]float64{
		1: idf * 1.9 / (1 + 0.9*(0.6+0.4*2/(7.0/3))),
		2: idf * 2 * 1.9 / (2 + 0.9*(0.6+0.4*3/(7.0/3))),
	}
	got := bm25(x, "101")
	if len(got) != 2 {
		t.Fatalf("%d matches, want 2", len(got))
	}
	for id, w := range want {
		if math.Abs(float64(got[id])-w) > 1e-5 {
			t.Errorf("doc %d: score %.6f, want %.6f", id, got[id], w)
		}
	}
	if hits := x.Search(Query{Text: "101", K: 10}); hits[0].ID != 2 {
		t.Fatalf("doc %d first, want 2", hits[0].ID)
	}
	// Deleting doc 3 changes N and avgdl; scores follow.
	x.Delete(3)
	// N=2, df=2: idf = ln(1 + 0.5/2.5); avgdl = 2.5
	idf2 := math.Log(1.2)
	want1 := idf2 * 1.9 / (1 + 0.9*(0.6+0.4*2/2.5))
	if got := bm25(x, "101")[1]; math.Abs(float64(got)-want1) > 1e-5 {
		t.Errorf("after delete: doc 1 score %.6f, want %.6f", got, want1)
	}
}

func TestLexicalCompactionKeepsScores(t *testing.T) {
	// Enough deletes to compact: compactMinDead, and half the slots.
	const n = 2 * compactMinDead
	texts := make([]string, n)
	var odd []string
	for i := range texts {
		texts[i] = "alpha beta gamma delta"[:5+i%15]
		if i%2 == 1 {
			odd = append(odd, texts[i])
		}
	}
	x := textIndex(t, texts...)
	ref := textIndex(t, odd...)
	var even []uint64
	for id := uint64(1); id <= n; id += 2 {
		even = append(even, id)
	}
	x.Delete(even...)
	if x.gen.n != n/2 {
		t.Fatalf("%d slots after deleting half: no compaction", x.gen.n)
	}
	a, b := bm25(x, "beta gamma"), bm25(ref, "beta gamma")
	if len(a) != len(b) {
		t.Fatalf("%d matches, want %d", len(a), len(b))
	}
	for id, s := range b {
		if got := a[2*id]; got != s { // ref's doc id is x's 2·id
			t.Fatalf("doc %d: %v vs %v", 2*id, got, s)
		}
	}
}

func TestPairsRewardAdjacency(t *testing.T) {
	x := textIndex(t, "solar panel cleaning guide", "panel on solar energy cleaning guide")
	if l := x.gen.pages.docLen(0); l != 4 {
		t.Fatalf("doc length %d counts pairs", l)
	}
	s := bm25(x, "solar panel")
	if s[1] <= s[2] {
		t.Fatalf("adjacent words not preferred: %v vs %v", s[1], s[2])
	}
}

func TestTermTableGrows(t *testing.T) {
	// Thousands of distinct terms force the table to grow several
	// times; every term must still be found.
	var texts []string
	for i := range 3000 {
		texts = append(texts, fmt.Sprintf("t%d", i))
	}
	x := textIndex(t, texts...)
	for i, text := range texts {
		if s := bm25(x, text); len(s) != 1 || s[uint64(i+1)] == 0 {
			t.Fatalf("term %s: %v", text, s)
		}
	}
}

func BenchmarkLexicalScore(b *testing.B) {
	// 50k synthetic chunks over a Zipf-like vocabulary, scored for a
	// three-word query: the lexical half of a hybrid search.
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rng, 1.1, 1, 4999)
	texts := make([]string, 50000)
	words := make([]string, 60)
	for i := range texts {
		for j := range words {
			words[j] = fmt.Sprintf("w%d", zipf.Uint64())
		}
		texts[i] = strings.Join(words, " ")
	}
	v := textIndex(b, texts...).current.Load()
	q := v.queryTerms("w3 w40 w700")
	b.Run("exhaustive", func(b *testing.B) {
		for b.Loop() {
			s := v.scoreAll(q)
			s.top(minCandidates)
			s.release()
		}
	})
	// What a search does: the common word w3 is left out of the first
	// pass (prune.go).
	b.Run("pruned", func(b *testing.B) {
		for b.Loop() {
			v.lexical(q, minCandidates, nil).release()
		}
	})
}

// TestBodyOnlyScoresAsFieldPass: scoreAll's fast path for terms in no head
// gives every doc the score of the pass that gathers both fields (to a
// float32 rounding or two: the arithmetic is arranged differently), over a
// snapshot's postings and those added since, in an owner of two
// languages, before and after deletions: the docs it scores are the same.
func TestBodyOnlyScoresAsFieldPass(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	es, zipf := namedSyntheticEntries(rng, 3000, 5)
	// Some docs in German: a term of both languages' analyses takes the
	// fast path too.
	german := "die katzen schlafen den ganzen tag auf dem sofa und spielen nachts im garten"
	for i := range es {
		switch i % 9 {
		case 0:
			es[i].Text = german + " " + es[i].Text[:40]
		case 1:
			// "spiel" is a term of English docs, and German's of
			// "spielen": that term counts in the German docs only.
			es[i].Text += " spiel"
		}
	}
	x := snapshotThenAdd(t, es, 2000)
	if p := x.current.Load().lex.present(); p&(p-1) == 0 {
		t.Fatalf("one language among the docs (%b), two wanted", p)
	}

	scores := func(v *view, query []queryTerm) map[uint32]float32 {
		s := v.scoreAll(query)
		defer s.release()
		out := make(map[uint32]float32, len(s.matched))
		for _, d := range s.matched {
			out[d] = s.score[d]
		}
		return out
	}
	check := func(deleted bool) {
		v := x.current.Load()
		fast, filtered := 0, 0 // queries with a term the fast path scores, all or some of its postings
		for range 200 {
			words := syntheticWords(zipf, 1+rng.IntN(4))
			if rng.IntN(4) == 0 {
				words += " katzen spielen spiel"
			}
			query := v.queryTerms(words)
			hasFast, hasFiltered := false, false
			for _, q := range query {
				if hb, h := v.gen.lex.postings(headPrefix+q.term, v.n); len(hb)+len(h) == 0 {
					if v.filterFor(q.langs, false).any() {
						hasFiltered = true
					} else {
						hasFast = true
					}
				}
			}
			fast += b2i(hasFast)
			filtered += b2i(hasFiltered)
			want := func() map[uint32]float32 {
				v.tuning.fieldPass = true
				defer func() { v.tuning.fieldPass = false }()
				return scores(v, query)
			}()
			// Filtered postings skipped in the lists, and asked one
			// by one.
			for _, cost := range []int{0, math.MaxInt32} {
				v.tuning.skipCost = cost
				got := scores(v, query)
				v.tuning.skipCost = defaultSkipCost
				if len(got) != len(want) {
					t.Fatalf("query %v, skip cost %d: %d docs scored on the fast path, %d on the field pass", query, cost, len(got), len(want))
				}
				for d, w := range want {
					if g, ok := got[d]; !ok || math.Abs(float64(g-w)) > 4e-7*float64(w) {
						t.Fatalf("query %v, skip cost %d: doc %d scores %v on the fast path, %v on the field pass", query, cost, d, g, w)
					}
				}
			}
		}
		if !deleted && fast < 100 {
			t.Fatalf("only %d of 200 queries had a term in no head of every language: the fast path was hardly tested", fast)
		}
		if filtered < 20 {
			t.Fatalf("only %d of 200 queries had a term whose postings are filtered: that path was hardly tested", filtered)
		}
	}
	check(false)
	for i := 0; i < len(es); i += 7 {
		x.Delete(es[i].ID)
	}
	if v := x.current.Load(); len(v.deleted) != v.dead || !slices.IsSorted(v.deleted) {
		t.Fatalf("%d deleted slots listed of %d, sorted: %v", len(v.deleted), v.dead, slices.IsSorted(v.deleted))
	}
	check(true)
	// Compaction renumbers the slots, and the lists of each language's.
	x.mu.Lock()
	x.rebuild()
	x.publish()
	x.mu.Unlock()
	if v := x.current.Load(); v.dead != 0 || len(v.langs.slots[analysis.German]) == 0 {
		t.Fatalf("after compaction: %d deleted slots, %d German slots listed", v.dead, len(v.langs.slots[analysis.German]))
	}
	check(false)
}

// TestLangSlotsReadFromSnapshot: a snapshot read in place lists the slots
// of each language, and the deleted ones, as the index that wrote it did.
func TestLangSlotsReadFromSnapshot(t *testing.T) {
	es := syntheticEntries(rand.New(rand.NewPCG(5, 6)), 1, 300, 8)
	for i := 0; i < len(es); i += 7 {
		es[i].Text = "die katzen schlafen den ganzen tag auf dem sofa und spielen nachts im garten"
	}
	x := testOpts.New("m", 8)
	must(t, x.Add(es...))
	x.Delete(es[9].ID, es[3].ID, es[200].ID)
	path := filepath.Join(t.TempDir(), "x.idx")
	must(t, x.WriteSnapshot(path, 1))
	y, _, err := testOpts.ReadSnapshot(path)
	must(t, err)
	want, got := x.current.Load(), y.current.Load()
	if len(want.langs.slots[analysis.German]) != (len(es)+6)/7 || !reflect.DeepEqual(got.langs, want.langs) {
		t.Fatalf("languages read from the snapshot: %v, written: %v", got.langs, want.langs)
	}
	if !slices.Equal(got.deleted, []uint32{3, 9, 200}) || !slices.Equal(want.deleted, got.deleted) {
		t.Fatalf("deleted slots read from the snapshot: %v, written: %v", got.deleted, want.deleted)
	}
}

// TestDeadSlotsListedWhileFew: deleted slots are listed in order until
// there are deadListedMax of them.
func TestDeadSlotsListedWhileFew(t *testing.T) {
	var d deadSlots
	rng := rand.New(rand.NewPCG(7, 8))
	want := rng.Perm(deadListedMax)
	for i, s := range want {
		d.add(uint32(s))
		if i%1000 == 0 {
			d.publish()
		}
	}
	if got := d.publish(); len(got) != deadListedMax || !slices.IsSorted(got) || got[0] != 0 || got[len(got)-1] != deadListedMax-1 {
		t.Fatalf("%d slots listed, sorted %v", len(got), slices.IsSorted(got))
	}
	d.add(deadListedMax)
	if got := d.publish(); got != nil || !d.many {
		t.Fatalf("past the limit: %d slots listed", len(got))
	}
}

// TestLangSlotsStopListingMainLanguages: a language is listed until it has
// listedLangMax slots; past that it is one of the owner's main ones.
func TestLangSlotsStopListingMainLanguages(t *testing.T) {
	var l langSlots
	for s := range uint32(listedLangMax) {
		l.add(s, analysis.English)
	}
	l.add(0, analysis.German)
	if len(l.slots[analysis.English]) != listedLangMax || l.many != 0 {
		t.Fatalf("%d English slots listed, many %b", len(l.slots[analysis.English]), l.many)
	}
	l.add(listedLangMax, analysis.English)
	l.add(listedLangMax+1, analysis.English)
	if l.slots[analysis.English] != nil || !l.many.has(analysis.English) || l.many.has(analysis.German) || len(l.slots[analysis.German]) != 1 {
		t.Fatalf("past the limit: %d English slots listed, many %b", len(l.slots[analysis.English]), l.many)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// namedSyntheticEntries makes n synthetic entries of 8 dimensions, every
// nameEvery-th with a name of two words, and the Zipf law their words
// follow.
func namedSyntheticEntries(rng *rand.Rand, n, nameEvery int) ([]Entry, *rand.Zipf) {
	es := syntheticEntries(rng, 1, n, 8)
	zipf := rand.NewZipf(rng, 1.1, 1, syntheticVocabulary-1)
	for i := range es {
		if i%nameEvery == 0 {
			es[i].Name = syntheticWords(zipf, 2) + ".txt"
		}
	}
	return es, zipf
}

// snapshotThenAdd indexes the first inSnapshot entries, loads them from a
// snapshot and adds the rest: postings in a frozen base and added since.
func snapshotThenAdd(t *testing.T, es []Entry, inSnapshot int) *OwnerIndex {
	t.Helper()
	x := testOpts.New("m", 8)
	must(t, x.Add(es[:inSnapshot]...))
	path := filepath.Join(t.TempDir(), "x.idx")
	must(t, x.WriteSnapshot(path, 1))
	x, _, err := testOpts.ReadSnapshot(path)
	must(t, err)
	must(t, x.Add(es[inSnapshot:]...))
	return x
}

func TestUnscored(t *testing.T) {
	for _, c := range []struct {
		score float32
		want  int
	}{
		{0, 1},
		{math.SmallestNonzeroFloat32, 0},
		{1e-30, 0},
		{0.5, 0},
		{math.MaxFloat32, 0},
		{float32(math.Inf(1)), 0},
	} {
		if got := unscored(c.score); got != c.want {
			t.Errorf("unscored(%g) = %d, want %d", c.score, got, c.want)
		}
	}
}

// TestTopDenseAsMatched: reading every doc's score in order gives the pool
// that reading the matched docs' gives, ties included (scores drawn from a
// few values, in arrays of lengths that are and are not multiples of 8).
func TestTopDenseAsMatched(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 200 {
		n := 1 + rng.IntN(3000)
		s := &lexScores{score: make([]float32, n)}
		share := rng.Float64()
		for d := range n {
			if rng.Float64() < share {
				s.score[d] = float32(1+rng.IntN(1+round%20)) / 4
				s.matched = append(s.matched, uint32(d))
			}
		}
		rng.Shuffle(len(s.matched), func(i, j int) { s.matched[i], s.matched[j] = s.matched[j], s.matched[i] })
		k := 1 + rng.IntN(120)
		dense, matched := s.topDense(newTopK(k)), s.topMatched(newTopK(k))
		if !slices.Equal(dense, matched) {
			t.Fatalf("n=%d k=%d matched=%d: dense %v, matched %v", n, k, len(s.matched), dense, matched)
		}
	}
}

func TestAtLeast(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	nan := float32(math.NaN())
	for range 500 {
		xs := make([]float32, rng.IntN(70))
		for i := range xs {
			switch rng.IntN(10) {
			case 0:
				xs[i] = nan
			default:
				xs[i] = float32(rng.IntN(8))
			}
		}
		floor := float32(rng.IntN(9))
		for from := range len(xs) + 1 {
			if got, want := atLeast(xs[from:], floor), atLeastGo(xs[from:], floor); got != want {
				t.Fatalf("atLeast(%v, %g) = %d, want %d", xs[from:], floor, got, want)
			}
		}
	}
}
