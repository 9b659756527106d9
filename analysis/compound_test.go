package analysis

import (
	"reflect"
	"testing"
)

// vocabulary is a known function over the terms of texts, each counted
// once per text, as an index counts documents.
func vocabulary(lang Lang, texts ...string) func(string) int {
	df := map[string]int{}
	for _, text := range texts {
		seen := map[string]bool{}
		Analyze(text, lang, func(t Term) {
			if !seen[t.Text] {
				seen[t.Text] = true
				df[t.Text]++
			}
		})
	}
	return func(term string) int { return df[term] }
}

// queryAlts returns the alternative terms a query gains from known.
func queryAlts(text string, lang Lang, known func(string) int) []string {
	var alts []string
	AnalyzeQueryIn(text, lang, nil, known, func(t Term) {
		if t.Alt {
			alts = append(alts, t.Text)
		}
	})
	return alts
}

func TestCompoundSplitting(t *testing.T) {
	german := vocabulary(German,
		"Die Frist für die Steuererklärung endet im Juli.",
		"Eine Steuererklärung ist jedes Jahr fällig.",
		"Das Haus hat einen Garten.",
	)
	english := vocabulary(English, "Mount the file system read only.", "Only the owner may read it.")
	tests := []struct {
		name  string
		query string
		lang  Lang
		known func(string) int
		want  []string
	}{
		// Steuererklärung + linking s + Frist, each as the text has it.
		{"German with a linking s", "Steuererklärungsfrist", German, german, []string{stem(German, "steuererklärung"), stem(German, "frist")}},
		{"German of two known words", "Hausgarten", German, german, []string{"haus", "gart"}},
		{"English joined words", "filesystem", English, english, []string{"file", "system"}},
		{"a stop word is no part", "readonly", English, english, nil},
		{"a known word stays whole", "Steuererklärung", German, german, nil},
		{"a part the texts lack: no split", "Steuerberater", German, german, nil},
		{"no split without a vocabulary", "filesystem", English, nil, nil},
	}
	for _, tt := range tests {
		if got := queryAlts(tt.query, tt.lang, tt.known); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %q gains %q, want %q", tt.name, tt.query, got, tt.want)
		}
	}
}

// TestCompoundPartsByFrequency: of two splits into known parts, the one
// whose parts are more frequent wins (the geometric mean of Koehn and
// Knight), and parts under minCompoundPart letters are never taken.
func TestCompoundPartsByFrequency(t *testing.T) {
	known := func(term string) int {
		return map[string]int{"ab": 100, "abc": 1, "cdef": 1, "def": 50, "xyz": 0}[term]
	}
	// "abcdef" = "abc"+"def" (mean log of 1 and 50) or "ab"+"cdef" (a
	// part of two letters, not allowed though 100 is more frequent).
	if got, want := queryAlts("abcdef", Neutral, known), []string{"abc", "def"}; !reflect.DeepEqual(got, want) {
		t.Errorf("abcdef gains %q, want %q", got, want)
	}
	// A linking "s" between parts is German's, not every language's.
	if got, want := queryAlts("abcsdef", German, known), []string{"abc", "def"}; !reflect.DeepEqual(got, want) {
		t.Errorf("German abcsdef gains %q, want %q", got, want)
	}
	if got := queryAlts("abcsdef", Neutral, known); got != nil {
		t.Errorf("abcsdef gains %q, want no parts outside German", got)
	}
}

// TestCompoundJoining: in languages that write compounds closed, two words
// of a query that the texts write as one compound are also matched as
// that compound, with German's linking s; words apart in the texts, or
// with a stop word between them in the query, are not joined.
func TestCompoundJoining(t *testing.T) {
	german := vocabulary(German, "Die Steuererklärungsfrist endet im Juli.", "Das Haus hat einen Garten.")
	english := vocabulary(English, "Mount the filesystem read-only.", "The file was read.")
	dutch := vocabulary(Dutch, "De belastingaangifte moet voor één mei binnen zijn.")
	tests := []struct {
		name  string
		query string
		lang  Lang
		known func(string) int
		want  []string
	}{
		{"German with a linking s", "Steuererklärung Frist", German, german, []string{stem(German, "steuererklärungsfrist")}},
		{"Dutch", "belasting aangifte", Dutch, dutch, []string{stem(Dutch, "belastingaangifte")}},
		{"not in English, which writes compounds open", "file system", English, english, nil},
		{"not a compound of the texts", "Haus Garten", German, german, nil},
		{"a stop word between", "Steuererklärung die Frist", German, german, nil},
		// The joined form of a hyphenated word is given once, by the
		// analysis of compounds, not again as two words.
		{"one hyphenated word", "read-only", English, english, []string{"readon"}},
	}
	for _, tt := range tests {
		if got := queryAlts(tt.query, tt.lang, tt.known); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %q gains %q, want %q", tt.name, tt.query, got, tt.want)
		}
	}
}
