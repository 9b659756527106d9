//go:build hostile

package hostile

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// The session attack's sizes: 60 uploads at once through one link whose
// cap is 20 (--session-max-pending's default), each of sessionBody bytes:
// a server that holds them all in memory holds 720 MiB.
const (
	sessionUploads = 60
	sessionCap     = 20
	sessionBody    = 12 << 20
	// sessionHead is what each upload sends before it waits for the
	// others: the headers and the start of its body.
	sessionHead = 64 << 10
)

// Finding 7: the session's pending cap checked before the body is read.
// 60 uploads at once through one link: at most 20 are taken, the others
// answered 429 before their bodies come, and the server's memory stays
// under its bound while the bodies arrive.
func TestSessionUploadsAtOnce(t *testing.T) {
	s, b := sharedServer(t)
	project, key := s.newProject(t, "session-flood")
	link := s.session(t, key, project)
	path := link[strings.Index(link, "/s/"):] + "/upload"
	body, contentType := multipartBody("padded.pdf", paddedPDF("A padded upload through a session link.", sessionBody), nil)
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", path, s.addr, contentType, len(body))
	m := watchMemory(t, s)

	// Each upload sends its start, then waits for the gate; an answer
	// that comes before the gate opens came before the body.
	type outcome struct {
		status int
		body   string
		err    error
	}
	var (
		mu       sync.Mutex
		outcomes []outcome
		early    = make(chan struct{}, sessionUploads)
		gate     = make(chan struct{})
		wg       sync.WaitGroup
	)
	for range sessionUploads {
		conn, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			answered := make(chan outcome, 1)
			go func() {
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					answered <- outcome{err: err}
					return
				}
				var buf bytes.Buffer
				buf.ReadFrom(resp.Body)
				resp.Body.Close()
				answered <- outcome{status: resp.StatusCode, body: buf.String()}
			}()
			conn.Write([]byte(head))
			conn.Write(body[:sessionHead])
			var o outcome
			select {
			case o = <-answered:
				early <- struct{}{}
			case <-gate:
				conn.Write(body[sessionHead:])
				o = <-answered
			}
			mu.Lock()
			outcomes = append(outcomes, o)
			mu.Unlock()
		}()
	}
	// The gate opens once all but the cap have been answered, or after a
	// while when they are not (the server waits for their bodies).
	refusedEarly := 0
	deadline := time.After(10 * time.Second)
wait:
	for refusedEarly < sessionUploads-sessionCap {
		select {
		case <-early:
			refusedEarly++
		case <-deadline:
			break wait
		}
		m.requireUnder(t, rssBound)
	}
	b.works(t, s, "while the session's uploads arrive")
	close(gate)
	wg.Wait()
	counts := map[int]int{}
	for _, o := range outcomes {
		if o.err != nil {
			t.Errorf("an upload got no answer: %v", o.err)
			continue
		}
		counts[o.status]++
		if o.status == http.StatusOK {
			s.ack(key, reply{status: o.status, body: []byte(o.body)})
		}
	}
	figure(t, "%d uploads at once through a link capped at %d: %d answered 200, %d answered 429 (%d of them before their bodies), others %v",
		sessionUploads, sessionCap, counts[http.StatusOK], counts[http.StatusTooManyRequests], refusedEarly, others(counts))
	if counts[http.StatusOK] > sessionCap {
		t.Errorf("%d uploads were taken through a link capped at %d", counts[http.StatusOK], sessionCap)
	}
	if counts[http.StatusTooManyRequests] < sessionUploads-sessionCap {
		t.Errorf("%d uploads were answered 429; want at least %d", counts[http.StatusTooManyRequests], sessionUploads-sessionCap)
	}
	m.check(t, rssBound)
	b.works(t, s, "after the session's uploads")
	s.checkAcknowledged(t)
}

// others lists the statuses but 200 and 429 of counts.
func others(counts map[int]int) string {
	var out []string
	for st, n := range counts {
		if st != http.StatusOK && st != http.StatusTooManyRequests {
			out = append(out, fmt.Sprintf("%d×%d", n, st))
		}
	}
	sort.Strings(out)
	return "[" + strings.Join(out, " ") + "]"
}

// The filter attack's bounds: a filter of 100,000 distinct keys (1 MB,
// just under the body limit of 1 MiB) is answered 400 within
// filterRatio times the median of normal queries in the same run, with
// an error under maxErrorBytes.
const (
	filterKeys    = 100_000
	filterRatio   = 500
	maxErrorBytes = 1 << 10
)

// Finding 6: quadratic filter parsing, and an error that echoes the
// filter. A 1 MB filter of 100,000 distinct keys is refused with 400 in a
// time of the order of a normal query's, with a short error.
func TestHugeFilter(t *testing.T) {
	s, b := sharedServer(t)
	// The normal queries: the other tenant's, which has documents, with a
	// filter of one condition.
	b.works(t, s, "before the filter")
	normal := map[string]any{"project_id": b.project, "query": "harbour tides", "top_k": 5,
		"filter": map[string]any{"created_at": map[string]any{"gte": "2000-01-01T00:00:00Z"}}}
	var times []time.Duration
	for range 9 {
		times = append(times, s.must(t, "POST", "/query/project", b.key, normal).took)
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	median := times[len(times)/2]

	var f bytes.Buffer
	f.WriteString(`{"project_id":"` + b.project + `","query":"harbour tides","filter":{`)
	for i := range filterKeys {
		if i > 0 {
			f.WriteByte(',')
		}
		fmt.Fprintf(&f, `"%05d":0`, i)
	}
	f.WriteString(`}}`)
	answered := make(chan reply, 1)
	go func() {
		r, err := s.try("POST", "/query/project", b.key, f.Bytes())
		if err != nil {
			t.Error(err)
		}
		answered <- r
	}()
	b.works(t, s, "while the filter is parsed")
	r := <-answered
	ratio := float64(r.took) / float64(median)
	figure(t, "a filter of %d keys (%d bytes) answered %d in %s, %.0f times a normal query's %s (bound %d times), with an error of %d bytes: %s",
		filterKeys, f.Len(), r.status, r.took.Round(time.Millisecond), ratio, median.Round(10*time.Microsecond), filterRatio, len(r.body), truncated(r.body, 200))
	if r.status != http.StatusBadRequest {
		t.Errorf("the filter was answered %d; want 400", r.status)
	}
	if ratio > filterRatio {
		t.Errorf("the filter took %s, %.0f times a normal query's %s; want at most %d times", r.took, ratio, median, filterRatio)
	}
	if len(r.body) >= maxErrorBytes {
		t.Errorf("the error is %d bytes; want under %d", len(r.body), maxErrorBytes)
	}
	b.works(t, s, "after the filter")
}

// The flood's sizes: sockets from 16 loopback addresses, a quarter more
// than the shared server's --max-connections (sharedFlags), each
// pipelining requests for 1.2 MB of answers it never reads.
const (
	floodAddrs     = 16
	floodSockets   = 1280
	floodPipelined = 10
	// freshBound is how long a fresh client may wait for its answer
	// while the flood holds every connection.
	freshBound = 2 * time.Second
)

// Finding 10: connections without a key. Sockets that pipeline GET
// /openapi.json and never read fill the server's connections from 16
// addresses; a fresh client is still answered within freshBound, and the
// flood's connections are closed within --write-stall and a margin.
func TestConnectionFlood(t *testing.T) {
	s, b := sharedServer(t)
	m := watchMemory(t, s)
	req := bytes.Repeat([]byte(fmt.Sprintf("GET /openapi.json HTTP/1.1\r\nHost: %s\r\n\r\n", s.addr)), floodPipelined)
	flooders := map[netip.Addr]bool{}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	refused := 0
	start := time.Now()
	for i := range floodSockets {
		ip := net.IPv4(127, 0, 0, byte(2+i%floodAddrs))
		flooders[netip.AddrFrom4([4]byte(ip.To4()))] = true
		c, err := dialStalled(ip, s.addr)
		if err != nil {
			refused++
			continue
		}
		conns = append(conns, c)
		c.Write(req)
	}
	isFlood := func(remote netip.AddrPort) bool { return flooders[remote.Addr()] }
	held := len(s.serverEnds(t, isFlood))
	figure(t, "%d flood sockets from %d addresses opened in %s (%d refused at connect); the server held %d of them at the end",
		floodSockets, floodAddrs, time.Since(start).Round(time.Millisecond), refused, held)

	fresh := time.Now()
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Get(s.base + "/healthz")
	took := time.Since(fresh)
	if err != nil {
		t.Errorf("a fresh client during the flood: %v after %s", err, took.Round(time.Millisecond))
	} else {
		resp.Body.Close()
		figure(t, "a fresh client during the flood was answered %d in %s (bound %s)", resp.StatusCode, took.Round(time.Millisecond), freshBound)
		if resp.StatusCode != http.StatusOK || took > freshBound {
			t.Errorf("a fresh client during the flood: %d after %s; want 200 within %s", resp.StatusCode, took, freshBound)
		}
	}
	b.works(t, s, "during the flood")
	took = s.waitServerEnds(t, fresh, writeStall+cutMargin, isFlood)
	figure(t, "the flood's connections were all closed %s after the fresh client (--write-stall %s, bound %s)",
		took.Round(100*time.Millisecond), writeStall, writeStall+cutMargin)
	m.check(t, rssBound)
	b.works(t, s, "after the flood")
}

// Finding 11: a client's X-Request-ID. One of 10 KB, and one of bytes a
// terminal would act on, do not reach the log as sent.
func TestRequestIDs(t *testing.T) {
	s, b := sharedServer(t)
	long := strings.Repeat("A", 10<<10)
	// Go's HTTP client refuses to send control characters; a raw
	// connection sends them as an attacker would. Go's server refuses the
	// C0 ones itself, and lets bytes over 0x7f through: an escape written
	// as U+009B (CSI), a right-to-left override, invalid UTF-8.
	odd := "req\u009b31mred\u202eevil\xff\xfe"
	for _, id := range []string{long, odd} {
		conn, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "GET /webhooks HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nX-Request-ID: %s\r\nConnection: close\r\n\r\n", s.addr, b.key, id)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		conn.Close()
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	// The log is written before the answer is sent: what the server
	// logged of these requests is in it now.
	log := s.log()
	if strings.Contains(log, long[:1024]) {
		t.Errorf("the log holds the 10 KB X-Request-ID")
	}
	if strings.Contains(log, odd) || strings.Contains(log, "\u009b") || strings.Contains(log, "\u202e") {
		t.Errorf("the log holds the X-Request-ID's control characters as sent")
	}
	if !t.Failed() {
		figure(t, "X-Request-IDs of 10 KB and of control characters: neither in the log as sent")
	}
	b.works(t, s, "after the request ids")
}
