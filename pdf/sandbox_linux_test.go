package pdf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// These tests look at real extraction workers from inside: the stand-in
// for Tesseract, which a worker runs as its child inside its sandbox, runs
// this test binary as a probe (testProbeEnv) that tries what an exploited
// MuPDF would, and answers with what it found as the page's "recognised
// text". The probe is compiled into the test binary only.

// testProbeEnv turns this test binary into a probe; its value is a
// probeSpec as JSON. The stand-in unsets workerEnv first, which it
// inherits from the worker: whichever init runs first, the probe is then
// no worker.
const testProbeEnv = "DOCSIFT_PDF_TEST_PROBE"

// probeSpec is what a probe tries to reach.
type probeSpec struct {
	DataFile string // a file in a directory standing for the data dir
	Addr     string // a TCP listener on 127.0.0.1
	Unix     string // a unix socket listening, as the admin socket does
	Server   int    // the test process, standing for the server
}

func init() {
	if v := os.Getenv(testProbeEnv); v != "" {
		var spec probeSpec
		if err := json.Unmarshal([]byte(v), &spec); err != nil {
			fmt.Println("probe: bad spec:", err)
			os.Exit(1)
		}
		fmt.Println(strings.Join(runProbe(spec), " "))
		os.Exit(0)
	}
}

// runProbe tries each access of spec and returns "name=outcome" for each,
// the outcome being "ok" or the error number's name.
func runProbe(spec probeSpec) []string {
	outcome := func(name string, err error) string {
		var errno syscall.Errno
		switch {
		case err == nil:
			return name + "=ok"
		case errors.As(err, &errno):
			return name + "=" + errnoName(errno)
		}
		return name + "=" + strings.ReplaceAll(err.Error(), " ", "_")
	}
	dial := func(network, addr string) error {
		c, err := net.DialTimeout(network, addr, 5*time.Second)
		if err == nil {
			c.Close()
		}
		return err
	}
	_, readErr := os.ReadFile(spec.DataFile)
	_, listErr := os.ReadDir(filepath.Dir(spec.DataFile))
	writeErr := os.WriteFile(filepath.Join(filepath.Dir(spec.DataFile), "planted"), []byte("x"), 0o600)
	_, environErr := os.ReadFile(fmt.Sprintf("/proc/%d/environ", spec.Server))
	return []string{
		outcome("read", readErr),
		outcome("list", listErr),
		outcome("write", writeErr),
		outcome("environ", environErr),
		outcome("tcp", dial("tcp", spec.Addr)),
		outcome("unix", dial("unix", spec.Unix)),
		outcome("signal", syscall.Kill(spec.Server, 0)),
		outcome("userns", userNamespace()),
	}
}

// userNamespace starts a process in a new user namespace, in which an
// unprivileged process holds every capability.
func userNamespace() error {
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
	return cmd.Run()
}

func errnoName(e syscall.Errno) string {
	switch e {
	case syscall.EACCES:
		return "EACCES"
	case syscall.EPERM:
		return "EPERM"
	case syscall.ENOSYS:
		return "ENOSYS"
	}
	return strconv.Itoa(int(e))
}

// requireSandbox skips a test of the sandbox's enforcement on a kernel
// without Landlock, where there is nothing to enforce (CheckSandbox's
// test covers what the server then says); in CI it fails instead.
func requireSandbox(t *testing.T) int {
	t.Helper()
	abi, err := llsys.LandlockGetABIVersion()
	if err == nil && abi >= 1 {
		return abi
	}
	msg := fmt.Sprintf("the kernel has no Landlock (%v)", err)
	if os.Getenv("CI") != "" {
		t.Fatal(msg + "; CI must run the sandbox tests")
	}
	t.Skip(msg + "; skipping")
	return 0
}

// listen starts a TCP listener on 127.0.0.1 and a unix socket listener
// in dir, counting the connections each accepts.
func listen(t *testing.T, dir string) (tcpAddr, unixPath string, accepted *atomic.Int32) {
	t.Helper()
	accepted = new(atomic.Int32)
	unixPath = filepath.Join(dir, "admin.sock")
	for _, l := range []struct{ network, addr string }{{"tcp", "127.0.0.1:0"}, {"unix", unixPath}} {
		ln, err := net.Listen(l.network, l.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		if l.network == "tcp" {
			tcpAddr = ln.Addr().String()
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				c.Close()
			}
		}()
	}
	return tcpAddr, unixPath, accepted
}

// probeTesseract writes a stand-in for Tesseract that runs this test
// binary as a probe of spec, and returns its path.
func probeTesseract(t *testing.T, spec probeSpec) string {
	t.Helper()
	js, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "tesseract")
	script := fmt.Sprintf("#!/bin/sh\ncat >/dev/null\nunset %s\n%s=%s exec %s\n", workerEnv, testProbeEnv, shellQuote(string(js)), shellQuote(testExecutable(t)))
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func testExecutable(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// TestWorkerSandbox runs a real extraction whose Tesseract, a child of the
// worker inside its sandbox, probes what it can reach: the data dir, the
// server's /proc entry, a TCP listener on 127.0.0.1, a unix socket beside
// the data, signals to the server, a user namespace. The same extraction
// with the sandbox off reaches each, so each refusal is the sandbox's.
func TestWorkerSandbox(t *testing.T) {
	abi := requireSandbox(t)
	data := t.TempDir()
	spec := probeSpec{DataFile: filepath.Join(data, "docsift.db"), Server: os.Getpid()}
	if err := os.WriteFile(spec.DataFile, []byte("records"), 0o600); err != nil {
		t.Fatal(err)
	}
	var accepted *atomic.Int32
	spec.Addr, spec.Unix, accepted = listen(t, data)
	bin := probeTesseract(t, spec)
	probe := func(sandbox sandboxConfig) string {
		t.Helper()
		sandbox.Read = []string{filepath.Dir(bin), testExecutable(t)}
		doc, err := ExtractWith(context.Background(), FormatPDF, blankScan(1), Options{
			OCR:     OCR{Binary: bin, PageTimeout: time.Minute},
			sandbox: sandbox,
		})
		if err != nil {
			t.Fatal(err)
		}
		return words(doc.Pages[0].Text)
	}

	if got, want := probe(sandboxConfig{Off: true}), "read=ok list=ok write=ok environ=ok tcp=ok unix=ok signal=ok userns=ok"; got != want {
		t.Fatalf("without the sandbox the probe found %q, want %q", got, want)
	}
	if n := accepted.Load(); n != 2 {
		t.Fatalf("the listeners accepted %d connections from the probe without the sandbox, want 2", n)
	}
	if err := os.Remove(filepath.Join(data, "planted")); err != nil {
		t.Fatal(err)
	}

	// Files: Landlock (EACCES). Sockets and namespaces: seccomp (EPERM).
	// Signals to a process outside the sandbox: Landlock from ABI 8 (see
	// landlockOneDomain).
	want := "read=EACCES list=EACCES write=EACCES environ=EACCES tcp=EPERM unix=EPERM signal=EPERM userns=EPERM"
	if abi < landlockOneDomain {
		want = strings.Replace(want, "signal=EPERM", "signal=ok", 1)
	}
	if got := probe(sandboxConfig{}); got != want {
		t.Errorf("inside the sandbox the probe found\n%s\nwant\n%s", got, want)
	}
	if n := accepted.Load(); n != 2 {
		t.Errorf("the listeners accepted %d connections from inside the sandbox", n-2)
	}
	if _, err := os.Stat(filepath.Join(data, "planted")); err == nil {
		t.Error("the sandboxed probe wrote a file into the data dir")
	}
}

// TestOCRInSandbox reads a page with the real Tesseract inside the
// worker's sandbox: a PDF made here, rendered to an image-only scan.
func TestOCRInSandbox(t *testing.T) {
	requireTesseract(t)
	requireSandbox(t)
	scan, err := ScanPages(context.Background(), makePDF(numberedPages(1)), []int{1}, 300, FormatPDF)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := ExtractWith(context.Background(), FormatPDF, scan, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := words(doc.Pages[0].Text); doc.OCRPages != 1 || !strings.Contains(got, "This is page one of the generated document.") {
		t.Errorf("OCR in the sandbox read %d pages: %q", doc.OCRPages, got)
	}
}

// TestCheckSandbox checks the report the server logs at start: on this
// kernel the sandbox holds, and the data dir is out of the worker's
// reach; a "data dir" under a directory the worker may read is named.
// (TestSandboxReport covers what is said on kernels that lack a part.)
func TestCheckSandbox(t *testing.T) {
	abi := requireSandbox(t)
	desc, err := CheckSandbox(context.Background(), OCR{}, t.TempDir())
	if err != nil || !strings.HasPrefix(desc, fmt.Sprintf("Landlock ABI %d (files", abi)) || !strings.Contains(desc, "seccomp (no sockets") {
		t.Fatalf("CheckSandbox = %q, %v; want Landlock ABI %d and seccomp, and the data dir out of reach", desc, err, abi)
	}
	_, err = CheckSandbox(context.Background(), OCR{}, t.TempDir(), "/usr/share")
	if err == nil || !strings.Contains(err.Error(), "the worker can open /usr/share, which lies under a directory it may read") {
		t.Errorf("CheckSandbox of a data dir under /usr = %v, want it named", err)
	}
}

// BenchmarkSandbox measures what the sandbox adds to a document: the
// extraction of a one-page text PDF, which is mostly a worker's start,
// with the sandbox and without it. Besides the time, it reports the CPU
// time of the workers, which other load on the machine disturbs less.
//
//	go test -run '^$' -bench Sandbox -count 5 ./pdf/
func BenchmarkSandbox(b *testing.B) {
	data := makePDF(numberedPages(1))
	childCPU := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for _, c := range []struct {
		name    string
		sandbox sandboxConfig
	}{{"sandboxed", sandboxConfig{}}, {"unsandboxed", sandboxConfig{Off: true}}} {
		b.Run(c.name, func(b *testing.B) {
			start := childCPU()
			for b.Loop() {
				if _, err := ExtractWith(context.Background(), FormatPDF, data, Options{sandbox: c.sandbox}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(childCPU()-start)/float64(time.Millisecond)/float64(b.N), "worker-cpu-ms/op")
		})
	}
}
