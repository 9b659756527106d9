package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"github.com/docsift/docsift/eval"
)

// writeQueries writes texts as a BEIR queries.jsonl.
func writeQueries(path string, texts []string) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for i, text := range texts {
		if err := enc.Encode(eval.Query{ID: strconv.Itoa(i), Text: text}); err != nil {
			return err
		}
	}
	return os.WriteFile(path, b.Bytes(), 0o600)
}

// scaleText makes deterministic English-looking text: the commonest
// English function words, then made-up content words, drawn by Zipf's law
// (a few words in most chunks, a long tail in few), in sentences. A
// document depends only on the seed and its number, so uploaders can make
// them in any order.
type scaleText struct {
	seed   uint64
	words  []string
	corpus []eval.Doc // uploaded instead of synthetic text when set
}

// corpusText is what a corpus document is uploaded as: its title, when it
// has one, then its text, as eval ingests BEIR corpora.
func corpusText(d eval.Doc) string {
	if d.Title == "" {
		return d.Text
	}
	return d.Title + "\n\n" + d.Text
}

// functionWords lead the vocabulary, so that language detection reads the
// text as English and stop words are what they are in real text.
var functionWords = strings.Fields("the of and to in is for that with on as by this are from it be or at which an was not can has have but its will all one")

// syllables make the content words.
var syllables = strings.Fields("ka lo mi ne ru sa te vo di pa fe gu ho ji ly mar ten sil bor quin dra ple stu wex zor")

func newScaleText(seed uint64) *scaleText {
	t := &scaleText{seed: seed, words: append([]string(nil), functionWords...)}
	seen := map[string]bool{}
	for _, w := range functionWords {
		seen[w] = true
	}
	rng := rand.New(rand.NewPCG(seed, 0x5ca1e))
	for len(t.words) < scaleVocabulary {
		var b strings.Builder
		for range 2 + rng.IntN(3) {
			b.WriteString(syllables[rng.IntN(len(syllables))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			t.words = append(t.words, w)
		}
	}
	return t
}

// document returns document i: words words in sentences of 6–20.
func (t *scaleText) document(i, words int) string {
	var b strings.Builder
	for _, sentence := range t.sentences(i, words) {
		for j, k := range sentence {
			w := t.words[k]
			if j == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			} else {
				b.WriteByte(' ')
			}
			b.WriteString(w)
		}
		b.WriteString(". ")
	}
	return strings.TrimSpace(b.String())
}

// sentences returns document i's words, as indexes into t.words, sentence
// by sentence.
func (t *scaleText) sentences(i, words int) [][]int {
	rng := rand.New(rand.NewPCG(t.seed, uint64(i)))
	zipf := rand.NewZipf(rng, scaleZipfS, scaleZipfV, uint64(len(t.words)-1))
	var out [][]int
	for left := words; left > 0; {
		sentence := make([]int, min(left, 6+rng.IntN(15)))
		for j := range sentence {
			sentence[j] = int(zipf.Uint64())
		}
		out = append(out, sentence)
		left -= len(sentence)
	}
	return out
}

// queries returns n queries for an owner of the first docs documents of
// words words each, or of the corpus: the opening words of documents
// spread over it. A synthetic query is 2–4 distinct content words of one
// of the documents, each drawn in proportion to its inverse document
// frequency, as people query for the words that set what they want apart
// rather than the commonest ones. Its terms then occur in as many chunks
// as real queries' do: analysed by the index, 5,000 documents' postings of
// a query's terms add up to 8.3% of the documents for these and 8.0% for
// the MS MARCO sample's queries (TestScaleQueriesMatchLikeReal), where
// words drawn as the text's are, by Zipf's law, match 37% and would
// measure the lexical side at nearly five times a real query's work.
func (t *scaleText) queries(n, docs, words int) []string {
	qs, _ := t.querySet(0, n, docs, words)
	return qs
}

// warmUpQueries returns n queries drawn as queries' are, none of them
// theirs: from other documents of a corpus, with other draws otherwise.
func (t *scaleText) warmUpQueries(n, docs, words int) []string {
	qs, _ := t.querySet(1, n, docs, words)
	return qs
}

// querySet is queries (set 0) or warmUpQueries (set 1), with the number
// of the document each was drawn from.
func (t *scaleText) querySet(set, n, docs, words int) ([]string, []int) {
	qs, from := make([]string, n), make([]int, n)
	if t.corpus != nil {
		// Set 0 opens even documents, set 1 odd ones, spread over the
		// corpus: distinct within a set while it has half the corpus's
		// documents or fewer, and never the other set's.
		half := max(len(t.corpus)/2, 1)
		for i := range qs {
			from[i] = min(2*(i*half/n)+set, len(t.corpus)-1)
			ws := strings.Fields(t.corpus[from[i]].Text)
			qs[i] = strings.Join(ws[:min(len(ws), 6)], " ")
		}
		return qs, from
	}
	idf := t.idf(words)
	rng := rand.New(rand.NewPCG(t.seed, 0x9e77+uint64(set)))
	for i := range qs {
		var ws []string
		var weights []float64
		for len(ws) == 0 { // a document of a few words may hold only function words
			seen := map[int]bool{}
			from[i] = rng.IntN(max(docs, 1))
			for _, sentence := range t.sentences(from[i], words) {
				for _, w := range sentence {
					if w >= len(functionWords) && !seen[w] {
						seen[w] = true
						ws, weights = append(ws, t.words[w]), append(weights, idf[w])
					}
				}
			}
		}
		q := make([]string, 0, 4)
		for range min(2+rng.IntN(3), len(ws)) {
			j := drawWeighted(rng, weights)
			q, weights[j] = append(q, ws[j]), 0 // drawn once
		}
		qs[i] = strings.Join(q, " ")
	}
	return qs, from
}

// idf returns each word's inverse document frequency, ln(1/df), among
// documents of words words: a word of Zipf probability p is in 1−(1−p)^words
// of them.
func (t *scaleText) idf(words int) []float64 {
	p := make([]float64, len(t.words))
	var sum float64
	for k := range p {
		p[k] = math.Pow(scaleZipfV+float64(k), -scaleZipfS)
		sum += p[k]
	}
	for k := range p {
		p[k] = -math.Log(-math.Expm1(float64(words) * math.Log1p(-p[k]/sum)))
	}
	return p
}

// drawWeighted returns an index of weights drawn in proportion to them;
// at least one must be positive.
func drawWeighted(rng *rand.Rand, weights []float64) int {
	var sum float64
	for _, w := range weights {
		sum += w
	}
	r := rng.Float64() * sum
	last := 0
	for i, w := range weights {
		if w > 0 {
			if r < w {
				return i
			}
			r, last = r-w, i
		}
	}
	return last // rounding left r a hair above the last weight
}
