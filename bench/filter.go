package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/docsift/docsift/eval"
	"github.com/docsift/docsift/internal/progress"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/search"
)

// Defaults of FilterConfig.
const (
	DefaultFilterGroups = 100 // a filter on one group allows 1% of the passages
	DefaultFilterRounds = 20
)

// FilterConfig describes `docsift bench filter`.
type FilterConfig struct {
	Corpus  string // BEIR corpus.jsonl
	Queries string // BEIR queries.jsonl; empty: the passages' first words
	// Groups labels passage i with metadata group = i mod Groups, so a
	// filter on one group allows 1/Groups of them.
	Groups   int
	Rounds   int // passes over the queries, each filtering on other groups
	TopK     int
	Embedder llm.Embedder // nil: the built-in embedder
	Workers  int
	Progress io.Writer
	Log      *slog.Logger
}

// FilterResult is what `docsift bench filter` prints.
type FilterResult struct {
	Documents   int     `json:"documents"`
	Chunks      int     `json:"chunks"`
	Groups      int     `json:"groups"`
	Selectivity float64 `json:"selectivity"` // share of the chunks a filter allows
	Queries     int     `json:"queries"`     // timed searches of each kind
	TopK        int     `json:"top_k"`
	// FilteredP50Ms and the rest time search.SearchFiltered, the retrieval
	// of /query/* (query embedding, index, store reads; no HTTP, no answer).
	FilteredP50Ms   float64 `json:"filtered_p50_ms"`
	FilteredP95Ms   float64 `json:"filtered_p95_ms"`
	UnfilteredP50Ms float64 `json:"unfiltered_p50_ms"`
	UnfilteredP95Ms float64 `json:"unfiltered_p95_ms"`
	// FullResults is the share of filtered searches that returned TopK
	// chunks, all of them from the allowed group.
	FullResults float64 `json:"full_results"`
	Embedder    string  `json:"embedder"`
}

// Filter indexes a corpus with every passage labelled by group, then
// times searches filtered to one group (1% of the passages by default)
// beside the same searches unfiltered, and checks that each filtered one
// returned top_k chunks of its group.
func Filter(ctx context.Context, cfg FilterConfig) (*FilterResult, error) {
	if cfg.Groups <= 0 {
		cfg.Groups = DefaultFilterGroups
	}
	if cfg.Rounds <= 0 {
		cfg.Rounds = DefaultFilterRounds
	}
	if cfg.TopK <= 0 {
		cfg.TopK = eval.DefaultTopK
	}
	if cfg.Embedder == nil {
		cfg.Embedder = llm.NewBuiltin()
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	docs, err := eval.ReadCorpus(cfg.Corpus)
	if err != nil {
		return nil, err
	}
	if len(docs) < cfg.Groups {
		return nil, fmt.Errorf("bench: %d passages cannot fill %d groups", len(docs), cfg.Groups)
	}
	for i := range docs {
		docs[i].Metadata = map[string]string{"group": group(i % cfg.Groups)}
	}
	var queries []string
	if cfg.Queries != "" {
		qs, err := eval.ReadQueries(cfg.Queries)
		if err != nil {
			return nil, err
		}
		for _, q := range qs {
			queries = append(queries, q.Text)
		}
	} else {
		for _, d := range docs[:min(50, len(docs))] {
			queries = append(queries, firstWords(d.Text, 6))
		}
	}
	if len(queries) == 0 {
		return nil, errors.New("bench: no queries")
	}

	run, err := eval.IngestCorpus(docs, cfg.Embedder, cfg.Workers, 1, true, cfg.Progress, cfg.Log)
	if err != nil {
		return nil, err
	}
	defer run.Close()
	corpusGroup := make(map[string]string, len(docs))
	for _, d := range docs {
		corpusGroup[d.ID] = d.Metadata["group"]
	}
	groupOf := make(map[string]string, len(run.ByDoc)) // docsift document id → group
	for id, corpusID := range run.ByDoc {
		groupOf[id] = corpusGroup[corpusID]
	}

	searcher := search.New(run.Engine, run.Store, llm.NewExtractive(), nil, cfg.Log)
	// One untimed pass warms the caches and loads the owner's index.
	for _, q := range queries {
		if _, _, err := searcher.Search(ctx, run.Owner, q, cfg.TopK); err != nil {
			return nil, fmt.Errorf("bench: query %q: %w", q, err)
		}
	}
	res := &FilterResult{Documents: len(docs), Chunks: run.Chunks, Groups: cfg.Groups, TopK: cfg.TopK, Embedder: cfg.Embedder.Model()}
	var filtered, plain []float64
	full := 0
	bar := progress.New(cfg.Progress, "querying ", cfg.Rounds*len(queries))
	for round := range cfg.Rounds {
		for i, q := range queries {
			bar.Set(round*len(queries) + i)
			g := group((round*len(queries) + i) % cfg.Groups)
			f, err := search.ParseFilter([]byte(`{"metadata.group": {"eq": "` + g + `"}}`))
			if err != nil {
				return nil, err
			}
			start := time.Now()
			results, _, err := searcher.SearchFiltered(ctx, run.Owner, q, cfg.TopK, f)
			if err != nil {
				return nil, fmt.Errorf("bench: filtered query %q: %w", q, err)
			}
			filtered = append(filtered, ms(time.Since(start)))
			ok := len(results) == cfg.TopK
			for _, r := range results {
				ok = ok && groupOf[r.Chunk.DocumentID] == g
			}
			if ok {
				full++
			}
			start = time.Now()
			if _, _, err := searcher.Search(ctx, run.Owner, q, cfg.TopK); err != nil {
				return nil, fmt.Errorf("bench: query %q: %w", q, err)
			}
			plain = append(plain, ms(time.Since(start)))
		}
	}
	bar.Done()
	res.Queries = len(filtered)
	res.Selectivity = 1 / float64(cfg.Groups)
	res.FilteredP50Ms, res.FilteredP95Ms = eval.Percentile(filtered, 0.50), eval.Percentile(filtered, 0.95)
	res.UnfilteredP50Ms, res.UnfilteredP95Ms = eval.Percentile(plain, 0.50), eval.Percentile(plain, 0.95)
	res.FullResults = float64(full) / float64(len(filtered))
	return res, nil
}

// group names group i.
func group(i int) string { return fmt.Sprintf("g%03d", i) }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// firstWords is the first n words of text: a query when a corpus comes
// without queries.
func firstWords(text string, n int) string {
	words := strings.Fields(text)
	return strings.Join(words[:min(n, len(words))], " ")
}
