package pdf

import "strings"

// The extraction worker (worker.go) reads bytes from strangers with large
// C code bases: MuPDF, and Tesseract with Leptonica. A flaw in one of them
// could let a crafted document run code as the worker, so the worker's
// environment is its own variables and what the Go runtime, MuPDF and
// Tesseract read (workerEnviron), never the server's settings, which hold
// secrets (an OAuth client secret, a database URL with its password)
// readable by anything running as the worker.

// workerEnvKept are the variables of the server's environment a worker
// gets: PATH to find Tesseract, Tesseract's data directory, the locale
// (Tesseract and Leptonica read it), and the Go runtime's own settings.
// A name ending in "_" keeps every variable with that prefix.
var workerEnvKept = []string{
	"PATH", "TESSDATA_PREFIX",
	"LANG", "LANGUAGE", "LC_",
	"GODEBUG", "GOMAXPROCS", "GOTRACEBACK", "GORACE",
}

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
