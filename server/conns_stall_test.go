//go:build linux

package server_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docsift/docsift/server"
	"github.com/docsift/docsift/store"
	"golang.org/x/sys/unix"
)

// dialStalling connects to addr from the loopback address from with a
// receive buffer of a few KiB, so that an answer it does not read stalls
// the server's writes soon, as a flood of such sockets does.
func dialStalling(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{
		LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)},
		Timeout:   5 * time.Second,
		Control: func(_, _ string, rc syscall.RawConn) error {
			var err error
			if cerr := rc.Control(func(fd uintptr) {
				err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10)
			}); cerr != nil {
				return cerr
			}
			return err
		},
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// stallOn sends requests for path, n of them pipelined, on c, and reads the
// start of the first answer, so that the caller knows the server took the
// connection and is writing to it; then it reads no more.
func stallOn(c net.Conn, path string, n int) error {
	req := "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n"
	if _, err := c.Write([]byte(strings.Repeat(req, n))); err != nil {
		return fmt.Errorf("pipelining %d requests: %w", n, err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	head := make([]byte, len("HTTP/1.1 200"))
	if _, err := io.ReadFull(c, head); err != nil || string(head) != "HTTP/1.1 200" {
		return fmt.Errorf("start of the first answer: %q, %v", head, err)
	}
	return nil
}

// reset reports whether the server reset c, learnt without reading it
// (which would let the server's writes go on): the socket is closed, as a
// reset closes it, not half-closed, as the server's FIN would leave it.
func reset(t *testing.T, c net.Conn) bool {
	t.Helper()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var info *unix.TCPInfo
	if cerr := rc.Control(func(fd uintptr) {
		info, err = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); cerr != nil {
		t.Fatal(cerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	const tcpClose = 7 // TCP_CLOSE of linux/tcp_states.h
	return info.State == tcpClose
}

// waitReset waits up to d for the server to reset every one of conns.
func waitReset(t *testing.T, d time.Duration, conns ...net.Conn) error {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for i := 0; i < len(conns); {
		if reset(t, conns[i]) {
			i++
			continue
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("connection %d of %d still open after %s", i, len(conns), d)
		}
		<-tick.C
	}
	return nil
}

// Finding 10: sockets that pipeline GET /openapi.json and never read held
// every connection slot, and fresh clients were refused for as long as
// they liked. Now a fresh client takes the place of the flood's socket
// stalled longest, and is answered at once, well before the write stall
// (set long here) would cut the flood.
func TestFreshClientServedDuringStalledFlood(t *testing.T) {
	const senders, perSender = 4, 16
	addr, _, _ := connServer(t, server.ConnLimits{MaxConns: senders * perSender, MaxConnsPerClient: perSender, WriteStall: time.Minute})
	flood := make([]net.Conn, senders*perSender)
	var wg sync.WaitGroup
	for i := range flood {
		flood[i] = dialStalling(t, fmt.Sprintf("127.0.0.%d", 2+i/perSender), addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := stallOn(flood[i], "/openapi.json", 40); err != nil { // 40 × 115 KB: far more than the sockets' buffers
				t.Errorf("flood socket %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// The flood holds every slot, stalled. A fresh client is served
	// within freshBound.
	const freshBound = 2 * time.Second
	start := time.Now()
	c := dialFrom(t, "127.0.0.1", addr)
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	c.SetReadDeadline(start.Add(freshBound))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("a fresh client during the flood got no answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a fresh client during the flood: %s %s", resp.Status, body)
	}
	t.Logf("a fresh client was served in %s while %d stalled sockets held every slot", time.Since(start).Round(time.Millisecond), len(flood))
	// The socket that made room was reset: its unread answer is dropped.
	resets := 0
	for _, f := range flood {
		if reset(t, f) {
			resets++
		}
	}
	if resets != 1 {
		t.Errorf("%d of the flood's sockets were reset to make room, want 1", resets)
	}
}

// A client that stops reading its answer is cut after the write stall,
// with a reset, so that the kernel drops what it held for it; until then
// it holds its slot (here the client's only one).
func TestStalledReaderIsCut(t *testing.T) {
	const stall = 500 * time.Millisecond
	addr, _, _ := connServer(t, server.ConnLimits{MaxConnsPerClient: 1, WriteStall: stall})
	stalled := dialStalling(t, "127.0.0.9", addr)
	if err := stallOn(stalled, "/openapi.json", 40); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if got := healthz(t, "127.0.0.9", addr); got != http.StatusServiceUnavailable {
		t.Fatalf("a second connection while the stalled one holds the client's slot: %d, want 503", got)
	}
	// Asked again every 50 ms, the slot comes back once the stalled
	// connection is cut: within the stall and a margin for a busy
	// machine, never on its own otherwise.
	const bound = stall + 3*time.Second
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for healthz(t, "127.0.0.9", addr) != http.StatusOK {
		if time.Since(start) > bound {
			t.Fatalf("a client that stopped reading still held its slot after %s (write stall %s)", bound, stall)
		}
		<-tick.C
	}
	t.Logf("a client that stopped reading was cut after %s (write stall %s)", time.Since(start).Round(time.Millisecond), stall)
	if !reset(t, stalled) {
		t.Error("the stalled connection was closed, not reset: the kernel holds its unread answer")
	}
}

// Finding 5: 40 slow readers of one subpage held the server at 1.37 GB,
// each with the whole file read into memory. Now a reader holds a buffer,
// whatever the file's size, and one that stops reading is cut.
func TestSlowSubpageReadersHoldLittle(t *testing.T) {
	const (
		readers  = 40
		fileSize = 8 << 20
		stall    = time.Second
	)
	e := connServerEnv(t, server.ConnLimits{MaxConnsPerClient: readers, WriteStall: stall})
	d := &store.Document{ProjectID: e.projectID, OwnerID: e.projectID, Name: "big.pdf", Format: "pdf"}
	if _, err := e.store.CreateDocument(d, store.Bytes([]byte("%PDF-")), store.ProjectLimits{}); err != nil {
		t.Fatal(err)
	}
	sp, err := e.store.CreateSubpage(store.Subpage{ID: store.NewSubpageID(), ProjectID: e.projectID, OwnerID: e.projectID,
		DocumentID: d.ID, FirstPage: 1, LastPage: 1, FileName: "big-pages-1-1.pdf"},
		append([]byte("%PDF-"), bytes.Repeat([]byte{'x'}, fileSize)...), time.Hour, store.SubpageLimits{})
	if err != nil {
		t.Fatal(err)
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	before := heap()
	conns := make([]net.Conn, readers)
	var wg sync.WaitGroup
	for i := range conns {
		conns[i] = dialStalling(t, "127.0.0.1", e.addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := stallOn(conns[i], "/subpages/"+sp.ID+".pdf", 1); err != nil {
				t.Errorf("reader %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// Every reader's answer is under way, and stalled.
	held := int64(heap()) - int64(before)
	t.Logf("%d stalled readers of a %d MiB subpage hold %.1f MiB of heap", readers, fileSize>>20, float64(held)/(1<<20))
	if limit := int64(readers) << 20; held > limit {
		t.Errorf("%d stalled readers of a %d MiB subpage hold %d MiB of heap, want under %d MiB (1 MiB a reader)", readers, fileSize>>20, held>>20, limit>>20)
	}
	if err := waitReset(t, stall+5*time.Second, conns...); err != nil {
		t.Errorf("readers that stopped reading, write stall %s: %v", stall, err)
	}
}

// A whole answer still arrives when its client reads it slowly but
// steadily, however long it takes in all: the stall bounds each write,
// not the answer.
func TestSlowSteadyReaderGetsItAll(t *testing.T) {
	const stall = 300 * time.Millisecond
	e := connServerEnv(t, server.ConnLimits{WriteStall: stall})
	d := &store.Document{ProjectID: e.projectID, OwnerID: e.projectID, Name: "a.pdf", Format: "pdf"}
	if _, err := e.store.CreateDocument(d, store.Bytes([]byte("%PDF-")), store.ProjectLimits{}); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 2<<20)
	for i := range data {
		data[i] = byte(i % 251)
	}
	sp, err := e.store.CreateSubpage(store.Subpage{ID: store.NewSubpageID(), ProjectID: e.projectID, OwnerID: e.projectID,
		DocumentID: d.ID, FirstPage: 1, LastPage: 1, FileName: "a-pages-1-1.pdf"}, data, time.Hour, store.SubpageLimits{})
	if err != nil {
		t.Fatal(err)
	}
	c := dialStalling(t, "127.0.0.1", e.addr)
	fmt.Fprintf(c, "GET /subpages/%s.pdf HTTP/1.1\r\nHost: x\r\n\r\n", sp.ID)
	resp, err := http.ReadResponse(bufio.NewReaderSize(c, 4<<10), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// 32 KiB every 50 ms: 2 MiB take over 3 s, ten write stalls.
	start := time.Now()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var got bytes.Buffer
	for {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := io.CopyN(&got, resp.Body, 32<<10)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d bytes in %s: %v", got.Len(), time.Since(start), err)
		}
		<-tick.C
	}
	if took := time.Since(start); took < 5*stall || !bytes.Equal(got.Bytes(), data) {
		t.Fatalf("read %d bytes in %s; want the %d of the file, over many write stalls", got.Len(), took, len(data))
	}
}
