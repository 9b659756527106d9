// Package ingest turns uploads into searchable chunks. An upload becomes a
// stored original, a document and a queued job in one step; a pool of
// workers takes jobs from the durable queue and runs each file through
// extraction, chunking, embedding, the store and the owner's index. It owns
// every owner's live index; package search reads them through Engine.Index.
package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/docsift/docsift/index"
	"github.com/docsift/docsift/indexes"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/metrics"
	"github.com/docsift/docsift/pdf"
	"github.com/docsift/docsift/store"
	"golang.org/x/sync/semaphore"
)

// Defaults of Config. DefaultExtractTimeout bounds the extraction of one
// document, OCR included: a text PDF of hundreds of pages takes seconds,
// but a scan takes 1.5–4 s a page on one core (see `docsift bench ocr`),
// so 30 minutes reads a scan of about 500 pages on a modest machine, while
// each page's OCR is bounded on its own (pdf.DefaultOCRPageTimeout).
const (
	DefaultEmbedBatch       = 32
	DefaultExtractTimeout   = 30 * time.Minute
	DefaultSnapshotInterval = 5 * time.Minute
	DefaultRetryBase        = 2 * time.Second
	DefaultRetryMax         = 5 * time.Minute
	DefaultMaxAttempts      = 10
)

// Small text documents (plain text, Markdown or HTML of at most
// smallTextBytes) are read in-process in microseconds, and with the
// built-in embedder a job of one is mostly waiting for its commits, which
// only a group of such jobs at once makes cheap (store/bolt/commit.go,
// chunkwrites.go). So a worker that claims one runs it beside its own
// work and goes on claiming, up to smallJobsInFlight such jobs at once
// and smallBytesInFlight of their text. Workers thus still bounds the
// documents read at once through a child process (PDFs, office files,
// images), which take a core and memory each, and the jobs waiting on a
// model server, which embeds one batch at a time anyway.
//
// A small job spends most of its time waiting for its commits (claimed,
// chunks written, ended), so the jobs in flight bound how many end a
// second, and the more wait at once, the more each commit takes and the
// less each costs. The MS MARCO sample four times over through the API
// (2 cores, 64 uploaders) was indexed at 3,650–3,700 chunks/s with 64 in
// flight, 4,450–4,500 with 256 and 4,500–4,700 with 512. The text bound is what keeps their
// memory small whatever their size: a job holds its text, its chunks (as
// much again), their vectors (1.5 KB a chunk of some 1,500 bytes) and the
// analyses the built-in embedder made for the index (2.5 times the text on
// MS MARCO), some five and a half times its text, so at most ~44 MiB in
// all; 512 passages of MS MARCO's size hold under 4 MiB.
const (
	smallTextBytes     = 64 << 10
	smallJobsInFlight  = 512
	smallBytesInFlight = 8 << 20
)

// Config tunes an Engine. The zero value of each field takes its default.
type Config struct {
	Workers          int           // job workers, each running one job at a time (and, with the built-in embedder, small text jobs beside it), and as many again for projects with no job running (see claim); default: number of CPUs
	EmbedBatch       int           // texts per embedder call
	ExtractTimeout   time.Duration // per document
	SnapshotInterval time.Duration // how often changed indexes are saved and what expired swept (see Engine.sweep)
	RetryBase        time.Duration // first back-off after a transient failure
	RetryMax         time.Duration // longest back-off
	MaxAttempts      int           // runs of a job before it fails for good

	// Metrics, when set, receives job outcomes, chunk counts, embedding
	// times and snapshot times.
	Metrics *metrics.Metrics

	// Embedders are the embedders besides the default that this server
	// can run: an owner whose vectors came from one of them keeps using
	// it until reindexed. The built-in embedder is always available.
	Embedders []llm.Embedder

	// OCR configures how pages without a text layer (scans, images) are
	// read; the zero value reads English with the tesseract in PATH.
	OCR pdf.OCR

	// Limits bound the pages and text of one document (pdf.Limits); the
	// zero value takes pdf's defaults.
	Limits pdf.Limits

	// Indexes tune the owners' live indexes, and say in a cluster which
	// owners' this node holds (indexes.Options.Holds).
	Indexes indexes.Options
}

func (c Config) withDefaults() Config {
	if c.Workers <= 0 {
		c.Workers = runtime.NumCPU()
	}
	if c.EmbedBatch <= 0 {
		c.EmbedBatch = DefaultEmbedBatch
	}
	if c.ExtractTimeout <= 0 {
		c.ExtractTimeout = DefaultExtractTimeout
	}
	if c.SnapshotInterval <= 0 {
		c.SnapshotInterval = DefaultSnapshotInterval
	}
	if c.RetryBase <= 0 {
		c.RetryBase = DefaultRetryBase
	}
	if c.RetryMax <= 0 {
		c.RetryMax = DefaultRetryMax
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	return c
}

// Engine is the indexing pipeline and the search over its result.
type Engine struct {
	cfg       Config
	store     store.Backend
	indexes   *indexes.Set
	embedder  llm.Embedder            // for owners with no vectors yet, and reindexing
	embedders map[string]llm.Embedder // by model: every embedder this server can run
	log       *slog.Logger
	progress  progressState // running jobs' progress reports (progress.go)
	writes    chunkWrites   // step 1 of documents, grouped by owner (chunkwrites.go)

	ended    chan struct{} // closed and replaced whenever a job ends or is requeued
	endedMu  sync.Mutex
	small    chan struct{}       // a slot for each small text job running (see smallTextBytes)
	smallMem *semaphore.Weighted // and their text's bytes
	wake     chan struct{}       // a job was queued
	stop     chan struct{}       // closed: claim no more jobs
	cancel   context.CancelFunc
	workers  sync.WaitGroup
	stopOnce sync.Once

	// running cancels the job of a document being processed, by document
	// id: a deleted document's job stops at once, not at its end (OCR of
	// a long scan takes minutes of a worker).
	running   map[string]context.CancelCauseFunc
	runningMu sync.Mutex

	// busy counts the jobs running by project, those run beside the
	// workers included, and ownRuns those the workers run themselves
	// (see claim).
	busy    map[string]int
	ownRuns int
	busyMu  sync.Mutex

	// claimFailures counts the claims that failed in a row, whichever
	// worker asked.
	claimFailures atomic.Int64

	// suspects holds a place for the one job running that was under way
	// when the server last stopped (store.Job.Interrupted): such jobs run
	// one at a time, so that a document that crashes the server crashes
	// it alone, and only its own count reaches the limit.
	suspects chan struct{}
}

// New returns an engine over st whose index snapshots live in indexDir.
// New owners' documents are embedded with embedder.
func New(st store.Backend, embedder llm.Embedder, indexDir string, cfg Config, log *slog.Logger) *Engine {
	e := &Engine{
		cfg:       cfg.withDefaults(),
		store:     st,
		indexes:   indexes.New(source{st, log}, indexDir, embedder.Model(), embedder.Dim, cfg.Indexes, log),
		embedder:  embedder,
		embedders: map[string]llm.Embedder{},
		running:   map[string]context.CancelCauseFunc{},
		suspects:  make(chan struct{}, 1),
		busy:      map[string]int{},
		log:       log,
		wake:      make(chan struct{}, 1),
		stop:      make(chan struct{}),
		ended:     make(chan struct{}),
	}
	e.writes.engine = e
	e.small, e.smallMem = make(chan struct{}, smallJobsInFlight), semaphore.NewWeighted(smallBytesInFlight)
	for _, em := range append([]llm.Embedder{llm.NewBuiltin(), embedder}, cfg.Embedders...) {
		e.embedders[em.Model()] = em
	}
	return e
}

// Embedder returns the embedder of model, or an error saying what to do
// when this server cannot run it.
func (e *Engine) Embedder(model string) (llm.Embedder, error) {
	if em, ok := e.embedders[model]; ok {
		return em, nil
	}
	return nil, fmt.Errorf("this owner's vectors come from %s, which this server is not configured to run: start it with that embedder, or run `docsift reindex` to re-embed with %s", model, e.embedder.Model())
}

// Indexes returns the owners' live indexes, which the engine writes
// through: searches read them, and a cluster catches them up and evicts
// them.
func (e *Engine) Indexes() *indexes.Set { return e.indexes }

// ownerModel is the model an owner's vectors come from: recorded in the
// store once it has any, the default embedder's before.
func (e *Engine) ownerModel(owner string) (string, error) {
	om, err := e.store.OwnerModel(owner)
	if errors.Is(err, store.ErrNotFound) {
		return e.embedder.Model(), nil
	}
	if err != nil {
		return "", err
	}
	return om.Model, nil
}

// Upload is a file or text to index for an owner.
type Upload struct {
	ProjectID string
	OwnerID   string
	Name      string
	Metadata  map[string]string
	// Data is the upload's content, or Original is, spooled to disk as it
	// arrived (see store.Spool); the store takes the spooled file.
	Data     []byte
	Original *store.Original
	Format   pdf.Format // empty: detected from the content
	// ExternalID, when set, is the caller's id for the document: the
	// upload replaces the owner's document with that id once its job
	// succeeds (see store/rules.go).
	ExternalID string
	// Limits are the project's quotas the upload must fit in (the zero
	// value: none), checked by the store as it creates the document.
	Limits store.ProjectLimits
}

// Submit stores an upload and queues its job. The content type is detected
// here, from the bytes, so an unsupported file is refused at once (an error
// wrapping pdf.ErrUnsupported) rather than failing later in a job. An
// upload over its project's quotas is the store's error
// (store.ErrDocumentQuota, store.ErrStorageQuota).
func (e *Engine) Submit(u Upload) (*store.Job, *store.Document, error) {
	orig := u.Original
	if orig == nil {
		orig = store.Bytes(u.Data)
	}
	format := u.Format
	if format == "" {
		var err error
		if format, err = pdf.DetectAt(orig, orig.Size()); err != nil {
			return nil, nil, err
		}
	}
	doc := &store.Document{
		ProjectID: u.ProjectID, OwnerID: u.OwnerID, Name: u.Name,
		Metadata: u.Metadata, Format: string(format), ExternalID: u.ExternalID,
	}
	job, err := e.store.CreateDocument(doc, orig, u.Limits)
	if err != nil {
		return nil, nil, err
	}
	e.log.Debug("job queued", "job", job.ID, "document", doc.ID, "owner", doc.OwnerID, "format", format, "bytes", orig.Size())
	e.poke()
	return job, doc, nil
}

// DeleteDocument removes a document from the store and its owner's index.
func (e *Engine) DeleteDocument(doc *store.Document) error {
	err := e.indexes.Update(doc.OwnerID, func(x *index.OwnerIndex) (uint64, error) {
		removed, err := e.store.DeleteDocument(doc.ID)
		x.Delete(removed...)
		e.indexes.NoteWaiting(doc.OwnerID, nil, removed)
		return 0, err
	})
	if err == nil {
		e.runningMu.Lock()
		if cancel := e.running[doc.ID]; cancel != nil {
			cancel(errDocumentDeleted)
		}
		e.runningMu.Unlock()
	}
	return err
}

func (e *Engine) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Start requeues jobs interrupted by the last stop, loads the owners'
// indexes in the background, removes orphaned files and starts the workers
// and the snapshot loop. A job interrupted too often fails instead of
// running again (store.RequeueInterrupted), with its chunks, before the
// indexes load: they load what the store holds then.
func (e *Engine) Start() error {
	n, failed, err := e.store.RequeueInterrupted(store.DefaultMaxInterrupted)
	if err != nil {
		return err
	}
	if n > 0 {
		e.log.Info("requeued jobs interrupted by the last stop", "jobs", n)
	}
	for _, j := range failed {
		e.log.Warn("a document was being processed each time the server stopped; it failed and will not run again", "job", j.ID, "document", j.DocumentID, "owner", j.OwnerID, "interrupted", j.Interrupted)
	}
	e.workers.Add(1)
	go e.preload()
	// Subpages and sessions expired while the server was down go now, not
	// at the first tick, which a server restarted more often never
	// reaches; with them the files a crash left without a record.
	e.sweep()
	e.cfg.Metrics.WatchQueue(e.store.PendingJobs)
	e.cfg.Metrics.WatchIndexes(e.indexes.Sizes)
	e.cfg.Metrics.WatchIndexMemory(e.indexes.Memory)
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	for range 2 * e.cfg.Workers { // see claim
		e.workers.Add(1)
		go e.work(ctx)
	}
	e.workers.Add(1)
	go e.maintain()
	return nil
}

// preload loads every owner's index in the background at start, from its
// snapshot caught up with the store, so the first query of an owner does not
// wait for it. A query that comes first loads that owner itself.
func (e *Engine) preload() {
	defer e.workers.Done()
	owners, err := e.store.Owners()
	if err != nil {
		e.log.Warn("listing owners to preload their indexes failed; they load on first use", "err", err)
		return
	}
	start := time.Now()
	for owner := range owners {
		select {
		case <-e.stop:
			return
		default:
		}
		if !e.indexes.Holds(owner) {
			continue
		}
		if _, err := e.indexes.Get(owner); err != nil {
			e.log.Warn("loading an index failed; it is retried on first use", "owner", owner, "err", err)
		}
	}
	if len(owners) > 0 {
		e.log.Info("indexes loaded", "owners", len(owners), "ms", time.Since(start).Milliseconds())
	}
}

// Shutdown stops taking jobs, lets running ones finish until ctx ends, then
// cancels them (they go back to the queue), and snapshots the indexes.
func (e *Engine) Shutdown(ctx context.Context) error {
	e.stopOnce.Do(func() { close(e.stop) })
	done := make(chan struct{})
	go func() { e.workers.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		if e.cancel != nil { // nil when the engine was never started
			e.log.Warn("jobs still running at the shutdown deadline: cancelling them; they will run again at next start")
			e.cancel()
		}
		<-done
	}
	if e.cancel != nil {
		e.cancel()
	}
	return e.indexes.SnapshotWhole()
}

// maintain periodically snapshots changed indexes and sweeps what
// expired or lost its record (see sweep).
func (e *Engine) maintain() {
	defer e.workers.Done()
	t := time.NewTicker(e.cfg.SnapshotInterval)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
			if err := e.indexes.Snapshot(); err != nil {
				e.log.Error("index snapshot failed", "err", err)
			} else {
				e.cfg.Metrics.Snapshotted(time.Now())
			}
			e.sweep()
		}
	}
}

// sweep removes expired subpages and their files and the subpage files
// no record names; upload sessions that ended (see store.SweepSessions);
// and, in a store that keeps originals as files beside its records
// (bbolt), the files no document refers to, which an upload whose
// transaction failed, a delete whose removal failed, or a crash leaves.
// A store that writes originals in the document's transaction has none.
func (e *Engine) sweep() {
	if n, err := e.store.SweepSubpages(); err != nil {
		e.log.Error("removing expired subpages failed", "err", err)
	} else if n > 0 {
		e.log.Info("removed expired subpages and orphaned subpage files", "removed", n)
	}
	if n, err := e.store.SweepSessions(); err != nil {
		e.log.Error("removing ended upload sessions failed", "err", err)
	} else if n > 0 {
		e.log.Info("removed ended upload sessions", "sessions", n)
	}
	if files, ok := e.store.(interface{ SweepFiles() (int, error) }); ok {
		if n, err := files.SweepFiles(); err != nil {
			e.log.Warn("could not sweep orphaned files", "err", err)
		} else if n > 0 {
			e.log.Info("removed orphaned files", "files", n)
		}
	}
}

// work is one worker: it claims due jobs until told to stop, and otherwise
// sleeps until a job is queued or the earliest back-off ends.
func (e *Engine) work(ctx context.Context) {
	defer e.workers.Done()
	for {
		select {
		case <-e.stop:
			return
		default:
		}
		jobs, docs, skipped, err := e.claim()
		if err == nil {
			e.claimFailures.Store(0)
			e.poke() // more may be queued: let an idle worker look
			// The small jobs start first, beside the worker's own, which
			// may take minutes.
			own := -1
			for i, job := range jobs {
				if e.beside(docs[i]) {
					e.runBeside(ctx, job, docs[i])
				} else {
					own = i
				}
			}
			if own >= 0 {
				e.run(ctx, jobs[own], docs[own])
				e.finished(jobs[own], true)
			}
			continue
		}
		wait := time.Hour
		if due, ok := e.store.NextDue(); ok && !(skipped && !due.After(time.Now())) {
			// (A due job the claim skipped is a busy project's: it waits
			// for a job to end, which wakes the workers.)
			wait = max(time.Until(due), 10*time.Millisecond)
		}
		if !errors.Is(err, store.ErrNoJob) {
			// A store that cannot claim (a full disk) is asked again less
			// and less often, up to every 10 s, and the log says so at
			// the 1st, 2nd, 4th, 8th… failure, not 100 times a second.
			failures := e.claimFailures.Add(1)
			if failures&(failures-1) == 0 {
				e.log.Error("claiming a job failed", "err", err, "failures_in_a_row", failures)
			}
			wait = max(wait, min(time.Duration(failures)*100*time.Millisecond, 10*time.Second))
		}
		t := time.NewTimer(wait)
		select {
		case <-e.stop:
			t.Stop()
			return
		case <-e.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// batchClaimer is a store that claims several jobs in one transaction
// (the bbolt store; see bolt.Store.ClaimJobs).
type batchClaimer interface {
	ClaimJobs(n int, also func(*store.Document) bool, skip []string) ([]*store.Job, []*store.Document, error)
}

// claim claims the next due job in the store's fair order and, when the
// store can claim several at once, the small text jobs right behind it, up
// to the slots free for them: claimed one at a time, each would wait for a
// commit of its own, which bounded the rate at which small documents start
// to a few hundred a second.
//
// While Workers jobs are running in the workers, the claim passes over the
// projects that have a job running (skipped is then true): the workers
// beyond Workers (there are twice as many) are there for the projects that
// have none, so that one project's scans of minutes each, taking every
// worker, delay another project's document only as long as it takes to
// read it.
func (e *Engine) claim() (jobs []*store.Job, docs []*store.Document, skipped bool, err error) {
	e.busyMu.Lock()
	defer e.busyMu.Unlock()
	var skip []string
	if e.ownRuns >= e.cfg.Workers {
		skip, skipped = slices.Collect(maps.Keys(e.busy)), true
	}
	if bc, ok := e.store.(batchClaimer); ok {
		jobs, docs, err = bc.ClaimJobs(max(1, cap(e.small)-len(e.small)), e.beside, skip)
	} else {
		var job *store.Job
		var doc *store.Document
		job, doc, err = e.store.ClaimJob(skip)
		jobs, docs = []*store.Job{job}, []*store.Document{doc}
	}
	if err != nil {
		return nil, nil, skipped, err
	}
	for i, j := range jobs {
		e.busy[j.ProjectID]++
		if !e.beside(docs[i]) {
			e.ownRuns++
		}
	}
	return jobs, docs, skipped, nil
}

// finished counts a job claimed by claim as over, and wakes a worker: the
// projects it skipped may be its to take now.
func (e *Engine) finished(job *store.Job, own bool) {
	e.busyMu.Lock()
	if e.busy[job.ProjectID]--; e.busy[job.ProjectID] <= 0 {
		delete(e.busy, job.ProjectID)
	}
	if own {
		e.ownRuns--
	}
	e.busyMu.Unlock()
	e.poke()
}

// beside reports whether doc's job runs beside the worker's own: a small
// text document embedded in-process (see smallTextBytes). An owner whose
// vectors come from a model server is not known here; such a job then
// waits on it beside, as it would in the worker.
func (e *Engine) beside(doc *store.Document) bool {
	if !llm.InProcess(e.embedder) {
		return false
	}
	switch pdf.Format(doc.Format) {
	case pdf.FormatText, pdf.FormatMarkdown, pdf.FormatHTML:
		return doc.Size <= smallTextBytes
	}
	return false
}

// runBeside runs a small text job in the background, once one of the
// slots for them and room for its text are free, so that the worker can
// claim the next job.
func (e *Engine) runBeside(ctx context.Context, job *store.Job, doc *store.Document) {
	e.small <- struct{}{}
	size := max(1, doc.Size)                       // at most smallTextBytes (beside)
	e.smallMem.Acquire(context.Background(), size) // fails only for a done context
	e.workers.Add(1)
	go func() {
		defer e.workers.Done()
		e.run(ctx, job, doc)
		e.finished(job, false)
		e.smallMem.Release(size)
		<-e.small
		// The job may be queued again for a retry: the workers, which
		// did not run it, look at the queue again.
		e.poke()
	}()
}

// run processes one claimed job and records how it ended.
func (e *Engine) run(ctx context.Context, job *store.Job, doc *store.Document) {
	if job.Interrupted > 0 {
		e.suspects <- struct{}{}
		defer func() { <-e.suspects }()
	}
	start := time.Now()
	log := e.log.With("job", job.ID, "document", doc.ID, "owner", doc.OwnerID, "attempt", job.Attempts)
	log.Debug("job started")
	e.cfg.Metrics.JobStarted()
	jobCtx, cancel := context.WithCancelCause(ctx)
	e.runningMu.Lock()
	e.running[doc.ID] = cancel
	e.runningMu.Unlock()
	chunks, pages, err := e.process(jobCtx, doc)
	e.runningMu.Lock()
	delete(e.running, doc.ID)
	e.runningMu.Unlock()
	if err != nil && errors.Is(context.Cause(jobCtx), errDocumentDeleted) {
		err = errDocumentDeleted
	}
	cancel(nil)
	outcome := "retry"
	var record func() error // records the outcome in the store
	switch {
	case err == nil:
		outcome = "succeeded"
		record = func() error { return e.store.FinishJob(job.ID, chunks, pages, "") }
		log.Info("job succeeded", "chunks", chunks, "pages", pages, "ms", time.Since(start).Milliseconds())
	case ctx.Err() != nil:
		// Shutting down: not the document's fault, run it again later.
		record = func() error {
			return e.store.RetryJob(job.ID, time.Now(), "interrupted by shutdown; will run again")
		}
		log.Info("job interrupted by shutdown, requeued")
	case transient(err) && job.Attempts < e.cfg.MaxAttempts:
		delay := backoff(e.cfg.RetryBase, e.cfg.RetryMax, job.Attempts)
		msg := fmt.Sprintf("%s; retrying in %s (attempt %d of %d)", llm.Describe(err), delay.Round(time.Second), job.Attempts, e.cfg.MaxAttempts)
		record = func() error { return e.store.RetryJob(job.ID, time.Now().Add(delay), msg) }
		log.Warn("job will be retried", "err", err, "delay", delay)
	default:
		if errors.Is(err, errDocumentDeleted) && e.overtaken(doc) {
			err = errSuperseded
		}
		msg := describe(err)
		if transient(err) {
			msg = fmt.Sprintf("%s (gave up after %d attempts)", msg, job.Attempts)
		}
		outcome = "failed"
		if err := e.dropChunks(doc); err != nil {
			// Left searchable by their words until the document is
			// deleted; the job still ends with its own error.
			log.Error("removing the chunks of a failed job failed", "err", err)
		}
		record = func() error { return e.store.FinishJob(job.ID, 0, 0, msg) }
		log.Warn("job failed", "err", err)
	}
	e.keepRecording(log, record)
	if outcome != "succeeded" {
		chunks = 0
	}
	e.cfg.Metrics.JobEnded(outcome, chunks)
	e.signalEnded()
}

// keepRecording records a job's outcome, trying again while the store
// cannot (a full disk, a database restarting): a job whose outcome is not
// recorded stays PROCESSING, and nothing would run it again before the
// next start. A stop ends the tries; the next start requeues the job.
func (e *Engine) keepRecording(log *slog.Logger, record func() error) {
	wait := e.cfg.RetryBase
	for attempt := 1; ; attempt++ {
		err := record()
		if err == nil || errors.Is(err, store.ErrNotFound) { // gone with its document
			if attempt > 1 {
				log.Info("the job's outcome is recorded", "attempts", attempt)
			}
			return
		}
		log.Error("recording the job's outcome failed; trying again", "err", err, "in", wait)
		t := time.NewTimer(wait)
		select {
		case <-e.stop:
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, e.cfg.RetryMax, time.Minute)
	}
}

func (e *Engine) signalEnded() {
	e.endedMu.Lock()
	close(e.ended)
	e.ended = make(chan struct{})
	e.endedMu.Unlock()
}

// JobsChanged tells the engine that another node of its cluster queued or
// ended a job: WaitJob looks again, and when the job's owner is held here
// (or unknown) idle workers look for work. Others' jobs do not wake them:
// each claim would walk past those jobs for nothing.
func (e *Engine) JobsChanged(owner string) {
	if owner == "" || e.indexes.Holds(owner) {
		e.poke()
	}
	e.signalEnded()
}

// Ended returns a channel that is closed when the next run of any job ends,
// however it ended: the signal to look again at what jobs leave behind.
func (e *Engine) Ended() <-chan struct{} {
	e.endedMu.Lock()
	defer e.endedMu.Unlock()
	return e.ended
}

// WaitJob waits until a job has ended (SUCCEEDED or FAILED) or ctx is done,
// and returns the job as it last was.
func (e *Engine) WaitJob(ctx context.Context, jobID string) (*store.Job, error) {
	return e.WaitJobUntil(ctx, jobID, func(j *store.Job) bool {
		return j.Status == store.StatusSucceeded || j.Status == store.StatusFailed
	})
}

// WaitJobUntil waits until until(job) holds or ctx is done, and returns the
// job as it last was. It looks again whenever a run of a job ends, however
// it ended (including a retry being scheduled).
func (e *Engine) WaitJobUntil(ctx context.Context, jobID string, until func(*store.Job) bool) (*store.Job, error) {
	for {
		ended := e.Ended()
		j, err := e.store.Job(jobID)
		if err != nil {
			return nil, err
		}
		if until(j) {
			return j, nil
		}
		select {
		case <-ended:
		case <-ctx.Done():
			return j, ctx.Err()
		}
	}
}

// transient reports whether a job that failed with err may succeed if run
// again later: the model server was unreachable or overloaded, or the disk
// was full. Everything else is the document's own problem. A too-slow
// extraction is checked first and never retried: the document will be just
// as slow next time, and each attempt would hold a worker for the whole
// extraction timeout. (llm.IsTransient alone would retry it if the error
// carried context.DeadlineExceeded, as a network timeout does.)
func transient(err error) bool {
	if errors.Is(err, pdf.ErrTooSlow) || errors.Is(err, pdf.ErrTooLarge) {
		return false
	}
	return llm.IsTransient(err) || errors.Is(err, syscall.ENOSPC)
}

// backoff doubles from base with each attempt, up to ceiling.
func backoff(base, ceiling time.Duration, attempt int) time.Duration {
	d := base
	for i := 1; i < attempt && d < ceiling; i++ {
		d *= 2
	}
	return min(d, ceiling)
}

// describe says what went wrong for the person who uploaded the document:
// the extraction errors' own sentences, without the package prefixes that
// wrapping added on the way. The sentence is that of the innermost error
// that matches, not the sentinel's, because some errors match a sentinel
// with a message of their own: an empty Word document is pdf.ErrNoText but
// must not be told that scanned PDFs need OCR.
func describe(err error) string {
	for _, known := range []error{pdf.ErrEncrypted, pdf.ErrNoText, pdf.ErrEmpty, pdf.ErrCorrupt, pdf.ErrTooSlow, pdf.ErrTooLarge, errDocumentDeleted} {
		if !errors.Is(err, known) {
			continue
		}
		for {
			var wrapped []error
			switch u := err.(type) {
			case interface{ Unwrap() error }:
				wrapped = []error{u.Unwrap()}
			case interface{ Unwrap() []error }:
				wrapped = u.Unwrap()
			}
			inner := error(nil)
			for _, w := range wrapped {
				if w != nil && errors.Is(w, known) {
					inner = w
					break
				}
			}
			if inner == nil {
				return err.Error()
			}
			err = inner
		}
	}
	return llm.Describe(err)
}

// errDocumentDeleted ends a job whose document was deleted while it ran.
var errDocumentDeleted = errors.New("the document was deleted while it was being processed")

// errSuperseded ends a job whose upload a later one with the same
// external_id replaced before it finished: the later upload wins.
var errSuperseded = errors.New("a newer upload with the same external_id replaced this one before it finished; it was not indexed")

// overtaken reports whether doc, found gone when its job wrote its chunks,
// was removed by a newer upload with its external_id that finished first
// (the first upload of an id holds it from the start, so the newer one
// took it over), rather than deleted by a caller.
func (e *Engine) overtaken(doc *store.Document) bool {
	if doc.ExternalID == "" {
		return false
	}
	holder, err := e.store.DocumentByExternalID(doc.OwnerID, doc.ExternalID)
	return err == nil && holder.ID != doc.ID
}

// process extracts, chunks, embeds and indexes one document and returns the
// number of chunks and pages. Errors are written for the uploader: they end
// up as the job's error.
func (e *Engine) process(ctx context.Context, doc *store.Document) (int, int, error) {
	orig, err := e.store.OpenOriginal(doc)
	if err != nil {
		return 0, 0, fmt.Errorf("the uploaded file is missing from the data directory: %w", err)
	}
	extractCtx, cancel := context.WithTimeout(ctx, e.cfg.ExtractTimeout)
	report, stopReports := e.progressReporter(doc.JobID)
	extracted, err := pdf.ExtractFrom(extractCtx, pdf.Format(doc.Format), orig.ReaderAt(), orig.Size(), pdf.Options{OCR: e.cfg.OCR, Limits: e.cfg.Limits, Progress: report})
	stopReports()
	cancel()
	orig.Close()
	if err != nil {
		return 0, 0, err
	}
	if len(extracted.Unread) > 0 {
		e.log.Warn("pages left without text: OCR gave up on them", "document", doc.ID, "pages", unreadPages(extracted.Unread), "reason", extracted.Unread[0].Reason)
	}
	pages := 0
	if extracted.Paged {
		pages = len(extracted.Pages)
	}
	chunks := ChunkPages(extracted.Pages)
	if len(chunks) == 0 {
		return 0, pages, errors.New("the document contains no text to index")
	}
	model, err := e.ownerModel(doc.OwnerID)
	if err != nil {
		return 0, pages, err
	}
	embedder, err := e.Embedder(model)
	if err != nil {
		return 0, pages, err
	}
	texts := make([]string, len(chunks))
	cached := !llm.InProcess(embedder) // see store/bolt/embedcache.go
	for i, c := range chunks {
		texts[i] = entryText(doc.Name, c.Text)
		if cached {
			chunks[i].TextHash = store.TextHash(texts[i]) // the embedding cache's key
		}
	}
	d := &docRun{engine: e, doc: doc, model: model, chunks: chunks}
	if err := d.embedAndIndex(ctx, embedder, texts); err != nil {
		return 0, pages, err
	}
	return len(chunks), pages, nil
}

// embed embeds texts in batches of cfg.EmbedBatch.
func (e *Engine) embed(ctx context.Context, embedder llm.Embedder, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for i := 0; i < len(texts); i += e.cfg.EmbedBatch {
		batch := texts[i:min(i+e.cfg.EmbedBatch, len(texts))]
		start := time.Now()
		vecs, err := embedder.Embed(ctx, batch)
		e.cfg.Metrics.Embedded(embedder.Model(), "document", time.Since(start))
		if err != nil {
			return nil, fmt.Errorf("embedding failed: %w", err)
		}
		if len(vecs) != len(batch) {
			return nil, fmt.Errorf("embedding failed: %d vectors for %d texts", len(vecs), len(batch))
		}
		out = append(out, vecs...)
	}
	return out, nil
}
