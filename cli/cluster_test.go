package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docsift/docsift/cluster"
	"github.com/docsift/docsift/internal/pgtest"
	"github.com/docsift/docsift/internal/testpdf"
	"github.com/docsift/docsift/store"
)

// The cluster mode end to end: `docsift serve --store postgres://…`
// processes on one throwaway PostgreSQL, each with a data dir of its own.

type testCluster struct {
	bin, db      string
	pg           *pgtest.Server
	nodes        []*process
	dirs         []string // each node's data dir
	key, project string
	flags        []string // more flags for every node's serve
}

// startCluster starts n nodes on a new database. The first creates the
// project and prints its key, as a single node does on first start.
func startCluster(t *testing.T, n int, flags ...string) *testCluster {
	t.Helper()
	c := &testCluster{bin: buildBinary(t), pg: pgtest.Start(t), flags: flags}
	c.db = c.pg.Database(t)
	for i := range n {
		c.nodes = append(c.nodes, c.start(t))
		if i == 0 {
			out := c.nodes[0].stdout.String()
			key := regexp.MustCompile(`DOCSIFT_API_KEY=(dsk_\w+)`).FindStringSubmatch(out)
			project := regexp.MustCompile(`\((prj_\w+)\)`).FindStringSubmatch(out)
			if key == nil || project == nil {
				t.Fatalf("first node printed no key:\n%s", out)
			}
			c.key, c.project = key[1], project[1]
		}
	}
	c.converge(t)
	return c
}

// converge waits until every running node sees all of them live: until
// then their views of placement may differ for a heartbeat.
func (c *testCluster) converge(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(cliWait)
	for _, p := range c.nodes {
		if p.cmd.ProcessState != nil {
			continue
		}
		for {
			status, out := apiCall(t, http.MethodGet, p.base+"/healthz", "", nil)
			if status == http.StatusOK && asFloat(out["live_nodes"]) == float64(c.running()) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s sees %v live nodes; want %d", p.base, out["live_nodes"], c.running())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func (c *testCluster) running() int {
	n := 0
	for _, p := range c.nodes {
		if p.cmd.ProcessState == nil {
			n++
		}
	}
	return n
}

func (c *testCluster) start(t *testing.T) *process {
	dir := t.TempDir()
	c.dirs = append(c.dirs, dir)
	return startProcess(t, c.bin, dir, freeAddr(t), append([]string{"--store", c.db}, c.flags...)...)
}

// live reads the live nodes as the database has them, and the node
// process of each by URL.
func (c *testCluster) live(t *testing.T) []store.Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, "SELECT id, url FROM nodes WHERE heartbeat_at > now() - interval '6 seconds' ORDER BY id")
	nodes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Node, error) {
		var n store.Node
		return n, r.Scan(&n.ID, &n.URL)
	})
	if err != nil {
		t.Fatal(err)
	}
	return nodes
}

// holder is the process holding owner's index.
func (c *testCluster) holder(t *testing.T, owner string) *process {
	t.Helper()
	h, ok := cluster.Holder(owner, c.live(t))
	if !ok {
		t.Fatal("no live nodes")
	}
	for _, p := range c.nodes {
		if p.base == h.URL {
			return p
		}
	}
	t.Fatalf("holder %s is none of the nodes", h.URL)
	return nil
}

func (c *testCluster) customer(t *testing.T, via *process, name string) string {
	t.Helper()
	out := via.call(t, http.MethodPost, "/customer/create", c.key, map[string]any{"project_id": c.project, "name": name})
	return out["customer_id"].(string)
}

func (c *testCluster) uploadText(t *testing.T, via *process, owner, name, text string) string {
	t.Helper()
	out := via.call(t, http.MethodPost, "/upload/text", c.key, map[string]any{"owner_id": owner, "name": name, "text": text})
	return out["job_id"].(string)
}

// query asks through via for word among owner's chunks and returns the
// texts found and the node that answered.
func (c *testCluster) query(t *testing.T, via *process, owner, word string) (texts []string, servedBy string) {
	t.Helper()
	status, out, servedBy := c.tryQuery(t, via, owner, word)
	if status != http.StatusOK {
		t.Fatalf("query %q through %s: %d %v", word, via.base, status, out)
	}
	chunks, _ := out["chunks"].([]any)
	for _, ch := range chunks {
		texts = append(texts, fmt.Sprint(ch.(map[string]any)["text"]))
	}
	return texts, servedBy
}

// tryQuery is query that leaves the status to the caller; a request that
// reaches no server at all is status 0.
func (c *testCluster) tryQuery(t *testing.T, via *process, owner, word string) (int, map[string]any, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"customer_id": owner, "query": word, "top_k": 3})
	req, _ := http.NewRequest(http.MethodPost, via.base+"/query/customer", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+c.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, map[string]any{"error": err.Error()}, ""
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("query through %s: %d, not JSON: %v", via.base, resp.StatusCode, err)
	}
	if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
		t.Fatalf("503 without Retry-After through %s: %v", via.base, out)
	}
	if ids := resp.Header.Values("X-Request-Id"); len(ids) != 1 {
		t.Fatalf("query through %s answered with request ids %q, want one", via.base, ids)
	}
	return resp.StatusCode, out, resp.Header.Get("X-Docsift-Served-By")
}

func containsWord(texts []string, word string) bool {
	for _, s := range texts {
		if strings.Contains(s, word) {
			return true
		}
	}
	return false
}

func succeeded(j jobState) bool { return j.Status == "SUCCEEDED" || j.Status == "FAILED" }

// Uploads through one node are found by queries through every node, and a
// document deleted through a node that does not hold its owner is gone
// from every node's answers.
func TestClusterUploadsQueryableOnEveryNode(t *testing.T) {
	c := startCluster(t, 3)
	const owners = 6
	var customers, words, jobs []string
	for i := range owners {
		cus := c.customer(t, c.nodes[i%3], fmt.Sprintf("customer %d", i))
		word := fmt.Sprintf("quillwort%d", i)
		customers, words = append(customers, cus), append(words, word)
		jobs = append(jobs, c.uploadText(t, c.nodes[(i+1)%3], cus, fmt.Sprintf("notes-%d.txt", i),
			fmt.Sprintf("Field notes of customer %d. The rare plant we found is %s, near the river.", i, word)))
	}
	for i, id := range jobs {
		if j := waitJobState(t, c.nodes[(i+2)%3].base, c.key, id, succeeded); j.Status != "SUCCEEDED" {
			t.Fatalf("job %s: %+v", id, j)
		}
	}
	live := c.live(t)
	for i, cus := range customers {
		holder, _ := cluster.Holder(cus, live)
		for _, p := range c.nodes {
			texts, servedBy := c.query(t, p, cus, words[i])
			if !containsWord(texts, words[i]) {
				t.Fatalf("query for %s through %s found %q", words[i], p.base, texts)
			}
			if servedBy != holder.ID {
				t.Fatalf("query through %s was answered by %s, not by the owner's holder %s", p.base, servedBy, holder.ID)
			}
			// Tenants stay apart: another customer's word is not found.
			other := words[(i+1)%owners]
			if texts, _ := c.query(t, p, cus, other); containsWord(texts, other) {
				t.Fatalf("customer %d's query found customer %d's text through %s", i, (i+1)%owners, p.base)
			}
		}
	}
	// Delete through a node that does not hold the owner.
	cus := customers[0]
	holder := c.holder(t, cus)
	var elsewhere *process
	for _, p := range c.nodes {
		if p != holder {
			elsewhere = p
		}
	}
	// A streamed answer comes through the node that passes it on.
	body, _ := json.Marshal(map[string]any{"customer_id": cus, "query": words[0], "stream": true})
	req, _ := http.NewRequest(http.MethodPost, elsewhere.base+"/query/customer", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+c.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	stream, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" || !strings.Contains(string(stream), "event: chunks") || !strings.Contains(string(stream), words[0]) {
		t.Fatalf("streamed query through a node that does not hold the owner: %s %q", resp.Header.Get("Content-Type"), stream)
	}
	docs := elsewhere.call(t, http.MethodGet, "/documents?owner_id="+cus, c.key, nil)
	doc := docs["documents"].([]any)[0].(map[string]any)["document_id"].(string)
	elsewhere.call(t, http.MethodDelete, "/documents/"+doc, c.key, nil)
	for _, p := range c.nodes {
		if texts, _ := c.query(t, p, cus, words[0]); containsWord(texts, words[0]) {
			t.Fatalf("deleted document still found through %s: %q", p.base, texts)
		}
	}
}

// Killing the node that holds an owner, in the middle of the owner's
// ingest, loses no job: its running job is taken over once its lease runs
// out, and the owner answers from another node meanwhile. The test logs
// how long each took.
func TestClusterKillHolderMidIngest(t *testing.T) {
	c := startCluster(t, 3)
	cus := c.customer(t, c.nodes[0], "acme")
	holder := c.holder(t, cus)
	var via *process
	for _, p := range c.nodes {
		if p != holder {
			via = p
			break
		}
	}
	// Enough documents that the holder's one worker is busy with them
	// when it is killed: each is some pages of text.
	const docs = 60
	var jobs []string
	para := strings.Repeat("Maintenance schedules list the parts, the tools and the intervals of each inspection. ", 40)
	for i := range docs {
		jobs = append(jobs, c.uploadText(t, via, cus, fmt.Sprintf("manual-%02d.txt", i),
			fmt.Sprintf("Manual %d covers the gearbox model gx%03d.\n\n%s", i, i, strings.Repeat(para+"\n\n", 20))))
	}
	first := waitJobState(t, via.base, c.key, jobs[0], succeeded)
	if first.Status != "SUCCEEDED" {
		t.Fatalf("first job: %+v", first)
	}
	killed := time.Now()
	holder.kill9(t)
	// Jobs not yet done when the holder died.
	left := 0
	for _, id := range jobs {
		_, out := apiCall(t, http.MethodGet, via.base+"/jobs/"+id, c.key, nil)
		if out["status"] != "SUCCEEDED" {
			left++
		}
	}
	if left == 0 {
		t.Fatal("every job had ended before the kill: the test did not kill mid-ingest; give it more work")
	}
	// The owner answers through the survivors: at once when they
	// answer for the dead holder, within the heartbeat's limit when
	// placement has moved. A survivor answers from what it has indexed
	// so far, and says so, while it catches up with the store (on a
	// loaded machine, the first document may not be among the chunks
	// it indexes before answering).
	for {
		status, out, _ := c.tryQuery(t, via, cus, "gx000")
		if status == http.StatusOK {
			if strings.Contains(fmt.Sprint(out["chunks"]), "gx000") {
				break
			}
			if !strings.Contains(fmt.Sprint(out["warnings"]), "catching up") {
				t.Fatalf("query after the kill found %v, with no warning that the index is catching up", out["chunks"])
			}
		}
		if time.Since(killed) > cliWait {
			t.Fatalf("no answer with the first document %s after the kill: %d %v", cliWait, status, out)
		}
	}
	t.Logf("the first document found %s after the kill of the holder", time.Since(killed).Round(time.Millisecond))
	c.converge(t)
	for _, p := range c.nodes {
		if p != holder {
			if status, _, servedBy := c.tryQuery(t, p, cus, "gx000"); status != http.StatusOK || servedBy == "" {
				t.Fatalf("query through %s after failover: %d, served by %q", p.base, status, servedBy)
			}
		}
	}
	for i, id := range jobs {
		j := waitJobState(t, via.base, c.key, id, succeeded)
		if j.Status != "SUCCEEDED" {
			t.Fatalf("job %d after the kill: %+v", i, j)
		}
	}
	t.Logf("%d jobs left at the kill; all %d SUCCEEDED %s after it", left, docs, time.Since(killed).Round(time.Millisecond))
	// Every document is found, through every survivor.
	for _, p := range c.nodes {
		if p == holder {
			continue
		}
		for _, i := range []int{0, docs / 2, docs - 1} {
			word := fmt.Sprintf("gx%03d", i)
			if texts, _ := c.query(t, p, cus, word); !containsWord(texts, word) {
				t.Fatalf("%s not found through %s after the failover: %q", word, p.base, texts)
			}
		}
	}
}

// A PostgreSQL restart (fast shutdown, start) is survived: while it is
// down requests get 503 with Retry-After and a JSON error, never a wrong
// answer, and once it is back the nodes answer and ingest again without
// being restarted.
func TestClusterSurvivesPostgresRestart(t *testing.T) {
	c := startCluster(t, 2)
	cus := c.customer(t, c.nodes[0], "acme")
	job := c.uploadText(t, c.nodes[1], cus, "before.txt", "Written before the restart: the password is marigold.")
	if j := waitJobState(t, c.nodes[0].base, c.key, job, succeeded); j.Status != "SUCCEEDED" {
		t.Fatalf("job: %+v", j)
	}
	for _, p := range c.nodes {
		if texts, _ := c.query(t, p, cus, "marigold"); !containsWord(texts, "marigold") {
			t.Fatalf("before the restart: %q", texts)
		}
	}

	// Down: every answer is a 503 or the right one.
	if err := c.pg.Stop(true); err != nil {
		t.Fatal(err)
	}
	unavailable := 0
	for _, p := range c.nodes {
		for range 3 {
			status, out, _ := c.tryQuery(t, p, cus, "marigold")
			switch {
			case status == http.StatusServiceUnavailable:
				unavailable++
				if msg, _ := out["error"].(string); !strings.Contains(msg, "database") {
					t.Fatalf("503 says %q", msg)
				}
			case status == http.StatusOK && strings.Contains(fmt.Sprint(out["chunks"]), "marigold"):
			default:
				t.Fatalf("with PostgreSQL down, a query through %s got %d %v", p.base, status, out)
			}
		}
	}
	if unavailable == 0 {
		t.Fatal("no 503 while PostgreSQL was down: the queries did not need it?")
	}
	// Health says so once a heartbeat has failed, and is ok again after.
	health := func(p *process, want int) {
		t.Helper()
		deadline := time.Now().Add(cliWait)
		for {
			resp, err := http.Get(p.base + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			var body map[string]any
			json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if resp.StatusCode == want {
				if want == http.StatusServiceUnavailable && body["status"] != "database unreachable" {
					t.Fatalf("healthz of %s with PostgreSQL down: %v", p.base, body)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("healthz of %s: %d %v, want %d", p.base, resp.StatusCode, body, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	for _, p := range c.nodes {
		health(p, http.StatusServiceUnavailable)
	}
	// Admin commands say so in words, through a node or straight to the
	// database.
	for args, want := range map[string]string{
		"project list --data " + c.dirs[0]: "the cluster's database is unreachable right now; try again in a few seconds",
		"project list --store " + c.db:     " is unreachable (is PostgreSQL running there, and the URL right?)",
	} {
		if _, err := runCLI(t, strings.Fields(args)...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("docsift %s with PostgreSQL down: %v, want %q", args, err, want)
		}
	}
	if err := c.pg.Resume(); err != nil {
		t.Fatal(err)
	}
	for _, p := range c.nodes {
		health(p, http.StatusOK)
	}

	// Back: the same nodes answer and ingest, without a restart.
	deadline := time.Now().Add(cliWait)
	for _, p := range c.nodes {
		for {
			status, out, _ := c.tryQuery(t, p, cus, "marigold")
			if status == http.StatusOK {
				if !strings.Contains(fmt.Sprint(out["chunks"]), "marigold") {
					t.Fatalf("after the restart: %v", out)
				}
				break
			}
			if status != http.StatusServiceUnavailable || time.Now().After(deadline) {
				t.Fatalf("after the restart, through %s: %d %v", p.base, status, out)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	job = c.uploadText(t, c.nodes[1], cus, "after.txt", "Written after the restart: the new password is snapdragon.")
	if j := waitJobState(t, c.nodes[0].base, c.key, job, succeeded); j.Status != "SUCCEEDED" {
		t.Fatalf("job after the restart: %+v", j)
	}
	c.converge(t)
	for _, p := range c.nodes {
		if texts, _ := c.query(t, p, cus, "snapdragon"); !containsWord(texts, "snapdragon") {
			t.Fatalf("after the restart, through %s: %q", p.base, texts)
		}
	}
}

// onNode is url (made by one node, with its base URL) on node p.
func onNode(t *testing.T, url string, p *process) string {
	t.Helper()
	_, path, ok := strings.Cut(strings.TrimPrefix(url, "http://"), "/")
	if !ok {
		t.Fatalf("not a URL with a path: %q", url)
	}
	return p.base + "/" + path
}

// Upload sessions, subpages and webhooks work whichever node a request
// lands on: a session made on one node is served by another, a subpage
// sliced through one is downloaded from another, and a webhook registered
// through one hears of a job that ran on whichever node held its owner.
func TestClusterSessionsSubpagesWebhooksOnAnyNode(t *testing.T) {
	c := startCluster(t, 3, "--webhook-allow-cidr", "127.0.0.1") // the receiver is on loopback
	a, b, d := c.nodes[0], c.nodes[1], c.nodes[2]
	events := make(chan map[string]any, 8)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev map[string]any
		json.NewDecoder(r.Body).Decode(&ev)
		events <- ev
	}))
	defer hook.Close()
	a.call(t, http.MethodPost, "/webhooks", c.key, map[string]any{"url": hook.URL, "events": []string{"job.succeeded"}})
	cus := c.customer(t, b, "acme")

	sess := a.call(t, http.MethodPost, "/session/multi-tenant", c.key, map[string]any{
		"project_id": c.project, "customer_id": cus, "services": []string{"file_upload"},
		"success_url": "https://example.com/done", "cancel_url": "https://example.com/cancel"})
	resp, err := http.Get(onNode(t, sess["url"].(string), d))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("session page made on one node, opened on another: %d", resp.StatusCode)
	}

	pdf := testpdf.Pages([]string{"Harbour report. The north pier was repaired in May.", "Dredging. The channel was dredged to nine metres.", "Budget. The budget is unchanged."})
	job, _ := uploadBytes(t, b.base, c.key, cus, "harbour.pdf", pdf)
	if j := waitJobState(t, d.base, c.key, job, succeeded); j.Status != "SUCCEEDED" {
		t.Fatalf("job: %+v", j)
	}
	select {
	case ev := <-events:
		if ev["type"] != "job.succeeded" {
			t.Fatalf("webhook event %v", ev)
		}
	case <-time.After(cliWait):
		t.Fatal("no webhook delivery for the job")
	}

	status, out := apiCall(t, http.MethodPost, d.base+"/query/customer", c.key, map[string]any{"customer_id": cus, "query": "dredged channel"})
	chunks, _ := out["chunks"].([]any)
	if status != http.StatusOK || len(chunks) == 0 {
		t.Fatalf("query: %d %v", status, out)
	}
	chunk := chunks[0].(map[string]any)["chunk_id"].(string)
	sp := a.call(t, http.MethodPost, "/subpage", c.key, map[string]any{"chunk_id": chunk, "owner_id": cus, "varience": 1})
	resp, err = http.Get(onNode(t, sp["subpage_url"].(string), b))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.HasPrefix(body, []byte("%PDF")) {
		t.Fatalf("subpage sliced on one node, fetched from another: %d, %d bytes", resp.StatusCode, len(body))
	}
}

// uploadBytes uploads data as a file named name for owner.
func uploadBytes(t *testing.T, base, key, owner, name string, data []byte) (jobID, docID string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return uploadPDF(t, base, key, owner, path)
}

// A project's rate limit holds across the nodes: requests spread over two
// nodes get one bucket's burst, not one per node.
func TestClusterRateLimitSharedByNodes(t *testing.T) {
	c := startCluster(t, 2, "--rate-limit", "0.5") // a burst of 2, then one every 2 s
	ok, limited := 0, 0
	for i := range 8 {
		p := c.nodes[i%2]
		status, out := apiCall(t, http.MethodGet, p.base+"/customers", c.key, nil)
		switch status {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
			limited++
			if msg, _ := out["error"].(string); !strings.Contains(msg, "rate limit") {
				t.Fatalf("429 says %q", msg)
			}
		default:
			t.Fatalf("GET /customers through %s: %d %v", p.base, status, out)
		}
	}
	// The burst is 2; a token may flow in while the requests run.
	if ok > 3 || limited == 0 {
		t.Fatalf("%d requests passed and %d were limited across two nodes at 0.5/s; want the one bucket's burst", ok, limited)
	}
}

// A node that joins takes over the owners it wins: after the nodes agree,
// queries for them are answered by it, from the store, with everything the
// owners had.
func TestClusterNodeJoinTakesOwners(t *testing.T) {
	c := startCluster(t, 2)
	// Placement is by random ids: with 24 owners the new node wins none
	// with probability (2/3)^24, about 6 in 100,000.
	const owners = 24
	var customers, jobs []string
	for i := range owners {
		cus := c.customer(t, c.nodes[0], fmt.Sprintf("customer %d", i))
		customers = append(customers, cus)
		jobs = append(jobs, c.uploadText(t, c.nodes[i%2], cus, "notes.txt", fmt.Sprintf("Customer %d keeps the ledger code lx%d.", i, i)))
	}
	for _, id := range jobs {
		if j := waitJobState(t, c.nodes[0].base, c.key, id, succeeded); j.Status != "SUCCEEDED" {
			t.Fatalf("job %s: %+v", id, j)
		}
	}
	c.nodes = append(c.nodes, c.start(t))
	c.converge(t)
	joined := c.nodes[2]
	live := c.live(t)
	won := 0
	for i, cus := range customers {
		h, _ := cluster.Holder(cus, live)
		word := fmt.Sprintf("lx%d", i)
		for _, p := range c.nodes {
			texts, servedBy := c.query(t, p, cus, word)
			if !containsWord(texts, word) || servedBy != h.ID {
				t.Fatalf("after the join, %s through %s: %q served by %s; want found, by %s", word, p.base, texts, servedBy, h.ID)
			}
		}
		if h.URL == joined.base {
			won++
		}
	}
	if won == 0 {
		t.Fatalf("the new node won none of %d owners", owners)
	}
}

// The admin commands reach a cluster through a running node's data dir,
// or through --store when none runs; a stopped node's dir is not mistaken
// for a single node's.
func TestClusterAdminCommands(t *testing.T) {
	c := startCluster(t, 1)
	viaNode := createProject(t, c.dirs[0], "through the node")
	if status, _ := apiCall(t, http.MethodGet, c.nodes[0].base+"/customers", viaNode.APIKey, nil); status != http.StatusOK {
		t.Fatalf("key made through a node's socket: %d", status)
	}
	c.nodes[0].kill9(t)
	if _, err := runCLI(t, "project", "create", "--name", "x", "--data", c.dirs[0]); err == nil || !strings.Contains(err.Error(), "--store") {
		t.Fatalf("project create on a stopped node's dir = %v; want a refusal naming --store", err)
	}
	var p projectJSON
	decodeStrict(t, mustCLI(t, "project", "create", "--name", "direct", "--json", "--data", c.dirs[0], "--store", c.db), &p)
	node := c.start(t)
	if status, _ := apiCall(t, http.MethodGet, node.base+"/customers", p.APIKey, nil); status != http.StatusOK {
		t.Fatalf("key made with --store: %d", status)
	}
}
