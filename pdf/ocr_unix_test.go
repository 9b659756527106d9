//go:build unix

package pdf

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests replace Tesseract with a shell script (OCR.Binary) that
// answers, hangs or fails as each test needs, and keeps its state in its
// own directory.

// fakeTesseract writes a stand-in for tesseract into a new directory and
// returns its path and the directory. It lists eng and deu for
// --list-langs; otherwise it reads the image from standard input and runs
// body, a POSIX shell script in which $DIR is the directory and $N counts
// the runs so far (1 for the first page).
func fakeTesseract(t *testing.T, body string) (bin, dir string) {
	t.Helper()
	dir = t.TempDir()
	bin = filepath.Join(dir, "tesseract")
	script := `#!/bin/sh
DIR='` + dir + `'
if [ "$1" = "--list-langs" ]; then
	printf 'List of available languages in "/usr/share/tesseract-ocr/5/tessdata/" (3):\ndeu\neng\nosd\n'
	exit 0
fi
cat >/dev/null
N=$(( $(cat "$DIR/runs" 2>/dev/null || echo 0) + 1 ))
echo $N >"$DIR/runs"
` + body + "\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, dir
}

// stateDir lets a stand-in keep its state in dir from inside the
// extraction worker's sandbox (see sandboxConfig).
func stateDir(dir string) sandboxConfig { return sandboxConfig{Write: []string{dir}} }

// runs returns how many times the stand-in ran on a page.
func runs(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "runs"))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// fakePageTimeout is the OCR deadline of a page in these tests: long
// enough for the stand-in, a shell script, to start and answer on a busy
// machine (300 ms was not, once, under the race detector with other work
// beside it), short enough for the pages that hang to keep a test short.
const fakePageTimeout = 2 * time.Second

// hangAfterFirstPage answers the first page and hangs on every other,
// recording the pid of each hanging process in $DIR/pids.
const hangAfterFirstPage = `if [ "$N" -eq 1 ]; then echo "Recognised words on the first page"; exit 0; fi
echo $$ >>"$DIR/pids"
exec sleep 600`

// TestOCRPageDeadline gives a page's OCR its deadline: a Tesseract stuck
// on a page is killed, the page is left without text, and the document
// goes on; after ocrMaxFailuresInARow such pages OCR gives up on the rest
// rather than spend a deadline on each.
func TestOCRPageDeadline(t *testing.T) {
	bin, dir := fakeTesseract(t, hangAfterFirstPage)
	var progress progressLog
	start := time.Now()
	doc, err := ExtractWith(context.Background(), FormatPDF, blankScan(5), Options{
		OCR:      OCR{Binary: bin, PageTimeout: fakePageTimeout},
		Progress: progress.report,
		sandbox:  stateDir(dir),
	})
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed > 30*time.Second {
		t.Errorf("extraction took %v; the stuck pages were not cut at their deadline", elapsed)
	}
	if len(doc.Pages) != 5 || !strings.Contains(doc.Pages[0].Text, "Recognised words") || doc.OCRPages != 1 {
		t.Fatalf("got %+v", doc)
	}
	var unread []int
	for _, u := range doc.Unread {
		unread = append(unread, u.Number)
	}
	if len(doc.Unread) != 4 || unread[0] != 2 || unread[3] != 5 {
		t.Fatalf("unread pages %v, want 2 to 5", doc.Unread)
	}
	if r := doc.Unread[0].Reason; !strings.Contains(r, "took too long") || !strings.Contains(r, fakePageTimeout.String()) {
		t.Errorf("page 2's reason %q does not name the deadline", r)
	}
	if r := doc.Unread[3].Reason; !strings.Contains(r, "gave up after 3 pages in a row") {
		t.Errorf("page 5's reason %q does not say OCR gave up", r)
	}
	if n := runs(t, dir); n != 4 {
		t.Errorf("Tesseract ran %d times, want 4 (page 5 skipped)", n)
	}
	progress.check(t, 5)
	// Each stuck process was killed and reaped by the worker.
	pids, err := os.ReadFile(filepath.Join(dir, "pids"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(pids)) {
		pid, _ := strconv.Atoi(f)
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("stuck OCR process %d still exists (kill 0: %v)", pid, err)
		}
	}
}

// TestOCRProblemsWhenNoPageHasText checks the errors of a scan in which OCR
// found nothing, timed out or failed on every page.
func TestOCRProblemsWhenNoPageHasText(t *testing.T) {
	for _, c := range []struct {
		name     string
		body     string
		sentinel error
		want     string
	}{
		{"nothing found", `exit 0`, ErrNoText, "the PDF has no text layer: its pages are probably scanned images, and OCR found no text on them"},
		{"timed out", `exec sleep 600`, ErrTooSlow, "OCR could not read page 1 in time"},
		{"language missing", `echo "Failed loading language 'deu'" >&2; echo "Tesseract couldn't load any languages!" >&2; exit 1`, ErrNoText,
			"OCR failed on them: tesseract failed: Failed loading language 'deu' (is its language pack installed?)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin, dir := fakeTesseract(t, c.body)
			_, err := ExtractWith(context.Background(), FormatPDF, blankScan(1), Options{OCR: OCR{Binary: bin, PageTimeout: fakePageTimeout}, sandbox: stateDir(dir)})
			if !errors.Is(err, c.sentinel) || errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v, want %v (and not a deadline, which would be retried)", err, c.sentinel)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("message %q does not say %q", err, c.want)
			}
		})
	}
}

// TestOCRArguments checks what Tesseract is asked: the languages, the
// resolution of a rendered PDF page, and one thread.
func TestOCRArguments(t *testing.T) {
	bin, dir := fakeTesseract(t, `echo "$@ OMP_THREAD_LIMIT=$OMP_THREAD_LIMIT" >"$DIR/args"; echo "Some recognised words"`)
	_, err := ExtractWith(context.Background(), FormatPDF, blankScan(1), Options{OCR: OCR{Binary: bin, Languages: "eng+deu", DPI: 200}, sandbox: stateDir(dir)})
	if err != nil {
		t.Fatal(err)
	}
	args, err := os.ReadFile(filepath.Join(dir, "args"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(args)), "stdin stdout -l eng+deu --dpi 200 OMP_THREAD_LIMIT=1"; got != want {
		t.Errorf("tesseract got %q, want %q", got, want)
	}
}

// TestCheckOCR checks the start-up check against a stand-in that lists
// eng and deu (and osd, which is no language): each missing language is
// named with its Debian package.
func TestCheckOCR(t *testing.T) {
	bin, _ := fakeTesseract(t, `exit 1`)
	for _, c := range []struct {
		langs string
		want  string // "" when the check passes
	}{
		{"", ""},
		{"eng", ""},
		{"eng+deu", ""},
		{"fra", `OCR language "fra" is not installed: install the Debian package tesseract-ocr-fra (installed: deu, eng, osd)`},
		{"eng+fra+chi_sim", `OCR languages "fra", "chi_sim" are not installed: install the Debian packages tesseract-ocr-fra tesseract-ocr-chi-sim`},
		{"eng+", "not a Tesseract language code"},
	} {
		t.Run(c.langs, func(t *testing.T) {
			installed, err := CheckOCR(context.Background(), OCR{Binary: bin, Languages: c.langs})
			if c.want == "" {
				if err != nil || strings.Join(installed, ",") != "deu,eng,osd" {
					t.Errorf("CheckOCR = %v, %v", installed, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, ErrOCRUnavailable) {
				t.Errorf("CheckOCR = %v, want an error saying %q", err, c.want)
			}
		})
	}
	_, err := CheckOCR(context.Background(), OCR{Binary: filepath.Join(t.TempDir(), "tesseract")})
	if !errors.Is(err, ErrOCRUnavailable) || !strings.Contains(err.Error(), "apt-get install tesseract-ocr tesseract-ocr-eng") {
		t.Errorf("CheckOCR without tesseract = %v", err)
	}
}

// An image too small to read is said to be so, of it (not "them"), before
// Tesseract runs.
func TestOCRTinyImage(t *testing.T) {
	bin, dir := fakeTesseract(t, `exit 0`)
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 1, 1))); err != nil {
		t.Fatal(err)
	}
	_, err := ExtractWith(context.Background(), FormatPNG, buf.Bytes(), Options{OCR: OCR{Binary: bin, PageTimeout: fakePageTimeout}, sandbox: stateDir(dir)})
	if want := "the PNG image has no text layer: it can only be read with OCR, and OCR failed on it: it is too small to read"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a 1×1 image: %v, want it to say %q", err, want)
	}
	if n := runs(t, dir); n != 0 {
		t.Errorf("Tesseract ran %d times on an image too small to read", n)
	}
}

// Blank paper is not worth a Tesseract run: a scan of blank pages ends
// with no text found, Tesseract never started.
func TestOCRSkipsBlankPages(t *testing.T) {
	bin, dir := fakeTesseract(t, `echo text that is not there`)
	_, err := ExtractWith(context.Background(), FormatPDF, uniformScan(3), Options{OCR: OCR{Binary: bin, PageTimeout: fakePageTimeout}, sandbox: stateDir(dir)})
	if !errors.Is(err, ErrNoText) || !strings.Contains(err.Error(), "OCR found no text on them") {
		t.Errorf("a scan of blank pages: %v, want no text found", err)
	}
	if n := runs(t, dir); n != 0 {
		t.Errorf("Tesseract ran %d times on blank pages", n)
	}
}
