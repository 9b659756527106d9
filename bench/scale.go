package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/docsift/docsift/eval"
	"github.com/docsift/docsift/store/bolt"
)

// Defaults of Scale; `docsift bench scale` shows them as its flags'.
const (
	ScaleDefaultChunks    = 100000
	ScaleDefaultWords     = 120
	ScaleDefaultUploaders = 8
	// scaleQueryRequests is how many queries each latency run sends per
	// client: enough for a stable p99 at eight clients, few enough to
	// take seconds.
	scaleQueryRequests = 300
	// scaleWarmUpRequests is how many queries, of others than those
	// measured, precede the latency runs.
	scaleWarmUpRequests = 1000
	// scaleVocabulary is the number of distinct content words of the
	// synthetic text, drawn with Zipf's law as real text's are.
	scaleVocabulary = 30000
	// scaleZipfS and scaleZipfV shape that law: word k of the vocabulary
	// (the function words first) has a chance ∝ (scaleZipfV+k)^−scaleZipfS.
	scaleZipfS = 1.07
	scaleZipfV = 2
	// scaleStartWait bounds how long a child server may take to answer
	// its first query: a rebuild of a million chunks takes minutes.
	scaleStartWait = 30 * time.Minute
	scalePoll      = 5 * time.Millisecond
	// scaleCatchUpPoll is how often the end of a catch-up is asked for.
	scaleCatchUpPoll = 100 * time.Millisecond
)

// ScaleConfig says what Scale runs.
type ScaleConfig struct {
	Chunks    int    // chunks to build the owner of
	Words     int    // words per document; at most chunkTargetWords makes one chunk each
	Uploaders int    // uploads in flight
	Binary    string // the docsift executable the child servers run; default this one
	// Corpus, when set, is a BEIR corpus.jsonl whose documents are
	// uploaded, each once, instead of synthetic text (Chunks and Words
	// then do not apply); queries are the opening words of its documents.
	Corpus string
	// Dir, when set, is where the child servers keep their data and
	// logs, left in place afterwards (it must not exist yet, or be
	// empty); by default a temporary directory removed at the end.
	Dir      string
	Seed     uint64
	Progress io.Writer // progress lines; nil for none
	// Customers, when set, spreads the documents over this many
	// customers of the project, in turn, each an owner with an index of
	// its own, as a multi-tenant server holds them; a query goes to the
	// customer of the document it was drawn from.
	Customers int
}

// ScaleResult is what `docsift bench scale` prints.
type ScaleResult struct {
	Chunks    int `json:"chunks"`
	Documents int `json:"documents"`
	Customers int `json:"customers"` // the owners the chunks are spread over, 0 for the project alone

	IngestSeconds         float64 `json:"ingest_seconds"`
	IngestChunksPerSecond float64 `json:"ingest_chunks_per_second"`
	// CPU time spent per document during the ingest, by the server and by
	// this process's uploaders (which share the machine's cores with it
	// when both run on one), in milliseconds.
	IngestServerCPUMsPerDoc   float64 `json:"ingest_server_cpu_ms_per_doc"`
	IngestUploaderCPUMsPerDoc float64 `json:"ingest_uploader_cpu_ms_per_doc"`
	// What the server had the disk write during the ingest (the store,
	// the originals, the index's snapshots and segments), per chunk, and
	// of that the index's saves (as its log gives their sizes).
	IngestWrittenBytesPerChunk      float64 `json:"ingest_written_bytes_per_chunk"`
	IngestIndexWrittenBytesPerChunk float64 `json:"ingest_index_written_bytes_per_chunk"`
	// How long the index's saves kept chunks waiting to be added to the
	// owner's index during the ingest, in seconds: moments of each save,
	// and a whole snapshot's move onto its file (searches never wait).
	IngestIndexSaveSeconds float64 `json:"ingest_index_save_seconds"`

	// Memory of the server: anonymous RSS (heap, stacks: what the
	// process itself holds, /proc/<pid>/status RssAnon) and file-backed
	// RSS (the database's mapping, which the kernel may drop and read
	// back). After ingest, and after a restart that loaded the owner from
	// its snapshot and answered the latency runs.
	RSSAnonAfterIngestBytes    int64   `json:"rss_anon_after_ingest_bytes"`
	RSSAnonAfterIngestPerChunk float64 `json:"rss_anon_after_ingest_per_chunk"`
	RSSAnonBytes               int64   `json:"rss_anon_bytes"`
	RSSAnonPerChunk            float64 `json:"rss_anon_per_chunk"`
	RSSFileBytes               int64   `json:"rss_file_bytes"`
	// The most anonymous RSS sampled during the ingest, every
	// peakSampleEvery: the heap of what owners gained since their last
	// saves, and the collector's headroom over it, peaks between saves.
	RSSAnonPeakIngestBytes int64 `json:"rss_anon_peak_ingest_bytes"`

	// The database file after a clean stop (records, small originals and
	// free pages; larger originals are files beside it).
	DatabaseBytes int64 `json:"database_bytes"`
	// The owner's snapshot after a clean stop, and the segments of the
	// changes since it saved beside it, if any.
	SnapshotBytes int64 `json:"snapshot_bytes"`
	SegmentBytes  int64 `json:"segment_bytes"`

	Query1 QueryLatency `json:"query_1_client"`
	Query8 QueryLatency `json:"query_8_clients"`
	// The owner's other reads, after the queries.
	Reads OwnerReads `json:"owner_reads"`

	// Time from the process's start to its first query answered with
	// chunks: after kill -9 at the end of ingest (the index as the last
	// periodic snapshot and the store left it: usually a rebuild), and
	// after a clean stop (the snapshot written at shutdown).
	FirstQueryAfterKillSeconds    float64 `json:"first_query_after_kill_seconds"`
	SnapshotAtKill                bool    `json:"snapshot_at_kill"`
	FirstQueryAfterRestartSeconds float64 `json:"first_query_after_restart_seconds"`
	// How long the clean stop after kill -9 took, once the start had
	// loaded every owner: from SIGTERM to the process's exit, writing the
	// whole snapshot of every owner changed since its last.
	StopSeconds float64 `json:"stop_seconds"`
	// The server's memory maps after the latency runs (snapshots read in
	// place, scratch files of vectors, the Go runtime's): the kernel
	// allows a process 65,530 unless told otherwise (vm.max_map_count).
	MemoryMaps int `json:"memory_maps"`
	// After kill -9, an owner whose snapshot lacks many chunks answers
	// from the snapshot while the rest is indexed; this is when the
	// first answer without that warning came, from the process's start.
	CaughtUpAfterKillSeconds float64 `json:"caught_up_after_kill_seconds"`

	// Where the memory goes after the restart, per chunk: each part of
	// the index (docsift_index_bytes) in the heap and in mapped files,
	// and the Go heap in use in all (the index's heap, the language
	// models, buffers, garbage not yet collected).
	MemoryParts                    []MemoryPart `json:"memory_parts"`
	GoHeapInusePerChunk            float64      `json:"go_heap_inuse_per_chunk"`
	GoHeapInuseAfterIngestPerChunk float64      `json:"go_heap_inuse_after_ingest_per_chunk"`
}

// MemoryPart is one part of the index's memory, per chunk.
type MemoryPart struct {
	Part           string  `json:"part"`
	HeapPerChunk   float64 `json:"heap_bytes_per_chunk"`
	MappedPerChunk float64 `json:"mapped_bytes_per_chunk"`
}

// QueryLatency is one latency run's figures, in milliseconds.
type QueryLatency struct {
	Clients int     `json:"clients"`
	P50Ms   float64 `json:"p50_ms"`
	P99Ms   float64 `json:"p99_ms"`
	Errors  int     `json:"errors"`
	// CPU time per query, of the server and of this process's clients,
	// in milliseconds: with more clients than cores, the queries wait for
	// each other's CPU, so latency follows it.
	ServerCPUMs float64 `json:"server_cpu_ms"`
	ClientCPUMs float64 `json:"client_cpu_ms"`
	// The server's own time for the same queries, from its access log
	// (from taking a request up to writing its answer): the rest of what
	// the clients saw is the network and the waits for the server to take
	// a request up and for a client to run again, which on one machine
	// busy with both are most of the tail.
	ServerP50Ms float64 `json:"server_p50_ms"`
	ServerP99Ms float64 `json:"server_p99_ms"`
}

// scaleDir returns dir, made and checked empty, or a new temporary
// directory when dir is "".
func scaleDir(dir string) (string, error) {
	if dir == "" {
		return os.MkdirTemp("", "docsift-scale-")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	es, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	if len(es) > 0 {
		return "", fmt.Errorf("%s is not empty: the owner is built from nothing", dir)
	}
	return dir, nil
}

// Scale builds one owner of cfg.Chunks chunks through a child `docsift
// serve` (built-in embedder, extractive answers, a throwaway data dir),
// uploading small synthetic documents through the HTTP API, and measures
// what a user of one VM would: ingest rate, memory, snapshot size, query
// latency, and how long the server takes to answer after kill -9 and after
// a clean restart. The child is a separate process so that its memory is
// the server's alone, and so that it can be killed.
func Scale(ctx context.Context, cfg ScaleConfig) (*ScaleResult, error) {
	var corpus []eval.Doc
	if cfg.Corpus != "" {
		var err error
		if corpus, err = eval.ReadCorpus(cfg.Corpus); err != nil {
			return nil, fmt.Errorf("bench: scale: %w", err)
		}
		if len(corpus) == 0 {
			return nil, fmt.Errorf("bench: scale: %s holds no documents", cfg.Corpus)
		}
		cfg.Chunks = len(corpus) // upload each once: see ingest
	}
	if cfg.Chunks <= 0 {
		return nil, errors.New("bench: scale: chunks must be positive")
	}
	if err := childDefaults(&cfg.Words, &cfg.Uploaders, &cfg.Progress, &cfg.Binary); err != nil {
		return nil, fmt.Errorf("bench: scale: %w", err)
	}
	dir, err := scaleDir(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("bench: scale: %w", err)
	}
	if cfg.Dir == "" {
		defer os.RemoveAll(dir)
	}
	r := &scaleRun{cfg: cfg, dir: dir, gen: newScaleText(cfg.Seed), res: &ScaleResult{}, serverLog: filepath.Join(dir, "server.log")}
	r.gen.corpus = corpus
	defer func() {
		if r.srv != nil {
			r.srv.kill()
		}
	}()
	for _, phase := range []func(context.Context) error{r.ingest, r.prepareQueries, r.afterKill, r.afterCleanStop, r.latency, r.memory} {
		if err := phase(ctx); err != nil {
			return nil, err
		}
	}
	fmt.Fprintln(cfg.Progress, "listing documents and uploading through a hosted page")
	if r.res.Reads, err = r.srv.ownerReads(ctx); err != nil {
		return nil, err
	}
	return r.res, r.srv.stop()
}

// scaleRun is one run of Scale: its phases, in order, and what they
// share, the child server of the moment among it.
type scaleRun struct {
	cfg       ScaleConfig
	dir       string
	gen       *scaleText
	res       *ScaleResult
	srv       *childServer
	owners    []string
	serverLog string
	// queries are those of the latency runs, all new to the server, the
	// first asked after each start; queryDocs the documents they were
	// drawn from.
	queries   []string
	queryDocs []int
	// firstOwner is the owner of the first query.
	firstOwner string
}

// ingest starts the server, makes its owners and uploads the documents,
// measuring what that cost the server, the uploaders and the disk.
func (r *scaleRun) ingest(ctx context.Context) error {
	cfg, res := r.cfg, r.res
	// The uploaders and the job waiter each hold a connection: more
	// than a client may open by default raise the server's limit rather
	// than be refused.
	perClient := max(256, cfg.Uploaders+16)
	srv, err := startChildServerConns(ctx, cfg.Binary, r.dir, perClient-8, "--max-connections-per-client", strconv.Itoa(perClient))
	if err != nil {
		return err
	}
	r.srv = srv
	if r.owners, err = srv.makeOwners(ctx, cfg.Customers); err != nil {
		return err
	}
	srv.owners, res.Customers = r.owners, cfg.Customers
	fmt.Fprintf(cfg.Progress, "uploading documents for %d chunks to %s\n", cfg.Chunks, srv.base)
	logFrom := fileSize(r.serverLog)
	start, serverCPU, ownCPU, written := time.Now(), cpuTime(srv.pid()), selfCPUTime(), writtenBytes(srv.pid())
	stopSampling := samplePeak(srv.pid(), &res.RSSAnonPeakIngestBytes)
	err = srv.ingest(ctx, r.gen, cfg, res)
	stopSampling()
	if err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	res.IngestSeconds, res.IngestChunksPerSecond = secs, float64(res.Chunks)/secs
	perDoc := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(max(res.Documents, 1)) }
	res.IngestServerCPUMsPerDoc = perDoc(cpuTime(srv.pid()) - serverCPU)
	res.IngestUploaderCPUMsPerDoc = perDoc(selfCPUTime() - ownCPU)
	res.IngestWrittenBytesPerChunk = float64(writtenBytes(srv.pid())-written) / float64(max(res.Chunks, 1))
	saved, saveSecs := indexSaves(r.serverLog, logFrom)
	res.IngestIndexWrittenBytesPerChunk = float64(saved) / float64(max(res.Chunks, 1))
	res.IngestIndexSaveSeconds = saveSecs
	fmt.Fprintf(cfg.Progress, "ingested %d chunks in %.1f s\n", res.Chunks, secs)
	if res.RSSAnonAfterIngestBytes, _, err = rss(srv.pid()); err != nil {
		return err
	}
	if _, heap, err := srv.memory(ctx); err == nil {
		res.GoHeapInuseAfterIngestPerChunk = heap / float64(max(res.Chunks, 1))
	}
	return nil
}

// prepareQueries draws the latency runs' queries.
func (r *scaleRun) prepareQueries(context.Context) error {
	// Every query of the latency runs is new to the server, as most
	// users' are: the server keeps what a query cost it to learn (the
	// language of its text, its terms' postings in the processor's
	// caches), and 200 queries asked twelve times each measured a million
	// chunks at 1.6 ms of the server's CPU a query where new ones cost
	// 2.0–2.7. The first is asked after each start; then one client's,
	// then eight's.
	r.queries, r.queryDocs = r.gen.querySet(0, 1+scaleQueryRequests*(1+8), r.res.Documents, r.cfg.Words)
	r.firstOwner = r.srv.ownerOf(r.queryDocs[0])
	if r.cfg.Dir != "" {
		// Beside the data, for measuring later builds on the same owner
		// with the same queries (bench query --queries).
		if err := writeQueries(filepath.Join(r.dir, "queries.jsonl"), r.queries); err != nil {
			return fmt.Errorf("bench: scale: %w", err)
		}
	}
	return nil
}

// restart starts the server again on the run's data.
func (r *scaleRun) restart(ctx context.Context) error {
	srv, err := startChildServer(ctx, r.cfg.Binary, r.dir)
	if err != nil {
		r.srv = nil
		return err
	}
	srv.owners, r.srv = r.owners, srv
	return nil
}

// afterKill kills the server with SIGKILL, with whatever the last
// periodic snapshot and the store hold, and times its restart: to the
// first answer, and to an answer that finds every chunk.
func (r *scaleRun) afterKill(ctx context.Context) error {
	res := r.res
	res.SnapshotAtKill = filesBytes(r.dir, "*.idx") > 0
	r.srv.kill()
	fmt.Fprintln(r.cfg.Progress, "killed with SIGKILL; restarting")
	restarted := fileSize(r.serverLog)
	if err := r.restart(ctx); err != nil {
		return err
	}
	var err error
	if res.FirstQueryAfterKillSeconds, err = r.srv.firstQuery(ctx, r.firstOwner, r.queries[0], false); err != nil {
		return err
	}
	if res.CaughtUpAfterKillSeconds, err = r.srv.firstQuery(ctx, r.firstOwner, r.queries[0], true); err != nil {
		return err
	}
	// A clean stop writes the snapshot the next start loads, of every
	// owner the catch-up changed once the start has loaded them all.
	return waitLogged(ctx, r.serverLog, restarted, `msg="indexes loaded"`)
}

// afterCleanStop stops the server cleanly, measures what it leaves on
// disk, and times a start from the shutdown snapshot to its first answer.
func (r *scaleRun) afterCleanStop(ctx context.Context) error {
	res := r.res
	stopping := time.Now()
	if err := r.srv.stop(); err != nil {
		return err
	}
	res.StopSeconds = time.Since(stopping).Seconds()
	res.DatabaseBytes = fileSize(filepath.Join(r.dir, "data", bolt.DBFileName))
	res.SnapshotBytes = filesBytes(r.dir, "*.idx")
	res.SegmentBytes = filesBytes(r.dir, "*.idx.seg*")
	fmt.Fprintln(r.cfg.Progress, "stopped cleanly; restarting from the snapshot")
	if err := r.restart(ctx); err != nil {
		return err
	}
	var err error
	res.FirstQueryAfterRestartSeconds, err = r.srv.firstQuery(ctx, r.firstOwner, r.queries[0], false)
	return err
}

// latency warms the server up with other queries, then times the new
// queries from one client, then from eight.
func (r *scaleRun) latency(ctx context.Context) error {
	srv := r.srv
	// The first queries after a start meet a heap still growing to its
	// size under load and a snapshot whose pages the process has yet to
	// map (the start has figures of its own): other queries first, so
	// that the runs measure the server as it runs.
	fmt.Fprintln(r.cfg.Progress, "warming up with other queries")
	warm, warmDocs := r.gen.querySet(1, scaleWarmUpRequests, r.res.Documents, r.cfg.Words)
	if _, err := Query(ctx, LoadConfig{URL: srv.base, APIKey: srv.key, Owners: srv.ownersOf(warmDocs), Queries: warm,
		Concurrency: 8, Requests: scaleWarmUpRequests, TopK: 5, Timeout: time.Minute}); err != nil {
		return err
	}
	asked := 1
	for _, run := range []struct {
		clients int
		out     *QueryLatency
	}{{1, &r.res.Query1}, {8, &r.res.Query8}} {
		fmt.Fprintf(r.cfg.Progress, "querying with %d clients\n", run.clients)
		n := scaleQueryRequests * run.clients
		serverCPU, ownCPU, queriesFrom := cpuTime(srv.pid()), selfCPUTime(), fileSize(r.serverLog)
		lr, err := Query(ctx, LoadConfig{URL: srv.base, APIKey: srv.key, Owners: srv.ownersOf(r.queryDocs[asked : asked+n]), Queries: r.queries[asked : asked+n],
			Concurrency: run.clients, Requests: n, TopK: 5, Timeout: time.Minute})
		asked += n
		if err != nil {
			return err
		}
		perQuery := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(max(lr.Requests, 1)) }
		*run.out = QueryLatency{Clients: run.clients, P50Ms: lr.P50Ms, P99Ms: lr.P99Ms, Errors: lr.Errors,
			ServerCPUMs: perQuery(cpuTime(srv.pid()) - serverCPU), ClientCPUMs: perQuery(selfCPUTime() - ownCPU)}
		took := queryTimes(ctx, r.serverLog, queriesFrom, lr.Requests-lr.Errors)
		run.out.ServerP50Ms, run.out.ServerP99Ms = eval.Percentile(took, 0.50), eval.Percentile(took, 0.99)
	}
	return nil
}

// memory reads the server's memory after the queries: resident, its
// maps, and the index's parts and the Go heap from its metrics, per chunk.
func (r *scaleRun) memory(ctx context.Context) error {
	res, srv := r.res, r.srv
	var err error
	if res.RSSAnonBytes, res.RSSFileBytes, err = rss(srv.pid()); err != nil {
		return err
	}
	res.MemoryMaps = memoryMaps(srv.pid())
	res.RSSAnonPerChunk = float64(res.RSSAnonBytes) / float64(max(res.Chunks, 1))
	parts, heap, err := srv.memory(ctx)
	if err != nil {
		return err
	}
	for i := range parts {
		parts[i].HeapPerChunk /= float64(max(res.Chunks, 1))
		parts[i].MappedPerChunk /= float64(max(res.Chunks, 1))
	}
	res.MemoryParts, res.GoHeapInusePerChunk = parts, heap/float64(max(res.Chunks, 1))
	res.RSSAnonAfterIngestPerChunk = float64(res.RSSAnonAfterIngestBytes) / float64(max(res.Chunks, 1))
	return nil
}

// fileSize is the size of the file at path, 0 when it cannot be read.
func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// filesBytes is the size of the index files matching pattern in a scale
// run's dir.
func filesBytes(dir, pattern string) int64 {
	var n int64
	files, _ := filepath.Glob(filepath.Join(dir, "data", "index", pattern))
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			n += st.Size()
		}
	}
	return n
}
