package eval

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/docsift/docsift/store/bolt"
)

// Defaults of BenchScale; `docsift bench scale` shows them as its flags'.
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

// ScaleConfig says what BenchScale runs.
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

// BenchScale builds one owner of cfg.Chunks chunks through a child `docsift
// serve` (built-in embedder, extractive answers, a throwaway data dir),
// uploading small synthetic documents through the HTTP API, and measures
// what a user of one VM would: ingest rate, memory, snapshot size, query
// latency, and how long the server takes to answer after kill -9 and after
// a clean restart. The child is a separate process so that its memory is
// the server's alone, and so that it can be killed.
func BenchScale(ctx context.Context, cfg ScaleConfig) (*ScaleResult, error) {
	var corpus []Doc
	if cfg.Corpus != "" {
		var err error
		if corpus, err = ReadCorpus(cfg.Corpus); err != nil {
			return nil, fmt.Errorf("eval: scale: %w", err)
		}
		if len(corpus) == 0 {
			return nil, fmt.Errorf("eval: scale: %s holds no documents", cfg.Corpus)
		}
		cfg.Chunks = len(corpus) // upload each once: see ingest
	}
	if cfg.Chunks <= 0 {
		return nil, errors.New("eval: scale: chunks must be positive")
	}
	if err := childDefaults(&cfg.Words, &cfg.Uploaders, &cfg.Progress, &cfg.Binary); err != nil {
		return nil, fmt.Errorf("eval: scale: %w", err)
	}
	dir, err := scaleDir(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("eval: scale: %w", err)
	}
	if cfg.Dir == "" {
		defer os.RemoveAll(dir)
	}
	gen := newScaleText(cfg.Seed)
	gen.corpus = corpus
	res := &ScaleResult{}

	// The uploaders and the job waiter each hold a connection: more
	// than a client may open by default raise the server's limit rather
	// than be refused.
	perClient := max(256, cfg.Uploaders+16)
	srv, err := startChildServerConns(ctx, cfg.Binary, dir, perClient-8, "--max-connections-per-client", strconv.Itoa(perClient))
	if err != nil {
		return nil, err
	}
	defer func() { srv.kill() }()
	owners, err := srv.makeOwners(ctx, cfg.Customers)
	if err != nil {
		return nil, err
	}
	srv.owners, res.Customers = owners, cfg.Customers
	fmt.Fprintf(cfg.Progress, "uploading documents for %d chunks to %s\n", cfg.Chunks, srv.base)
	serverLog := filepath.Join(dir, "server.log")
	logFrom := fileSize(serverLog)
	start, serverCPU, ownCPU, written := time.Now(), cpuTime(srv.pid()), selfCPUTime(), writtenBytes(srv.pid())
	stopSampling := samplePeak(srv.pid(), &res.RSSAnonPeakIngestBytes)
	err = srv.ingest(ctx, gen, cfg, res)
	stopSampling()
	if err != nil {
		return nil, err
	}
	secs := time.Since(start).Seconds()
	res.IngestSeconds, res.IngestChunksPerSecond = secs, float64(res.Chunks)/secs
	perDoc := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(max(res.Documents, 1)) }
	res.IngestServerCPUMsPerDoc = perDoc(cpuTime(srv.pid()) - serverCPU)
	res.IngestUploaderCPUMsPerDoc = perDoc(selfCPUTime() - ownCPU)
	res.IngestWrittenBytesPerChunk = float64(writtenBytes(srv.pid())-written) / float64(max(res.Chunks, 1))
	saved, saveSecs := indexSaves(serverLog, logFrom)
	res.IngestIndexWrittenBytesPerChunk = float64(saved) / float64(max(res.Chunks, 1))
	res.IngestIndexSaveSeconds = saveSecs
	fmt.Fprintf(cfg.Progress, "ingested %d chunks in %.1f s\n", res.Chunks, secs)
	if res.RSSAnonAfterIngestBytes, _, err = rss(srv.pid()); err != nil {
		return nil, err
	}
	if _, heap, err := srv.memory(ctx); err == nil {
		res.GoHeapInuseAfterIngestPerChunk = heap / float64(max(res.Chunks, 1))
	}
	// Every query of the latency runs is new to the server, as most
	// users' are: the server keeps what a query cost it to learn (the
	// language of its text, its terms' postings in the processor's
	// caches), and 200 queries asked twelve times each measured a million
	// chunks at 1.6 ms of the server's CPU a query where new ones cost
	// 2.0–2.7. The first is asked after each start; then one client's,
	// then eight's.
	queries, queryDocs := gen.querySet(0, 1+scaleQueryRequests*(1+8), res.Documents, cfg.Words)
	if cfg.Dir != "" {
		// Beside the data, for measuring later builds on the same owner
		// with the same queries (bench query --queries).
		if err := writeQueries(filepath.Join(dir, "queries.jsonl"), queries); err != nil {
			return nil, fmt.Errorf("eval: scale: %w", err)
		}
	}

	// kill -9 now: whatever the last periodic snapshot and the store hold.
	res.SnapshotAtKill = filesBytes(dir, "*.idx") > 0
	srv.kill()
	fmt.Fprintln(cfg.Progress, "killed with SIGKILL; restarting")
	restarted := fileSize(serverLog)
	if srv, err = startChildServer(ctx, cfg.Binary, dir); err != nil {
		return nil, err
	}
	srv.owners = owners
	first := srv.ownerOf(queryDocs[0])
	if res.FirstQueryAfterKillSeconds, err = srv.firstQuery(ctx, first, queries[0], false); err != nil {
		return nil, err
	}
	if res.CaughtUpAfterKillSeconds, err = srv.firstQuery(ctx, first, queries[0], true); err != nil {
		return nil, err
	}
	// A clean stop writes the snapshot the next start loads, of every
	// owner the catch-up changed once the start has loaded them all.
	if err := waitLogged(ctx, serverLog, restarted, `msg="indexes loaded"`); err != nil {
		return nil, err
	}
	stopping := time.Now()
	if err := srv.stop(); err != nil {
		return nil, err
	}
	res.StopSeconds = time.Since(stopping).Seconds()
	res.DatabaseBytes = fileSize(filepath.Join(dir, "data", bolt.DBFileName))
	res.SnapshotBytes = filesBytes(dir, "*.idx")
	res.SegmentBytes = filesBytes(dir, "*.idx.seg*")
	fmt.Fprintln(cfg.Progress, "stopped cleanly; restarting from the snapshot")
	if srv, err = startChildServer(ctx, cfg.Binary, dir); err != nil {
		return nil, err
	}
	srv.owners = owners
	if res.FirstQueryAfterRestartSeconds, err = srv.firstQuery(ctx, first, queries[0], false); err != nil {
		return nil, err
	}
	// The first queries after a start meet a heap still growing to its
	// size under load and a snapshot whose pages the process has yet to
	// map (the start has figures of its own): other queries first, so
	// that the runs measure the server as it runs.
	fmt.Fprintln(cfg.Progress, "warming up with other queries")
	warm, warmDocs := gen.querySet(1, scaleWarmUpRequests, res.Documents, cfg.Words)
	if _, err := BenchQuery(ctx, LoadConfig{URL: srv.base, APIKey: srv.key, Owners: srv.ownersOf(warmDocs), Queries: warm,
		Concurrency: 8, Requests: scaleWarmUpRequests, TopK: 5, Timeout: time.Minute}); err != nil {
		return nil, err
	}
	asked := 1
	for _, run := range []struct {
		clients int
		out     *QueryLatency
	}{{1, &res.Query1}, {8, &res.Query8}} {
		fmt.Fprintf(cfg.Progress, "querying with %d clients\n", run.clients)
		n := scaleQueryRequests * run.clients
		serverCPU, ownCPU, queriesFrom := cpuTime(srv.pid()), selfCPUTime(), fileSize(serverLog)
		lr, err := BenchQuery(ctx, LoadConfig{URL: srv.base, APIKey: srv.key, Owners: srv.ownersOf(queryDocs[asked : asked+n]), Queries: queries[asked : asked+n],
			Concurrency: run.clients, Requests: n, TopK: 5, Timeout: time.Minute})
		asked += n
		if err != nil {
			return nil, err
		}
		perQuery := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(max(lr.Requests, 1)) }
		*run.out = QueryLatency{Clients: run.clients, P50Ms: lr.P50Ms, P99Ms: lr.P99Ms, Errors: lr.Errors,
			ServerCPUMs: perQuery(cpuTime(srv.pid()) - serverCPU), ClientCPUMs: perQuery(selfCPUTime() - ownCPU)}
		took := queryTimes(ctx, serverLog, queriesFrom, lr.Requests-lr.Errors)
		run.out.ServerP50Ms, run.out.ServerP99Ms = percentile(took, 0.50), percentile(took, 0.99)
	}
	if res.RSSAnonBytes, res.RSSFileBytes, err = rss(srv.pid()); err != nil {
		return nil, err
	}
	res.MemoryMaps = memoryMaps(srv.pid())
	res.RSSAnonPerChunk = float64(res.RSSAnonBytes) / float64(max(res.Chunks, 1))
	parts, heap, err := srv.memory(ctx)
	if err != nil {
		return nil, err
	}
	for i := range parts {
		parts[i].HeapPerChunk /= float64(max(res.Chunks, 1))
		parts[i].MappedPerChunk /= float64(max(res.Chunks, 1))
	}
	res.MemoryParts, res.GoHeapInusePerChunk = parts, heap/float64(max(res.Chunks, 1))
	res.RSSAnonAfterIngestPerChunk = float64(res.RSSAnonAfterIngestBytes) / float64(max(res.Chunks, 1))
	fmt.Fprintln(cfg.Progress, "listing documents and uploading through a hosted page")
	if res.Reads, err = srv.ownerReads(ctx); err != nil {
		return nil, err
	}
	return res, srv.stop()
}

// childDefaults fills in what a benchmark of child servers was not told:
// the words per document, the uploads in flight, where progress goes
// (nowhere) and the docsift executable (this one).
func childDefaults(words, uploaders *int, progress *io.Writer, binary *string) error {
	if *words <= 0 {
		*words = ScaleDefaultWords
	}
	if *uploaders <= 0 {
		*uploaders = ScaleDefaultUploaders
	}
	if *progress == nil {
		*progress = io.Discard
	}
	if *binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		*binary = exe
	}
	return nil
}

// childServer is a child `docsift serve` of a benchmark.
type childServer struct {
	cmd          *exec.Cmd
	start        time.Time // just before the process started
	exited       chan struct{}
	base         string
	metrics      string // the URL of its Prometheus metrics
	key, project string
	// owners are the owners documents go to in turn: the project, or
	// its customers (see ScaleConfig.Customers).
	owners []string
	client *http.Client
}

// firstStartLine matches the key line the first start prints, and
// projectLine the project it belongs to.
var (
	keyLine     = regexp.MustCompile(`DOCSIFT_API_KEY=(dsk_\S+)`)
	projectLine = regexp.MustCompile(`created project "default" \((prj_\S+)\)`)
)

// startChildServer starts docsift serve on dir and a free port, with
// flags added to its own. The first start on dir prints the default
// project's key; later ones reuse it from the file it is kept in beside
// the data (written there beforehand when the key comes from elsewhere,
// as for the second node of a cluster), and then return without waiting
// for the server to answer.
func startChildServer(ctx context.Context, bin, dir string, flags ...string) (*childServer, error) {
	// Under the server's default limit of one client's connections,
	// which a burst of requests would otherwise pass while some close
	// (see server.Serve).
	return startChildServerConns(ctx, bin, dir, 240, flags...)
}

// startChildServerConns is startChildServer with its client opening at
// most conns connections.
func startChildServerConns(ctx context.Context, bin, dir string, conns int, flags ...string) (*childServer, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	metricsAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	cmd := exec.CommandContext(ctx, bin, append([]string{"serve", "--data", data, "--addr", addr, "--metrics-addr", metricsAddr,
		"--embedder", "builtin", "--answerer", "extractive", "--log-file", filepath.Join(dir, "server.log")}, flags...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("eval: start docsift serve: %w", err)
	}
	s := &childServer{cmd: cmd, exited: make(chan struct{}), base: "http://" + addr, metrics: "http://" + metricsAddr + "/metrics", start: start,
		client: &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 1024, MaxConnsPerHost: conns}}}
	found := make(chan [2]string, 1)
	go func() {
		var key, project string
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := keyLine.FindStringSubmatch(sc.Text()); m != nil {
				key = m[1]
			}
			if m := projectLine.FindStringSubmatch(sc.Text()); m != nil {
				project = m[1]
			}
			if key != "" && project != "" {
				found <- [2]string{key, project}
				key = ""
			}
		}
		io.Copy(io.Discard, out)
		cmd.Wait()
		close(s.exited)
	}()
	keyFile := filepath.Join(dir, "key")
	if b, err := os.ReadFile(keyFile); err == nil {
		s.key, s.project, _ = strings.Cut(string(b), " ")
		return s, nil
	}
	select {
	case kp := <-found:
		s.key, s.project = kp[0], kp[1]
	case <-s.exited:
		return nil, fmt.Errorf("eval: docsift serve exited before printing its key; see %s", filepath.Join(dir, "server.log"))
	case <-time.After(time.Minute):
		s.kill()
		return nil, errors.New("eval: docsift serve printed no key within a minute")
	}
	if err := os.WriteFile(keyFile, []byte(s.key+" "+s.project), 0o600); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	return s, s.waitHealthy(ctx)
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("eval: find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func (s *childServer) pid() int { return s.cmd.Process.Pid }

// kill ends the child with SIGKILL, as a crash would, and waits for it.
func (s *childServer) kill() {
	if s == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
}

// stop asks the child to shut down (it snapshots its indexes) and waits.
func (s *childServer) stop() error {
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("eval: stop docsift serve: %w", err)
	}
	<-s.exited
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		return fmt.Errorf("eval: docsift serve exited with status %d at shutdown", code)
	}
	return nil
}

func (s *childServer) waitHealthy(ctx context.Context) error {
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := s.client.Get(s.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("eval: docsift serve did not answer: %w", err)
		}
		time.Sleep(scalePoll)
	}
}

// makeOwners registers n customers of the server's project, one at a
// time, and returns their ids; with none, the owner is the project.
func (s *childServer) makeOwners(ctx context.Context, n int) ([]string, error) {
	if n <= 0 {
		return []string{s.project}, nil
	}
	owners := make([]string, n)
	for i := range owners {
		body, _ := json.Marshal(map[string]any{"project_id": s.project, "name": fmt.Sprintf("customer %d", i)})
		var c struct {
			ID string `json:"customer_id"`
		}
		if err := s.call(ctx, http.MethodPost, "/customer/create", body, &c); err != nil {
			return nil, fmt.Errorf("eval: scale: %w", err)
		}
		owners[i] = c.ID
	}
	return owners, nil
}

// ownerOf returns the owner of document number doc: the owners in turn.
func (s *childServer) ownerOf(doc int) string { return s.owners[doc%len(s.owners)] }

// ownersOf is ownerOf of each of docs.
func (s *childServer) ownersOf(docs []int) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = s.ownerOf(d)
	}
	return out
}

// memoryMaps counts a process's memory maps (0 where /proc has none).
func memoryMaps(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte("\n"))
}

// firstQuery sends q to owner until the answer has chunks (and, with
// caughtUp, no warning that the index is still catching up) and returns
// the seconds since the process started.
func (s *childServer) firstQuery(ctx context.Context, owner, q string, caughtUp bool) (float64, error) {
	path, field := queryRoute(owner)
	body, _ := json.Marshal(map[string]any{field: owner, "query": q, "top_k": 5})
	deadline := time.Now().Add(scaleStartWait)
	var last error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		var out struct {
			Chunks   []json.RawMessage `json:"chunks"`
			Warnings []string          `json:"warnings"`
		}
		err := s.call(ctx, http.MethodPost, path, body, &out)
		catching := slices.ContainsFunc(out.Warnings, func(w string) bool { return strings.Contains(w, "catching up") })
		if err == nil && len(out.Chunks) > 0 && !(caughtUp && catching) {
			return time.Since(s.start).Seconds(), nil
		}
		if err == nil {
			err = errors.New("no chunks in the answer, or still catching up")
		}
		last = err
		// Waiting for the catch-up, ask less often: queries sent every
		// few milliseconds would take the cores it needs.
		poll := scalePoll
		if caughtUp {
			poll = scaleCatchUpPoll
		}
		select {
		case <-s.exited:
			return 0, fmt.Errorf("eval: scale: docsift serve exited before answering: %w", last)
		case <-time.After(poll):
		}
	}
	return 0, fmt.Errorf("eval: scale: no answer with chunks: %w", last)
}

// call sends a JSON request and decodes a 200 answer into out.
func (s *childServer) call(ctx context.Context, method, path string, body []byte, out any) error {
	msg, err := send(ctx, s.client, method, s.base+path, s.key, body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	return json.Unmarshal(msg, out)
}

// ingest uploads documents until their chunks reach cfg.Chunks and waits
// for every job to end. Documents of at most chunkTargetWords words are
// one chunk each; longer ones are uploaded until the chunks of the jobs
// ended so far, a document on average, say that enough are.
//
// The uploads are what is measured, so the waiting costs little: asking
// GET /jobs/{id} of every document would double the requests the server
// and the uploaders (which share its machine here) handle. A sample of the
// jobs, every sampleJobsEvery-th, is followed while the uploads go on, for
// the chunks a document makes and the progress; the last one uploaded is
// waited for; then the owners' document lists, a page of 1,000 a request,
// give every document's status and chunks, and the few jobs still running
// are waited for one by one. Jobs are claimed in the order they were
// queued, so once the last has ended nearly all have.
func (s *childServer) ingest(ctx context.Context, gen *scaleText, cfg ScaleConfig, res *ScaleResult) error {
	docs := make(chan int)
	type upload struct {
		doc   int
		jobID string
	}
	uploads := make(chan upload, 4096)
	errc := make(chan error, cfg.Uploaders+1)
	var wg sync.WaitGroup
	for range cfg.Uploaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range docs {
				name, text := fmt.Sprintf("doc-%07d.txt", i), ""
				if gen.corpus != nil {
					name, text = gen.corpus[i].ID, corpusText(gen.corpus[i])
				} else {
					text = gen.document(i, cfg.Words)
				}
				body, _ := json.Marshal(map[string]any{"owner_id": s.ownerOf(i), "text": text, "name": name})
				var up struct {
					JobID string `json:"job_id"`
				}
				if err := s.call(ctx, http.MethodPost, "/upload/text", body, &up); err != nil {
					errc <- fmt.Errorf("eval: scale: upload: %w", err)
					return
				}
				uploads <- upload{i, up.JobID}
			}
		}()
	}
	var (
		mu                    sync.Mutex
		sampled, sampleChunks int
		last                  upload // the last document uploaded
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for up := range uploads {
			mu.Lock()
			if up.doc >= last.doc {
				last = up
			}
			mu.Unlock()
			if up.doc%sampleJobsEvery != 0 {
				continue
			}
			n, err := s.waitJob(ctx, up.jobID)
			if err != nil {
				errc <- err
				return
			}
			mu.Lock()
			sampled++
			sampleChunks += n
			mu.Unlock()
			if sampled%(1000/sampleJobsEvery) == 0 {
				fmt.Fprintf(cfg.Progress, "  document %d indexed\n", up.doc+1)
			}
		}
	}()
	next := 0
feed:
	for {
		mu.Lock()
		perDoc := 1.0
		if sampled > 0 {
			perDoc = float64(sampleChunks) / float64(sampled)
		}
		enough := float64(next)*perDoc >= float64(cfg.Chunks)
		if gen.corpus != nil {
			enough = next == len(gen.corpus) // each document once
		}
		mu.Unlock()
		if enough {
			break
		}
		select {
		case docs <- next:
			next++
		case err := <-errc:
			close(docs)
			return err
		case <-ctx.Done():
			break feed
		}
	}
	close(docs)
	wg.Wait()
	close(uploads)
	<-done
	select {
	case err := <-errc:
		return err
	default:
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if next > 0 {
		if _, err := s.waitJob(ctx, last.jobID); err != nil {
			return err
		}
	}
	chunks, err := s.waitIndexed(ctx, next)
	if err != nil {
		return err
	}
	res.Chunks, res.Documents = chunks, next
	return nil
}

// sampleJobsEvery is how many documents ingest uploads for each job it
// follows while uploading.
const sampleJobsEvery = 50

// waitIndexed reads the owners' document lists, waits for the jobs of
// those not yet ended, and returns the chunks of all; uploaded is how many
// documents were, which the lists must hold between them.
func (s *childServer) waitIndexed(ctx context.Context, uploaded int) (int, error) {
	chunks, listed := 0, 0
	var running []string
	for _, owner := range s.owners {
		cursor := ""
		for {
			var page struct {
				Documents []struct {
					JobID  string `json:"job_id"`
					Status string `json:"status"`
					Chunks int    `json:"chunks"`
					Error  string `json:"error"`
				} `json:"documents"`
				NextCursor string `json:"next_cursor"`
			}
			q := url.Values{"owner_id": {owner}, "limit": {"1000"}}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			if err := s.call(ctx, http.MethodGet, "/documents?"+q.Encode(), nil, &page); err != nil {
				return 0, fmt.Errorf("eval: scale: list documents: %w", err)
			}
			for _, d := range page.Documents {
				listed++
				switch d.Status {
				case "SUCCEEDED":
					chunks += d.Chunks
				case "FAILED":
					return 0, fmt.Errorf("eval: job %s failed: %s", d.JobID, d.Error)
				default:
					running = append(running, d.JobID)
				}
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
	}
	if listed != uploaded {
		return 0, fmt.Errorf("eval: scale: the owners list %d documents, not the %d uploaded", listed, uploaded)
	}
	for _, id := range running {
		n, err := s.waitJob(ctx, id)
		if err != nil {
			return 0, err
		}
		chunks += n
	}
	return chunks, nil
}

// waitJob polls a job until it ends and returns its chunks.
func (s *childServer) waitJob(ctx context.Context, id string) (int, error) {
	for {
		var job struct {
			Status string `json:"status"`
			Chunks int    `json:"chunks"`
			Error  string `json:"error"`
		}
		if err := s.call(ctx, http.MethodGet, "/jobs/"+id, nil, &job); err != nil {
			return 0, fmt.Errorf("eval: job %s: %w", id, err)
		}
		switch job.Status {
		case "SUCCEEDED":
			return job.Chunks, nil
		case "FAILED":
			return 0, fmt.Errorf("eval: job %s failed: %s", id, job.Error)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// peakSampleEvery is how often samplePeak reads the server's memory.
const peakSampleEvery = 100 * time.Millisecond

// samplePeak keeps in peak the most anonymous memory process pid holds,
// read every peakSampleEvery until the returned stop is called (which
// takes a last sample). A sample, not the peak itself: the kernel keeps
// no high-water mark of anonymous memory alone (VmHWM counts the
// mapped files too).
func samplePeak(pid int, peak *int64) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	sample := func() {
		if anon, _, err := rss(pid); err == nil {
			*peak = max(*peak, anon)
		}
	}
	go func() {
		defer close(finished)
		t := time.NewTicker(peakSampleEvery)
		defer t.Stop()
		for {
			sample()
			select {
			case <-done:
				sample()
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// rss reads a process's anonymous and file-backed resident memory.
func rss(pid int) (anon, file int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("eval: memory of the server: %w (it needs Linux's /proc)", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok || name != "RssAnon" && name != "RssFile" {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("eval: parse %s: %w", line, err)
		}
		if name == "RssAnon" {
			anon = kb << 10
		} else {
			file = kb << 10
		}
	}
	return anon, file, nil
}

// cpuTime is the CPU time a process has used, user and system, or 0 when
// /proc cannot tell. /proc/<pid>/stat counts it in clock ticks, which Linux
// gives user space at 100 a second on every architecture Go runs on.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, field 2, is in parentheses and may hold spaces;
	// utime and stime are fields 14 and 15.
	_, rest, ok := bytes.Cut(b, []byte(") "))
	f := strings.Fields(string(rest))
	if !ok || len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * (time.Second / 100)
}

// writtenBytes is what a process has had the disk write so far
// (/proc/<pid>/io write_bytes), or 0 when /proc cannot tell.
func writtenBytes(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// indexSaves sums the sizes of the index saves a server logged past
// offset from in its log ("index saved" lines, mb=), and how long writers
// waited for them (held_ms=; a server that does not log it held them for
// the whole save, ms=).
func indexSaves(log string, from int64) (bytes int64, heldSeconds float64) {
	b, err := logSince(log, from)
	if err != nil {
		return 0, 0
	}
	var mbs, ms float64
	for line := range strings.Lines(string(b)) {
		if !strings.Contains(line, `msg="index saved"`) {
			continue
		}
		mb, _ := lineValue(line, "mb")
		held, ok := lineValue(line, "held_ms")
		if !ok {
			held, _ = lineValue(line, "ms")
		}
		mbs, ms = mbs+mb, ms+held
	}
	return int64(mbs * (1 << 20)), ms / 1000
}

// waitLogged waits until a server's log holds line past offset from.
func waitLogged(ctx context.Context, log string, from int64, line string) error {
	deadline := time.Now().Add(scaleStartWait)
	for {
		b, err := logSince(log, from)
		if err == nil && bytes.Contains(b, []byte(line)) {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("eval: scale: the server did not log %s", line)
		}
		time.Sleep(scalePoll)
	}
}

// logSince returns what a log holds past offset from: a million-chunk
// ingest logs about a gigabyte before it.
func logSince(log string, from int64) ([]byte, error) {
	f, err := os.Open(log)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

// logValues returns the numbers after key= in the lines of a log that
// keep accepts.
func logValues(log, key string, keep func(line string) bool) []float64 {
	var out []float64
	for line := range strings.Lines(log) {
		if !keep(line) {
			continue
		}
		if x, ok := lineValue(line, key); ok {
			out = append(out, x)
		}
	}
	return out
}

// lineValue is the number after key= in a log line, if it has one.
func lineValue(line, key string) (float64, bool) {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			if x, err := strconv.ParseFloat(v, 64); err == nil {
				return x, true
			}
		}
	}
	return 0, false
}

// queryTimes returns the times (ms=) of the queries answered 200 that a
// server logged past offset from in its log, once n are there: a server
// writes a request's line just after its answer, which the client may
// have read first. It returns what is there if n never are (a line
// lost to a full disk must not hang the benchmark).
func queryTimes(ctx context.Context, log string, from int64, n int) []float64 {
	answered := func(line string) bool {
		return strings.Contains(line, "msg=request ") && strings.Contains(line, "route=/query/") && strings.Contains(line, " status=200 ")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := logSince(log, from)
		if err != nil {
			return nil
		}
		took := logValues(string(b), "ms", answered)
		if len(took) >= n || time.Now().After(deadline) || ctx.Err() != nil {
			return took
		}
		time.Sleep(scalePoll)
	}
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// selfCPUTime is the CPU time this process has used, user and system.
func selfCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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

// writeQueries writes texts as a BEIR queries.jsonl.
func writeQueries(path string, texts []string) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for i, text := range texts {
		if err := enc.Encode(Query{ID: strconv.Itoa(i), Text: text}); err != nil {
			return err
		}
	}
	return os.WriteFile(path, b.Bytes(), 0o600)
}

// scaleText makes deterministic English-looking text: the commonest
// English function words, then made-up content words, drawn by Zipf's law
// (a few words in most chunks, a long tail in few), in sentences. A
// document depends only on the seed and its number, so uploaders can make
// them in any order.
type scaleText struct {
	seed   uint64
	words  []string
	corpus []Doc // uploaded instead of synthetic text when set
}

// corpusText is what a corpus document is uploaded as: its title, when it
// has one, then its text, as eval ingests BEIR corpora.
func corpusText(d Doc) string {
	if d.Title == "" {
		return d.Text
	}
	return d.Title + "\n\n" + d.Text
}

// functionWords lead the vocabulary, so that language detection reads the
// text as English and stop words are what they are in real text.
var functionWords = strings.Fields("the of and to in is for that with on as by this are from it be or at which an was not can has have but its will all one")

// syllables make the content words.
var syllables = strings.Fields("ka lo mi ne ru sa te vo di pa fe gu ho ji ly mar ten sil bor quin dra ple stu wex zor")

func newScaleText(seed uint64) *scaleText {
	t := &scaleText{seed: seed, words: append([]string(nil), functionWords...)}
	seen := map[string]bool{}
	for _, w := range functionWords {
		seen[w] = true
	}
	rng := rand.New(rand.NewPCG(seed, 0x5ca1e))
	for len(t.words) < scaleVocabulary {
		var b strings.Builder
		for range 2 + rng.IntN(3) {
			b.WriteString(syllables[rng.IntN(len(syllables))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			t.words = append(t.words, w)
		}
	}
	return t
}

// document returns document i: words words in sentences of 6–20.
func (t *scaleText) document(i, words int) string {
	var b strings.Builder
	for _, sentence := range t.sentences(i, words) {
		for j, k := range sentence {
			w := t.words[k]
			if j == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			} else {
				b.WriteByte(' ')
			}
			b.WriteString(w)
		}
		b.WriteString(". ")
	}
	return strings.TrimSpace(b.String())
}

// sentences returns document i's words, as indexes into t.words, sentence
// by sentence.
func (t *scaleText) sentences(i, words int) [][]int {
	rng := rand.New(rand.NewPCG(t.seed, uint64(i)))
	zipf := rand.NewZipf(rng, scaleZipfS, scaleZipfV, uint64(len(t.words)-1))
	var out [][]int
	for left := words; left > 0; {
		sentence := make([]int, min(left, 6+rng.IntN(15)))
		for j := range sentence {
			sentence[j] = int(zipf.Uint64())
		}
		out = append(out, sentence)
		left -= len(sentence)
	}
	return out
}

// queries returns n queries for an owner of the first docs documents of
// words words each, or of the corpus: the opening words of documents
// spread over it. A synthetic query is 2–4 distinct content words of one
// of the documents, each drawn in proportion to its inverse document
// frequency, as people query for the words that set what they want apart
// rather than the commonest ones. Its terms then occur in as many chunks
// as real queries' do: analysed by the index, 5,000 documents' postings of
// a query's terms add up to 8.3% of the documents for these and 8.0% for
// the MS MARCO sample's queries (TestScaleQueriesMatchLikeReal), where
// words drawn as the text's are, by Zipf's law, match 37% and would
// measure the lexical side at nearly five times a real query's work.
func (t *scaleText) queries(n, docs, words int) []string {
	qs, _ := t.querySet(0, n, docs, words)
	return qs
}

// warmUpQueries returns n queries drawn as queries' are, none of them
// theirs: from other documents of a corpus, with other draws otherwise.
func (t *scaleText) warmUpQueries(n, docs, words int) []string {
	qs, _ := t.querySet(1, n, docs, words)
	return qs
}

// querySet is queries (set 0) or warmUpQueries (set 1), with the number
// of the document each was drawn from.
func (t *scaleText) querySet(set, n, docs, words int) ([]string, []int) {
	qs, from := make([]string, n), make([]int, n)
	if t.corpus != nil {
		// Set 0 opens even documents, set 1 odd ones, spread over the
		// corpus: distinct within a set while it has half the corpus's
		// documents or fewer, and never the other set's.
		half := max(len(t.corpus)/2, 1)
		for i := range qs {
			from[i] = min(2*(i*half/n)+set, len(t.corpus)-1)
			ws := strings.Fields(t.corpus[from[i]].Text)
			qs[i] = strings.Join(ws[:min(len(ws), 6)], " ")
		}
		return qs, from
	}
	idf := t.idf(words)
	rng := rand.New(rand.NewPCG(t.seed, 0x9e77+uint64(set)))
	for i := range qs {
		var ws []string
		var weights []float64
		for len(ws) == 0 { // a document of a few words may hold only function words
			seen := map[int]bool{}
			from[i] = rng.IntN(max(docs, 1))
			for _, sentence := range t.sentences(from[i], words) {
				for _, w := range sentence {
					if w >= len(functionWords) && !seen[w] {
						seen[w] = true
						ws, weights = append(ws, t.words[w]), append(weights, idf[w])
					}
				}
			}
		}
		q := make([]string, 0, 4)
		for range min(2+rng.IntN(3), len(ws)) {
			j := drawWeighted(rng, weights)
			q, weights[j] = append(q, ws[j]), 0 // drawn once
		}
		qs[i] = strings.Join(q, " ")
	}
	return qs, from
}

// idf returns each word's inverse document frequency, ln(1/df), among
// documents of words words: a word of Zipf probability p is in 1−(1−p)^words
// of them.
func (t *scaleText) idf(words int) []float64 {
	p := make([]float64, len(t.words))
	var sum float64
	for k := range p {
		p[k] = math.Pow(scaleZipfV+float64(k), -scaleZipfS)
		sum += p[k]
	}
	for k := range p {
		p[k] = -math.Log(-math.Expm1(float64(words) * math.Log1p(-p[k]/sum)))
	}
	return p
}

// drawWeighted returns an index of weights drawn in proportion to them;
// at least one must be positive.
func drawWeighted(rng *rand.Rand, weights []float64) int {
	var sum float64
	for _, w := range weights {
		sum += w
	}
	r := rng.Float64() * sum
	last := 0
	for i, w := range weights {
		if w > 0 {
			if r < w {
				return i
			}
			r, last = r-w, i
		}
	}
	return last // rounding left r a hair above the last weight
}

// memory scrapes the child's metrics: the index's bytes by part (in
// total, not yet per chunk) and the Go heap in use.
func (s *childServer) memory(ctx context.Context) ([]MemoryPart, float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.metrics, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("eval: scale: %w", err)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("eval: scale: read metrics: %w", err)
	}
	defer resp.Body.Close()
	var parts []MemoryPart
	at := map[string]int{}
	var heap float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "go_memstats_heap_inuse_bytes "); ok {
			heap, _ = strconv.ParseFloat(v, 64)
			continue
		}
		m := indexBytesLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, kv := range strings.Split(m[1], ",") {
			k, v, _ := strings.Cut(kv, "=")
			labels[k] = strings.Trim(v, `"`)
		}
		bytes, _ := strconv.ParseFloat(m[2], 64)
		part := labels["part"]
		i, ok := at[part]
		if !ok {
			i = len(parts)
			at[part] = i
			parts = append(parts, MemoryPart{Part: part})
		}
		if labels["memory"] == "mapped" {
			parts[i].MappedPerChunk += bytes
		} else {
			parts[i].HeapPerChunk += bytes
		}
	}
	// Largest first: the order to read them in.
	slices.SortFunc(parts, func(a, b MemoryPart) int {
		return cmp.Compare(b.HeapPerChunk+b.MappedPerChunk, a.HeapPerChunk+a.MappedPerChunk)
	})
	return parts, heap, sc.Err()
}

var indexBytesLine = regexp.MustCompile(`^docsift_index_bytes\{([^}]*)\} (\S+)$`)
