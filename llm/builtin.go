package llm

import (
	"context"
	"fmt"
	"math"

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
// by analysis.Detect), as the lexical index cuts it. A query too short to
// detect is cut in the language of the owner's chunks (EmbedQueryFor).
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

// LanguageQueryEmbedder is a QueryEmbedder that cuts text by its language,
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

// EmbedQuery embeds a query in the language detection finds for it.
func (b *Builtin) EmbedQuery(ctx context.Context, query string) ([]float32, error) {
	lang, _ := analysis.Detect(query)
	return b.EmbedQueryFor(ctx, query, lang)
}

// EmbedQueryFor embeds a query in its own language when detection is sure
// of it, and otherwise in likely, the language of the chunks it is
// searched against: a few words are often too few to tell English from
// French, and cut in the wrong language they share fewer features with
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

// feature is one hashed feature of a text: how often it occurs and how
// much one occurrence weighs.
type feature struct {
	tf     int
	weight float64
}

// embedText hashes the features of one text, analysed in lang, into a
// unit vector.
func embedText(text string, lang analysis.Lang) []float32 {
	var terms []string
	var alt []bool
	feats := make(map[uint64]feature, len(text)/2)
	add := func(h uint64, w float64) {
		f := feats[h]
		feats[h] = feature{f.tf + 1, w}
	}
	// The words' character grams are added as the pass finds them, the
	// terms' features after it: a feature keeps the weight of the last
	// one added with its hash.
	analysis.AnalyzeWords(text, lang, func(t analysis.Term) {
		terms = append(terms, t.Text)
		alt = append(alt, t.Alt)
	}, func(w string) {
		// A run of CJK text is already cut into character bigrams.
		if len(w) < charGramLen || !analysis.Spaced(w) {
			return
		}
		// Boundary marks make a word's first and last grams distinct
		// from the same letters inside another word.
		m := "<" + w + ">"
		for i := 0; i+charGramLen <= len(m); i++ {
			add(fnvString(fnvByte(fnvOffset, 1), m[i:i+charGramLen]), charGramWeight)
		}
	})
	prev := ""
	for i, t := range terms {
		add(fnvString(fnvOffset, t), unigramWeight)
		if alt[i] {
			continue // a compound's joined form pairs with nothing
		}
		if prev != "" {
			// A separator byte keeps ("ab","c") and ("a","bc") apart.
			add(fnvString(fnvByte(fnvString(fnvOffset, prev), 0), t), bigramWeight)
		}
		prev = t
	}
	v := make([]float32, builtinDim)
	for h, f := range feats {
		// Sublinear term frequency: the tenth repeat of a word says far
		// less than the first.
		val := f.weight
		if f.tf > 1 { // most features occur once, and log 1 is 0
			val *= 1 + math.Log(float64(f.tf))
		}
		// Signed hashing: colliding features cancel on average instead of
		// piling up, so dot products stay unbiased.
		if h>>63 == 1 {
			val = -val
		}
		v[h%builtinDim] += float32(val)
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

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = fnvByte(h, s[i])
	}
	return h
}
