package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
	"go.etcd.io/bbolt"
)

// cliWait bounds how long a test waits for the server to come up or stop.
const cliWait = 30 * time.Second

// runCLI runs docsift with args in-process and returns what it printed.
func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := rootCmd("test")
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	err := cmd.ExecuteContext(ctx)
	return out.String(), err
}

// mustCLI runs docsift and fails the test when it returns an error.
func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, err := runCLI(t, args...)
	if err != nil {
		t.Fatalf("docsift %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// decodeStrict decodes JSON output refusing fields v does not have.
func decodeStrict(t *testing.T, out string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("output is not the expected JSON (%v):\n%s", err, out)
	}
}

type projectJSON struct {
	ProjectID string `json:"project_id"`
	APIKey    string `json:"api_key"`
}

func createProject(t *testing.T, dir, name string) projectJSON {
	t.Helper()
	var p projectJSON
	decodeStrict(t, mustCLI(t, "project", "create", "--name", name, "--json", "--data", dir), &p)
	if !strings.HasPrefix(p.ProjectID, store.PrefixProject) || !strings.HasPrefix(p.APIKey, store.PrefixAPIKey) {
		t.Fatalf("project create printed %+v", p)
	}
	return p
}

// freeAddr returns a loopback address nothing listens on right now.
//
// The port is closed until the server listens on it, and the kernel may
// hand it out again meanwhile, to a parallel test's freeAddr, whose server
// would then answer this one's requests (the likely cause of a metrics
// test that once read figures not its own server's, under CI's load). So
// no address is given out twice in a test binary.
func freeAddr(t *testing.T) string {
	t.Helper()
	givenMu.Lock()
	defer givenMu.Unlock()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if !given[addr] {
			given[addr] = true
			return addr
		}
	}
}

var (
	givenMu sync.Mutex
	given   = map[string]bool{}
)

// running is a `docsift serve` started in-process.
type running struct {
	base string
	stop func() error
}

// startServe runs `docsift serve` on dir and addr until the returned stop
// is called.
func startServe(t *testing.T, dir, addr string, flags ...string) running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := rootCmd("test")
	cmd.SetOut(new(bytes.Buffer))
	cmd.SetErr(new(bytes.Buffer))
	args := []string{"serve", "--addr", addr, "--data", dir, "--workers", "1", "--embedder", "builtin", "--answerer", "extractive"}
	cmd.SetArgs(append(args, flags...)) // later flags win
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()

	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(cliWait):
			return errors.New("serve did not stop")
		}
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("serve: %v", err)
		}
	})

	base := "http://" + addr
	deadline := time.Now().Add(cliWait)
	for {
		select {
		case err := <-done:
			stopped = true
			t.Fatalf("serve ended before answering: %v", err)
		default:
		}
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return running{base: base, stop: stop}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not answer on %s within %s: %v", addr, cliWait, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// statusWithKey is the status of GET /customers with key.
func statusWithKey(t *testing.T, base, key string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/customers", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestProjectCreateWithoutServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := createProject(t, dir, "acme")

	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatalf("the command left the data dir locked: %v", err)
	}
	got, _, err := st.Authenticate(p.APIKey)
	if err != nil || got.ID != p.ProjectID || got.Name != "acme" {
		t.Errorf("the printed key opens %+v (%v), want project acme %s", got, err, p.ProjectID)
	}
	st.Close()
	listProjects(t, dir, p.ProjectID)
}

// listProjects checks that project list names the projects with ids
// want, oldest first.
func listProjects(t *testing.T, dir string, want ...string) {
	t.Helper()
	var ps []store.Project
	decodeStrict(t, mustCLI(t, "project", "list", "--json", "--data", dir), &ps)
	var ids []string
	for _, p := range ps {
		ids = append(ids, p.ID)
	}
	if !slices.Equal(ids, want) {
		t.Errorf("project list: %v, want %v", ids, want)
	}
	if out := mustCLI(t, "project", "list", "--data", dir); !strings.Contains(out, want[len(want)-1]+"  ") {
		t.Errorf("project list printed %q", out)
	}
}

func TestCLIRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	createProject(t, dir, "acme")
	missing := filepath.Join(t.TempDir(), "typo")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"project without name", []string{"project", "create", "--json", "--data", dir}, "--name"},
		{"project with blank name", []string{"project", "create", "--name", "  ", "--data", dir}, "--name"},
		{"project with a long name", []string{"project", "create", "--name", strings.Repeat("x", 201), "--data", dir}, "--name is longer than 200 characters"},
		{"project in a store that is not a database", []string{"project", "create", "--name", "x", "--store", "mysql://x", "--data", dir}, `--store must be empty (the data directory's own file) or a postgres:// URL, not "mysql://x"`},
		{"key for a project that does not exist", []string{"key", "create", "--project", "prj_nope", "--data", dir}, `no project has the id "prj_nope"`},
		{"keys of a project that does not exist", []string{"key", "list", "--project", "prj_nope", "--data", dir}, `no project has the id "prj_nope"`},
		{"revoke a key that does not exist", []string{"key", "revoke", "key_nope", "--data", dir}, `no API key has the id "key_nope"`},
		{"key list without project", []string{"key", "list", "--data", dir}, "project"},
		{"webhooks of a project that does not exist", []string{"webhook", "list", "--project", "prj_nope", "--data", dir}, `no project has the id "prj_nope"`},
		{"delete a webhook that does not exist", []string{"webhook", "delete", "whk_nope", "--data", dir}, `no webhook has the id "whk_nope"`},
		{"reindex an owner that is not an id", []string{"reindex", "--owner", "garbage", "--data", dir}, `"garbage" is not an owner's id`},
		{"reindex an owner that does not exist", []string{"reindex", "--owner", "cus_nope", "--data", dir}, "owner cus_nope: no project or customer has that id"},
		{"key in a data dir that does not exist", []string{"key", "create", "--project", "prj_nope", "--data", missing}, "no docsift data in " + missing},
		{"webhooks in a data dir that does not exist", []string{"webhook", "list", "--project", "prj_nope", "--data", missing}, "no docsift data in " + missing},
		{"reindex a data dir that does not exist", []string{"reindex", "--data", missing}, "no docsift data in " + missing},
		{"a subcommand that does not exist", []string{"key", "delete", "key_x", "--data", dir}, `unknown command "delete" for "docsift key"`},
		{"a group without its subcommand", []string{"project"}, "docsift project needs a subcommand: create, list"},
		{"OCR at no resolution", []string{"bench", "ocr", "--dpi", "0", "x.pdf"}, "--dpi 0 is not a scan resolution: give one from 50 to 1200"},
		{"OCR of no pages", []string{"bench", "ocr", "--pages", "0", "x.pdf"}, "--pages is 0: give at least 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := runCLI(t, c.args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("docsift %s: error %v, want one saying %q (output %q)", strings.Join(c.args, " "), err, c.want, out)
			}
		})
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a command on a data dir that does not exist made it: %v", err)
	}

	// project create may be a new install's first command: it makes the
	// store, and says so.
	cmd := rootCmd("test")
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"project", "create", "--name", "first", "--data", missing})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("project create in a new data dir: %v", err)
	}
	if !strings.Contains(errOut.String(), "no docsift data in "+missing+": made a new store there") || !strings.Contains(out.String(), "API key:") {
		t.Errorf("project create in a new data dir printed %q and %q", out.String(), errOut.String())
	}
	mustCLI(t, "key", "list", "--project", strings.Fields(strings.SplitAfter(out.String(), "project id:")[1])[0], "--data", missing)

	// A project has at most 20 webhooks, through the CLI as through the API.
	first := strings.Fields(strings.SplitAfter(out.String(), "project id:")[1])[0]
	for i := range 20 {
		mustCLI(t, "webhook", "create", "--project", first, "--url", fmt.Sprintf("https://93.184.215.14/hook%d", i), "--data", missing)
	}
	if _, err := runCLI(t, "webhook", "create", "--project", first, "--url", "https://93.184.215.14/one-more", "--data", missing); err == nil || !strings.Contains(err.Error(), "the project has 20 webhooks, the most it may have") {
		t.Errorf("a 21st webhook: %v", err)
	}
	// The list shows no secret, not even an empty one, and the events
	// in the order the API gives them.
	if listed := mustCLI(t, "webhook", "list", "--json", "--project", first, "--data", missing); strings.Count(listed, `"webhook_id"`) != 20 || strings.Contains(listed, `"secret"`) ||
		!strings.Contains(listed, `"events":["job.failed","job.succeeded"]`) {
		t.Errorf("webhook list --json printed %s", listed)
	}

	// A benchmark whose requests failed fails, and says why.
	queries := filepath.Join(t.TempDir(), "queries.jsonl")
	if err := os.WriteFile(queries, []byte(`{"_id": "1", "text": "tides"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	nobody := "http://" + freeAddr(t)
	if _, err := runCLI(t, "bench", "query", "--url", nobody, "--key", "dsk_x", "--owner", "prj_x", "--queries", queries, "--requests", "2"); err == nil || !strings.Contains(err.Error(), "2 of 2 requests failed, the first: ") {
		t.Errorf("bench query of a server that is not there: %v", err)
	}
	if _, err := runCLI(t, "bench", "query", "--url", nobody, "--key", "dsk_x", "--owner", "prj_x", "--queries", queries, "--top-k", "0"); err == nil || !strings.Contains(err.Error(), "--top-k is 0") {
		t.Errorf("bench query --top-k 0: %v", err)
	}
	// Help on a command that does not exist fails; on one that does, helps.
	if _, err := runCLI(t, "help", "nosuch"); err == nil || !strings.Contains(err.Error(), `no command "nosuch"`) {
		t.Errorf("docsift help nosuch: %v", err)
	}
	if out, err := runCLI(t, "help", "key", "revoke"); err != nil || !strings.Contains(out, "Revoke an API key by its id") {
		t.Errorf("docsift help key revoke: %v, %q", err, out)
	}
	// A benchmark of nothing is refused, naming the flag, not run on a
	// default or reported as a throughput of 0.
	for _, args := range [][]string{
		{"bench", "query", "--url", nobody, "--key", "dsk_x", "--owner", "prj_x", "--queries", queries, "--requests", "0"},
		{"bench", "index", "--n", "0"},
		{"bench", "index", "--ef", "0"},
		{"bench", "index", "--ef-construction", "-1"},
		{"bench", "scale", "--chunks", "0"},
		{"bench", "cluster", "--nodes", "1"},
	} {
		flag := args[len(args)-2]
		if _, err := runCLI(t, args...); err == nil || !strings.HasPrefix(err.Error(), flag+" is "+args[len(args)-1]+": give ") {
			t.Errorf("docsift %s: %v", strings.Join(args, " "), err)
		}
	}
}

// A first start on an address another process holds prints no key: the
// key and curl lines come once the address is bound. A base URL must be
// one, and a slash after it does not double in the curl lines.
func TestServeRefusesBeforePrintingAKey(t *testing.T) {
	t.Parallel()
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	dir := t.TempDir()
	out, err := runCLI(t, "serve", "--data", dir, "--addr", held.Addr().String(), "--embedder", "builtin", "--answerer", "extractive")
	if err == nil || !strings.Contains(err.Error(), "listen on "+held.Addr().String()) || strings.Contains(out, "DOCSIFT_API_KEY") {
		t.Errorf("serve on a held address: %v, printed %q", err, out)
	}
	if _, err := runCLI(t, "serve", "--data", dir, "--base-url", "docs.example.com", "--embedder", "builtin"); err == nil || !strings.Contains(err.Error(), `--base-url must be an absolute http or https URL, like https://docs.example.com, not "docs.example.com"`) {
		t.Errorf("serve --base-url without a scheme: %v", err)
	}
	for _, base := range []string{"https://example.com/docsift", "https://example.com/?x=1"} {
		if _, err := runCLI(t, "serve", "--data", dir, "--base-url", base, "--embedder", "builtin"); err == nil || !strings.Contains(err.Error(), "--base-url must be the root of a host") {
			t.Errorf("serve --base-url %s: %v", base, err)
		}
	}
	for flag, value := range map[string]string{"--searxng-url": "notaurl", "--metrics-addr": "bad:addr:x"} {
		if _, err := runCLI(t, "serve", "--data", dir, flag, value, "--embedder", "builtin"); err == nil || !strings.Contains(err.Error(), flag+" must be") {
			t.Errorf("serve %s %s: %v", flag, value, err)
		}
	}
	// A slash at the end is the root still.
	if _, err := runCLI(t, "serve", "--data", dir, "--base-url", "https://example.com/", "--addr", "256.0.0.1:1", "--embedder", "builtin"); err != nil && strings.Contains(err.Error(), "--base-url") {
		t.Errorf("serve --base-url with a trailing slash: %v", err)
	}
	for flags, want := range map[string]string{
		"--max-file-size 0":                    "--max-file-size must be a size above 0",
		"--max-text-size 10MB":                 `"10MB" is not a size such as 2GiB`,
		"--workers -3":                         "--workers must be 0 (as many as CPUs) or more",
		"--session-ttl -1h":                    "--session-ttl must be a duration above 0",
		"--rate-limit NaN":                     "--rate-limit must be 0 (unlimited) or a number of requests a second",
		"--max-connections 0":                  "--max-connections must be 1 or more",
		"--write-stall 0s":                     "--write-stall must be a duration above 0",
		"--subpage-budget 0":                   "--subpage-budget must be a size above 0",
		"--max-subpages-per-project -1":        "--max-subpages-per-project must be 1 or more",
		"--max-documents-per-project -1":       "--max-documents-per-project must be 0 (no quota) or more",
		"--max-stored-bytes-per-project -5GiB": `"-5GiB" is not a size such as 2GiB`,
		"--memory-limit 1":                     "--memory-limit: 1 B is below 64.0 MiB",
		"--max-file-size 64MiB x":              `unknown command "x" for "docsift serve"`, // the size was read
		"--workers abc":                        `invalid argument "abc" for "--workers" flag: not a whole number`,
		"--session-ttl 5":                      `invalid argument "5" for "--session-ttl" flag: not a duration such as 30s, 5m or 1h`,
	} {
		args := append([]string{"serve", "--data", dir, "--addr", freeAddr(t)}, strings.Fields(flags)...)
		if _, err := runCLI(t, args...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("serve %s: %v, want an error saying %q", flags, err, want)
		}
	}
	if _, err := runCLI(t, "serve", "--data", dir, "--addr", freeAddr(t), "--webhook-allow-cidr", "10.0.0.0/33"); err == nil || !strings.Contains(err.Error(), `--webhook-allow-cidr: "10.0.0.0/33" is not a network`) {
		t.Errorf("serve --webhook-allow-cidr 10.0.0.0/33: %v", err)
	}
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := st.Projects()
	st.Close()
	if err != nil || len(ps) != 0 {
		t.Fatalf("the refused starts made projects %+v (%v): their keys were never seen", ps, err)
	}
}

// A cluster node's data directory and a single server's are kept apart:
// a single server, doctor or backup refuse a node's, and a node refuses a
// single server's, whose records it would leave unused.
func TestClusterAndSingleDataDirsKeptApart(t *testing.T) {
	t.Parallel()
	node := t.TempDir()
	if err := os.WriteFile(filepath.Join(node, nodeLockFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	single := t.TempDir()
	createProject(t, single, "acme")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--data", node, "--addr", freeAddr(t), "--embedder", "builtin", "--answerer", "extractive"}, node + " is a cluster node's data directory, whose records are in PostgreSQL"},
		{[]string{"doctor", "--data", node}, node + " is a cluster node's data directory: its records are in PostgreSQL"},
		{[]string{"backup", "--data", node, "--out", filepath.Join(t.TempDir(), "b.tar")}, "back them up and check them with PostgreSQL's own tools"},
		{[]string{"serve", "--data", single, "--store", "postgres://docsift@127.0.0.1:1/docsift", "--addr", freeAddr(t), "--embedder", "builtin", "--answerer", "extractive"}, single + " holds a single server's records (docsift.db), which a cluster node does not read"},
	} {
		if _, err := runCLI(t, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("docsift %s: %v, want an error saying %q", strings.Join(c.args, " "), err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(node, bolt.DBFileName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused command made a store in the node's directory: %v", err)
	}
}

// TestCLIWithRunningServer runs the admin commands while `docsift serve`
// holds the data dir (they go through its socket), then after it stopped
// (they open the store).
func TestCLIWithRunningServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := startServe(t, dir, freeAddr(t))

	// A second server on the same data dir is refused, and leaves the
	// first one's admin socket alone.
	if _, err := runCLI(t, "serve", "--addr", freeAddr(t), "--data", dir, "--embedder", "builtin", "--answerer", "extractive"); !errors.Is(err, bolt.ErrLocked) {
		t.Errorf("a second serve on the same data dir: %v, want %v", err, bolt.ErrLocked)
	}

	p := createProject(t, dir, "acme")
	if got := statusWithKey(t, srv.base, p.APIKey); got != http.StatusOK {
		t.Fatalf("the new project's key gets %d from the running server", got)
	}
	var listed []store.Project
	decodeStrict(t, mustCLI(t, "project", "list", "--json", "--data", dir), &listed)
	if len(listed) != 2 || listed[1].ID != p.ProjectID || listed[1].Name != "acme" {
		t.Errorf("project list through the socket: %+v, want the default project and acme", listed)
	}

	var created struct {
		ProjectID string `json:"project_id"`
		KeyID     string `json:"key_id"`
		APIKey    string `json:"api_key"`
	}
	decodeStrict(t, mustCLI(t, "key", "create", "--project", p.ProjectID, "--json", "--data", dir), &created)
	if created.ProjectID != p.ProjectID || !strings.HasPrefix(created.KeyID, store.PrefixKey) || !strings.HasPrefix(created.APIKey, store.PrefixAPIKey) {
		t.Fatalf("key create printed %+v", created)
	}
	if got := statusWithKey(t, srv.base, created.APIKey); got != http.StatusOK {
		t.Fatalf("the created key gets %d", got)
	}

	listKeys := func() map[string]store.APIKey {
		t.Helper()
		out := mustCLI(t, "key", "list", "--project", p.ProjectID, "--json", "--data", dir)
		for _, secret := range []string{p.APIKey, created.APIKey} {
			if strings.Contains(out, secret) {
				t.Errorf("key list shows a secret")
			}
		}
		var keys []store.APIKey
		decodeStrict(t, out, &keys)
		byID := map[string]store.APIKey{}
		for _, k := range keys {
			if k.ProjectID != p.ProjectID {
				t.Errorf("key list of %s shows key %+v", p.ProjectID, k)
			}
			byID[k.ID] = k
		}
		return byID
	}
	keys := listKeys()
	if len(keys) != 2 || keys[created.KeyID].ID == "" || keys[created.KeyID].RevokedAt != nil {
		t.Fatalf("key list: %+v, want the first key and %s, none revoked", keys, created.KeyID)
	}

	var revoked store.APIKey
	decodeStrict(t, mustCLI(t, "key", "revoke", created.KeyID, "--json", "--data", dir), &revoked)
	if revoked.ID != created.KeyID || revoked.RevokedAt == nil {
		t.Fatalf("key revoke printed %+v", revoked)
	}
	if got := statusWithKey(t, srv.base, created.APIKey); got != http.StatusUnauthorized {
		t.Errorf("a revoked key gets %d, want 401", got)
	}
	if got := statusWithKey(t, srv.base, p.APIKey); got != http.StatusOK {
		t.Errorf("revoking one key locked out the other: %d", got)
	}
	if k := listKeys()[created.KeyID]; k.RevokedAt == nil {
		t.Errorf("key list does not show %s as revoked: %+v", created.KeyID, k)
	}
	if out := mustCLI(t, "key", "revoke", created.KeyID, "--data", dir); out != created.KeyID+" was already revoked ("+revoked.RevokedAt.Format(time.RFC3339)+")\n" {
		t.Errorf("revoking a key again printed %q", out)
	}
	// What the socket did not find is said as without a server.
	for args, want := range map[string]string{
		"key revoke key_nope":             `no API key has the id "key_nope"`,
		"webhook list --project prj_nope": `no project has the id "prj_nope"`,
	} {
		if _, err := runCLI(t, append(strings.Fields(args), "--data", dir)...); err == nil || err.Error() != want {
			t.Errorf("docsift %s through the socket: %v, want %q", args, err, want)
		}
	}

	if err := srv.stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}
	// With the server gone the commands open the store themselves.
	other := createProject(t, dir, "globex")
	if k := listKeys()[created.KeyID]; k.RevokedAt == nil {
		t.Errorf("the revocation did not persist: %+v", k)
	}
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, c := range []struct {
		key, project string
	}{{p.APIKey, p.ProjectID}, {other.APIKey, other.ProjectID}} {
		if got, _, err := st.Authenticate(c.key); err != nil || got.ID != c.project {
			t.Errorf("key of %s opens %+v, %v", c.project, got, err)
		}
	}
	if _, _, err := st.Authenticate(created.APIKey); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the revoked key still authenticates: %v", err)
	}
}

// TestFirstStartPrintsWorkingCommands runs the curl commands the first
// start prints, as printed, against a server on that data dir.
func TestFirstStartPrintsWorkingCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr := freeAddr(t)
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := firstStart(st, "http://"+addr, &out); err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := firstStart(st, "http://"+addr, &again); err != nil || again.Len() != 0 {
		t.Errorf("a second start printed %q (%v); the key is shown once", again.String(), err)
	}
	ps, err := st.Projects()
	if err != nil || len(ps) != 1 || ps[0].Name != "default" || !strings.Contains(out.String(), ps[0].ID) {
		t.Fatalf("projects after first start: %+v, %v; output:\n%s", ps, err, out.String())
	}
	// The key goes to a service's log with this output: once, not per line.
	key := regexp.MustCompile(`dsk_[A-Za-z0-9]+`).FindAllString(out.String(), -1)
	if len(key) != 1 {
		t.Fatalf("the key appears %d times in the first-start output, want once:\n%s", len(key), out.String())
	}
	st.Close()

	srv := startServe(t, dir, addr)
	cmds := curlCommands(t, out.String())
	if len(cmds) != 2 {
		t.Fatalf("want an upload and a query command, got %d in:\n%s", len(cmds), out.String())
	}
	var up struct {
		JobID string `json:"job_id"`
	}
	if err := json.Unmarshal(cmds[0].run(t), &up); err != nil || up.JobID == "" {
		t.Fatalf("the printed upload answered no job (%v)", err)
	}
	var job struct {
		Status string `json:"status"`
	}
	deadline := time.Now().Add(cliWait)
	for job.Status != store.StatusSucceeded {
		if job.Status == store.StatusFailed || time.Now().After(deadline) {
			t.Fatalf("the printed upload's job is %q", job.Status)
		}
		get := curlCommand{method: http.MethodGet, url: srv.base + "/jobs/" + up.JobID, header: http.Header{"Authorization": cmds[0].header["Authorization"]}}
		if err := json.Unmarshal(get.run(t), &job); err != nil {
			t.Fatal(err)
		}
		if job.Status != store.StatusSucceeded {
			time.Sleep(10 * time.Millisecond)
		}
	}
	var q struct {
		Answer string `json:"answer"`
		Chunks []struct {
			Text string `json:"text"`
		} `json:"chunks"`
	}
	if err := json.Unmarshal(cmds[1].run(t), &q); err != nil || len(q.Chunks) == 0 || q.Answer == "" {
		t.Errorf("the printed query found nothing (%v): %+v", err, q)
	}
}

// curlCommand is a request as a printed curl command line makes it.
type curlCommand struct {
	method, url, body string
	header            http.Header
}

func (c curlCommand) run(t *testing.T) []byte {
	t.Helper()
	req, err := http.NewRequest(c.method, c.url, strings.NewReader(c.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = c.header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s as printed: %d %s", c.method, c.url, resp.StatusCode, b.String())
	}
	return b.Bytes()
}

// curlCommands reads the curl commands in out as a shell would run them:
// continuation lines joined, export lines setting variables that later
// lines expand, quotes as the shell reads them, the flags -s, -H and -d.
func curlCommands(t *testing.T, out string) []curlCommand {
	t.Helper()
	var cmds []curlCommand
	vars := map[string]string{}
	for _, line := range strings.Split(strings.ReplaceAll(out, "\\\n", " "), "\n") {
		line = strings.TrimSpace(line)
		if name, value, ok := strings.Cut(strings.TrimPrefix(line, "export "), "="); ok && strings.HasPrefix(line, "export ") {
			words, err := shellWords(value, vars)
			if err != nil || len(words) != 1 {
				t.Fatalf("export line %q: %v", line, err)
			}
			vars[name] = words[0]
			continue
		}
		if !strings.HasPrefix(line, "curl ") {
			continue
		}
		args, err := shellWords(line, vars)
		if err != nil {
			t.Fatalf("%v in %q", err, line)
		}
		c := curlCommand{method: http.MethodGet, header: http.Header{}}
		for i := 1; i < len(args); i++ {
			switch a := args[i]; {
			case a == "-s":
			case (a == "-H" || a == "-d") && i+1 < len(args):
				i++
				if a == "-d" {
					c.method, c.body = http.MethodPost, args[i]
					continue
				}
				name, value, ok := strings.Cut(args[i], ":")
				if !ok {
					t.Fatalf("header %q in %q", args[i], line)
				}
				c.header.Set(name, strings.TrimSpace(value))
			case strings.HasPrefix(a, "http"):
				c.url = a
			default:
				t.Fatalf("unexpected curl argument %q in %q", a, line)
			}
		}
		cmds = append(cmds, c)
	}
	return cmds
}

// shellWords splits a command line on blanks as the shell does for the
// subset the printed commands use: single quotes keep everything, double
// quotes and bare words expand $NAME from vars (an unset one is an error,
// where the shell would silently expand it to nothing).
func shellWords(line string, vars map[string]string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune // 0, '\'' or '"'
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote == '\'' && r == '\'', quote == '"' && r == '"':
			quote = 0
		case quote == '\'':
			cur.WriteRune(r)
		case r == '$':
			j := i + 1
			for j < len(rs) && (rs[j] == '_' || unicode.IsLetter(rs[j]) || unicode.IsDigit(rs[j])) {
				j++
			}
			name := string(rs[i+1 : j])
			v, ok := vars[name]
			if !ok {
				return nil, fmt.Errorf("$%s is not set by an earlier line", name)
			}
			cur.WriteString(v)
			inWord, i = true, j-1
		case quote == '"':
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, errors.New("unclosed quote")
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

func TestBackupAndRestoreCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := startServe(t, dir, freeAddr(t))
	p := createProject(t, dir, "backed-up")
	if status := statusWithKey(t, srv.base, p.APIKey); status != http.StatusOK {
		t.Fatalf("the new key answers %d", status)
	}
	archive := filepath.Join(t.TempDir(), "docsift.tar")
	// What a killed backup left is removed; a file another backup is
	// writing right now is not.
	killed, writing := filepath.Join(filepath.Dir(archive), ".docsift.tar.tmp-1"), filepath.Join(filepath.Dir(archive), ".docsift.tar.tmp-2")
	for _, f := range []string{killed, writing} {
		if err := os.WriteFile(f, []byte("part of a backup"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(killed, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if out := mustCLI(t, "backup", "--data", dir, "--out", archive); !strings.Contains(out, archive) {
		t.Errorf("backup printed %q", out)
	}
	if _, err := os.Stat(killed); !os.IsNotExist(err) {
		t.Errorf("a killed backup's file is still there (%v)", err)
	}
	if _, err := os.Stat(writing); err != nil {
		t.Errorf("the file of a backup being written was removed: %v", err)
	}
	if err := srv.stop(); err != nil {
		t.Fatal(err)
	}

	restored := filepath.Join(t.TempDir(), "restored")
	if out := mustCLI(t, "restore", archive, "--data", restored); !strings.Contains(out, "restored") {
		t.Errorf("restore printed %q", out)
	}
	if _, err := runCLI(t, "restore", archive, "--data", restored); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("restore over the restored dir: %v, want a refusal naming --force", err)
	}
	// The restored data dir serves the project and key as they were.
	again := startServe(t, restored, freeAddr(t))
	if status := statusWithKey(t, again.base, p.APIKey); status != http.StatusOK {
		t.Errorf("the restored server answers the key with %d", status)
	}
	missing := filepath.Join(t.TempDir(), "typo")
	if _, err := runCLI(t, "backup", "--data", missing, "--out", archive+".2"); err == nil || !strings.Contains(err.Error(), "no docsift data") {
		t.Errorf("a backup of a data dir that does not exist: %v", err)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Error("backing up a missing data dir created it")
	}
	outDir := t.TempDir()
	if _, err := runCLI(t, "backup", "--data", restored, "--out", outDir); err == nil || !strings.Contains(err.Error(), "--out "+outDir+" is a directory") {
		t.Errorf("a backup to a directory: %v", err)
	}
}

func TestMetricsOnTheirOwnListener(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	metricsAddr := freeAddr(t)
	srv := startServe(t, dir, freeAddr(t), "--metrics-addr", metricsAddr)
	p := createProject(t, dir, "measured")

	body := fmt.Sprintf(`{"owner_id": %q, "text": "Metrics count what the server did, never whose data it was."}`, p.ProjectID)
	req, _ := http.NewRequest(http.MethodPost, srv.base+"/upload/text", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+p.APIKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var up struct {
		JobID string `json:"job_id"`
	}
	json.NewDecoder(resp.Body).Decode(&up)
	resp.Body.Close()

	scrape := func() string {
		t.Helper()
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /metrics: %d %s", resp.StatusCode, b)
		}
		return string(b)
	}
	// The job ends in the server's own time, its chunk is embedded after
	// it, and a scrape reads each metric at its own moment: the metrics
	// are asked for until they all say what the upload did.
	wants := []string{
		`docsift_jobs_ended_total{outcome="succeeded"} 1`,
		`docsift_chunks_indexed_total 1`,
		`docsift_http_requests_total{method="POST",route="/upload/text",status="200"} 1`,
		`docsift_jobs_pending 0`,
		`docsift_jobs_processing 0`,
		`docsift_searches_running 0`,
		`docsift_searches_waiting 0`,
		`docsift_embed_duration_seconds_count{model="` + llm.NewBuiltin().Model() + `",purpose="document"} 1`,
		`docsift_http_request_duration_seconds_bucket{method="POST",route="/upload/text",le="+Inf"} 1`,
		`docsift_owner_index_chunks_bucket{le="100"} 1`,
		`docsift_owner_index_chunks_count 1`,
	}
	lacking := func(out string) (missing []string) {
		for _, want := range wants {
			if !strings.Contains(out, want) {
				missing = append(missing, want)
			}
		}
		return missing
	}
	deadline := time.Now().Add(cliWait)
	out := scrape()
	for len(lacking(out)) > 0 && time.Now().Before(deadline) {
		out = scrape()
	}
	for _, want := range lacking(out) {
		t.Errorf("metrics lack %s", want)
	}
	for _, secret := range []string{p.ProjectID, p.APIKey, up.JobID, "prj_", "cus_", "doc_"} {
		if strings.Contains(out, secret) {
			t.Errorf("metrics name %q: they must say nothing about tenants", secret)
		}
	}
	if resp, err := http.Get(srv.base + "/metrics"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("the public listener serves /metrics: %v %v", resp, err)
	}
}

// Data an older docsift wrote is upgraded by serve alone, which logs it:
// a backup taken to go back with, a health check or a key listing leave
// it as it is, saying why they will not read it.
func TestOlderDataIsUpgradedOnlyByServe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := createProject(t, dir, "older")
	markOlder(t, dir)
	archive := filepath.Join(t.TempDir(), "docsift.tar")
	for _, args := range [][]string{
		{"backup", "--data", dir, "--out", archive},
		{"doctor", "--data", dir},
		{"key", "list", "--project", p.ProjectID, "--data", dir},
	} {
		if _, err := runCLI(t, args...); err == nil || !strings.Contains(err.Error(), "older docsift (the data was written by an older docsift (schema 5") ||
			!strings.Contains(err.Error(), "docsift serve --data "+dir) {
			t.Errorf("docsift %s on older data: %v, want a refusal naming serve", args[0], err)
		}
	}
	logFile := filepath.Join(t.TempDir(), "serve.log")
	srv := startServe(t, dir, freeAddr(t), "--log-file", logFile)
	if err := srv.stop(); err != nil {
		t.Fatal(err)
	}
	if log, err := os.ReadFile(logFile); err != nil || !strings.Contains(string(log), "data upgraded from an older docsift") || !strings.Contains(string(log), "from_schema=5") {
		t.Errorf("serve's log of the upgrade (%v):\n%s", err, log)
	}
	mustCLI(t, "backup", "--data", dir, "--out", archive)
}

// reindex, which writes, upgrades older data, and says so.
func TestReindexSaysItUpgraded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	createProject(t, dir, "older")
	markOlder(t, dir)
	cmd := rootCmd("test")
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"reindex", "--data", dir, "--embedder", "builtin"})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("reindex: %v\n%s%s", err, out.String(), errOut.String())
	}
	if !strings.Contains(errOut.String(), "upgraded the data in "+dir+" from an older docsift (schema 5)") {
		t.Errorf("reindex of older data said:\n%s%s", out.String(), errOut.String())
	}
}

// markOlder marks the data in dir as an older docsift's: schema 5.
func markOlder(t *testing.T, dir string) {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(dir, bolt.DBFileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("schema_version"), []byte{0, 0, 0, 0, 0, 0, 0, 5})
	}); err != nil {
		t.Fatal(err)
	}
}
