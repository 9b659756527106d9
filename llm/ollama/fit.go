package ollama

import (
	"math"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Fitting texts to a model's context, in tokens.
//
// docsift has no model's tokenizer, so it estimates: a word of ASCII
// letters is one token and one more per five letters past the first
// (English WordPiece and BPE vocabularies hold common words whole and split
// rare ones into pieces of a few letters), and every other non-space
// character (a digit, a symbol, a CJK ideograph, a letter of a script the
// vocabulary may lack) a token of its own. The server then says how many
// tokens each request held (prompt_eval_count), and the estimate is scaled
// by the ratio seen, so a vocabulary that splits finer than the guess (a
// small one, or byte-level BPE of CJK text) is learnt from the first
// batches. A text is split before sending only when its estimate is over the
// context: one the estimate lets through but the server counts over is
// refused (docsift does not let the server truncate) and split then
// (embedFitting), so the server's count, not the guess, has the last word,
// and a text that fits is never split for a guess.
const (
	// embedMarginTokens is kept free of every input: the special tokens a
	// model adds ([CLS], [SEP], BOS/EOS).
	embedMarginTokens = 4

	// minObservedTokens is the smallest request whose count teaches the
	// estimator: in a few words, one unknown name or the special tokens
	// make the ratio say more about the words than the vocabulary.
	minObservedTokens = 32
)

// tokenEstimator estimates token counts and learns from the server's.
type tokenEstimator struct {
	mu    sync.Mutex
	ratio float64 // server count / estimate, 0 before any count
}

// estimate is text's token count by the rule above, scaled by the ratio
// learnt.
func (t *tokenEstimator) estimate(text string) int {
	n := roughTokens(text)
	t.mu.Lock()
	r := t.ratio
	t.mu.Unlock()
	if r > 0 {
		n = int(math.Ceil(float64(n) * r))
	}
	return n
}

// observe learns from a request of texts the server counted as count
// tokens, special tokens included. The ratio is a moving average, so that
// one batch of code does not make the next of prose look dear.
func (t *tokenEstimator) observe(texts []string, count int) {
	est := 0
	for _, s := range texts {
		est += roughTokens(s)
	}
	count -= 2 * len(texts) // [CLS] and [SEP], or BOS and EOS
	if est < minObservedTokens || count <= 0 {
		return
	}
	r := float64(count) / float64(est)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ratio == 0 {
		t.ratio = r
	} else {
		t.ratio = 0.7*t.ratio + 0.3*r
	}
}

// roughTokens is the estimate's rule before any learning.
func roughTokens(text string) int {
	n, word := 0, 0
	end := func() {
		if word > 0 {
			n += 1 + (word-1)/5
			word = 0
		}
	}
	for _, r := range text {
		switch {
		case r < utf8.RuneSelf && unicode.IsLetter(r):
			word++
		case unicode.IsSpace(r):
			end()
		default:
			end()
			n++
		}
	}
	end()
	return n
}

// splitToFit splits text into halves, and halves of halves, until each
// part's estimated tokens are at most budget, at spaces where it can. A
// text that fits is returned whole.
func splitToFit(text string, budget int, estimate func(string) int) []string {
	if budget <= 0 || estimate(text) <= budget {
		return []string{text}
	}
	var out []string
	for _, h := range splitHalves(text) {
		if h == text { // cannot be split
			return []string{text}
		}
		out = append(out, splitToFit(h, budget, estimate)...)
	}
	return out
}

// splitHalves splits text in two near its middle: at the whitespace nearest
// the middle within the middle half, else at a rune boundary.
func splitHalves(text string) []string {
	mid := len(text) / 2
	at := -1
	for d := 0; d <= len(text)/4; d++ {
		if i := mid - d; i > 0 && isSpaceByte(text[i]) {
			at = i
			break
		}
		if i := mid + d; i < len(text) && isSpaceByte(text[i]) {
			at = i
			break
		}
	}
	if at < 0 {
		at = mid
		for at > 0 && !utf8.RuneStart(text[at]) {
			at--
		}
	}
	a, b := strings.TrimSpace(text[:at]), strings.TrimSpace(text[at:])
	if a == "" || b == "" {
		return []string{text}
	}
	return []string{a, b}
}

func isSpaceByte(b byte) bool { return b == ' ' || b == '\n' || b == '\t' || b == '\r' }

// combine is one vector for a text embedded in parts: the mean of the
// parts' unit vectors weighted by each part's length, renormalised.
//
// The mean of unit vectors points where the parts agree, and a query's
// cosine with it is the weighted mean of its cosines with the parts (over
// the mean's length), so a chunk ranks by how well the query matches it as
// a whole, as one vector of the whole chunk would, rather than by one part
// (the first, as truncation did). Weighting by length keeps a short tail
// from counting as much as the body. The result is a unit vector like
// every other, so the index needs no special case.
func combine(vecs [][]float32, parts []string) []float32 {
	out := make([]float32, len(vecs[0]))
	for i, v := range vecs {
		w := float32(max(1, len(parts[i])))
		for j, x := range v {
			out[j] += w * x
		}
	}
	_ = normalizeInPlace(out) // the parts were finite
	return out
}
