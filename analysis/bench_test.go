package analysis

import "testing"

// A typical MS MARCO passage, and a query.
const (
	benchPassage = "Daniel Gabriel Fahrenheit was the German physicist who invented a alcohol thermometer in 1709, and the mercury thermometer in 1714. In 1724, he introduced the standard temperature scale that bears his name-Fahrenheit Scale-that was used to record changes in temperature in an accurate fashion."
	benchQuery   = "causes of left ventricular hypertrophy"
)

// The Detect benchmarks measure detection itself, not its memo.
func BenchmarkDetectPassage(b *testing.B) {
	b.SetBytes(int64(len(benchPassage)))
	for b.Loop() {
		detect(benchPassage)
	}
}

// BenchmarkDetectPassageTrigrams is the same passage without the
// plain-English shortcut, as a text of another language is detected.
func BenchmarkDetectPassageTrigrams(b *testing.B) {
	b.SetBytes(int64(len(benchPassage)))
	for b.Loop() {
		detectTrigrams(benchPassage)
	}
}

func BenchmarkDetectQuery(b *testing.B) {
	for b.Loop() {
		detect(benchQuery)
	}
}

func BenchmarkAnalyzePassage(b *testing.B) {
	b.SetBytes(int64(len(benchPassage)))
	for b.Loop() {
		Analyze(benchPassage, English, func(Term) {})
	}
}

// BenchmarkAnalyzePassageParallel is BenchmarkAnalyzePassage on every
// processor at once, as a server's queries and uploads analyse their texts:
// each word's stem is looked up in the one cache they share.
func BenchmarkAnalyzePassageParallel(b *testing.B) {
	b.SetBytes(int64(len(benchPassage)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			Analyze(benchPassage, English, func(Term) {})
		}
	})
}

// BenchmarkAnalyzePassageAfterVocabulary is BenchmarkAnalyzePassage after
// the stem cache has met as many other words as it holds, as in a server
// whose owners' texts have more words than that.
func BenchmarkAnalyzePassageAfterVocabulary(b *testing.B) {
	var text []byte
	for i := range stemCacheMax {
		text = append(text, "wordings"...)
		for n := i; n > 0; n /= 26 { // a word of letters: digits are not stemmed
			text = append(text, byte('a'+n%26))
		}
		text = append(text, ' ')
		if len(text) > 1<<16 {
			Analyze(string(text), English, func(Term) {})
			text = text[:0]
		}
	}
	Analyze(string(text), English, func(Term) {})
	b.SetBytes(int64(len(benchPassage)))
	b.ResetTimer()
	for b.Loop() {
		Analyze(benchPassage, English, func(Term) {})
	}
}

// BenchmarkAnalyzeQueryUnknownWord is a query whose every word is unknown
// to the vocabulary, each searched for compound parts: the worst case of
// AnalyzeQueryIn, beside BenchmarkAnalyzeQueryKnown, its common case.
func BenchmarkAnalyzeQueryUnknownWord(b *testing.B) {
	known := vocabulary(English, benchPassage)
	unknown := func(term string) int {
		if term == "thermometerscalefahrenheit" || term == "ventricular" || term == "hypertrophy" || term == "causes" {
			return 0
		}
		return known(term)
	}
	for b.Loop() {
		AnalyzeQueryIn("causes of ventricular hypertrophy thermometerscalefahrenheit", English, nil, unknown, func(Term) {})
	}
}

func BenchmarkAnalyzeQueryKnown(b *testing.B) {
	known := func(string) int { return 1 }
	for b.Loop() {
		AnalyzeQueryIn("causes of ventricular hypertrophy thermometerscalefahrenheit", English, nil, known, func(Term) {})
	}
}
