package analysis

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// plainSample is a fixed multilingual sample for the plain-English
// shortcut: English passages it should take, English it must leave to the
// trigrams (too short, too few function words), and passages of English's
// Latin-script neighbours, whose function words overlap English's ("in",
// "is", "a", "die", "of"), which it must never take.
var plainSample = []string{
	// English.
	"The parser is case sensitive, and comments begin with two dashes and end at the end of the line. A blank line ends the paragraph, and the next one starts with the first word that follows it.",
	"If you forget your password, open the sign-in page and choose the link below the form. We will send you an email with a code that is valid for one hour, and you can then choose a new password.",
	"Daniel Gabriel Fahrenheit was the German physicist who invented a alcohol thermometer in 1709, and the mercury thermometer in 1714. In 1724, he introduced the standard temperature scale that bears his name.",
	"Café owners in Zürich said that the new rules would be hard on them, as most of their customers come in the morning and stay for an hour or more with one cup of coffee.",
	// UTF-8 read as Windows-1252 (mojibake), as in much of MS MARCO: six
	// apostrophes made "â" and two control characters each.
	"Itâ\u0080\u0099s not that we donâ\u0080\u0099t like the old house, but itâ\u0080\u0099s too small for us now. Weâ\u0080\u0099re moving in the spring, and weâ\u0080\u0099ll miss the garden that weâ\u0080\u0099ve kept for years.",
	"causes of left ventricular hypertrophy",
	"Kubernetes Helm chart PostgreSQL StatefulSet PersistentVolumeClaim configuration values reference guide",
	// Neighbours.
	"Die regering het vandag aangekondig dat die belasting op brandstof in die volgende jaar verhoog sal word, en dit is vir baie mense in die land 'n groot probleem wat hulle nie kan bekostig nie.",
	"Het is in de winter vaak koud in Nederland, en dan is het fijn om met een kop thee bij de kachel te zitten. In de zomer is het warm en gaan veel mensen naar het strand aan de kust van de Noordzee.",
	"Det var en gang en mann som bodde i et lite hus ved havet. Han hadde en katt og en hund, og hver morgen gikk han ned til stranden for å se om det var kommet noen fisk i garnet hans.",
	"Il governo ha annunciato oggi nuove misure per ridurre il prezzo della luce e del gas nelle case degli italiani, e il ministro ha detto che in a settimana arriveranno anche gli aiuti per le imprese.",
	"O governo anunciou hoje novas medidas para reduzir o preço da eletricidade nas casas, e o ministro disse que a ajuda para as empresas vai chegar em a semana que vem, se o parlamento aprovar a lei.",
	"Ein unbefristeter Mietvertrag kann vom Mieter mit einer Frist von drei Monaten gekuendigt werden. Die Kuendigung muss schriftlich erfolgen und vom Vermieter bis zum dritten Werktag eines Monats empfangen werden.",
	"Le locataire peut resilier son bail a tout moment en respectant un preavis de trois mois, et le proprietaire doit lui rendre le depot de garantie dans un delai de deux mois apres la remise des cles.",
	"Pemerintah mengumumkan hari ini langkah baru untuk menurunkan harga listrik di rumah tangga, dan menteri mengatakan bahwa bantuan untuk perusahaan akan datang minggu depan jika parlemen setuju.",
	"Vlada je danas objavila nove mjere za smanjenje cijene struje u kucanstvima, a ministar je rekao da ce pomoc za poduzeca stici iduci tjedan ako sabor izglasa zakon koji je vec na dnevnom redu.",
	"Hallitus ilmoitti tanaan uusista toimista sahkon hinnan alentamiseksi kotitalouksissa, ja ministeri sanoi, etta yritysten tuki tulee ensi viikolla, jos eduskunta hyvaksyy lain ajoissa.",
}

// The shortcut says English only where the trigrams (with their stop-word
// vote) say English and reliable: on the fixed sample, on the MS MARCO
// sample (when the shared data is present) and on every language's test
// set of package eval.
func TestPlainEnglishAgrees(t *testing.T) {
	check := func(source string, texts []string) (taken int) {
		t.Helper()
		for _, text := range texts {
			text = detectPart(text)
			if !plainEnglish(text) {
				continue
			}
			taken++
			if lang, reliable := detectSlowly(text); lang != English || !reliable {
				t.Errorf("%s: plainEnglish takes %q, which the trigrams call %v (reliable %v)", source, text, lang, reliable)
			}
		}
		return taken
	}
	if n := check("sample", plainSample); n != 5 {
		t.Errorf("plainEnglish took %d texts of the sample, want the first 5 (English, long enough)", n)
	}
	sets, err := filepath.Glob("../eval/testdata/lang/*/corpus.jsonl")
	if err != nil || len(sets) == 0 {
		t.Fatalf("language test sets not found: %v", err)
	}
	for _, set := range sets {
		if n := check(set, corpusTexts(t, set)); n != 0 {
			t.Errorf("%s: plainEnglish took %d texts of a set with no English", set, n)
		}
	}
	const msmarco = "../../shared/data/msmarco-5k/corpus.jsonl"
	if _, err := os.Stat(msmarco); err != nil {
		t.Skipf("checked the sample and the language sets; %s not found, so not MS MARCO", msmarco)
	}
	texts := corpusTexts(t, msmarco)
	// Most of the sample is plain English: the shortcut must be what
	// answers it, or it saves nothing.
	if n := check(msmarco, texts); n < len(texts)*8/10 {
		t.Errorf("plainEnglish took %d of %d MS MARCO passages, want at least 80%%", n, len(texts))
	}
}

// listedStops answers as isStop does for every language without a stop
// word function, on each list's words and on words of no list.
func TestListedStopsIsStop(t *testing.T) {
	words := []string{"the", "and", "ein", "het", "zijn", "qualquer", "thermometer", "", "'s"}
	for _, set := range stopSets {
		for w := range set {
			words = append(words, w)
		}
	}
	for _, w := range words {
		for l := range NumLangs {
			if stopFuncs[l] != nil {
				continue
			}
			if got, want := listedStops[w]&(1<<l) != 0, isStop(l, w); got != want {
				t.Errorf("listedStops[%q] says %v for %v, isStop %v", w, got, l, want)
			}
		}
	}
}

// detectSlowly is detect without the plain-English shortcut.
func detectSlowly(text string) (Lang, bool) {
	if hasKana(text) {
		return Japanese, true
	}
	return detectTrigrams(text)
}

// corpusTexts reads the texts of a BEIR corpus.jsonl, each with its title
// first when it has one, as ingest joins a document's name and its text.
func corpusTexts(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var texts []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var d struct{ Title, Text string }
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		texts = append(texts, d.Text)
		if d.Title != "" {
			texts = append(texts, d.Title+"\n"+d.Text)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return texts
}
