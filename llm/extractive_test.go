package llm

import (
	"context"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/docsift/docsift/analysis"
)

func TestExtractiveAnswer(t *testing.T) {
	tests := []struct {
		name    string
		query   string
		sources []Source
		want    string   // exact answer, when set
		contain []string // substrings the answer must hold
		absent  []string // substrings it must not hold
	}{
		{
			name:  "no sources",
			query: "how do I rotate keys",
			want:  NoSourcesAnswer,
		},
		{
			name:    "no shared term",
			query:   "quantum chromodynamics",
			sources: []Source{{Text: "Bananas are yellow. Apples are red."}},
			want:    NoMatchAnswer,
		},
		{
			name:    "query of stop words only",
			query:   "what is it",
			sources: []Source{{Text: "It is what it is."}},
			want:    NoMatchAnswer,
		},
		{
			// Sentences are split where chunking splits them: not after an
			// ordinal, an abbreviation or before a number.
			name:    "a date's day is not a sentence end",
			query:   "Wann muss ich die Steuererklärung abgeben?",
			sources: []Source{{Text: "Die Steuererklärung für das Jahr 2024 muss bis zum 31. Juli 2025 beim Finanzamt eingereicht werden. Das Finanzamt hat montags geschlossen."}},
			want:    "Die Steuererklärung für das Jahr 2024 muss bis zum 31. Juli 2025 beim Finanzamt eingereicht werden. [1]",
		},
		{
			name:    "an abbreviation before a number is not a sentence end",
			query:   "Wie lange braucht der Bus?",
			sources: []Source{{Text: "Der Bus braucht ca. 30 Minuten bis zum Bahnhof. Er fährt stündlich."}},
			want:    "Der Bus braucht ca. 30 Minuten bis zum Bahnhof. [1]",
		},
		{
			name:    "Chinese sentences end at their own stops",
			query:   "会议",
			sources: []Source{{Text: "新的办公室在北京。会议明天十点开始。停车场没有了。"}},
			want:    "会议明天十点开始。 [1]",
		},
		{
			name:    "footnote marks are not citations",
			query:   "capital of Germany",
			sources: []Source{{Text: "Berlin is the capital of Germany,[12] as shown in [5], and its largest city.[3][4] Code reads a[0] first."}},
			want:    "Berlin is the capital of Germany, as shown in [5], and its largest city. [1]",
		},
		{
			// Retrieval finds a compound by a word inside it: the answer
			// quotes it rather than saying the words are not there.
			name:    "a query word inside a compound",
			query:   "Versicherung",
			sources: []Source{{Text: "Die Lebensversicherung zahlt im Todesfall die vereinbarte Summe aus."}},
			want:    "Die Lebensversicherung zahlt im Todesfall die vereinbarte Summe aus. [1]",
		},
		{
			name:    "a short sentence is quoted whole",
			query:   "What is the SHA-256 checksum?",
			sources: []Source{{Text: "The SHA-256 checksum is e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 for the file."}},
			want:    "The SHA-256 checksum is e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 for the file. [1]",
		},
		{
			name:    "a long unbroken word does not crowd out the sentence",
			query:   "when does the certificate expire",
			sources: []Source{{Text: "Certificate: " + strings.Repeat("MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A", 17) + " expires on 2026-05-01."}},
			want:    "Certificate: MIIBIjANBgkqhkiG9w0BAQEF… expires on 2026-05-01. [1]",
		},
		{
			// Too short to tell its language, the query is analysed in the
			// first source's (Japanese), but "the" is still a stop word
			// of the language most sources are in, as in search.
			name:  "stop words of the sources' language",
			query: "the password",
			sources: []Source{
				{Text: "会議は明日の10時からです。", Lang: analysis.Japanese},
				{Text: "The weather is nice today.", Lang: analysis.English},
				{Text: "The office opens at nine.", Lang: analysis.English},
			},
			want: NoMatchAnswer,
		},
		{
			name:  "picks the matching sentence and cites it",
			query: "How do I rotate an API key?",
			sources: []Source{
				{Text: "Welcome to the manual. Keys are rotated with the key rotate command. Logs go to stderr."},
			},
			want: "Keys are rotated with the key rotate command. [1]",
		},
		{
			// Overlapping chunks repeat sentences, sometimes a word
			// apart: the second adds a query term but says the same.
			name:  "a near duplicate is not quoted again",
			query: "snapshot minute hour",
			sources: []Source{
				{Text: "The nightly snapshot of the index is written to the local disk every minute by the background saver task."},
				{Text: "The nightly snapshot of the index is written to the local disk every hour by the background saver task."},
			},
			want: "The nightly snapshot of the index is written to the local disk every minute by the background saver task. [1]",
		},
		{
			name:  "cites the right source number",
			query: "default port",
			sources: []Source{
				{Text: "The server writes its data under ./data."},
				{Text: "Nothing here. The default port is 8080 on localhost."},
			},
			contain: []string{"The default port is 8080 on localhost. [2]"},
			absent:  []string{"[1]"},
		},
		{
			name:  "rare term outweighs a common one",
			query: "snapshot checksum",
			sources: []Source{
				{Text: "A snapshot is written every minute."},
				{Text: "A snapshot is kept on disk."},
				{Text: "Every snapshot carries a checksum of its contents."},
			},
			contain: []string{"Every snapshot carries a checksum of its contents. [3]"},
		},
		{
			name:  "second sentence covers a missing term",
			query: "bbolt buckets and schema version",
			sources: []Source{
				{Text: "The store keeps named buckets in bbolt files on disk."},
				{Text: "Unrelated text about cats. A schema version is stored at open."},
			},
			contain: []string{
				"The store keeps named buckets in bbolt files on disk. [1]",
				"A schema version is stored at open. [2]",
			},
			absent: []string{"cats"},
		},
		{
			name:  "duplicate sentences from overlapping chunks are quoted once",
			query: "worker pool size",
			sources: []Source{
				{Text: "The worker pool size defaults to the number of cores."},
				{Text: "The worker pool size defaults to the number of cores."},
			},
			want: "The worker pool size defaults to the number of cores. [1]",
		},
		{
			name:  "abbreviations and initials do not split",
			query: "Smith wrote the parser",
			sources: []Source{
				{Text: "The parser, e.g. the PDF one, was written by J. Smith in 2020. Other text follows."},
			},
			want: "The parser, e.g. the PDF one, was written by J. Smith in 2020. [1]",
		},
		{
			name:  "PDF line breaks are collapsed",
			query: "hyphenated extraction",
			sources: []Source{
				{Text: "Text extraction\nkeeps each page\n  separately.\n\nHyphenated words are kept."},
			},
			contain: []string{"Hyphenated words are kept. [1]"},
		},
		{
			name:  "endless sentence is clipped around the match",
			query: "needle",
			sources: []Source{
				{Text: strings.Repeat("hay stack ", 200) + "the needle is here " + strings.Repeat("more hay ", 200)},
			},
			contain: []string{"needle", "…", "[1]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewExtractive().Answer(context.Background(), tt.query, tt.sources, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want != "" && got != tt.want {
				t.Errorf("answer = %q\nwant     %q", got, tt.want)
			}
			for _, s := range tt.contain {
				if !strings.Contains(got, s) {
					t.Errorf("answer %q lacks %q", got, s)
				}
			}
			for _, s := range tt.absent {
				if strings.Contains(got, s) {
					t.Errorf("answer %q holds %q", got, s)
				}
			}
		})
	}
}

// TestExtractiveBounds checks the answer's shape on many sources: at most
// three sentences, bounded length, every sentence followed by a valid citation.
func TestExtractiveBounds(t *testing.T) {
	var sources []Source
	for i := 0; i < 20; i++ {
		sources = append(sources, Source{Text: strings.Repeat("Ingest retries embedding with backoff until the budget is spent. ", 5) +
			"Each page of the document is chunked separately. Chunks never straddle pages and keep a page number " + strings.Repeat("x", i)})
	}
	got, err := NewExtractive().Answer(context.Background(), "ingest embedding backoff page chunk", sources, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := utf8.RuneCountInString(got); n > maxExtractAnswerRunes+3*len(" [20]") {
		t.Errorf("answer has %d runes", n)
	}
	cites := regexp.MustCompile(`\[(\d+)\]`).FindAllStringSubmatch(got, -1)
	if len(cites) == 0 || len(cites) > maxExtractSentences {
		t.Errorf("answer %q has %d citations", got, len(cites))
	}
	if !strings.HasSuffix(got, "]") {
		t.Errorf("answer %q does not end with a citation", got)
	}
}

func TestExtractiveDeltasConcatenate(t *testing.T) {
	sources := []Source{
		{Text: "Alpha keys rotate weekly."},
		{Text: "Beta keys expire [sometimes] yearly."},
	}
	var deltas []string
	got, err := NewExtractive().Answer(context.Background(), "alpha beta keys", sources, func(d string) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	if len(deltas) < 2 {
		t.Errorf("deltas = %q, want one per sentence", deltas)
	}
	if strings.Join(deltas, "") != got {
		t.Errorf("deltas %q do not add up to %q", deltas, got)
	}

	deltas = nil
	got, _ = NewExtractive().Answer(context.Background(), "anything", nil, func(d string) { deltas = append(deltas, d) })
	if !reflect.DeepEqual(deltas, []string{got}) {
		t.Errorf("deltas = %q, want [%q]", deltas, got)
	}
}

func TestExtractiveModelAndCancel(t *testing.T) {
	a := NewExtractive()
	if a.Model() != "extractive" {
		t.Errorf("Model() = %q", a.Model())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.Answer(ctx, "q", []Source{{Text: "q"}}, nil); err == nil {
		t.Error("cancelled context: want an error")
	}
}

func TestExtractiveSplitSentences(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"One. Two! Three? four", []string{"One.", "Two!", "Three? four"}},
		{"Version 3.5 is out. See Fig. 2 for details.", []string{"Version 3.5 is out.", "See Fig. 2 for details."}},
		{"1. Install it. 2. Run it.", []string{"1. Install it.", "2. Run it."}},
		{"He said \"stop.\" Then left.", []string{"He said \"stop.\"", "Then left."}},
		{"Intro:\n- first item\n- second item", []string{"Intro:", "- first item", "- second item"}},
		{"para one\n\npara two", []string{"para one", "para two"}},
		// Words apart by more than one space, or other spaces, are joined
		// by one; the split does not move.
		{"Tabs\tand  two spaces.\u00a0Then\u2003wide ones. End .", []string{"Tabs and two spaces.", "Then wide ones.", "End ."}},
		{"  Leading and trailing.  ", []string{"Leading and trailing."}},
		{"Bad \xff byte. Next", []string{"Bad \xff byte.", "Next"}},
	}
	for _, tt := range tests {
		if got := splitSentences(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("splitSentences(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestExtractiveNeverEmptyOnSharedTerm checks, over random texts from a small
// vocabulary, that a query sharing a term with some source always gets a
// cited sentence, never the no-match answer.
func TestExtractiveNeverEmptyOnSharedTerm(t *testing.T) {
	vocab := strings.Fields("index snapshot bbolt worker page chunk embed query owner key the a of. is! and? e.g. J. 1. –\n \n\n")
	rng := rand.New(rand.NewPCG(1, 2))
	words := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(vocab[rng.IntN(len(vocab))])
			b.WriteString([]string{" ", "\n", ". ", " "}[rng.IntN(4)])
		}
		return b.String()
	}
	for i := 0; i < 300; i++ {
		var sources []Source
		for j := rng.IntN(4); j >= 0; j-- {
			sources = append(sources, Source{Text: words(rng.IntN(40))})
		}
		query := words(1 + rng.IntN(4))
		shared := false
		lang := answerLanguage(query, sources)
		for _, q := range analysis.TermsIn(query, lang) {
			for _, s := range sources {
				if slices.Contains(analysis.TermsIn(s.Text, lang), q) {
					shared = true
				}
			}
		}
		got, err := NewExtractive().Answer(context.Background(), query, sources, nil)
		if err != nil || got == "" {
			t.Fatalf("Answer(%q, %+v) = %q, %v", query, sources, got, err)
		}
		if shared && (got == NoMatchAnswer || !strings.Contains(got, "[")) {
			t.Fatalf("query %q shares a term with %+v but got %q", query, sources, got)
		}
	}
}

// TestAnswerLanguage checks which language an answer analyses words in:
// the query's when detection is sure of it, else the first source's as the
// index analysed it, else the first source's as detected.
func TestAnswerLanguage(t *testing.T) {
	english := "The cats are sleeping all day long on the sofa, and at night they play with their toys in the garden."
	for _, c := range []struct {
		query   string
		sources []Source
		want    analysis.Lang
	}{
		{"what do the cats do at night in the garden", []Source{{Text: english, Lang: analysis.German}}, analysis.English},
		{"Sofa", []Source{{Text: english, Lang: analysis.German}}, analysis.German},
		{"Sofa", []Source{{Text: english}}, analysis.English},
	} {
		if got := answerLanguage(c.query, c.sources); got != c.want {
			t.Errorf("answerLanguage(%q, source in %v) = %v, want %v", c.query, c.sources[0].Lang, got, c.want)
		}
	}
}

func BenchmarkExtractive(b *testing.B) {
	para := "The worker claims the job and extracts per-page text. It chunks the text, embeds in batches, writes chunks, then adds them to the owner's indexes. A crash at any step loses nothing. "
	var sources []Source
	for i := 0; i < 10; i++ {
		sources = append(sources, Source{Text: strings.Repeat(para, 12)}) // about 400 words
	}
	a := NewExtractive()
	for b.Loop() {
		a.Answer(context.Background(), "what happens when the worker crashes mid job?", sources, nil)
	}
}

// BenchmarkExtractiveSourceLanguage answers a query too short to tell its
// language from five German passages, each new to detection's memo as
// most retrieved chunks are: "detected" detects the first passage's
// language, "indexed" takes the one the index analysed it in.
func BenchmarkExtractiveSourceLanguage(b *testing.B) {
	const passage = "Die Stadtverwaltung hat am Montag die neuen Regeln für die Abfallentsorgung vorgestellt. Künftig werden Biotonnen wöchentlich geleert, während der Restmüll nur noch alle zwei Wochen abgeholt wird. Bürgerinnen und Bürger können sich im Rathaus über die Änderungen informieren. Die Gebühren steigen leicht, weil die Kosten für Personal und Fahrzeuge gestiegen sind."
	for _, c := range []struct {
		name string
		lang analysis.Lang
	}{{"detected", analysis.Neutral}, {"indexed", analysis.German}} {
		b.Run(c.name, func(b *testing.B) {
			n := 0
			for b.Loop() {
				sources := make([]Source, 5)
				for i := range sources {
					n++
					sources[i] = Source{Text: c.name + strconv.Itoa(n) + " " + passage, Lang: c.lang}
				}
				extractAnswer("Biotonnen Gebühren", sources)
			}
		})
	}
}

// TestClipSentenceFindsTheWord checks that a long sentence is clipped to
// a window around the query's word in scripts without spaces and with
// combining vowel signs, and never to nothing.
func TestClipSentenceFindsTheWord(t *testing.T) {
	tests := []struct {
		name, sentence, word string
	}{
		// The one space is after the word: a window moved to it would lose it.
		{"Chinese, no spaces", strings.Repeat("今天天气很好我们去公园散步", 30) + "电动自行车 很方便" + strings.Repeat("天气很好", 10), "电动自行车"},
		{"Hindi, vowel signs", strings.Repeat("भारत की जनसंख्या बहुत बड़ी है और मुंबई सबसे बड़ा शहर है ", 8) + "गंगा नदी गंगोत्री से निकलती है", "गंगोत्री"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			query := analysis.TermsIn(tt.word, analysis.Neutral)
			got := clipSentence(tt.sentence, func(term string) bool { return slices.Contains(query, term) }, analysis.Neutral)
			if !strings.Contains(got, tt.word) {
				t.Errorf("clipped to %q, without %q", got, tt.word)
			}
			if n := utf8.RuneCountInString(got); n > maxExtractSentenceRunes+2 {
				t.Errorf("clipped to %d runes, over %d", n, maxExtractSentenceRunes)
			}
		})
	}
}
