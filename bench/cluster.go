package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/docsift/docsift/cluster"
	"github.com/docsift/docsift/eval"
	"github.com/docsift/docsift/internal/pgserver"
	"github.com/docsift/docsift/store"
	"github.com/jackc/pgx/v5"
)

// Defaults of Cluster; `docsift bench cluster` shows them as its
// flags'.
const (
	ClusterDefaultNodes     = 3
	ClusterDefaultCustomers = 12
	// ClusterDefaultDocs makes a run at the defaults take about three
	// minutes on two cores, most of it the two ingests.
	ClusterDefaultDocs = 1000
	// clusterQueryClients is the query load's concurrency, as bench
	// scale's larger run.
	clusterQueryClients = 8
	// The killed node's customers each get clusterFailoverDocs documents
	// of clusterFailoverWords words just before the kill: several chunks
	// each, so that its workers are still at them when it dies.
	clusterFailoverDocs  = 8
	clusterFailoverWords = 20 * ScaleDefaultWords
	// clusterWait bounds each wait of the run on the nodes: to agree on
	// who is live, and for a failover to complete.
	clusterWait = 5 * time.Minute
)

// ClusterConfig says what Cluster runs.
type ClusterConfig struct {
	Nodes     int    // nodes of the cluster
	Customers int    // customers of the one project, each an owner
	Docs      int    // documents per customer
	Words     int    // words per document; at most chunkTargetWords makes one chunk each
	Uploaders int    // uploads in flight
	StoreURL  string // an empty PostgreSQL database; "" starts a throwaway server
	Binary    string // the docsift executable the child servers run; default this one
	Seed      uint64
	Progress  io.Writer // progress lines; nil for none
}

// ClusterResult is what `docsift bench cluster` prints: the same work on
// one node on bbolt (the reference) and on a cluster on PostgreSQL, and
// the cluster's failover.
type ClusterResult struct {
	Nodes     int `json:"nodes"`
	Customers int `json:"customers"`
	Documents int `json:"documents"`

	Reference ClusterRun `json:"reference"`
	Cluster   ClusterRun `json:"cluster"`
	// Cluster / reference, of ingest chunks/s and of queries/s.
	IngestRatio float64 `json:"ingest_ratio"`
	QueryRatio  float64 `json:"query_ratio"`

	Failover Failover `json:"failover"`
}

// ClusterRun is one setup's figures.
type ClusterRun struct {
	Nodes int    `json:"nodes"`
	Store string `json:"store"` // "bbolt" or "postgres"

	Chunks                int     `json:"chunks"`
	IngestSeconds         float64 `json:"ingest_seconds"`
	IngestChunksPerSecond float64 `json:"ingest_chunks_per_second"`
	// RSSAnonBytes is the nodes' anonymous memory after ingest, summed.
	RSSAnonBytes int64 `json:"rss_anon_bytes"`

	// Queries are clusterQueryClients clients' queries, each to the next
	// node in turn, each for the next customer in turn.
	Queries *LoadResult `json:"queries"`
}

// Failover is what kill -9 of the node holding the most customers costs.
type Failover struct {
	Node      string `json:"node"`      // id of the killed node
	Customers int    `json:"customers"` // customers it held
	// Seconds from the kill to each of its customers' first query
	// answered with chunks through a surviving node.
	FirstAnswerMaxSeconds    float64 `json:"first_answer_max_seconds"`
	FirstAnswerMedianSeconds float64 `json:"first_answer_median_seconds"`
	// Jobs uploaded for its customers just before the kill, those of
	// them not SUCCEEDED at the kill, and seconds from the kill until
	// every one had.
	Jobs                 int     `json:"jobs"`
	JobsPendingAtKill    int     `json:"jobs_pending_at_kill"`
	JobsSucceededSeconds float64 `json:"jobs_succeeded_seconds"`
}

// Cluster runs the same customers' documents and queries through one
// child `docsift serve` on bbolt, then through cfg.Nodes children sharing
// one PostgreSQL, and measures ingest and query throughput of each, then
// kills the node holding the most customers and measures how soon its
// customers answer and its jobs are done on the surviving nodes. The
// children run one after the other setup, so the two never share the
// machine.
func Cluster(ctx context.Context, cfg ClusterConfig) (_ *ClusterResult, err error) {
	if cfg.Nodes < 2 || cfg.Customers <= 0 || cfg.Docs <= 0 {
		return nil, errors.New("bench: cluster: need at least 2 nodes, 1 customer and 1 document per customer")
	}
	if err := childDefaults(&cfg.Words, &cfg.Uploaders, &cfg.Progress, &cfg.Binary); err != nil {
		return nil, fmt.Errorf("bench: cluster: %w", err)
	}
	dir, err := os.MkdirTemp("", "docsift-cluster-")
	if err != nil {
		return nil, fmt.Errorf("bench: cluster: %w", err)
	}
	defer func() {
		// A failed run keeps the nodes' logs to be read; an interrupted
		// one leaves nothing behind.
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(cfg.Progress, "the nodes' data and logs are kept in %s\n", dir)
			return
		}
		os.RemoveAll(dir)
	}()
	w := &clusterWork{ClusterConfig: cfg, gen: newScaleText(cfg.Seed)}
	// Each query asked once, new to the nodes as most users' are (see
	// Scale).
	w.queries = w.gen.queries(scaleQueryRequests*clusterQueryClients, cfg.Customers*cfg.Docs, cfg.Words)
	res := &ClusterResult{Nodes: cfg.Nodes, Customers: cfg.Customers, Documents: cfg.Customers * cfg.Docs}

	fmt.Fprintln(cfg.Progress, "reference: 1 node on bbolt")
	ref, err := startChildServer(ctx, cfg.Binary, filepath.Join(dir, "bbolt"))
	if err != nil {
		return nil, err
	}
	defer ref.kill()
	res.Reference = ClusterRun{Nodes: 1, Store: "bbolt"}
	if _, err := w.measure(ctx, []*childServer{ref}, &res.Reference); err != nil {
		return nil, err
	}
	if err := ref.stop(); err != nil {
		return nil, err
	}

	storeURL := cfg.StoreURL
	if storeURL == "" {
		fmt.Fprintln(cfg.Progress, "starting a throwaway PostgreSQL")
		pg, err := pgserver.Launch()
		if err != nil {
			return nil, fmt.Errorf("bench: cluster: no --store given, and %w", err)
		}
		defer pg.Close()
		if storeURL, err = pg.NewDatabase(); err != nil {
			return nil, fmt.Errorf("bench: cluster: %w", err)
		}
	} else if err := checkEmpty(ctx, storeURL); err != nil {
		return nil, err
	}
	fmt.Fprintf(cfg.Progress, "cluster: %d nodes on PostgreSQL\n", cfg.Nodes)
	nodes, ids, err := startCluster(ctx, cfg.Binary, dir, storeURL, cfg.Nodes)
	for _, n := range nodes {
		defer n.kill()
	}
	if err != nil {
		return nil, err
	}
	res.Cluster = ClusterRun{Nodes: cfg.Nodes, Store: "postgres"}
	customers, err := w.measure(ctx, nodes, &res.Cluster)
	if err != nil {
		return nil, err
	}
	res.IngestRatio = res.Cluster.IngestChunksPerSecond / res.Reference.IngestChunksPerSecond
	res.QueryRatio = res.Cluster.Queries.RequestsPerSecond / res.Reference.Queries.RequestsPerSecond

	if res.Failover, err = w.failover(ctx, nodes, ids, customers); err != nil {
		return nil, err
	}
	for _, n := range nodes {
		select {
		case <-n.exited: // the killed one
		default:
			if err := n.stop(); err != nil {
				return nil, err
			}
		}
	}
	return res, nil
}

// clusterWork is one run's documents and queries, the same for both
// setups.
type clusterWork struct {
	ClusterConfig
	gen     *scaleText
	queries []string
}

// document is customer c's j-th document: its number is unique across
// customers, so no two customers share a text.
func (w *clusterWork) document(c, j int) (name, text string) {
	i := c*w.Docs + j
	return fmt.Sprintf("doc-%07d.txt", i), w.gen.document(i, w.Words)
}

// checkEmpty refuses a database that holds tables: the run fills it, and
// the first node finds its project only in an empty one.
func checkEmpty(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("bench: cluster: --store: %w", err)
	}
	defer conn.Close(ctx)
	var tables int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()").Scan(&tables); err != nil {
		return fmt.Errorf("bench: cluster: --store: %w", err)
	}
	if tables > 0 {
		return fmt.Errorf("bench: cluster: --store: the database has %d tables; give an empty one, which the run fills", tables)
	}
	return nil
}

// startCluster starts n nodes on storeURL, each with a data dir of its
// own under dir, and waits until every one sees all n live. It returns
// the nodes started so far even on error, for the caller to end them,
// and their node ids.
func startCluster(ctx context.Context, bin, dir, storeURL string, n int) ([]*childServer, []string, error) {
	var nodes []*childServer
	for i := range n {
		nodeDir := filepath.Join(dir, fmt.Sprintf("node-%d", i))
		if i > 0 {
			// Only the first node, on the empty database, prints the
			// project's key; the others are given it.
			key := nodes[0].key + " " + nodes[0].project
			err := os.MkdirAll(nodeDir, 0o700)
			if err == nil {
				err = os.WriteFile(filepath.Join(nodeDir, "key"), []byte(key), 0o600)
			}
			if err != nil {
				return nodes, nil, fmt.Errorf("bench: cluster: %w", err)
			}
		}
		node, err := startChildServer(ctx, bin, nodeDir, "--store", storeURL)
		if err != nil {
			return nodes, nil, err
		}
		nodes = append(nodes, node)
		if err := node.waitHealthy(ctx); err != nil {
			return nodes, nil, err
		}
	}
	ids := make([]string, n)
	deadline := time.Now().Add(clusterWait)
	for i, node := range nodes {
		for {
			var health struct {
				NodeID    string `json:"node_id"`
				LiveNodes int    `json:"live_nodes"`
			}
			err := node.call(ctx, http.MethodGet, "/healthz", nil, &health)
			if err == nil && health.LiveNodes == n {
				ids[i] = health.NodeID
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return nodes, nil, fmt.Errorf("bench: cluster: %s sees %d live nodes, not %d (err %v)", node.base, health.LiveNodes, n, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nodes, ids, nil
}

// measure creates the customers through nodes, ingests their documents
// and runs the query load, into run, and returns the customers' ids.
func (w *clusterWork) measure(ctx context.Context, nodes []*childServer, run *ClusterRun) ([]string, error) {
	customers := make([]string, w.Customers)
	for c := range customers {
		body, _ := json.Marshal(map[string]any{"project_id": nodes[0].project, "name": fmt.Sprintf("customer %d", c)})
		var out struct {
			CustomerID string `json:"customer_id"`
		}
		if err := nodes[c%len(nodes)].call(ctx, http.MethodPost, "/customer/create", body, &out); err != nil {
			return nil, fmt.Errorf("bench: cluster: create customer: %w", err)
		}
		customers[c] = out.CustomerID
	}
	fmt.Fprintf(w.Progress, "  uploading %d documents of %d customers through %d nodes\n", w.Customers*w.Docs, w.Customers, len(nodes))
	var uploads []upload
	for j := range w.Docs {
		for c, cus := range customers {
			name, text := w.document(c, j)
			uploads = append(uploads, upload{owner: cus, name: name, text: text})
		}
	}
	start := time.Now()
	jobs, err := uploadAll(ctx, nodes, uploads, w.Uploaders)
	if err != nil {
		return nil, err
	}
	if run.Chunks, err = waitJobs(ctx, nodes, jobs, w.Progress); err != nil {
		return nil, err
	}
	run.IngestSeconds = time.Since(start).Seconds()
	run.IngestChunksPerSecond = float64(run.Chunks) / run.IngestSeconds
	fmt.Fprintf(w.Progress, "  ingested %d chunks in %.1f s\n", run.Chunks, run.IngestSeconds)
	for _, n := range nodes {
		anon, _, err := rss(n.pid())
		if err != nil {
			return nil, err
		}
		run.RSSAnonBytes += anon
	}
	fmt.Fprintf(w.Progress, "  querying with %d clients\n", clusterQueryClients)
	run.Queries = w.queryLoad(ctx, nodes, customers)
	return customers, nil
}

// upload is one document to upload.
type upload struct{ owner, name, text string }

// uploadAll uploads every document, inflight at a time, each through the
// next node in turn, and returns the jobs' ids in the same order.
func uploadAll(ctx context.Context, nodes []*childServer, uploads []upload, inflight int) ([]string, error) {
	jobs := make([]string, len(uploads))
	next := make(chan int)
	errc := make(chan error, inflight)
	var wg sync.WaitGroup
	for range inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				u := uploads[i]
				body, _ := json.Marshal(map[string]any{"owner_id": u.owner, "name": u.name, "text": u.text})
				var out struct {
					JobID string `json:"job_id"`
				}
				if err := nodes[i%len(nodes)].call(ctx, http.MethodPost, "/upload/text", body, &out); err != nil {
					errc <- fmt.Errorf("bench: cluster: upload through %s: %w", nodes[i%len(nodes)].base, err)
					return
				}
				jobs[i] = out.JobID
			}
		}()
	}
	var err error
feed:
	for i := range uploads {
		select {
		case next <- i:
		case err = <-errc:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errc:
		default:
		}
	}
	return jobs, err
}

// waitJobs waits until every job SUCCEEDED, asking each node in turn, and
// returns their chunks.
func waitJobs(ctx context.Context, nodes []*childServer, jobs []string, progress io.Writer) (int, error) {
	chunks := 0
	for i, id := range jobs {
		n, err := nodes[i%len(nodes)].waitJob(ctx, id)
		if err != nil {
			return 0, err
		}
		chunks += n
		if (i+1)%2000 == 0 {
			fmt.Fprintf(progress, "  %d of %d jobs SUCCEEDED\n", i+1, len(jobs))
		}
	}
	return chunks, nil
}

// queryLoad sends the queries, clusterQueryClients at a time: request i
// goes to node i mod nodes, for customer (i / nodes) mod customers, so
// that every node is asked for every customer alike.
func (w *clusterWork) queryLoad(ctx context.Context, nodes []*childServer, customers []string) *LoadResult {
	requests := scaleQueryRequests * clusterQueryClients
	var (
		mu       sync.Mutex
		lat      []float64
		errs     int
		firstErr string
		wg       sync.WaitGroup
	)
	next := make(chan int)
	start := time.Now()
	for range clusterQueryClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				node := nodes[i%len(nodes)]
				body, _ := json.Marshal(map[string]any{"customer_id": customers[i/len(nodes)%len(customers)],
					"query": w.queries[i%len(w.queries)], "top_k": 5})
				t := time.Now()
				err := post(ctx, node.client, node.base+"/query/customer", node.key, body)
				ms := float64(time.Since(t).Microseconds()) / 1000
				mu.Lock()
				if err != nil {
					errs++
					if firstErr == "" {
						firstErr = fmt.Sprintf("%s: %v", node.base, err)
					}
				} else {
					lat = append(lat, ms)
				}
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < requests && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	secs := time.Since(start).Seconds()
	return &LoadResult{Requests: requests, Errors: errs, Concurrency: clusterQueryClients, Seconds: secs,
		RequestsPerSecond: float64(len(lat)) / secs, P50Ms: eval.Percentile(lat, 0.50), P99Ms: eval.Percentile(lat, 0.99),
		FirstError: firstErr}
}

// failover finds the node holding the most customers, by the placement
// every node computes from the same live nodes, uploads documents for
// its customers, kills it with SIGKILL, and times how soon each of those
// customers answers through the other nodes and how soon the uploads'
// jobs are done.
func (w *clusterWork) failover(ctx context.Context, nodes []*childServer, ids, customers []string) (Failover, error) {
	live := make([]store.Node, len(ids))
	for i, id := range ids {
		live[i] = store.Node{ID: id}
	}
	holder := make([]int, len(customers)) // node of each customer
	counts := make([]int, len(ids))
	for c, cus := range customers {
		h, _ := cluster.Holder(cus, live)
		holder[c] = slices.Index(ids, h.ID)
		counts[holder[c]]++
	}
	victim := slices.Index(counts, slices.Max(counts))
	var held []int // the victim's customers, by number
	for c := range customers {
		if holder[c] == victim {
			held = append(held, c)
		}
	}
	var survivors []*childServer
	for i, n := range nodes {
		if i != victim {
			survivors = append(survivors, n)
		}
	}
	f := Failover{Node: ids[victim], Customers: len(held)}
	var uploads []upload
	for _, c := range held {
		for j := range clusterFailoverDocs {
			i := w.Customers*w.Docs + c*clusterFailoverDocs + j
			uploads = append(uploads, upload{owner: customers[c], name: fmt.Sprintf("late-%07d.txt", i), text: w.gen.document(i, clusterFailoverWords)})
		}
	}
	fmt.Fprintf(w.Progress, "failover: uploading %d documents for the %d customers of node %s, then kill -9\n", len(uploads), len(held), f.Node)
	jobs, err := uploadAll(ctx, survivors, uploads, w.Uploaders)
	if err != nil {
		return f, err
	}
	f.Jobs = len(jobs)
	nodes[victim].kill()
	killed := time.Now()
	for i, id := range jobs {
		var job struct {
			Status string `json:"status"`
		}
		if err := survivors[i%len(survivors)].call(ctx, http.MethodGet, "/jobs/"+id, nil, &job); err != nil {
			return f, fmt.Errorf("bench: cluster: job %s after the kill: %w", id, err)
		}
		if job.Status != "SUCCEEDED" {
			f.JobsPendingAtKill++
		}
	}

	ctx, cancel := context.WithTimeout(ctx, clusterWait)
	defer cancel()
	answered := make([]float64, len(held))
	errc := make(chan error, len(held)+1)
	var wg sync.WaitGroup
	for k, c := range held {
		wg.Add(1)
		go func() {
			defer wg.Done()
			secs, err := firstAnswer(ctx, survivors, customers[c], w.probe(c), killed)
			answered[k] = secs
			errc <- err
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err := waitJobs(ctx, survivors, jobs, io.Discard)
		f.JobsSucceededSeconds = time.Since(killed).Seconds()
		errc <- err
	}()
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			return f, fmt.Errorf("bench: cluster: failover: %w", err)
		}
	}
	f.FirstAnswerMaxSeconds = slices.Max(answered)
	f.FirstAnswerMedianSeconds = median(answered)
	fmt.Fprintf(w.Progress, "  every customer answered within %.2f s; %d pending jobs SUCCEEDED %.1f s after the kill\n",
		f.FirstAnswerMaxSeconds, f.JobsPendingAtKill, f.JobsSucceededSeconds)
	return f, nil
}

// probe is a query that finds customer c's first document: one of its
// content words.
func (w *clusterWork) probe(c int) string {
	_, text := w.document(c, 0)
	for _, word := range strings.Fields(text) {
		word = strings.ToLower(strings.TrimSuffix(word, "."))
		if !slices.Contains(functionWords, word) {
			return word
		}
	}
	return text
}

// firstAnswer asks for customer through each node in turn until an answer
// has chunks, and returns the seconds since since.
func firstAnswer(ctx context.Context, nodes []*childServer, customer, query string, since time.Time) (float64, error) {
	body, _ := json.Marshal(map[string]any{"customer_id": customer, "query": query, "top_k": 3})
	var last error
	for i := 0; ctx.Err() == nil; i++ {
		var out struct {
			Chunks []json.RawMessage `json:"chunks"`
		}
		err := nodes[i%len(nodes)].call(ctx, http.MethodPost, "/query/customer", body, &out)
		if err == nil && len(out.Chunks) > 0 {
			return time.Since(since).Seconds(), nil
		}
		if err == nil {
			err = fmt.Errorf("no chunks for %q", query)
		}
		last = err
		time.Sleep(scalePoll)
	}
	return 0, fmt.Errorf("customer %s never answered: %w", customer, last)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
