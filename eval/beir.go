// Package eval is `docsift eval`: retrieval quality on a user's own data,
// a BEIR-format dataset (the metrics computed exactly as the BM25
// reference script computes them, so the two compare in one run) or
// questions about documents. Its BEIR files and its corpus ingested in
// process (IngestCorpus) serve package bench's speed measurements too.
package eval

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Doc is one corpus document.
type Doc struct {
	ID    string `json:"_id"`
	Title string `json:"title"`
	Text  string `json:"text"`
	Data  []byte `json:"-"` // a file's bytes, uploaded instead of Text
	// Metadata is uploaded with the document (bench filter labels the
	// passages with it); a corpus file's own is not read.
	Metadata map[string]string `json:"-"`
}

// Query is one test query.
type Query struct {
	ID   string `json:"_id"`
	Text string `json:"text"`
}

// Qrels maps a query id to its judged documents and their graded relevance.
type Qrels map[string]map[string]int

// ReadCorpus reads a BEIR corpus.jsonl: one JSON document per line.
func ReadCorpus(path string) ([]Doc, error) { return readJSONL[Doc](path) }

// ReadQueries reads a BEIR queries.jsonl.
func ReadQueries(path string) ([]Query, error) { return readJSONL[Query](path) }

func readJSONL[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, fmt.Errorf("eval: %s line %d: %w", path, line, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("eval: read %s: %w", path, err)
	}
	return out, nil
}

// ReadQrels reads a BEIR qrels TSV (query-id, corpus-id, score), with or
// without its header row.
func ReadQrels(path string) (Qrels, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	q := Qrels{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		p := strings.Split(strings.TrimRight(sc.Text(), "\r"), "\t")
		if len(p) < 3 || p[0] == "query-id" {
			continue
		}
		score, err := strconv.Atoi(strings.TrimSpace(p[2]))
		if err != nil {
			return nil, fmt.Errorf("eval: %s line %d: score %q is not a whole number", path, line, p[2])
		}
		if q[p[0]] == nil {
			q[p[0]] = map[string]int{}
		}
		q[p[0]][p[1]] = score
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("eval: read %s: %w", path, err)
	}
	return q, nil
}
