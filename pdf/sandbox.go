package pdf

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

// The extraction worker (worker.go) reads bytes from strangers with large
// C code bases: MuPDF, and Tesseract with Leptonica. A flaw in one of them
// could let a crafted document run code as the worker, so the worker is
// given no more than reading a document takes:
//
//   - Its environment is its own variables and what the Go runtime, MuPDF
//     and Tesseract read (workerEnviron), never the server's settings,
//     which hold secrets (an OAuth client secret, a database URL with its
//     password) readable by anything running as the worker.
//   - On Linux it enters a sandbox before it reads the document
//     (sandbox_linux.go): Landlock lets it read only the system's programs
//     and libraries and Tesseract's data, not the data dir or anything
//     else of the server's user; seccomp refuses it sockets of any kind.
//     Tesseract, its child, inherits both.
//   - Resource limits bound its memory and open files and turn off core
//     dumps.
//
// A kernel without Landlock or seccomp runs the worker with what it has.
// The server learns what holds once, at start, from CheckSandbox, which
// runs a worker that enters the sandbox and reports; a worker cannot
// write to the server's log itself.

// workerEnvKept are the variables of the server's environment a worker
// gets: PATH to find Tesseract, Tesseract's data directory, the locale
// (Tesseract and Leptonica read it), and the Go runtime's own settings.
// A name ending in "_" keeps every variable with that prefix.
var workerEnvKept = []string{
	"PATH", "TESSDATA_PREFIX",
	"LANG", "LANGUAGE", "LC_",
	"GODEBUG", "GOMAXPROCS", "GOTRACEBACK", "GORACE",
}

// sandboxReadDirs are the directories a sandboxed worker may read and run
// programs from: the system's programs and shared libraries (Tesseract's
// and those of the programs it runs), and, on NixOS and Guix, their
// stores, which hold the same. Tesseract's data lies under /usr unless
// TESSDATA_PREFIX says otherwise.
var sandboxReadDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/nix/store", "/gnu/store"}

// The Landlock ABI versions that bring what the sandbox uses: TCP rules,
// and one sandbox for every thread (see sandbox_linux.go).
const (
	landlockTCP       = 4
	landlockOneDomain = 8
)

// workerEnviron returns the worker's environment: the variables of environ
// named in workerEnvKept, then own, the worker's own settings.
func workerEnviron(environ []string, own ...string) []string {
	var env []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		for _, keep := range workerEnvKept {
			if name == keep || strings.HasSuffix(keep, "_") && strings.HasPrefix(name, keep) {
				env = append(env, kv)
				break
			}
		}
	}
	return append(env, own...)
}

// sandboxConfig widens a worker's sandbox, for tests and benchmarks:
// production workers get the zero value. Tests give their stand-ins for
// Tesseract paths to run and keep state in, besides the system's programs
// and libraries and Tesseract's data (see sandboxRules); Off, for a
// comparison, runs the worker without Landlock and seccomp.
type sandboxConfig struct {
	Read  []string `json:"read,omitempty"`  // read and run
	Write []string `json:"write,omitempty"` // read, run, write, create
	Off   bool     `json:"off,omitempty"`
}

// sandboxReport is what a worker's sandbox holds, as the worker found
// when it entered it.
type sandboxReport struct {
	// Landlock is the Landlock ABI version in force, 0 when none, and
	// LandlockErr why not.
	Landlock    int
	LandlockErr string
	// Seccomp tells that the worker's syscall filter is in force, and
	// SeccompErr why not.
	Seccomp    bool
	SeccompErr string
	// Unsupported is set where this system has no sandbox at all.
	Unsupported string
	// Exposed are the private paths (CheckSandbox) the worker could open.
	Exposed []string
}

// CheckSandbox starts an extraction worker configured as documents' are
// with ocr, which enters its sandbox and tries to open each of private
// (the server's data dir): it returns a description of the sandbox in
// force and, when a part is missing or a private path was readable, an
// error saying what the worker could reach. The server runs it once at
// start and logs the outcome, as workers cannot write to its log.
func CheckSandbox(ctx context.Context, ocr OCR, private ...string) (string, error) {
	ocr = ocr.withDefaults()
	job := workerJob{mode: workerModeSandbox, opts: workerOptions{OCR: &ocr, Private: private}}
	res, err := runWorkerJob(ctx, job, strings.NewReader(""))
	if err != nil {
		return "", fmt.Errorf("pdf: check the extraction sandbox: %w", err)
	}
	if res.Sandbox == nil {
		return "", errors.New("pdf: check the extraction sandbox: the worker did not report its sandbox")
	}
	return res.Sandbox.describe()
}

// describe says what r holds, or what it lacks and what the worker can
// then reach.
func (r *sandboxReport) describe() (string, error) {
	if r.Unsupported != "" {
		return "", fmt.Errorf("the extraction worker has no sandbox on %s: it can read every file and reach every address the server can (its environment still holds no secrets)", r.Unsupported)
	}
	var held, missing []string
	switch {
	case r.Landlock == 0:
		missing = append(missing, fmt.Sprintf("Landlock is unavailable (%s): the worker can read every file the server's user can, the data dir included", r.LandlockErr))
	case r.Landlock < landlockTCP:
		held = append(held, fmt.Sprintf("Landlock ABI %d (files)", r.Landlock))
	case r.Landlock < landlockOneDomain:
		held = append(held, fmt.Sprintf("Landlock ABI %d (files, TCP)", r.Landlock))
	default:
		held = append(held, fmt.Sprintf("Landlock ABI %d (files, TCP, signals)", r.Landlock))
	}
	switch {
	case r.Seccomp:
		held = append(held, "seccomp (no sockets, io_uring, namespaces or tracing)")
	case r.Landlock >= landlockTCP:
		missing = append(missing, fmt.Sprintf("seccomp is unavailable (%s): the worker can open UDP and local sockets, the admin socket included (Landlock refuses it TCP only)", r.SeccompErr))
	default:
		missing = append(missing, fmt.Sprintf("seccomp is unavailable (%s): the worker can reach the network and local sockets, the admin socket included", r.SeccompErr))
	}
	for _, p := range r.Exposed {
		missing = append(missing, fmt.Sprintf("the worker can open %s, which lies under a directory it may read (%s): keep the data dir elsewhere", p, strings.Join(sandboxReadDirs, ", ")))
	}
	if len(missing) > 0 {
		return strings.Join(held, ", "), errors.New(strings.Join(missing, "; "))
	}
	return strings.Join(held, ", "), nil
}

// probePrivate returns the paths of private that this process can open:
// a worker's check that its sandbox keeps them out of reach.
func probePrivate(private []string) []string {
	var exposed []string
	for _, p := range private {
		if f, err := os.Open(p); err == nil {
			f.Close()
			exposed = append(exposed, p)
		}
	}
	return exposed
}
