package ollamareal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/ollama/ollama/api"
)

// modelsDirPrefix names the per-process models directories under the
// system temp dir: docsift-ollamareal-<pid>-<random>.
const modelsDirPrefix = "docsift-ollamareal-"

// store is the OLLAMA_MODELS directory every server of this process
// shares, so that a model is generated and converted once per process, not
// once per test. No hook runs when a test binary exits, so a directory
// outlives its process; the next process removes those whose process is
// gone.
var store struct {
	once sync.Once
	dir  string
	err  error

	mu      sync.Mutex
	created map[string]*creation
}

// creation is one model's creation, shared by every server that needs it.
type creation struct {
	done chan struct{}
	err  error
}

func modelsDir() (string, error) {
	store.once.Do(func() {
		removeStaleModelsDirs()
		store.dir, store.err = os.MkdirTemp("", modelsDirPrefix+strconv.Itoa(os.Getpid())+"-")
		if store.err != nil {
			store.err = fmt.Errorf("ollamareal: models dir: %w", store.err)
		}
		store.created = make(map[string]*creation)
	})
	return store.dir, store.err
}

// removeStaleModelsDirs deletes models directories left by test processes
// that have exited.
func removeStaleModelsDirs() {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), modelsDirPrefix+"*"))
	for _, dir := range matches {
		rest := strings.TrimPrefix(filepath.Base(dir), modelsDirPrefix)
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(dir)
		}
	}
}

// ensureModel creates m through c unless this process already has: the
// first caller creates it while later ones wait for the outcome.
func ensureModel(ctx context.Context, c *api.Client, m Model) error {
	store.mu.Lock()
	cr, ok := store.created[m.Name]
	if !ok {
		cr = &creation{done: make(chan struct{})}
		store.created[m.Name] = cr
	}
	store.mu.Unlock()
	if ok {
		select {
		case <-cr.done:
			return cr.err
		case <-ctx.Done():
			return fmt.Errorf("ollamareal: waiting for %s to be created: %w", m.Name, ctx.Err())
		}
	}
	cr.err = createModel(ctx, c, m)
	close(cr.done)
	if cr.err != nil {
		// Let a later test try again rather than inherit a failure that may
		// have been its predecessor's deadline.
		store.mu.Lock()
		delete(store.created, m.Name)
		store.mu.Unlock()
	}
	return cr.err
}
