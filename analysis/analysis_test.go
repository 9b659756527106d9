package analysis

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// termsOf lists the terms of text in lang, alternative forms marked "+".
func termsOf(text string, lang Lang) []string {
	var out []string
	Analyze(text, lang, func(t Term) {
		if t.Alt {
			out = append(out, "+"+t.Text)
		} else {
			out = append(out, t.Text)
		}
	})
	return out
}

func TestAnalyze(t *testing.T) {
	tests := []struct {
		name string
		lang Lang
		in   string
		want []string
	}{
		{"empty", English, "", nil},
		{"stems and stop words", English, "The running dogs", []string{"run", "dog"}},
		{"apostrophes", English, "Don’t STOP believing!", []string{"dont", "stop", "believ"}},
		{"digits are not stemmed", English, "x86 and 2nd-gen CPUs", []string{"x86", "2nd", "gen", "+2ndgen", "cpus"}},
		{"accents fold after stemming", English, "café naïve résumé", []string{"cafe", "naiv", "resum"}},
		{"hyphenated compound", English, "read-only", []string{"read", "+readon"}},
		{"joined compound", English, "readonly", []string{"readon"}},
		{"unicode hyphen, minus and en dash join", Neutral, "e‐mail −5 1990–2000", []string{"e", "mail", "+email", "5", "1990", "2000"}},
		{"em dash separates", Neutral, "yes—no", []string{"yes", "no"}},
		{"soft hyphen is invisible", Neutral, "hy\u00adphen", []string{"hyphen"}},
		{"joiners are invisible", Neutral, "می\u200cخواهم ab\u200dcd", []string{"میخواهم", "abcd"}},
		{"file name", Neutral, "acme-q3-report.pdf", []string{"acme", "q3", "report", "pdf", "+acmeq3reportpdf"}},
		{"identifier", English, "asn1_delete_structure", []string{"asn1", "delet", "structur", "+asn1deletestructure"}},
		{"camel case and acronyms", Neutral, "XMLParser camelCase", []string{"xml", "parser", "+xmlparser", "camel", "case", "+camelcase"}},
		{"letters and digits", Neutral, "covid19 IMG_20230101", []string{"covid", "19", "+covid19", "img", "20230101", "+img20230101"}},
		{"no single-letter parts", Neutral, "iPhone x86 mp3 CPUs", []string{"iphone", "x86", "mp3", "cpus"}},
		{"decimals do not join", Neutral, "3.14", []string{"3", "14"}},
		{"compatibility forms", Neutral, "ﬁle ＡＢＣ mm² ٢٠٢٣", []string{"file", "abc", "mm2", "2023"}},
		{"German", German, "Die Kündigungsfrist für Mietwohnungen beträgt drei Monate",
			[]string{"kundigungsfrist", "mietwohn", "betragt", "drei", "monat"}},
		{"German ß", German, "Straße STRASSE", []string{"strass", "strass"}},
		{"French elision", French, "l'homme et l’économie d'aujourd'hui", []string{"homm", "econom", "aujourdhui"}},
		{"Italian elision", Italian, "dell'anno", []string{"anno"}},
		{"Russian", Russian, "Книги о программировании", []string{"книг", "программирован"}},
		{"Arabic", Arabic, "المكتبة العربية والكتاب", []string{"مكتب", "عرب", "كتاب"}},
		{"Arabic diacritics and alef forms", Arabic, "أَحْمَد إبراهيم", []string{"احمد", "ابراهيم"}},
		{"Arabic script outside Arabic is only normalised", Neutral, "المكتبة", []string{"المكتبه"}},
		{"Chinese bigrams", Chinese, "北京是首都", []string{"北京", "京是", "是首", "首都"}},
		{"single CJK character", Chinese, "水", []string{"水"}},
		{"Japanese mixed scripts", Japanese, "東京タワー", []string{"東京", "京タ", "タワ", "ワー"}},
		{"half-width katakana", Japanese, "ﾀﾜｰ", []string{"タワ", "ワー"}},
		{"Korean words", Korean, "비밀번호 재설정", []string{"비밀", "밀번", "번호", "재설", "설정"}},
		{"CJK beside Latin", Chinese, "iPhone手机", []string{"iphone", "手机"}},
		{"overlong runs are dropped", Neutral, "short abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz tail", []string{"short", "tail"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := termsOf(tt.in, tt.lang); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Analyze(%q, %v) = %q, want %q", tt.in, tt.lang, got, tt.want)
			}
		})
	}
}

// TestSpellingsMatch checks the point of the rules above: the ways people
// write one word give a common term.
func TestSpellingsMatch(t *testing.T) {
	tests := []struct {
		lang Lang
		a, b string
	}{
		{English, "read-only", "readonly"},
		{English, "read-only", "read only"},
		{English, "e-mail", "email"},
		{English, "Résumé", "resume"},
		{French, "élève", "eleve"},
		{German, "Müller", "muller"},
		{Spanish, "canción", "cancion"},
		{Arabic, "أحمد", "احمد"},
		{Arabic, "مدرسة", "المدرسة"},
		{Arabic, "المعلمون", "معلم"},
		{English, "ＡＢＣ", "abc"},
		{English, "−40", "-40"},
	}
	for _, tt := range tests {
		a, b := TermsIn(tt.a, tt.lang), TermsIn(tt.b, tt.lang)
		if !shareTerm(a, b) {
			t.Errorf("%v: %q %q and %q %q share no term", tt.lang, tt.a, a, tt.b, b)
		}
	}
}

func shareTerm(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

func TestAnalyzeQueryDropsOtherStopWords(t *testing.T) {
	// "die" is a German article and an English verb: a German query's
	// "die" must not match English chunks.
	var got []string
	AnalyzeQuery("die Katze", English, []Lang{German}, func(t Term) { got = append(got, t.Text) })
	if want := []string{"katz"}; !reflect.DeepEqual(got, want) {
		t.Errorf("AnalyzeQuery = %q, want %q", got, want)
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		in   string
		want Lang
	}{
		{"The parser is case sensitive, and comments begin with two dashes and end at the end of the line.", English},
		{"Ein unbefristeter Mietvertrag kann vom Mieter mit einer Frist von drei Monaten gekündigt werden.", German},
		{"Le locataire peut résilier son bail à tout moment en respectant un préavis de trois mois.", French},
		{"El gobierno anunció hoy nuevas medidas para reducir el precio de la electricidad en los hogares.", Spanish},
		{"Москва является столицей России и крупнейшим городом страны по численности населения.", Russian},
		{"الرياض هي عاصمة المملكة العربية السعودية وأكبر مدنها من حيث عدد السكان", Arabic},
		{"北京是中华人民共和国的首都，也是全国的政治和文化中心", Chinese},
		{"パスワードをリセットする方法を教えてください", Japanese},
		{"비밀번호를 재설정하는 방법을 알려주세요", Korean},
		{"12345 678", Neutral},
	}
	for _, tt := range tests {
		if got, _ := Detect(tt.in); got != tt.want {
			t.Errorf("Detect(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
	// Texts too short for the trigrams to choose between languages that
	// tie: the same answer every time, not the first of a random order.
	// detectTrigrams, as Detect's memo would hide a second answer.
	for _, text := range []string{"en", "a"} {
		first, _ := detectTrigrams(text)
		for range 50 {
			if again, _ := detectTrigrams(text); again != first {
				t.Fatalf("detecting %q gave %v, then %v", text, first, again)
			}
		}
	}
	// Detect remembers short texts; the answer must not change.
	a, ra := Detect("wie setze ich mein Passwort zurück")
	b, rb := Detect("wie setze ich mein Passwort zurück")
	if a != b || ra != rb {
		t.Errorf("a repeated detection differs: %v %v, then %v %v", a, ra, b, rb)
	}
}

func TestWords(t *testing.T) {
	var got []string
	Words("Read-only CAFÉ 北京市", func(w string) { got = append(got, w) })
	if want := []string{"read", "only", "cafe", "北京市"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Words = %q, want %q", got, want)
	}
	if !Spaced("cafe") || Spaced("北京市") {
		t.Error("Spaced does not tell words from CJK runs")
	}
}

// TestAnalyzeWordsAsTwoPasses checks that the one pass gives, in every
// language, the terms Analyze gives and the words Words gives: elided
// articles ("l'homme") make French and Italian words differ.
func TestAnalyzeWordsAsTwoPasses(t *testing.T) {
	texts := []string{
		"L'homme qu'on attendait n'est jamais venu; dell'anno, un'amica all'università.",
		"Die Steuererklärungsfrist endet; Read-only-Dateien, XMLParser, iPhone, covid19, don't.",
		"東京都の天気は晴れです。北京市は寒い。서울은 맑습니다. ภาษาไทย",
		"Съешь же ещё этих мягких булок; قرأ الطالب الكتاب; ½ café ﬁnance",
	}
	for _, text := range texts {
		var words []string
		Words(text, func(w string) { words = append(words, w) })
		for l := range NumLangs {
			var terms, gotTerms []Term
			var gotWords []string
			Analyze(text, l, func(t Term) { terms = append(terms, t) })
			AnalyzeWords(text, l, func(t Term) { gotTerms = append(gotTerms, t) }, func(w string) { gotWords = append(gotWords, w) })
			if !reflect.DeepEqual(gotTerms, terms) {
				t.Errorf("%v: AnalyzeWords(%q) terms %v, Analyze %v", l, text, gotTerms, terms)
			}
			if !reflect.DeepEqual(gotWords, words) {
				t.Errorf("%v: AnalyzeWords(%q) words %q, Words %q", l, text, gotWords, words)
			}
		}
	}
}

func TestArabicLightStem(t *testing.T) {
	tests := []struct{ in, want string }{
		{"والكتاب", "كتاب"},  // and-the-book
		{"بالمدرسه", "مدرس"}, // in-the-school (ta marbuta normalised)
		{"المعلمون", "معلم"}, // the teachers
		{"كتابها", "كتاب"},   // her book
		{"ولد", "ولد"},       // too short to lose its و
		{"الى", "الى"},       // too short to lose its article
		{"مكتبات", "مكتب"},   // libraries: ات
	}
	for _, tt := range tests {
		if got := arabicLightStem(tt.in); got != tt.want {
			t.Errorf("arabicLightStem(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzAnalyze(f *testing.F) {
	for _, s := range []string{"read-only", "l'homme", "北京是首都", "والكتاب", "XMLParser2", "a\u00ad-\u2010'b", "ﾀﾜｰ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, lang := range []Lang{Neutral, English, French, Arabic, Chinese} {
			Analyze(s, lang, func(term Term) {
				if term.Text == "" || len(term.Text) > 4*maxTermLen {
					t.Fatalf("Analyze(%q, %v) gave term %q", s, lang, term.Text)
				}
			})
		}
	})
}

// A word of lower-case ASCII letters takes a short path through analysis
// (termOfPlain); it must end where the general one does, in every
// language and with stop words of another: each language's own stop
// words, real words, made-up ones and one too long to be a term.
func TestTermOfPlainIsTermOf(t *testing.T) {
	words := strings.Fields(strings.ToLower(benchPassage + " running happiness studies flies generously nationalization ies s a"))
	for l := range NumLangs {
		for w := range stopSets[l] {
			words = append(words, w)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 2000 {
		b := make([]byte, 1+n%(maxTermLen+2))
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
		}
		words = append(words, string(b))
	}
	checked := 0
	for l := range NumLangs {
		for _, also := range [][]Lang{nil, {English}, {German, French}} {
			a := analyzer{lang: l, alsoStop: also}
			for _, w := range words {
				if !plainWord(w) {
					continue
				}
				if got, want := a.termOfPlain(w), a.termOf(compose(w), stem); got != want {
					t.Fatalf("%s (also %v): %q gives %q on the short path, %q on the general one", l, also, w, got, want)
				}
				if parts := appendCaseParts(nil, a.clean(w)); len(parts) != 1 || parts[0] != w {
					t.Fatalf("%s: %q split into %q", l, w, parts)
				}
				checked++
			}
		}
	}
	if checked < 10000 {
		t.Fatalf("only %d words checked", checked)
	}
}

func plainWord(w string) bool {
	for _, r := range w {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return w != ""
}
