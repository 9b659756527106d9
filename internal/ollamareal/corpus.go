package ollamareal

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unicode"
)

// corpusRel is the MS MARCO sample docsift's benchmarks use, relative to a
// directory that holds shared/ (the steering checkout sits beside the
// project's). Real text gives the models a vocabulary that covers the words
// tests send, so most words are one token, as with a real model.
const corpusRel = "shared/data/msmarco-5k/corpus.jsonl"

// builtinText stands in for the corpus when it is absent: plain English
// about documents and search, enough for a vocabulary of common words.
const builtinText = `The quick brown fox jumps over the lazy dog. A document search service
reads files, splits them into chunks, embeds each chunk as a vector and
answers questions with the passages that match best. People upload reports,
manuals, contracts, invoices and notes; the service extracts the text of
every page, keeps the page number, and builds an index for each project and
customer. When a question arrives it finds the nearest vectors and the best
lexical matches, fuses the two lists and writes an answer that cites its
sources. Temperature is measured in degrees Celsius or Fahrenheit. Water
boils at one hundred degrees at sea level. The capital of France is Paris,
the capital of Germany is Berlin, and the capital of Japan is Tokyo. The
human heart pumps blood through arteries and veins; the lungs bring oxygen
into the body. A computer program is a list of instructions; a server
answers requests from clients over a network. Good software is tested,
measured and documented, and it fails with a clear message when something
goes wrong. History, science, mathematics, geography, music, art, health,
money, law, weather, food, travel and sport are common topics of questions
people ask every day about time, place, cost, size, reason and method.`

// corpus is the text the models' vocabularies are built from.
type corpus struct {
	Source   string   // path of the corpus, or "built-in"
	Passages []string // one text per line of the corpus
}

var (
	corpusOnce sync.Once
	corpusVal  corpus
)

// loadCorpus reads the MS MARCO sample when it can be found above the
// working directory, else the built-in text; once per process.
func loadCorpus() corpus {
	corpusOnce.Do(func() {
		if path := findUp(corpusRel); path != "" {
			if ps, err := readPassages(path); err == nil && len(ps) > 0 {
				corpusVal = corpus{Source: path, Passages: ps}
				return
			}
		}
		var ps []string
		for _, para := range strings.Split(builtinText, ".") {
			if p := strings.Join(strings.Fields(para), " "); p != "" {
				ps = append(ps, p+".")
			}
		}
		corpusVal = corpus{Source: "built-in", Passages: ps}
	})
	return corpusVal
}

// findUp returns dir/rel for the nearest ancestor dir of the working
// directory where it exists, or "".
func findUp(rel string) string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		p := filepath.Join(dir, rel)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

func readPassages(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var doc struct {
			Title string `json:"title"`
			Text  string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &doc); err != nil {
			return nil, fmt.Errorf("ollamareal: %s: %w", path, err)
		}
		if t := strings.TrimSpace(doc.Title + " " + doc.Text); t != "" {
			out = append(out, t)
		}
	}
	return out, sc.Err()
}

// words splits text as the models' vocabulary sees it: lower-cased runs of
// letters and digits.
func words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// topWords returns the n most frequent words of the corpus (ties in
// alphabetical order, so the list is the same on every run).
func (c corpus) topWords(n int) []string {
	counts := make(map[string]int)
	for _, p := range c.Passages {
		for _, w := range words(p) {
			counts[w]++
		}
	}
	list := make([]string, 0, len(counts))
	for w := range counts {
		list = append(list, w)
	}
	sort.Slice(list, func(i, j int) bool {
		if counts[list[i]] != counts[list[j]] {
			return counts[list[i]] > counts[list[j]]
		}
		return list[i] < list[j]
	})
	return list[:min(n, len(list))]
}

// Text returns about n words of real text, from passage start on, joined
// with spaces: inputs of a known length for tests and measurements.
func Text(start, n int) string {
	c := loadCorpus()
	var out []string
	for i := start; len(out) < n; i++ {
		for _, w := range strings.Fields(c.Passages[i%len(c.Passages)]) {
			if len(out) == n {
				break
			}
			out = append(out, w)
		}
	}
	return strings.Join(out, " ")
}
