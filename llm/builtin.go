package llm

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/docsift/docsift/analysis"
)

// Built-in embedder parameters. The vector is a signed feature hash: every
// analysed term (a stemmed word, or a character bigram of CJK text; see
// package analysis) and every pair of adjacent terms adds ±weight to one of
// builtinDim buckets, and so do the character 4-grams of each word. It
// knows no synonyms, but it needs no model files, is deterministic across
// machines, and complements BM25 in fusion with phrase (bigram) and
// sub-word evidence that a bag of words lacks.
//
// A text's terms are those of the language it is written in (as detected
// by analysis.Detect), as the lexical index analyses it. A query too short
// to detect is analysed in the language of the owner's chunks
// (EmbedQueryFor).
const (
	// builtinModel names the feature set. Bump the version whenever the
	// features, weights, hash or the analysis rules change (v2: language
	// aware analysis, analysis.Version 2): vectors of two versions are not
	// comparable and must never share an index; an owner on another
	// version is re-embedded by `docsift reindex`.
	builtinModel = "builtin-v2"
	builtinDim   = 384

	unigramWeight = 1.0
	// bigramWeight is below 1 because a bigram also counts through its two
	// words; it rewards word order without drowning the words.
	bigramWeight = 0.5

	charGramLen    = 4
	charGramWeight = 0.3
)

// LanguageQueryEmbedder is a QueryEmbedder that analyses text by its language,
// and can be told the language of the chunks a query searches, for a query
// too short to tell its own.
type LanguageQueryEmbedder interface {
	QueryEmbedder
	EmbedQueryFor(ctx context.Context, query string, likely analysis.Lang) ([]float32, error)
}

var _ LanguageQueryEmbedder = (*Builtin)(nil)

// Builtin is the embedder that always works: feature hashing of analysed
// terms, no network, no files.
type Builtin struct{}

// InProcess reports whether e embeds in this process, in microseconds a
// text, with no model server to wait on: the built-in embedder, or an
// embedder wrapping one that says so with an InProcess method of its own.
// The pipeline writes such an embedder's chunks once, with their vectors.
func InProcess(e Embedder) bool {
	switch e := e.(type) {
	case *Builtin:
		return true
	case interface{ InProcess() bool }:
		return e.InProcess()
	}
	return false
}

// NewBuiltin returns the built-in embedder.
func NewBuiltin() *Builtin { return &Builtin{} }

// Model is the versioned name of the feature set.
func (*Builtin) Model() string { return builtinModel }

// Dim is the vector length.
func (*Builtin) Dim() int { return builtinDim }

// Embed returns one unit vector per text. A text with no terms (empty, or
// only stop words) gets the zero vector: it is similar to nothing.
func (b *Builtin) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("llm: builtin embed: %w", err)
			}
		}
		lang, _ := analysis.Detect(t)
		out[i] = embedText(t, lang)
	}
	return out, nil
}

// AnalyzingEmbedder is an embedder that analyses each text on the way to
// its vector and hands the analysis over (the built-in one; see
// EmbedAnalyzed), for whoever needs it next (ingest gives it to the
// lexical index, which would otherwise analyse the text again).
type AnalyzingEmbedder interface {
	EmbedAnalyzed(ctx context.Context, head string, texts []string) ([][]float32, []analysis.Analyzed, error)
}

// EmbedAnalyzed is Embed for texts that each begin with head and a line
// break (the text alone when head is empty), as a document's chunks are
// embedded under its name. It also returns the analysis of each text's
// own part, after head, as analysis.AnalyzeUnder(head, part) gives it:
// its terms in the language its vector was made in. The lexical index
// would otherwise detect that language and analyse the part again, which
// took 6.6% of the server's CPU in an ingest of MS MARCO passages.
func (b *Builtin) EmbedAnalyzed(ctx context.Context, head string, texts []string) ([][]float32, []analysis.Analyzed, error) {
	prefix := ""
	if head != "" {
		prefix = head + "\n"
	}
	vecs, analyses := make([][]float32, len(texts)), make([]analysis.Analyzed, len(texts))
	for i, t := range texts {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, fmt.Errorf("llm: builtin embed: %w", err)
			}
		}
		own, ok := strings.CutPrefix(t, prefix)
		if !ok {
			return nil, nil, fmt.Errorf("llm: builtin embed: text %d does not begin with its head %q", i, head)
		}
		lang, _ := analysis.Detect(t)
		sc := getScratch()
		// The line break separates head's last word from the part's
		// first, so analysing one after the other analyses the whole
		// text.
		sc.analyse(head, lang)
		at := len(sc.terms)
		sc.analyse(own, lang)
		terms := make([]analysis.Term, len(sc.terms)-at)
		for j := range terms {
			terms[j] = analysis.Term{Text: sc.terms[at+j], Alt: sc.alt[at+j]}
		}
		vecs[i], analyses[i] = sc.vector(), analysis.Analyzed{Lang: lang, Terms: terms}
		sc.release()
	}
	return vecs, analyses, nil
}

// EmbedQuery embeds a query in the language detection finds for it.
func (b *Builtin) EmbedQuery(ctx context.Context, query string) ([]float32, error) {
	lang, _ := analysis.Detect(query)
	return b.EmbedQueryFor(ctx, query, lang)
}

// EmbedQueryFor embeds a query in its own language when detection is sure
// of it, and otherwise in likely, the language of the chunks it is
// searched against: a few words are often too few to tell English from
// French, and analysed in the wrong language they share fewer features with
// the chunks they are about.
func (b *Builtin) EmbedQueryFor(ctx context.Context, query string, likely analysis.Lang) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("llm: builtin embed: %w", err)
	}
	lang, sure := analysis.Detect(query)
	if !sure {
		lang = likely
	}
	return embedText(query, lang), nil
}

// feature is one occurrence of a hashed feature of a text: its hash and
// how much it weighs.
type feature struct {
	hash   uint64
	weight float64
}

// embedScratch is what embedText works in, kept between calls: a
// passage's few hundred features would otherwise be a map allocated for
// each text, and a map's order, which Go varies from run to run, would
// decide the order of the vector's float sums, and so its last bits.
type embedScratch struct {
	terms []string
	alt   []bool
	feats []feature
	byDim []feature
	gram  []byte
	// term and word as funcs, made once: a closure made for each text
	// was an allocation of each.
	onTerm func(analysis.Term)
	onWord func(string)
	// Where each dimension's features start in byDim, and where the
	// next goes. On the stack they made embedText's frame 6.3 KB, and
	// each small job's goroutine, new and with a stack of a few KB,
	// grew it and copied it at its first embedding: 0.8% of an MS
	// MARCO ingest's CPU.
	start, next [builtinDim + 1]int
}

var embedScratches = sync.Pool{New: func() any {
	sc := new(embedScratch)
	sc.onTerm, sc.onWord = sc.term, sc.word
	return sc
}}

func getScratch() *embedScratch { return embedScratches.Get().(*embedScratch) }

func (sc *embedScratch) release() {
	clear(sc.terms) // the pool must not keep texts alive
	sc.terms, sc.alt, sc.feats, sc.byDim = sc.terms[:0], sc.alt[:0], sc.feats[:0], sc.byDim[:0]
	embedScratches.Put(sc)
}

// embedText hashes the features of one text, analysed in lang, into a
// unit vector. The same text in the same language gives the same vector,
// bit for bit: features are summed in the order of their hashes.
func embedText(text string, lang analysis.Lang) []float32 {
	sc := getScratch()
	defer sc.release()
	sc.analyse(text, lang)
	return sc.vector()
}

// analyse analyses text in lang: its terms are kept for vector, its
// words' character grams added as the pass finds them. Texts analysed one
// after another give what their concatenation would, with a line break or
// any other separator between them.
func (sc *embedScratch) analyse(text string, lang analysis.Lang) {
	analysis.AnalyzeWords(text, lang, sc.onTerm, sc.onWord)
}

func (sc *embedScratch) term(t analysis.Term) {
	sc.terms = append(sc.terms, t.Text)
	sc.alt = append(sc.alt, t.Alt)
}

func (sc *embedScratch) word(w string) {
	// A run of CJK text is already split into character bigrams.
	if len(w) < charGramLen || !analysis.Spaced(w) {
		return
	}
	// Boundary marks make a word's first and last grams distinct from
	// the same letters inside another word.
	m := append(append(append(sc.gram[:0], '<'), w...), '>')
	sc.gram = m
	for i := 0; i+charGramLen <= len(m); i++ {
		sc.add(fnvText(fnvByte(fnvOffset, 1), m[i:i+charGramLen]), charGramWeight)
	}
}

func (sc *embedScratch) add(h uint64, w float64) { sc.feats = append(sc.feats, feature{h, w}) }

// vector adds the features of the terms analysed, after the words' grams, and
// hashes them all into a unit vector.
func (sc *embedScratch) vector() []float32 {
	prev := ""
	for i, t := range sc.terms {
		sc.add(fnvText(fnvOffset, t), unigramWeight)
		if sc.alt[i] {
			continue // a compound's joined form pairs with nothing
		}
		if prev != "" {
			// A separator byte keeps ("ab","c") and ("a","bc") apart.
			sc.add(fnvText(fnvByte(fnvText(fnvOffset, prev), 0), t), bigramWeight)
		}
		prev = t
	}
	// Each dimension sums its features in the order of their hashes, the
	// occurrences of one feature side by side, the last found last. They
	// are grouped by dimension with a counting sort, which keeps the order
	// they were found in, and then each dimension's few are sorted: the
	// same sums as one sort of them all by hash and order, bit for bit,
	// at 7.1 µs a passage against 11.0 (BenchmarkBuiltinEmbed).
	start, next := &sc.start, &sc.next
	clear(start[:])
	for _, f := range sc.feats {
		start[f.hash%builtinDim+1]++
	}
	for d := range builtinDim {
		start[d+1] += start[d]
	}
	*next = *start
	byDim := slices.Grow(sc.byDim, len(sc.feats))[:len(sc.feats)]
	sc.byDim = byDim
	for _, f := range sc.feats {
		d := f.hash % builtinDim
		byDim[next[d]] = f
		next[d]++
	}
	v := make([]float32, builtinDim)
	for d := range builtinDim {
		feats := byDim[start[d]:start[d+1]]
		// Insertion sort: stable, and quick for the few a dimension has.
		for i := 1; i < len(feats); i++ {
			for j := i; j > 0 && feats[j].hash < feats[j-1].hash; j-- {
				feats[j], feats[j-1] = feats[j-1], feats[j]
			}
		}
		for i := 0; i < len(feats); {
			j := i + 1
			for j < len(feats) && feats[j].hash == feats[i].hash {
				j++
			}
			// A feature weighs what its last occurrence does (two kinds of
			// feature share a hash only by a collision). Sublinear term
			// frequency: the tenth repeat of a word says far less than the
			// first.
			h, val := feats[i].hash, feats[j-1].weight
			if tf := j - i; tf > 1 { // most features occur once, and log 1 is 0
				val *= 1 + math.Log(float64(tf))
			}
			// Signed hashing: colliding features cancel on average instead of
			// piling up, so dot products stay unbiased.
			if h>>63 == 1 {
				val = -val
			}
			v[d] += float32(val)
			i = j
		}
	}
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	if norm == 0 {
		return v
	}
	inv := 1 / math.Sqrt(norm)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
	return v
}

// FNV-1a, 64 bit: fast, allocation-free and stable across Go versions and
// machines, which a persisted vector space needs (maphash is seeded per
// process).
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvByte(h uint64, b byte) uint64 { return (h ^ uint64(b)) * fnvPrime }

func fnvText[T string | []byte](h uint64, s T) uint64 {
	for i := 0; i < len(s); i++ {
		h = fnvByte(h, s[i])
	}
	return h
}
