package ingest

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docsift/docsift/pdf"
	"github.com/docsift/docsift/store"
)

// progressInterval is how often, at most, a running job's progress (pages
// read of pages) is written to the store, where GET /jobs shows it. Each
// write is a bbolt transaction with an fsync: a page of text is read in
// microseconds and a page of OCR in seconds, so writing per page would make
// a text PDF wait on the disk hundreds of times, while a few seconds is as
// often as anyone looks. The first write comes one interval after
// extraction starts, so a document read faster than that writes none.
const progressInterval = 3 * time.Second

// progressState is the engine's side of progress reports.
type progressState struct {
	every time.Duration // zero: progressInterval (tests shorten it)

	mu      sync.Mutex
	written chan struct{} // closed and replaced whenever a report is written
}

// Progressed returns a channel that is closed when the next progress
// report of any running job has been written to the store.
func (e *Engine) Progressed() <-chan struct{} {
	e.progress.mu.Lock()
	defer e.progress.mu.Unlock()
	if e.progress.written == nil {
		e.progress.written = make(chan struct{})
	}
	return e.progress.written
}

func (e *Engine) progressWritten() {
	e.progress.mu.Lock()
	defer e.progress.mu.Unlock()
	if e.progress.written != nil {
		close(e.progress.written)
	}
	e.progress.written = make(chan struct{})
}

// progressReporter returns the pdf.Options.Progress of one job's
// extraction, and stop, to call once the extraction has returned: no
// report is written after stop returns. Reports are coalesced: the latest
// is written when the interval since the last write (or since the start)
// has passed, by a timer if no page arrives then, so a page that takes a
// minute does not leave the page before it unreported.
func (e *Engine) progressReporter(jobID string) (report func(done, total int), stop func()) {
	every := e.progress.every
	if every <= 0 {
		every = progressInterval
	}
	r := &progressReport{engine: e, jobID: jobID, every: every, next: time.Now().Add(every)}
	return r.report, r.stop
}

// progressReport coalesces one job's progress reports into writes at most
// every interval.
type progressReport struct {
	engine *Engine
	jobID  string
	every  time.Duration

	mu      sync.Mutex
	latest  store.JobProgress
	pending bool        // latest is not written yet
	next    time.Time   // the earliest time of the next write
	timer   *time.Timer // set while a write is scheduled
	stopped bool
}

func (r *progressReport) report(done, total int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	r.latest, r.pending = store.JobProgress{PagesDone: done, Pages: total}, true
	if r.timer == nil {
		r.timer = time.AfterFunc(time.Until(r.next), r.write)
	}
}

// write writes the latest report. It holds the lock while writing, so
// that once stop has returned no write is under way.
func (r *progressReport) write() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timer = nil
	if r.stopped || !r.pending {
		return
	}
	r.pending, r.next = false, time.Now().Add(r.every)
	if err := r.engine.store.SetJobProgress(r.jobID, r.latest); err != nil {
		r.engine.log.Warn("recording a job's progress failed", "job", r.jobID, "err", err)
		return
	}
	r.engine.progressWritten()
}

func (r *progressReport) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
}

// unreadPages lists the numbers of pages left without text, for the log.
func unreadPages(pages []pdf.UnreadPage) string {
	nums := make([]string, len(pages))
	for i, p := range pages {
		nums[i] = strconv.Itoa(p.Number)
	}
	return strings.Join(nums, ",")
}
