package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/docsift/docsift/internal/progress"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/pdf"
	"github.com/docsift/docsift/search"
)

// qaChunks is how many chunks a question retrieves to rank pages by: pages
// count once, at their best chunk, and ten pages need some chunks to spare.
const qaChunks = 50

// QAConfig says what `docsift eval --qa` measures.
type QAConfig struct {
	Questions string // a file in the format of pdfqa/dev.json
	Docs      string // the directory holding the documents it names
	// Reference, when set, is the BM25 reference script
	// (bench/pdfqa_bm25.py), run in the same run on the same page text.
	Reference string
	Embedder  llm.Embedder // nil: the built-in embedder
	Workers   int
	Progress  io.Writer
	Log       *slog.Logger
}

// QAScores are page-level retrieval scores over a set of questions.
type QAScores struct {
	Questions int     `json:"questions"`
	Hit1      float64 `json:"hit_at_1"`
	Hit3      float64 `json:"hit_at_3"`
	MRR       float64 `json:"mrr_at_10"`
}

// QAResult is what `docsift eval --qa` prints.
type QAResult struct {
	QAScores
	QueryP50Ms float64   `json:"query_p50_ms"`
	Documents  int       `json:"documents"`
	Pages      int       `json:"pages"`
	Chunks     int       `json:"chunks"`
	Embedder   string    `json:"embedder"`
	BM25       *QAScores `json:"bm25,omitempty"`
	// Answers says, question by question, where the answering pages
	// came: what to read when a figure moves.
	Answers []QAAnswer `json:"answers"`
}

// QAAnswer is one question's outcome: the rank (1-based) of its first
// answering page among the pages returned, 0 when none is in the first
// ten, and the first three pages returned, as "document#page".
type QAAnswer struct {
	Question string   `json:"question"`
	Relevant []string `json:"relevant"`
	Rank     int      `json:"rank"`
	Top      []string `json:"top"`
}

// qaFile is the questions file: for each document (a file name in Docs),
// questions with the 1-based pages that answer them.
type qaFile struct {
	Documents map[string][]qaQuestion `json:"documents"`
}

// qaQuestion is ["question", [pages...]].
type qaQuestion struct {
	Text  string
	Pages []int
}

func (q *qaQuestion) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil || len(raw) != 2 {
		return fmt.Errorf(`a question must be ["question", [pages]], not %s`, b)
	}
	if err := json.Unmarshal(raw[0], &q.Text); err != nil {
		return err
	}
	return json.Unmarshal(raw[1], &q.Pages)
}

func pageKey(doc string, page int) string { return doc + "#" + strconv.Itoa(page) }

// RunQA ingests the documents a questions file names through the upload
// pipeline, asks every question as a query of the owner holding them all,
// and scores the pages of the returned chunks: hit@1 and hit@3 (a page
// that answers is among the first one or three distinct pages), MRR@10.
func RunQA(ctx context.Context, cfg QAConfig) (*QAResult, error) {
	if cfg.Embedder == nil {
		cfg.Embedder = llm.NewBuiltin()
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	var qf qaFile
	b, err := os.ReadFile(cfg.Questions)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	if err := json.Unmarshal(b, &qf); err != nil {
		return nil, fmt.Errorf("eval: %s: %w", cfg.Questions, err)
	}
	if len(qf.Documents) == 0 {
		return nil, fmt.Errorf("eval: %s names no documents", cfg.Questions)
	}
	names := make([]string, 0, len(qf.Documents))
	for name := range qf.Documents {
		names = append(names, name)
	}
	sort.Strings(names)

	var docs []Doc
	var pages []refPage
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(cfg.Docs, name))
		if err != nil {
			return nil, fmt.Errorf("eval: %w", err)
		}
		docs = append(docs, Doc{ID: name, Title: name, Data: data})
		if cfg.Reference != "" {
			ex, err := pdf.Extract(ctx, data)
			if err != nil {
				return nil, fmt.Errorf("eval: %s: %w", name, err)
			}
			for _, p := range ex.Pages {
				pages = append(pages, refPage{Doc: name, Page: p.Number, Text: p.Text})
			}
		}
	}
	run, err := IngestCorpus(docs, cfg.Embedder, cfg.Workers, 1, true, cfg.Progress, cfg.Log)
	if err != nil {
		return nil, err
	}
	defer run.Close()
	searcher := search.New(run.Engine, run.Store, llm.NewExtractive(), nil, cfg.Log)

	res := &QAResult{Documents: len(docs), Chunks: run.Chunks, Embedder: cfg.Embedder.Model()}
	var refQuestions []refQuestion
	var lat []float64
	total := 0
	for _, name := range names {
		total += len(qf.Documents[name])
	}
	bar := progress.New(cfg.Progress, "questions", total)
	for _, name := range names {
		for _, q := range qf.Documents[name] {
			relevant := map[string]bool{}
			for _, p := range q.Pages {
				relevant[pageKey(name, p)] = true
			}
			start := time.Now()
			results, _, err := searcher.Search(ctx, run.Owner, q.Text, qaChunks)
			if err != nil {
				return nil, fmt.Errorf("eval: question %q: %w", q.Text, err)
			}
			lat = append(lat, float64(time.Since(start).Microseconds())/1000)
			var ranked []string
			seen := map[string]bool{}
			for _, r := range results {
				k := pageKey(run.ByDoc[r.Chunk.DocumentID], r.Chunk.Page)
				if !seen[k] {
					seen[k] = true
					ranked = append(ranked, k)
				}
			}
			res.Answers = append(res.Answers, QAAnswer{
				Question: q.Text, Relevant: keys(relevant), Rank: res.add(ranked, relevant), Top: ranked[:min(3, len(ranked))],
			})
			refQuestions = append(refQuestions, refQuestion{Text: q.Text, Relevant: keys(relevant)})
			bar.Set(res.Questions)
		}
	}
	bar.Done()
	if res.Questions == 0 {
		return nil, errors.New("eval: the questions file holds no question")
	}
	res.finish()
	res.QueryP50Ms = Percentile(lat, 0.50)
	res.Pages = len(pages)
	if cfg.Reference != "" {
		if res.BM25, err = runReference(ctx, cfg.Reference, pages, refQuestions); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// add scores one question's ranked pages and returns the 1-based rank of
// the first relevant one, 0 when none is in the first DefaultTopK.
func (s *QAScores) add(ranked []string, relevant map[string]bool) int {
	s.Questions++
	for i, p := range ranked {
		if i >= DefaultTopK {
			break
		}
		if relevant[p] {
			if i < 1 {
				s.Hit1++
			}
			if i < 3 {
				s.Hit3++
			}
			s.MRR += 1 / float64(i+1)
			return i + 1
		}
	}
	return 0
}

func (s *QAScores) finish() {
	n := float64(s.Questions)
	s.Hit1, s.Hit3, s.MRR = s.Hit1/n, s.Hit3/n, s.MRR/n
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

type refPage struct {
	Doc  string `json:"doc"`
	Page int    `json:"page"`
	Text string `json:"text"`
}

type refQuestion struct {
	Text     string   `json:"text"`
	Relevant []string `json:"relevant"`
}

// runReference runs the BM25 reference script on the same pages and
// questions and returns its scores.
func runReference(ctx context.Context, script string, pages []refPage, questions []refQuestion) (*QAScores, error) {
	f, err := os.CreateTemp("", "docsift-qa-*.json")
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	defer os.Remove(f.Name())
	err = json.NewEncoder(f).Encode(map[string]any{"pages": pages, "questions": questions})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "python3", script, f.Name())
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("eval: the BM25 reference %s failed: %v: %s", script, err, stderr.String())
	}
	var s QAScores
	if err := json.Unmarshal(out, &s); err != nil {
		return nil, fmt.Errorf("eval: the BM25 reference printed %q: %w", out, err)
	}
	return &s, nil
}
