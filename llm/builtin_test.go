package llm

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/docsift/docsift/analysis"
)

var _ Embedder = (*Builtin)(nil)

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestBuiltinEmbed(t *testing.T) {
	e := NewBuiltin()
	texts := []string{
		"How do I configure the bash prompt?",
		"Configuring the Bash prompt: set PS1 in your bashrc.",
		"Gnuplot draws surface plots from data files.",
		"",
		"the and of",
	}
	vs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != len(texts) {
		t.Fatalf("got %d vectors for %d texts", len(vs), len(texts))
	}
	for i, v := range vs {
		if len(v) != e.Dim() {
			t.Fatalf("vector %d has %d dims, want %d", i, len(v), e.Dim())
		}
		n := math.Sqrt(dot(v, v))
		want := 1.0
		if i >= 3 { // no terms: zero vector
			want = 0
		}
		if math.Abs(n-want) > 1e-5 {
			t.Errorf("vector %d (%q) norm %v, want %v", i, texts[i], n, want)
		}
	}
	if related, unrelated := dot(vs[0], vs[1]), dot(vs[0], vs[2]); related <= unrelated+0.2 {
		t.Errorf("related %.3f not clearly above unrelated %.3f", related, unrelated)
	}
	again, _ := e.Embed(context.Background(), texts[:1])
	for i := range again[0] {
		if again[0][i] != vs[0][i] {
			t.Fatal("embedding is not deterministic")
		}
	}
	if e.Model() != "builtin-v2" {
		t.Errorf("model %q", e.Model())
	}
}

func TestBuiltinWordOrder(t *testing.T) {
	e := NewBuiltin()
	vs, _ := e.Embed(context.Background(), []string{"new york times", "new york times", "times york new"})
	if s := dot(vs[0], vs[1]); math.Abs(s-1) > 1e-5 {
		t.Errorf("identical texts: cosine %v", s)
	}
	if s := dot(vs[0], vs[2]); s >= 0.999 {
		t.Errorf("reordered text should differ through bigrams: cosine %v", s)
	}
}

func TestBuiltinCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewBuiltin().Embed(ctx, []string{"x"}); err == nil {
		t.Fatal("want error from canceled context")
	}
}

// TestBuiltinDeterministic checks that a text's vector is the same bit
// for bit every time it is embedded: summed in a map's order, which Go
// varies from run to run, most passages' vectors differed in their last
// bits.
func TestBuiltinDeterministic(t *testing.T) {
	texts := []string{
		"Bash is the shell, or command language interpreter, for the GNU operating system. " +
			"The name is an acronym for the Bourne-Again SHell, a pun on Stephen Bourne, the author " +
			"of the direct ancestor of the current Unix shell sh, which appeared in the Seventh Edition " +
			"Bell Labs Research version of Unix.",
		"Die Donaudampfschifffahrtsgesellschaft betrieb Dampfschiffe auf der Donau; ihre Kapitäne " +
			"trugen Uniformen, und die Schiffe fuhren von Passau bis zum Schwarzen Meer.",
		"北京是中国的首都，也是政治和文化中心。",
	}
	e := NewBuiltin()
	for _, text := range texts {
		first, err := e.Embed(context.Background(), []string{text})
		if err != nil {
			t.Fatal(err)
		}
		for range 20 {
			again, _ := e.Embed(context.Background(), []string{text})
			for i := range first[0] {
				if math.Float32bits(again[0][i]) != math.Float32bits(first[0][i]) {
					t.Fatalf("%.20q...: component %d is %v once and %v another time", text, i, first[0][i], again[0][i])
				}
			}
		}
	}
}

func BenchmarkBuiltinEmbed(b *testing.B) {
	e := NewBuiltin()
	text := "Bash is the shell, or command language interpreter, for the GNU operating system. " +
		"The name is an acronym for the Bourne-Again SHell, a pun on Stephen Bourne, the author " +
		"of the direct ancestor of the current Unix shell sh, which appeared in the Seventh Edition " +
		"Bell Labs Research version of Unix."
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		e.Embed(context.Background(), []string{text})
	}
}

// TestBuiltinEmbedAnalyzed checks EmbedAnalyzed against Embed of the head
// and text joined by a line break, bit for bit, and each text's terms and
// language against analysis.AnalyzeUnder's, the contract of
// index.Entry.Analyzed, for texts in every language the analysis knows
// (the language test sets) under heads of every kind.
func TestBuiltinEmbedAnalyzed(t *testing.T) {
	texts := []string{
		"L'homme qu'on attendait n'est jamais venu jusqu'à l'aube d'hier.",
		"Die Steuererklärungsfrist endet am 31. Juli; Read-only-Dateien bleiben unverändert.",
		"東京都の天気は晴れです。北京市は寒い。서울은 맑습니다.",
		"قرأ الطالب الكتاب في المكتبة العامة",
		"XMLParser parses camelCase iPhone x86 mp3 covid19 COVID-19 don't dont",
		"-leading joiner and trailing one-", "", "the and of",
	}
	sets, err := filepath.Glob("../eval/testdata/lang/*/corpus.jsonl")
	if err != nil || len(sets) == 0 {
		t.Fatalf("language test sets not found: %v", err)
	}
	for _, set := range sets {
		data, err := os.ReadFile(set)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(data)) {
			var d struct{ Text string }
			if err := json.Unmarshal([]byte(line), &d); err != nil {
				t.Fatalf("%s: %v", set, err)
			}
			texts = append(texts, d.Text)
		}
	}
	b := NewBuiltin()
	for _, head := range []string{"", "notes.txt", "Guide d'utilisation", "北京指南", "read-only.", "Steuererklärung-", "l'"} {
		wholes := make([]string, len(texts))
		for i, text := range texts {
			wholes[i] = text
			if head != "" {
				wholes[i] = head + "\n" + text
			}
		}
		vecs, analyses, err := b.EmbedAnalyzed(context.Background(), head, wholes)
		if err != nil {
			t.Fatal(err)
		}
		for i, text := range texts {
			whole := wholes[i]
			want, _ := b.Embed(context.Background(), []string{whole})
			if !slices.Equal(vecs[i], want[0]) {
				t.Fatalf("head %q, text %q: the vector differs from Embed's", head, text)
			}
			analysed := analysis.AnalyzeUnder(head, text)
			if got := analyses[i]; got.Lang != analysed.Lang || !slices.Equal(got.Terms, analysed.Terms) || got.Terms == nil {
				t.Fatalf("head %q, text %q: analysed %v %v, want %v %v", head, text, got.Lang, got.Terms, analysed.Lang, analysed.Terms)
			}
		}
	}
	if _, _, err := b.EmbedAnalyzed(context.Background(), "notes.txt", []string{"other.txt\nA text under another head."}); err == nil {
		t.Error("a text not under its head was embedded")
	}
}

func TestBuiltinCJK(t *testing.T) {
	e := NewBuiltin()
	vs, _ := e.Embed(context.Background(), []string{"北京是中国的首都", "中国的首都是北京", "今天天气很好，适合散步"})
	if related, unrelated := dot(vs[0], vs[1]), dot(vs[0], vs[2]); related <= unrelated+0.3 {
		t.Errorf("Chinese: related %.3f not clearly above unrelated %.3f", related, unrelated)
	}
}

// TestBuiltinQueryLanguage checks that a query is analysed in its own language
// when detection is sure of it, and otherwise in the language of the
// chunks it searches.
func TestBuiltinQueryLanguage(t *testing.T) {
	e := NewBuiltin()
	ctx := context.Background()
	for _, c := range []struct {
		query  string
		likely analysis.Lang
		want   analysis.Lang
	}{
		{"wie setze ich mein Passwort zurück", analysis.English, analysis.German},
		{"ventricular hypertrophy", analysis.English, analysis.English},
		{"ventricular hypertrophy", analysis.French, analysis.French},
	} {
		got, err := e.EmbedQueryFor(ctx, c.query, c.likely)
		if err != nil {
			t.Fatal(err)
		}
		if want := embedText(c.query, c.want); !slices.Equal(got, want) {
			t.Errorf("%q with %v likely: not embedded in %v", c.query, c.likely, c.want)
		}
	}
}

// inProcessWrapper wraps an embedder as bench ingest's counter does.
type inProcessWrapper struct{ Embedder }

func (w inProcessWrapper) InProcess() bool { return InProcess(w.Embedder) }

// serverEmbedder stands for an embedder that sends its texts to a model
// server: nothing says it embeds in process.
type serverEmbedder struct{}

func (serverEmbedder) Model() string { return "server" }
func (serverEmbedder) Dim() int      { return 1 }
func (serverEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return nil, errors.New("not reached")
}

func TestInProcess(t *testing.T) {
	b := NewBuiltin()
	o := serverEmbedder{} // as a model server's client is (llm/ollama tests its own)
	for _, c := range []struct {
		name string
		e    Embedder
		want bool
	}{
		{"builtin", b, true},
		{"wrapped builtin", inProcessWrapper{b}, true},
		{"server's", o, false},
		{"wrapped server's", inProcessWrapper{o}, false},
		{"wrapper that does not say", struct{ Embedder }{b}, false},
	} {
		if got := InProcess(c.e); got != c.want {
			t.Errorf("%s: InProcess = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestBuiltinVectorsStay pins what builtin-v2 makes of texts of every
// kind: its vectors are stored with chunks and compared with the vectors
// of queries embedded later, by later versions, so under this name they
// must never change (other features need another model name, which makes
// owners reindex). The sum covers every bit of every vector.
func TestBuiltinVectorsStay(t *testing.T) {
	texts := []string{
		"How do I configure the bash prompt? Set PS1 in your ~/.bashrc (see man bash).",
		"L'homme qu'on attendait n'est jamais venu jusqu'à l'aube d'hier.",
		"Dell'anno scorso ricordo l'estate e un'amica all'università.",
		"Die Steuererklärungsfrist endet am 31. Juli; Read-only-Dateien bleiben unverändert.",
		"東京都の天気は晴れです。北京市は寒い。서울은 맑습니다.",
		"Съешь же ещё этих мягких французских булок, да выпей чаю.",
		"قرأ الطالب الكتاب في المكتبة العامة",
		"XMLParser parses camelCase iPhone x86 mp3 covid19 COVID-19 don't dont",
		"",
		"the and of",
	}
	vs, err := NewBuiltin().Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for _, v := range vs {
		for _, x := range v {
			binary.Write(h, binary.LittleEndian, math.Float32bits(x))
		}
	}
	const want = "4ad1597dee7794d8a544ae498a3d2bf87cbfceb594eb02deb7219647271717d0"
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		t.Errorf("builtin-v2 vectors changed: sum %s, want %s", got, want)
	}
}
