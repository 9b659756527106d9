package index

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/docsift/docsift/analysis"
)

// entryIndex returns an index of entries with no vectors, which stays a
// scan however large.
func entryIndex(t testing.TB, entries ...Entry) *OwnerIndex {
	t.Helper()
	x := testOpts.New("m", 0)
	x.graphFrom = math.MaxInt
	for i := range entries {
		entries[i].Vector = []float32{}
	}
	must(t, x.Add(entries...))
	return x
}

func TestBM25FHandExample(t *testing.T) {
	// Numbers, so that every text is Neutral to language detection. Query
	// "7": N=3, df=2 (doc 1 by its name, doc 2 by its text).
	// Body lengths 2, 2, 2 (avg 2); head lengths 2, 1, 0 (avg 1).
	// doc 1: tf~ = 2·1/(0.25 + 0.75·2/1) = 2/1.75
	// doc 2: tf~ = 1/(0.6 + 0.4·2/2) = 1
	// score = idf·tf~·(k1+1)/(tf~+k1), idf = ln(1 + 1.5/2.5)
	if bm25K1 != 0.9 || bm25B != 0.4 || headWeight != 2 || headB != 0.75 {
		t.Fatal("hand example assumes k1=0.9, b=0.4, head weight 2, head b 0.75")
	}
	x := entryIndex(t,
		Entry{ID: 1, Text: "101 202", Name: "7 8"},
		Entry{ID: 2, Text: "7 303", Name: "9"},
		Entry{ID: 3, Text: "404 505"},
	)
	idf := math.Log(1.6)
	bm := func(tf float64) float64 { return idf * tf * 1.9 / (tf + 0.9) }
	want := map[uint64]float64{1: bm(2 / 1.75), 2: bm(1)}
	got := bm25(x, "7")
	if len(got) != len(want) {
		t.Fatalf("matches %v, want docs 1 and 2", got)
	}
	for id, w := range want {
		if math.Abs(float64(got[id])-w) > 1e-5 {
			t.Errorf("doc %d: score %.6f, want %.6f", id, got[id], w)
		}
	}
}

// TestNameAndTitleAreSearched checks the head field end to end: a file is
// found by the words of its name however it was written, and a word in
// the name counts more than the same word in someone else's text.
func TestNameAndTitleAreSearched(t *testing.T) {
	x := entryIndex(t,
		Entry{ID: 1, Name: "acme-q3-report.pdf", Text: "Revenue grew in every region during the quarter, led by the new product line."},
		Entry{ID: 2, Name: "minutes.txt", Text: "The report from the board mentioned that Acme would publish its accounts later."},
		Entry{ID: 3, Name: "notes.md", Title: "Quarterly planning", Text: "We talked about hiring and the office move."},
		Entry{ID: 4, Name: "holiday.txt", Text: "Plans for the summer holiday and the train tickets."},
	)
	for _, c := range []struct {
		query string
		want  uint64
	}{
		{"acme q3 report", 1},
		{"acme-q3-report", 1},
		{"quarterly planning", 3},
	} {
		hits := x.Search(Query{Text: c.query, K: 3})
		if len(hits) == 0 || hits[0].ID != c.want {
			t.Errorf("%q: hits %v, want %d first", c.query, hits, c.want)
		}
	}
}

// TestQueryIsAnalysedAsEachEntryWas checks that a query matches a chunk in
// another language by the words they share, and chunks of its own
// language through their stems.
func TestQueryIsAnalysedAsEachEntryWas(t *testing.T) {
	x := entryIndex(t,
		Entry{ID: 1, Text: "Die Katzen schlafen den ganzen Tag auf dem Sofa und spielen in der Nacht mit ihren Spielzeugen im Garten."},
		Entry{ID: 2, Text: "The cats are sleeping all day long on the sofa, and at night they play with their toys in the garden."},
		Entry{ID: 3, Text: "Le chat dort toute la journée sur le canapé et joue la nuit avec ses jouets dans le jardin."},
	)
	v := x.current.Load()
	for s, want := range []analysis.Lang{analysis.German, analysis.English, analysis.French} {
		if got := v.pages.slotLang(uint32(s)); got != want {
			t.Fatalf("slot %d analysed as %v, want %v", s, got, want)
		}
	}
	for _, c := range []struct {
		query string
		want  uint64
	}{
		{"Katze", 1},        // German stem of Katzen
		{"sleep cat", 2},    // English stems
		{"chats", 3},        // French plural
		{"jouet canape", 3}, // accents left out
	} {
		hits := x.Search(Query{Text: c.query, K: 3})
		if len(hits) == 0 || hits[0].ID != c.want {
			t.Errorf("%q: hits %v, want %d first", c.query, hits, c.want)
		}
	}
	sofa := x.Search(Query{Text: "Sofa", K: 3})
	if got := len(sofa); got != 2 {
		t.Errorf("%q matches %d entries, want the German and the English one", "Sofa", got)
	}
	for _, h := range sofa {
		if want := []analysis.Lang{1: analysis.German, 2: analysis.English}[h.ID]; h.Lang != want {
			t.Errorf("hit %d says its text was analysed in %v, want %v", h.ID, h.Lang, want)
		}
	}
	if got := x.Language(); got != analysis.English {
		t.Errorf("Language() = %v, want the first of a three-way tie, English", got)
	}
}

func TestSnapshotKeepsLanguagesAndHeads(t *testing.T) {
	x := entryIndex(t,
		Entry{ID: 1, Name: "katzen.txt", Text: "Die Katzen schlafen den ganzen Tag auf dem Sofa und spielen in der Nacht."},
		Entry{ID: 2, Name: "cats.txt", Title: "Cats", Text: "The cats are sleeping all day long on the sofa, and at night they play."},
		Entry{ID: 3, Name: "gone.txt", Text: "A deleted entry must not count in the totals."},
	)
	x.Delete(3)
	path := filepath.Join(t.TempDir(), "o.idx")
	must(t, x.WriteSnapshot(path, 7))
	y, _, err := testOpts.ReadSnapshot(path)
	must(t, err)
	if a, b := x.current.Load().lex, y.current.Load().lex; a != b {
		t.Errorf("totals after a round trip %+v, want %+v", b, a)
	}
	for _, q := range []string{"Katze", "cats", "cats.txt", "sofa"} {
		a, b := x.Search(Query{Text: q, K: 3}), y.Search(Query{Text: q, K: 3})
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%q: %v after a round trip, want %v", q, b, a)
		}
	}
}

// TestSnapshotOfOtherRulesIsRefused checks that an index whose terms were
// analysed by other analysis rules, or of another format, is rebuilt rather
// than searched with queries it cannot match, and said to be of another
// version, not corrupt.
func TestSnapshotOfOtherRulesIsRefused(t *testing.T) {
	x := entryIndex(t, Entry{ID: 1, Text: "some text"})
	path := filepath.Join(t.TempDir(), "o.idx")
	must(t, x.WriteSnapshot(path, 1))
	b, err := os.ReadFile(path)
	must(t, err)
	// The rules' version follows the magic and the format version, as a
	// length-prefixed string; write another one and fix the checksum.
	at := bytes.Index(b, []byte(analysis.Version))
	if at < len(snapshotMagic)+4 {
		t.Fatal("no analysis version in the header")
	}
	b[at] = 'x'
	body := b[:len(b)-4]
	putU32(b[len(b)-4:], crc32.Checksum(body, castagnoli))
	must(t, os.WriteFile(path, b, 0o600))
	if _, _, err := testOpts.ReadSnapshot(path); !errors.Is(err, ErrOtherVersion) || errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("ReadSnapshot of other rules = %v, want ErrOtherVersion, not corrupt", err)
	}
	// So is a snapshot of an older format, whatever follows its version.
	putU32(b[len(snapshotMagic):], 5)
	must(t, os.WriteFile(path, b, 0o600))
	if _, _, err := testOpts.ReadSnapshot(path); !errors.Is(err, ErrOtherVersion) || errors.Is(err, ErrCorruptSnapshot) || !strings.Contains(err.Error(), "format 5") {
		t.Fatalf("ReadSnapshot of format 5 = %v, want ErrOtherVersion naming it", err)
	}
}

// TestCompoundQueryFindsParts: a German query written as one compound
// finds the chunk that says it in separate words, through the parts the
// index's own vocabulary splits it into; without them it matches nothing.
func TestCompoundQueryFindsParts(t *testing.T) {
	x := entryIndex(t,
		Entry{ID: 1, Text: "Die Frist für die Steuererklärung endet am 31. Juli, mit Steuerberater am 28. Februar des übernächsten Jahres."},
		Entry{ID: 2, Text: "Der Garten hinter dem Haus wird im Frühjahr umgegraben und im Herbst mit Laub bedeckt."},
		Entry{ID: 3, Text: "Die Bahn fährt stündlich vom Hauptbahnhof zum Flughafen, am Wochenende alle zwei Stunden."},
	)
	if l := x.Language(); l != analysis.German {
		t.Fatalf("entries detected as %v, want German", l)
	}
	got := bm25(x, "Steuererklärungsfrist")
	if len(got) != 1 || got[1] <= 0 {
		t.Errorf("Steuererklärungsfrist matched %v, want only entry 1", got)
	}
}

// TestCompoundsInLanguagesOfAShare: a query's compound parts are looked
// for in a language holding 1% of the docs or more, and in the language
// detection guesses for the query, not in others: there the German chunk
// is found by the words the query shares with it, not by a compound's
// parts.
func TestCompoundsInLanguagesOfAShare(t *testing.T) {
	for _, tt := range []struct {
		english int
		query   string // guessed German, or surely English
		found   bool
	}{
		{99, "Steuererklärungsfrist", true},
		{99, "when is the Steuererklärungsfrist", true},
		{101, "Steuererklärungsfrist", true},
		{101, "when is the Steuererklärungsfrist", false},
	} {
		entries := []Entry{{ID: 1, Text: "Die Frist für die Steuererklärung endet am 31. Juli, mit Steuerberater am 28. Februar des übernächsten Jahres."}}
		for i := range tt.english {
			entries = append(entries, Entry{ID: uint64(2 + i), Text: fmt.Sprintf("The garden behind house %d is dug over in spring and covered with leaves in autumn.", i)})
		}
		x := entryIndex(t, entries...)
		if l := x.Language(); l != analysis.English {
			t.Fatalf("entries detected as %v, want English", l)
		}
		got := bm25(x, tt.query)
		if found := got[1] > 0; found != tt.found || len(got) > 1 {
			t.Errorf("with %d English entries, %q matched %v; want entry 1: %v", tt.english, tt.query, got, tt.found)
		}
	}
}

// TestSeparateQueryWordsFindCompound: the other way round, a query that
// writes apart what a German chunk writes as one compound finds it.
func TestSeparateQueryWordsFindCompound(t *testing.T) {
	x := entryIndex(t,
		Entry{ID: 1, Text: "Die Steuererklärungsfrist endet am 31. Juli, mit Steuerberater am 28. Februar des übernächsten Jahres."},
		Entry{ID: 2, Text: "Der Garten hinter dem Haus wird im Frühjahr umgegraben und im Herbst mit Laub bedeckt."},
		Entry{ID: 3, Text: "Die Bahn fährt stündlich vom Hauptbahnhof zum Flughafen, am Wochenende alle zwei Stunden."},
	)
	got := bm25(x, "Steuererklärung Frist")
	if len(got) != 1 || got[1] <= 0 {
		t.Errorf("Steuererklärung Frist matched %v, want only entry 1", got)
	}
}

// TestAnalyseTakesAnalyzed checks that an entry's Analyzed stands in for detecting
// and analysing its text: entries analysed beforehand as Analyse would
// analyse them (analysis.AnalyzeUnder) analyse alike, and an Analyzed that
// says otherwise is what the entry gets.
func TestAnalyseTakesAnalyzed(t *testing.T) {
	x := entryIndex(t)
	entries := []Entry{
		{ID: 1, Text: "The worker claims the job and extracts per-page text.", Name: "pipeline.md", Title: "Ingest"},
		{ID: 2, Text: "Die Steuererklärungsfrist endet am 31. Juli.", Name: "steuern.txt"},
		{ID: 3, Text: "東京都の天気は晴れです。北京市は寒い。", Name: "天気"},
		{ID: 4, Text: "L'homme qu'on attendait n'est jamais venu.", Title: "Roman"},
		{ID: 5, Text: ""},
	}
	analysed := make([]Entry, len(entries))
	for i, e := range entries {
		a := analysis.AnalyzeUnder(e.Name, e.Text)
		analysed[i], analysed[i].Analyzed = e, &a
	}
	want, err := x.Analyse(entries...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := x.Analyse(analysed...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want.entries {
		w, g := want.entries[i], got.entries[i]
		if !reflect.DeepEqual(w.counts, g.counts) || w.length != g.length || w.lang != g.lang || w.headLen != g.headLen {
			t.Errorf("entry %d: analysed with its Analyzed %v %d %v %d, without %v %d %v %d",
				entries[i].ID, g.counts, g.length, g.lang, g.headLen, w.counts, w.length, w.lang, w.headLen)
		}
	}
	other := entries[0]
	other.Analyzed = &analysis.Analyzed{Lang: analysis.German, Terms: []analysis.Term{{Text: "frist"}}}
	a, err := x.Analyse(other)
	if err != nil {
		t.Fatal(err)
	}
	if e := a.entries[0]; e.lang != analysis.German || e.length != 1 || e.counts[0].of != keyOf("frist") {
		t.Errorf("an entry whose Analyzed says German and frist analysed as %v, %d terms, first %x", e.lang, e.length, e.counts[0].of)
	}
}
