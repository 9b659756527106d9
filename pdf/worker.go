package pdf

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// MuPDF runs in a child process. go-fitz calls several MuPDF functions
// outside MuPDF's own exception handler (counting pages, laying out
// reflowable books, building the text page), and a MuPDF error raised
// there ends the whole process with "aborting process from uncaught
// error!"; a bug in MuPDF's C code would be a segfault. Neither can be
// recovered in Go, so a crafted or broken upload could take the server
// down. The child is the same executable, started with workerEnv set:
// this package's init turns it into a worker before main runs, so no
// separate binary is installed and the MuPDF version always matches.
//
// The child also makes deadlines real: exec.CommandContext kills it when
// the context ends, where a goroutine stuck in C could not be stopped. The
// cost is a process start per document (a few milliseconds, small next to
// extracting even a short PDF) and copying the file through a pipe.
//
// The child must not outlive its parent: a server killed with SIGKILL (or
// by the OOM killer) cannot kill it, and re-parented to PID 1 it would run
// on without a deadline while the restarted server starts another worker
// for the same job. On Linux the kernel kills it when the parent goes (see
// workerSysProcAttr); on every system the child also checks at start that
// its parent is still the process that started it (see parentGone), which
// covers a parent that died before the child could be watched, and where
// there is no such kernel support it keeps checking (see watchParent).
const (
	// workerEnv selects worker mode; its values are unlikely to be set by
	// accident, since a stray value would turn the server into a worker
	// (one that exits at once, lacking workerParentEnv).
	workerEnv          = "DOCSIFT_PDF_WORKER"
	workerModeExtract  = "extract-v1"
	workerModeCount    = "count-v1"
	workerModeScan     = "scan-v1"
	workerModeSandbox  = "sandbox-v1"
	workerStderrTail   = 2048 // bytes of MuPDF's stderr kept for error details
	workerKillGrace    = 2 * time.Second
	workerExitUncaught = 3 // exit status when the worker fails in Go code
	workerExitOrphaned = 4 // exit status when the worker's parent is gone

	// workerParentEnv carries the server's pid to the worker, which exits
	// at start when its parent is not that process (see parentGone).
	workerParentEnv = "DOCSIFT_PDF_WORKER_PARENT"

	// workerOptionsEnv carries a workerOptions, as JSON, to the worker.
	workerOptionsEnv = "DOCSIFT_PDF_WORKER_OPTIONS"
)

func init() {
	switch mode := os.Getenv(workerEnv); mode {
	case workerModeExtract, workerModeCount, workerModeScan, workerModeSandbox:
		if parentGone(os.Getenv(workerParentEnv), os.Getppid()) {
			os.Exit(workerExitOrphaned)
		}
		watchParent(os.Getppid())
		os.Exit(runWorker(mode, os.Stdin, os.Stdout))
	}
}

// parentGone reports whether a worker whose parent has pid ppid was
// orphaned: its parent is not the server that started it, whose pid the
// server passed in workerParentEnv. An orphan is re-parented to PID 1 or to
// a subreaper, so comparing with the expected pid catches both (and a
// server that is itself PID 1, as in a container, is still its parent). A
// worker started without workerParentEnv was not started by runInWorker
// (a stray environment variable) and does not run either.
func parentGone(want string, ppid int) bool {
	return want == "" || want != strconv.Itoa(ppid)
}

// workerOptions is what an extraction worker is told besides the
// document, in workerOptionsEnv as JSON.
type workerOptions struct {
	Format Format `json:"format,omitempty"`
	// Limits bound what the worker reads (see limits.go); the parent
	// checks them again as the pages arrive.
	Limits Limits `json:"limits"`
	// OCR, when set, reads pages without a text layer with Tesseract.
	OCR *OCR `json:"ocr,omitempty"`
	// Scan is what a scan-mode worker renders (see ScanPages).
	Scan *scanRequest `json:"scan,omitempty"`
	// Sandbox widens the worker's sandbox (see sandboxConfig).
	Sandbox sandboxConfig `json:"sandbox,omitzero"`
	// Private are the paths a sandbox-mode worker checks it cannot open
	// (see CheckSandbox).
	Private []string `json:"private,omitempty"`
}

// workerPage is one page as the worker read it. The worker sends each page
// as soon as it is read, so the parent can report progress.
type workerPage struct {
	Text     string // raw text: the text layer's, or OCR's when OCR is true
	OCR      bool   // Text came from OCR
	OCRTried bool   // OCR ran on the page (its text layer was too thin)
	// Problem says why a page that needed OCR got none (ocrProblem…),
	// and Detail how, in words for the log and the uploader.
	Problem, Detail string
}

// workerMessage is one message of the worker's stream on stdout: the page
// count, then each page, then the result. The parent reads them as they
// come, and a stream that ends before its result is a crash. Each is one
// frame (see writeFrame).
type workerMessage struct {
	PageCount int // set in the first message of an extraction
	// Title and Outline come with the page count: the document's
	// metadata title and outline (see outline.go).
	Title   string
	Outline []outlineEntry
	Page    *workerPage
	Result  *workerResult // the last message
}

// workerResult is how a worker's job ended. Pages is filled in by the
// parent from the page messages.
type workerResult struct {
	Pages     []workerPage
	PageCount int
	Title     string // filled in by the parent, as Pages
	Outline   []outlineEntry
	Scan      []byte // a scan-mode worker's output
	Fail      string // "", failEncrypted or failCorrupt
	Detail    string

	Sandbox *sandboxReport // a sandbox-mode worker's output
}

const (
	failEncrypted = "encrypted"
	failCorrupt   = "corrupt"
	failTooLarge  = "too-large"
)

// runWorker is the child's side: enter the sandbox (see sandbox.go), read
// the document from stdin, run MuPDF in process, write workerMessages to
// stdout, return the exit status.
func runWorker(mode string, in io.Reader, out io.Writer) int {
	limitWorkerMemory()
	var opts workerOptions
	if v := os.Getenv(workerOptionsEnv); v != "" {
		if json.Unmarshal([]byte(v), &opts) != nil {
			return workerExitUncaught
		}
	}
	sandbox := enterSandbox(opts)
	data, err := io.ReadAll(in)
	if err != nil {
		return workerExitUncaught
	}
	w := bufio.NewWriter(out)
	var sendErr error
	send := func(m workerMessage) {
		if sendErr == nil {
			sendErr = writeFrame(w, &m)
		}
	}
	var res workerResult
	switch mode {
	case workerModeExtract:
		err = readDocument(context.Background(), data, opts, send)
	case workerModeCount:
		res.PageCount, err = readPageCount(data)
	case workerModeScan:
		if opts.Scan == nil {
			return workerExitUncaught
		}
		res.Scan, err = renderScan(data, *opts.Scan)
	case workerModeSandbox:
		sandbox.Exposed = probePrivate(opts.Private)
		res.Sandbox = &sandbox
	}
	switch {
	case errors.Is(err, ErrEncrypted):
		res.Fail, res.Detail = failEncrypted, err.Error()
	case errors.Is(err, ErrTooLarge):
		res.Fail, res.Detail = failTooLarge, err.Error()
	case err != nil:
		res.Fail, res.Detail = failCorrupt, err.Error()
	}
	send(workerMessage{Result: &res})
	if sendErr != nil {
		return workerExitUncaught
	}
	return 0
}

// workerJob is one run of a worker: what it does and how the parent
// follows it.
type workerJob struct {
	mode string
	opts workerOptions
	// progress, when set, is called with the pages read so far and the
	// page count, as the worker sends them.
	progress func(done, total int)
}

// runInWorker runs MuPDF on data in a child process (see the comment at
// the top of this file) and maps its outcome onto the package's errors.
func runInWorker(ctx context.Context, mode string, data []byte) (*workerResult, error) {
	return runWorkerJob(ctx, workerJob{mode: mode}, bytes.NewReader(data))
}

// runWorkerProcess is runInWorker reading the document from stdin, which
// the child gets as its own standard input when it is an *os.File.
func runWorkerProcess(ctx context.Context, mode string, stdin io.Reader) (*workerResult, error) {
	return runWorkerJob(ctx, workerJob{mode: mode}, stdin)
}

// runWorkerJob runs job in a child process reading the document from
// stdin, following its stream of messages.
func runWorkerJob(ctx context.Context, job workerJob, stdin io.Reader) (*workerResult, error) {
	exe, err := workerExecutable()
	if err != nil {
		return nil, fmt.Errorf("pdf: start extraction worker: %w", err)
	}
	opts, err := json.Marshal(job.opts)
	if err != nil {
		return nil, fmt.Errorf("pdf: start extraction worker: %w", err)
	}
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = workerEnviron(os.Environ(), workerEnv+"="+job.mode, workerParentEnv+"="+strconv.Itoa(os.Getpid()), workerOptionsEnv+"="+string(opts))
	cmd.Stdin = stdin
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("pdf: start extraction worker: %w", err)
	}
	stderr := &tailBuffer{max: workerStderrTail}
	cmd.Stderr = stderr
	cmd.WaitDelay = workerKillGrace
	cmd.SysProcAttr = workerSysProcAttr()
	// Linux's parent-death signal fires when the *thread* that started the
	// child ends, not the process, and the Go runtime ends a thread when a
	// goroutine locked to it returns without unlocking (any code, ours or a
	// dependency's, may do that; golang/go#27505). Locking this goroutine to
	// its thread from start to wait keeps every other goroutine off it, so
	// nothing can end the thread while the worker runs. The cost is one OS
	// thread per running extraction, blocked in reading and waiting.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("pdf: start extraction worker: %w", err)
	}
	res, streamErr := readWorkerStream(stdout, job.progress, job.maxFrame(), job.opts.Limits.withDefaults())
	if errors.Is(streamErr, ErrTooLarge) {
		// The worker is over a limit the parent counts: what it would
		// send next is not wanted, however much of it there is.
		_ = cmd.Process.Kill()
	} else if streamErr != nil {
		// Drain what is left, so a worker still writing is not blocked
		// on a full pipe while Wait waits for it to exit.
		_, _ = io.Copy(io.Discard, stdout)
	}
	runErr := cmd.Wait()
	if ctx.Err() != nil {
		return nil, errStoppedAt(ctx, len(res.Pages), res.PageCount)
	}
	if errors.Is(streamErr, ErrTooLarge) {
		return nil, fmt.Errorf("pdf: extract: %w", streamErr)
	}
	if runErr != nil || streamErr != nil {
		detail := lastLine(stderr.String())
		if detail == "" && runErr != nil {
			detail = runErr.Error()
		}
		if detail == "" {
			detail = streamErr.Error()
		}
		return nil, fmt.Errorf("pdf: the document crashed the reader (%s): %w", detail, ErrCorrupt)
	}
	// The worker's words are shown to the uploader: a subverted worker
	// could say anything, at any length.
	detail := clip(res.Detail, maxWorkerDetail)
	switch res.Fail {
	case failEncrypted:
		return nil, fmt.Errorf("pdf: open document: %w", ErrEncrypted)
	case failTooLarge:
		return nil, fmt.Errorf("pdf: extract: %w", &limitError{msg: detail})
	case failCorrupt:
		return nil, fmt.Errorf("%s: %w", strings.TrimSuffix(detail, ": "+ErrCorrupt.Error()), ErrCorrupt)
	}
	return res, nil
}

// The worker's stream on stdout is a sequence of frames, each a 4-byte
// big-endian length and that many bytes of one workerMessage as JSON. The
// parent reads what a process that parsed a hostile file wrote, and that
// file may have subverted it, so each message's size is checked before it
// is read: a length-prefixed frame of JSON, whose decoding allocates in
// proportion to what was read, where gob (the stream's format before)
// allocates whatever length a message claims.
const (
	frameHeader = 4
	// maxFrameOverhead is what a page's frame may hold beyond its text:
	// JSON's escapes (up to six bytes for a control character) and the
	// other fields; and what the first frame may hold, whose outline is
	// at most maxOutlineEntries titles of maxSectionTitle bytes.
	maxFrameOverhead = 8 << 20
	// maxScanFrame bounds a scan-mode worker's result, a PDF of images
	// for `docsift bench ocr` (the operator's own documents).
	maxScanFrame = 1 << 30
	// maxWorkerDetail bounds the worker's message shown to an uploader.
	maxWorkerDetail = 512
)

// maxFrame is the largest frame the parent reads from job's worker.
func (job workerJob) maxFrame() int {
	if job.mode == workerModeScan {
		return maxScanFrame
	}
	return 6*job.opts.Limits.withDefaults().PageText + maxFrameOverhead
}

// writeFrame writes m as one frame and flushes it, so that the parent
// sees each page as soon as it is read.
func writeFrame(w *bufio.Writer, m *workerMessage) error {
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	var head [frameHeader]byte
	binary.BigEndian.PutUint32(head[:], uint32(len(body)))
	w.Write(head[:])
	w.Write(body)
	return w.Flush()
}

// errFrameTooLarge is a frame over the size the parent reads: the worker
// is not the program the parent started, or not any more.
var errFrameTooLarge = errors.New("the worker sent a message over the size it may")

// readFrame reads one frame into m, refusing one over max bytes.
func readFrame(r io.Reader, max int, m *workerMessage) error {
	var head [frameHeader]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(head[:])
	if int64(n) > int64(max) {
		return errFrameTooLarge
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return err
	}
	return json.Unmarshal(body, m)
}

// readWorkerStream decodes a worker's messages until its result, calling
// progress after the page count and after each page, and counting the
// pages and their text against limits as they come. It returns what it
// has read so far (never nil) with an error when the stream ends early or
// breaks a limit (then wrapping ErrTooLarge).
func readWorkerStream(r io.Reader, progress func(done, total int), maxFrame int, limits Limits) (*workerResult, error) {
	var pages []workerPage
	count := 0
	var title string
	var outline []outlineEntry
	var text int64
	for {
		var m workerMessage
		if err := readFrame(r, maxFrame, &m); err != nil {
			return &workerResult{Pages: pages, PageCount: count}, fmt.Errorf("the worker's output ended early: %w", err)
		}
		switch {
		case m.Result != nil:
			res := m.Result
			res.Pages, res.PageCount = pages, max(res.PageCount, count)
			res.Title, res.Outline = title, outline
			return res, nil
		case m.Page != nil:
			n := len(pages) + 1
			text += int64(len(m.Page.Text))
			switch {
			case n > limits.Pages:
				return &workerResult{Pages: pages, PageCount: count}, errTooManyPages(max(count, n), limits.Pages)
			case len(m.Page.Text) > limits.PageText:
				return &workerResult{Pages: pages, PageCount: count}, errPageTooLong(n, limits.PageText)
			case text > limits.Text:
				return &workerResult{Pages: pages, PageCount: count}, errTextTooLong(limits.Text)
			}
			pages = append(pages, *m.Page)
		case m.PageCount > 0:
			if m.PageCount > limits.Pages {
				return &workerResult{PageCount: m.PageCount}, errTooManyPages(m.PageCount, limits.Pages)
			}
			count, title, outline = m.PageCount, m.Title, m.Outline
		default:
			continue
		}
		if progress != nil {
			progress(len(pages), count)
		}
	}
}

// workerExecutable returns the running binary. On Linux /proc/self/exe
// still reaches it after the file was replaced by an upgrade, so the
// worker is always the same build as the server.
func workerExecutable() (string, error) {
	if runtime.GOOS == "linux" {
		if _, err := os.Stat("/proc/self/exe"); err == nil {
			return "/proc/self/exe", nil
		}
	}
	return os.Executable()
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.buf) }

// clip truncates s to at most n bytes, on a character's boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// lastLine returns the last non-empty line of s, MuPDF's final word.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
