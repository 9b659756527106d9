//go:build hostile

package hostile

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// The bounds every attack is held to. The server runs in a group of
// memoryLimit, as on a small VM; the hostile run of issue 58 gave it 6 GB
// and saw it reach 6.1 GB and die.
const (
	memoryLimit = 2 << 30
	// rssBound is the most the server process (not its extraction
	// children) may hold at its peak during any one attack: room for two
	// workers each holding five times a document's text at the default
	// --max-document-text (32 MiB), and for the server's own 100 MiB; a
	// quarter of the group's limit.
	rssBound = 512 << 20
	// tenantJobBound is how long the other tenant's small text may take
	// from its upload to SUCCEEDED, and tenantWebhookBound how long its
	// webhook may take from the upload to its receiver, while an attack
	// goes on.
	tenantJobBound     = 15 * time.Second
	tenantWebhookBound = 20 * time.Second
	// serverStart bounds a start of the server until it answers.
	serverStart = 60 * time.Second
)

// Flags every server of the suite gets: the built-in models (no Ollama),
// short stalls and retries, where the bounds do not depend on them, and
// the one loopback address the suite's webhook receivers listen on
// allowed (see receiverHost).
var baseFlags = []string{
	"--embedder", "builtin", "--answerer", "extractive", "--workers", "2",
	"--write-stall", "3s", "--webhook-first-retry", "1s",
	"--webhook-allow-cidr", receiverHost + "/32",
}

// writeStall is baseFlags' --write-stall.
const writeStall = 3 * time.Second

// suite is what TestMain sets up for every test.
var suite struct {
	bin   string          // the binary under attack
	flags map[string]bool // the flags its serve knows
	cg    *cgroup
	tmp   string

	mu      sync.Mutex
	figures []string // what the tests measured, printed at the end
}

// figure records a measurement for the summary at the end of the run, and
// logs it.
func figure(t *testing.T, format string, args ...any) {
	t.Helper()
	line := fmt.Sprintf("%s: %s", t.Name(), fmt.Sprintf(format, args...))
	t.Log("measured: " + fmt.Sprintf(format, args...))
	suite.mu.Lock()
	suite.figures = append(suite.figures, line)
	suite.mu.Unlock()
}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "docsift-hostile-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	suite.tmp = tmp

	suite.bin = os.Getenv("DOCSIFT_HOSTILE_BIN")
	if suite.bin == "" {
		suite.bin = filepath.Join(tmp, "docsift")
		start := time.Now()
		out, err := exec.Command("go", "build", "-o", suite.bin, "github.com/docsift/docsift").CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "hostile: go build: %v\n%s", err, out)
			return 1
		}
		fmt.Printf("hostile: built the binary of this tree in %s\n", time.Since(start).Round(time.Second))
	} else {
		fmt.Printf("hostile: attacking %s (DOCSIFT_HOSTILE_BIN)\n", suite.bin)
	}
	help, err := exec.Command(suite.bin, "serve", "--help").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "hostile: %s serve --help: %v\n%s", suite.bin, err, help)
		return 1
	}
	suite.flags = map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9-]+)`).FindAllStringSubmatch(string(help), -1) {
		suite.flags[m[1]] = true
	}

	suite.cg, err = newCgroup(memoryLimit)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hostile: the servers must run under a memory limit the suite sets, and no cgroup could be made: %v\n", err)
		return 1
	}
	fmt.Printf("hostile: servers run in %s, limited to %s\n", suite.cg.dir, mib(memoryLimit))

	code := m.Run()
	if err := suite.cg.remove(); err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		code = 1
	}
	suite.mu.Lock()
	sort.Strings(suite.figures)
	fmt.Printf("\nhostile: what was measured (binary %s):\n  %s\n", suite.bin, strings.Join(suite.figures, "\n  "))
	suite.mu.Unlock()
	return code
}

// knownFlags keeps the flags (with their values) the binary's serve knows,
// so that an older binary is attacked with what it has rather than refused
// at start; the dropped ones are logged.
func knownFlags(t *testing.T, flags []string) []string {
	var out, dropped []string
	for i := 0; i < len(flags); i++ {
		f := flags[i]
		name, _, inline := strings.Cut(strings.TrimLeft(f, "-"), "=")
		hasValue := !inline && i+1 < len(flags) && !strings.HasPrefix(flags[i+1], "--")
		if !suite.flags[name] {
			dropped = append(dropped, f)
			if hasValue {
				i++
			}
			continue
		}
		out = append(out, f)
		if hasValue {
			out = append(out, flags[i+1])
			i++
		}
	}
	if len(dropped) > 0 {
		t.Logf("the binary's serve lacks %s: started without", strings.Join(dropped, ", "))
	}
	return out
}

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }
