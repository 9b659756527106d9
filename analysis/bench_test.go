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
