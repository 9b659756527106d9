package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/docsift/docsift/internal/ollamatest"
	"github.com/docsift/docsift/internal/pgtest"
)

// startFails runs serve with flags, which must fail to start, and returns
// its error, all it printed and its log.
func startFails(t *testing.T, flags ...string) string {
	t.Helper()
	cmd := rootCmd("test")
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	logFile := filepath.Join(t.TempDir(), "serve.log")
	args := []string{"serve", "--addr", freeAddr(t), "--data", t.TempDir(), "--workers", "1", "--embedder", "builtin", "--answerer", "extractive", "--log-file", logFile}
	cmd.SetArgs(append(args, flags...))
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		t.Fatalf("serve %s started", strings.Join(flags, " "))
	}
	log, _ := os.ReadFile(logFile)
	return err.Error() + "\n" + out.String() + string(log)
}

// deadPort is a port of 127.0.0.1 nothing listens on.
func deadPort(t *testing.T) string {
	_, port, _ := net.SplitHostPort(freeAddr(t))
	return port
}

// keepsOut fails the test when text holds secret.
func keepsOut(t *testing.T, what, text, secret string) {
	t.Helper()
	if strings.Contains(text, secret) {
		t.Errorf("%s holds the password:\n%s", what, text)
	}
}

// The --store URL's password never reaches the log or the errors an
// operator reads: not while the database answers, not while it is down,
// and not when the URL is wrong or names no database that answers.
func TestStorePasswordNeverLogged(t *testing.T) {
	const secret = "Pg5ecretW0rd"
	pg := pgtest.Start(t) // trusts every connection: any password opens it
	db := pg.Database(t)
	withPassword := strings.Replace(db, "postgres@", "postgres:"+secret+"@", 1) + "&password=" + secret
	logFile := filepath.Join(t.TempDir(), "serve.log")
	srv := startServe(t, t.TempDir(), freeAddr(t), "--store", withPassword, "--log-file", logFile, "--log-level", "debug")
	if err := pg.Stop(true); err != nil {
		t.Fatal(err)
	}
	// The database is down: requests are answered 503, heartbeats fail.
	if resp, err := http.Get(srv.base + "/healthz"); err == nil {
		resp.Body.Close()
	}
	if err := pg.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := srv.stop(); err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(logFile)
	if err != nil || !strings.Contains(string(log), "joined the cluster") {
		t.Fatalf("serve's log (%v):\n%s", err, log)
	}
	keepsOut(t, "serve's log", string(log), secret)

	for _, url := range []string{
		"postgres://postgres:" + secret + "@127.0.0.1:" + deadPort(t) + "/docsift?sslmode=disable&connect_timeout=5",
		"postgres://postgres:pa/" + secret + "@127.0.0.1:" + strconv.Itoa(pg.Port()) + "/docsift", // the password read as a port
		"postgres://postgres@127.0.0.1:" + strconv.Itoa(pg.Port()) + "/docsift?password=" + secret + "&sslmode=nonsense",
		"mysql://root:" + secret + "@db.internal/docsift",
	} {
		keepsOut(t, "serve --store "+url, startFails(t, "--store", url), secret)
	}
}

// An Ollama URL's user and password never reach the log, the errors an
// operator reads or the API's answers: not when Ollama works, fails a
// request, goes away, or the URL does not parse.
func TestOllamaPasswordNeverLogged(t *testing.T) {
	const secret = "0llama5ecret"
	ol := ollamatest.New(t, ollamatest.Model{Name: testEmbedModel, Dim: 32}, ollamatest.Model{Name: testChatModel})
	withPassword := strings.Replace(ol.URL, "http://", "http://docsift:"+secret+"@", 1)
	dir := t.TempDir()
	p := createProject(t, dir, "acme")
	logFile := filepath.Join(t.TempDir(), "serve.log")
	srv := startServe(t, dir, freeAddr(t), "--embedder", "ollama", "--answerer", "ollama", "--ollama-url", withPassword,
		"--embed-model", testEmbedModel, "--chat-model", testChatModel, "--log-file", logFile, "--log-level", "debug", "--retry-max-delay", "1s")
	var answers strings.Builder
	call := func(method, path string, body any) map[string]any {
		_, out := apiCall(t, method, srv.base+path, p.APIKey, body)
		fmt.Fprintln(&answers, out)
		return out
	}
	upload := func(text string) string {
		out := call(http.MethodPost, "/upload/text", map[string]any{"owner_id": p.ProjectID, "text": text})
		id, _ := out["job_id"].(string)
		return id
	}
	job := upload("The harbour master opens the lock gates at six.")
	waitJobState(t, srv.base, p.APIKey, job, func(j jobState) bool { return j.Status == "SUCCEEDED" })
	ol.FailNext("/api/chat", 1, http.StatusInternalServerError)
	call(http.MethodPost, "/query/project", map[string]any{"project_id": p.ProjectID, "query": "lock gates"})
	ol.Stop()
	call(http.MethodPost, "/query/project", map[string]any{"project_id": p.ProjectID, "query": "lock gates"})
	job = upload("The ferry leaves every hour from the north pier.")
	waitJobState(t, srv.base, p.APIKey, job, func(j jobState) bool { return j.Error != "" || j.Status == "FAILED" })
	call(http.MethodGet, "/jobs/"+job, nil)
	if err := srv.stop(); err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	keepsOut(t, "serve's log", string(log), secret)
	keepsOut(t, "the API's answers", answers.String(), secret)
	if !strings.Contains(string(log), "docsift:xxxxx@127.0.0.1") {
		t.Errorf("serve's log names no Ollama server:\n%s", log)
	}

	for _, url := range []string{
		"http://docsift:pa/" + secret + "@127.0.0.1:11434",                                     // the password read as a port
		"http://docsift:" + secret + "@127.0.0.1:1,http://docsift:" + secret + "@127.0.0.1:1/", // listed twice
		"ftp://docsift:" + secret + "@127.0.0.1",
	} {
		keepsOut(t, "serve --ollama-url "+url, startFails(t, "--embedder", "ollama", "--ollama-url", url), secret)
	}
}
