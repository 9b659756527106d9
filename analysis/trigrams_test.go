package analysis

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/abadojack/whatlanggo"
)

// detectWhatlang answers what whatlanggo itself does, language and
// confidence, on every language's test set, the fixed sample, MS MARCO
// when the shared data is there, each text's first words as a query, and
// random mixes of words from all of them, punctuation and digits.
func TestTrigramsAgree(t *testing.T) {
	texts := append([]string{"", " ", "42", "a", "ab", "abc", "!!", "x y z", "Ünïcödé", "日本語とEnglish"}, plainSample...)
	sets, err := filepath.Glob("../eval/testdata/lang/*/corpus.jsonl")
	if err != nil || len(sets) == 0 {
		t.Fatalf("language test sets not found: %v", err)
	}
	for _, set := range sets {
		texts = append(texts, corpusTexts(t, set)...)
	}
	const msmarco = "../../shared/data/msmarco-5k/corpus.jsonl"
	if _, err := os.Stat(msmarco); err == nil {
		texts = append(texts, corpusTexts(t, msmarco)[:4000]...)
	} else {
		t.Logf("%s not found: checking without MS MARCO", msmarco)
	}
	var words []string
	for _, text := range texts {
		w := strings.Fields(text)
		words = append(words, w...)
		if len(w) > 5 {
			texts = append(texts, strings.Join(w[:5], " "))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var b strings.Builder
		for n := 1 + rng.IntN(12); n > 0; n-- {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteString([]string{" ", " ", ", ", ". ", " 7 ", "-", "\n"}[rng.IntN(7)])
		}
		texts = append(texts, b.String())
	}

	latin, others := 0, 0
	for _, text := range texts {
		text = detectPart(text)
		got, want := detectWhatlang(text), whatlanggo.DetectWithOptions(text, detectOptions)
		// Between two equally near languages whatlanggo picks by its
		// map's order, at confidence 0; only the confidence is its own.
		if got.Confidence != want.Confidence || want.Confidence != 0 && got.Lang != want.Lang || got.Script != want.Script {
			t.Errorf("%q: got %v (confidence %v), whatlanggo says %v (%v)", text, got.Lang, got.Confidence, want.Lang, want.Confidence)
		}
		if got.Script == nil {
			continue
		}
		if trigramProfiles()[got.Script] != nil {
			latin++
		} else {
			others++
		}
	}
	// Both ways were taken: the trigrams, and the scripts one language owns.
	if latin < 1000 || others < 20 {
		t.Errorf("%d texts were scored by trigrams and %d by script alone, want both many", latin, others)
	}
}

func BenchmarkDetectQueryWhatlanggo(b *testing.B) {
	for b.Loop() {
		whatlanggo.DetectWithOptions(benchQuery, detectOptions)
	}
}
