package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/docsift/docsift/analysis"
	"github.com/docsift/docsift/eval"
	"github.com/docsift/docsift/index"
	"github.com/docsift/docsift/llm"
)

// TestBenchScale runs the whole scale benchmark on a few hundred chunks
// against a freshly built binary and checks that every figure is one a
// working server could give.
func TestBenchScale(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "docsift")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/docsift/docsift").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	res, err := Scale(context.Background(), ScaleConfig{Chunks: 300, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	if res.Chunks < 300 || res.Chunks > 300+ScaleDefaultUploaders || res.Documents != res.Chunks {
		t.Errorf("%d chunks in %d documents, want 300 one-chunk documents", res.Chunks, res.Documents)
	}
	if res.IngestChunksPerSecond <= 0 || res.IngestSeconds <= 0 {
		t.Errorf("ingest %.1f chunks/s in %.2f s", res.IngestChunksPerSecond, res.IngestSeconds)
	}
	// The server worked for its documents (/proc counts in 10 ms ticks,
	// so its share is a few of them), and so did the uploaders.
	if res.IngestServerCPUMsPerDoc <= 0 || res.IngestUploaderCPUMsPerDoc <= 0 {
		t.Errorf("CPU per document: server %.3f ms, uploaders %.3f ms", res.IngestServerCPUMsPerDoc, res.IngestUploaderCPUMsPerDoc)
	}
	// The store keeps each chunk's vector (384 floats), written to disk
	// where the file system counts what reaches it (tmpfs does not).
	if countsWrites(t) && (res.IngestWrittenBytesPerChunk < 384*4 || res.IngestIndexWrittenBytesPerChunk > res.IngestWrittenBytesPerChunk) {
		t.Errorf("%.0f bytes written per chunk, %.0f of them by the index", res.IngestWrittenBytesPerChunk, res.IngestIndexWrittenBytesPerChunk)
	}
	// A Go server holds megabytes, not bytes nor gigabytes.
	for name, b := range map[string]int64{"after ingest": res.RSSAnonAfterIngestBytes, "after restart": res.RSSAnonBytes} {
		if b < 1<<20 || b > 4<<30 {
			t.Errorf("anonymous RSS %s: %d bytes", name, b)
		}
	}
	// The peak was sampled until the ingest's end, when the memory after
	// it was read.
	if res.RSSAnonPeakIngestBytes < res.RSSAnonAfterIngestBytes*3/4 || res.RSSAnonPeakIngestBytes > 4<<30 {
		t.Errorf("anonymous RSS at most %d bytes during the ingest, %d after it", res.RSSAnonPeakIngestBytes, res.RSSAnonAfterIngestBytes)
	}
	if res.RSSAnonPerChunk != float64(res.RSSAnonBytes)/float64(res.Chunks) {
		t.Errorf("per chunk %.0f is not %d / %d", res.RSSAnonPerChunk, res.RSSAnonBytes, res.Chunks)
	}
	// The database holds every chunk's vector too.
	if res.DatabaseBytes < int64(res.Chunks)*384*4 {
		t.Errorf("a database of %d bytes for %d chunks", res.DatabaseBytes, res.Chunks)
	}
	// Every chunk's vector alone is 384 floats, in the snapshot or its
	// segment.
	if res.SnapshotBytes+res.SegmentBytes < int64(res.Chunks)*384*4 {
		t.Errorf("snapshot of %d bytes and segment of %d for %d chunks", res.SnapshotBytes, res.SegmentBytes, res.Chunks)
	}
	for _, q := range []QueryLatency{res.Query1, res.Query8} {
		if q.Errors != 0 || q.P50Ms <= 0 || q.P99Ms < q.P50Ms {
			t.Errorf("queries at %d clients: %+v", q.Clients, q)
		}
		// A query's time in the server is part of its client's, so
		// every percentile of the one is at most the other's.
		if q.ServerP50Ms <= 0 || q.ServerP50Ms > q.P50Ms || q.ServerP99Ms < q.ServerP50Ms || q.ServerP99Ms > q.P99Ms {
			t.Errorf("queries at %d clients, in the server: p50 %.3f ms, p99 %.3f ms; at the clients %.3f and %.3f",
				q.Clients, q.ServerP50Ms, q.ServerP99Ms, q.P50Ms, q.P99Ms)
		}
	}
	// Eight clients' 2,400 queries take the server seconds of CPU, many
	// of /proc's 10 ms ticks, and the clients some.
	if q := res.Query8; q.ServerCPUMs <= 0 || q.ClientCPUMs <= 0 {
		t.Errorf("CPU per query at %d clients: server %.3f ms, clients %.3f ms", q.Clients, q.ServerCPUMs, q.ClientCPUMs)
	}
	if r := res.Reads; r.ListPageMs <= 0 || r.SessionUploadMs <= 0 || r.SessionJobsMs <= 0 {
		t.Errorf("other reads: %+v", r)
	}
	if res.Query8.Clients != 8 {
		t.Errorf("second run had %d clients", res.Query8.Clients)
	}
	for name, s := range map[string]float64{"kill -9": res.FirstQueryAfterKillSeconds, "restart": res.FirstQueryAfterRestartSeconds, "clean stop": res.StopSeconds} {
		if s <= 0 || s > 60 {
			t.Errorf("first query after %s: %.2f s", name, s)
		}
	}
	if res.CaughtUpAfterKillSeconds < res.FirstQueryAfterKillSeconds {
		t.Errorf("caught up %.2f s after kill -9, before its first answer at %.2f s", res.CaughtUpAfterKillSeconds, res.FirstQueryAfterKillSeconds)
	}
	// Every part of the index is reported, and after the restart the
	// vectors are read from the snapshot: 384 floats a chunk, mapped.
	var parts []string
	for _, p := range res.MemoryParts {
		parts = append(parts, p.Part)
		if p.Part == "vectors" && p.MappedPerChunk < 384*4 {
			t.Errorf("vectors: %.0f bytes/chunk mapped, want at least 1,536", p.MappedPerChunk)
		}
	}
	slices.Sort(parts)
	if want := []string{"codes", "documents", "entries", "graph", "postings", "slots", "terms", "vectors"}; !slices.Equal(parts, want) {
		t.Errorf("memory parts %v, want %v", parts, want)
	}
	// The snapshot read in place, the runtime's own: a few dozen.
	if res.MemoryMaps < 10 || res.MemoryMaps > 10000 {
		t.Errorf("%d memory maps", res.MemoryMaps)
	}
	if res.GoHeapInusePerChunk <= 0 || res.GoHeapInuseAfterIngestPerChunk <= 0 {
		t.Errorf("Go heap in use %.0f bytes/chunk after restart, %.0f after ingest", res.GoHeapInusePerChunk, res.GoHeapInuseAfterIngestPerChunk)
	}
}

// With a corpus, each of its documents is uploaded once, whatever its
// length, and the queries are its documents' opening words; with
// customers, the documents go to each in turn, and so do the queries.
func TestBenchScaleCorpus(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "docsift")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/docsift/docsift").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	path := filepath.Join(t.TempDir(), "corpus.jsonl")
	var lines []string
	for i := range 40 {
		text := fmt.Sprintf("Passage %d tells how the lighthouse keeper %d logged the ships passing the point.", i, i)
		if i == 7 {
			text = strings.Repeat("A long passage about tides and harbours. ", 120) // several chunks
		}
		line, _ := json.Marshal(eval.Doc{ID: fmt.Sprintf("p%d", i), Title: "Harbour notes", Text: text})
		lines = append(lines, string(line))
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "kept")
	res, err := Scale(context.Background(), ScaleConfig{Corpus: path, Chunks: 5, Binary: bin, Dir: dir, Customers: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Documents != 40 || res.Chunks <= 40 || res.Customers != 3 {
		t.Errorf("%d chunks in %d documents of %d customers; want every one of the 40 documents once, one of them several chunks, over 3", res.Chunks, res.Documents, res.Customers)
	}
	for _, q := range []QueryLatency{res.Query1, res.Query8} {
		if q.Errors != 0 || q.P50Ms <= 0 {
			t.Errorf("queries: %+v", q)
		}
	}
	// Each customer has an index of its own, the project none.
	if owners, err := filepath.Glob(filepath.Join(dir, "data", "index", "*.idx")); len(owners) != 3 || err != nil {
		t.Errorf("snapshots %v (%v), want one of each of 3 customers", owners, err)
	} else {
		for _, o := range owners {
			if !strings.HasPrefix(filepath.Base(o), "cus_") {
				t.Errorf("a snapshot of %s, not of a customer", filepath.Base(o))
			}
		}
	}
	// No upload or query went to an owner that does not exist.
	if log, err := os.ReadFile(filepath.Join(dir, "server.log")); err != nil || strings.Contains(string(log), "status=404") {
		t.Errorf("server log (%v) holds a 404", err)
	}
	// The kept directory holds the data and a log that says how the
	// restarts loaded the owner.
	if _, err := os.Stat(filepath.Join(dir, "data", "docsift.db")); err != nil {
		t.Errorf("data not kept: %v", err)
	}
	if log, err := os.ReadFile(filepath.Join(dir, "server.log")); err != nil || !strings.Contains(string(log), "index snapshot read and compared with the store") {
		t.Errorf("server log (%v) does not say how the index was loaded:\n%s", err, log)
	}
	// And the queries it ran, for later builds to run again.
	if qs, err := eval.ReadQueries(filepath.Join(dir, "queries.jsonl")); err != nil || len(qs) != 1+9*scaleQueryRequests || !strings.HasPrefix(qs[0].Text, "Passage 0 tells") {
		t.Errorf("queries kept: %d (%v), the first %+v", len(qs), err, qs)
	}
	if _, err := Scale(context.Background(), ScaleConfig{Corpus: path, Binary: bin, Dir: dir}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("a second run into the kept directory: %v, want it refused as not empty", err)
	}
}

// TestScaleTextEnglish checks that the synthetic documents are what they
// claim: deterministic, of the words asked for, and read as English, so
// that the index analyses them by one language's rules as it would a real
// owner's text.
func TestScaleTextEnglish(t *testing.T) {
	gen := newScaleText(1)
	for i := range 20 {
		doc := gen.document(i, 120)
		if doc != newScaleText(1).document(i, 120) {
			t.Fatalf("document %d differs between two generators of one seed", i)
		}
		if n := len(strings.Fields(doc)); n != 120 {
			t.Errorf("document %d has %d words", i, n)
		}
		if lang, _ := analysis.Detect(doc); lang != analysis.English {
			t.Errorf("document %d detected as %v: %.80s", i, lang, doc)
		}
	}
	if gen.document(0, 120) == gen.document(1, 120) {
		t.Error("documents 0 and 1 are the same")
	}
}

// TestScaleQueries checks the synthetic queries' shape: deterministic,
// 2–4 distinct content words each, all of them in one document, and none
// of them a warm-up query.
func TestScaleQueries(t *testing.T) {
	const docs, words = 300, 120
	gen := newScaleText(1)
	for _, q := range gen.queries(50, docs, 2) {
		if len(strings.Fields(q)) == 0 {
			t.Fatal("an empty query of documents of two words")
		}
	}
	qs := gen.queries(50, docs, words)
	if !slices.Equal(qs, newScaleText(1).queries(50, docs, words)) {
		t.Fatal("two generators of one seed made different queries")
	}
	for _, q := range gen.warmUpQueries(50, docs, words) {
		if slices.Contains(qs, q) {
			t.Errorf("warm-up query %q is one of those measured", q)
		}
	}
	if n := len(slices.Compact(slices.Sorted(slices.Values(gen.queries(1000, docs, words))))); n < 990 {
		t.Errorf("%d distinct queries of 1,000: the latency runs ask each once", n)
	}
	// A corpus's queries open its documents: those of one set distinct
	// while there are enough documents, and never the other set's.
	corpus := &scaleText{}
	for i := range 100 {
		corpus.corpus = append(corpus.corpus, eval.Doc{Text: fmt.Sprintf("document %d opens with these words", i)})
	}
	measured, warm := corpus.queries(50, 100, words), corpus.warmUpQueries(30, 100, words)
	if n := len(slices.Compact(slices.Sorted(slices.Values(measured)))); n != 50 {
		t.Errorf("%d distinct queries of 50 from a corpus of 100 documents", n)
	}
	for _, q := range warm {
		if slices.Contains(measured, q) {
			t.Errorf("warm-up query %q of a corpus is one of those measured", q)
		}
	}
	texts := make([]map[string]bool, docs)
	for i := range texts {
		texts[i] = map[string]bool{}
		for _, f := range strings.Fields(gen.document(i, words)) {
			texts[i][strings.ToLower(strings.TrimSuffix(f, "."))] = true
		}
	}
	for _, q := range qs {
		ws := strings.Fields(q)
		if len(ws) < 2 || len(ws) > 4 || len(slices.Compact(slices.Sorted(slices.Values(ws)))) != len(ws) {
			t.Errorf("query %q: want 2–4 distinct words", q)
		}
		for _, w := range ws {
			if slices.Contains(functionWords, w) {
				t.Errorf("query %q holds the function word %q", q, w)
			}
		}
		if !slices.ContainsFunc(texts, func(text map[string]bool) bool {
			return !slices.ContainsFunc(ws, func(w string) bool { return !text[w] })
		}) {
			t.Errorf("query %q: no document holds all its words", q)
		}
	}
}

// TestScaleQueriesMatchLikeReal checks that the synthetic queries ask the
// lexical side for as much work as real ones: the postings of their terms
// among 5,000 synthetic documents, as a share of the documents, within
// half as much again of the MS MARCO sample's queries' among its 5,000
// passages. (Content words drawn evenly from a document, without regard
// to how rare they are, match nearly twice as many.)
func TestScaleQueriesMatchLikeReal(t *testing.T) {
	corpus, err := eval.ReadCorpus(filepath.Join(msmarcoDir, "corpus.jsonl"))
	if err != nil {
		t.Skipf("shared MS MARCO sample not found at %s (%v)", msmarcoDir, err)
	}
	queries, err := eval.ReadQueries(filepath.Join(msmarcoDir, "queries.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var realDocs, realQueries []string
	for _, d := range corpus {
		realDocs = append(realDocs, corpusText(d))
	}
	for _, q := range queries {
		realQueries = append(realQueries, q.Text)
	}
	gen := newScaleText(0)
	docs := make([]string, len(corpus))
	for i := range docs {
		docs[i] = gen.document(i, ScaleDefaultWords)
	}
	real := postingsShare(realDocs, realQueries)
	synthetic := postingsShare(docs, gen.queries(200, len(docs), ScaleDefaultWords))
	t.Logf("a query's postings, as a share of the documents: MS MARCO %.3f, synthetic %.3f", real, synthetic)
	if synthetic < real/1.5 || synthetic > real*1.5 {
		t.Errorf("synthetic queries match %.3f of the documents, real ones %.3f: not within a factor of 1.5", synthetic, real)
	}
}

// postingsShare returns the mean over queries of their distinct terms'
// document frequencies in docs, summed, over the number of docs.
func postingsShare(docs, queries []string) float64 {
	df := map[string]int{}
	for _, d := range docs {
		seen := map[string]bool{}
		analysis.Analyze(d, analysis.English, func(t analysis.Term) {
			if !seen[t.Text] {
				seen[t.Text] = true
				df[t.Text]++
			}
		})
	}
	var sum int
	for _, q := range queries {
		seen := map[string]bool{}
		analysis.AnalyzeQuery(q, analysis.English, nil, func(t analysis.Term) {
			if !seen[t.Text] {
				seen[t.Text] = true
				sum += df[t.Text]
			}
		})
	}
	return float64(sum) / float64(len(queries)) / float64(len(docs))
}

// BenchmarkScaleIndexMemory builds one owner's index in process, from the
// same documents and built-in vectors as bench scale, and reports its heap
// per chunk, for 20,000 chunks: the index's share of the server's
// memory. With -memprofile the profile says where it goes:
//
//	go test ./bench -run '^$' -bench ScaleIndexMemory -benchtime 1x -memprofile /tmp/mem.out
func BenchmarkScaleIndexMemory(b *testing.B) {
	const n = 20000
	gen := newScaleText(0)
	em := llm.NewBuiltin()
	for b.Loop() {
		before := liveHeap()
		x := index.New(em.Model(), em.Dim())
		const batch = 256
		for first := 0; first < n; first += batch {
			entries := make([]index.Entry, 0, batch)
			texts := make([]string, 0, batch)
			for i := first; i < min(first+batch, n); i++ {
				name := fmt.Sprintf("doc-%07d.txt", i)
				text := gen.document(i, ScaleDefaultWords)
				entries = append(entries, index.Entry{ID: uint64(i + 1), Text: text, Name: name,
					Doc: &index.Document{ID: fmt.Sprintf("doc_%d", i)}})
				texts = append(texts, name+"\n"+text)
			}
			vecs, err := em.Embed(context.Background(), texts)
			if err != nil {
				b.Fatal(err)
			}
			for i := range entries {
				entries[i].Vector = vecs[i]
			}
			if err := x.Add(entries...); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(liveHeap()-before)/n, "heap-bytes/chunk")
		scaleIndexKept = x
	}
}

// scaleIndexKept keeps the last index alive for the heap profile, which
// is written after the benchmark returns.
var scaleIndexKept *index.OwnerIndex

func liveHeap() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// countsWrites reports whether this process's writes to a synced file in
// the temp dir show in /proc/self/io's write_bytes.
func countsWrites(t *testing.T) bool {
	before := writtenBytes(os.Getpid())
	f, err := os.Create(filepath.Join(t.TempDir(), "probe"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	return writtenBytes(os.Getpid()) > before
}

// TestIndexSaves sums the sizes of the index saves a server's log gives
// past an offset, and how long they held writers (all of a save of a
// server that does not say), and nothing else.
func TestIndexSaves(t *testing.T) {
	before := `time=2026-11-23T03:56:07.541Z level=INFO msg="index saved" owner=prj_a entries=10 whole=true segment=0 mb=100 ms=5` + "\n"
	after := `time=2026-11-23T03:56:16.479Z level=INFO msg="index saved" owner=prj_a entries=10012 whole=true segment=0 mb=42.5 ms=787 held_ms=12
time=2026-11-23T03:56:17.000Z level=INFO msg="upload stored" owner=prj_a mb=7
time=2026-11-23T03:56:26.214Z level=INFO msg="index saved" owner=prj_a entries=20025 whole=false segment=1 mb=0.5 ms=125
`
	log := filepath.Join(t.TempDir(), "server.log")
	if err := os.WriteFile(log, []byte(before+after), 0o600); err != nil {
		t.Fatal(err)
	}
	bytes, secs := indexSaves(log, int64(len(before)))
	if want := int64(43 << 20); bytes != want {
		t.Errorf("saved %d bytes, want %d", bytes, want)
	}
	if math.Abs(secs-0.137) > 1e-9 {
		t.Errorf("saves held writers %v s, want 0.137", secs)
	}
}

// TestQueryTimes checks what bench scale reads of a server's log: the
// times of the queries answered 200 past the offset, and nothing before
// it or of other requests.
func TestQueryTimes(t *testing.T) {
	log := filepath.Join(t.TempDir(), "server.log")
	before := "time=x level=INFO msg=request request_id=a method=POST route=/query/project status=200 bytes=9 ms=9.5\n"
	after := "time=x level=INFO msg=request request_id=b method=POST route=/query/project status=200 bytes=9 ms=1.25\n" +
		"time=x level=INFO msg=request request_id=c method=POST route=/upload/text status=200 bytes=9 ms=7\n" +
		"time=x level=INFO msg=request request_id=d method=POST route=/query/customer status=400 bytes=9 ms=8\n" +
		"time=x level=INFO msg=\"index saved\" owner=o mb=2 ms=6\n" +
		"time=x level=INFO msg=request request_id=e method=POST route=/query/customer status=200 bytes=9 ms=2.5\n"
	if err := os.WriteFile(log, []byte(before+after), 0o600); err != nil {
		t.Fatal(err)
	}
	got := queryTimes(context.Background(), log, int64(len(before)), 2)
	if !slices.Equal(got, []float64{1.25, 2.5}) {
		t.Errorf("query times %v, want [1.25 2.5]", got)
	}
	if n, secs := indexSaves(log, int64(len(before))); n != 2<<20 || secs != 0.006 {
		t.Errorf("saved %d bytes in %v s, want 2 MiB in 0.006", n, secs)
	}
}
