package pdf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
)

func TestExtractGeneratedPDF(t *testing.T) {
	const n = 7
	doc, err := Extract(context.Background(), makePDF(numberedPages(n)))
	if err != nil {
		t.Fatal(err)
	}
	if doc.Format != FormatPDF || !doc.Paged || len(doc.Pages) != n {
		t.Fatalf("got format %q paged %v with %d pages, want pdf, paged, %d", doc.Format, doc.Paged, len(doc.Pages), n)
	}
	for i, p := range doc.Pages {
		want := fmt.Sprintf("This is page %s of the generated document. Unique marker zq%dx appears only here.", numberWords[(i+1)%10], i+1)
		if p.Number != i+1 || p.Text != want {
			t.Errorf("page %d: got number %d text %q, want %q", i+1, p.Number, p.Text, want)
		}
	}
}

func TestExtractFormats(t *testing.T) {
	const phrase = "Searchable phrase quokka lantern"
	cases := []struct {
		name  string
		data  []byte
		want  Format
		paged bool
	}{
		{"epub", makeEPUB(t, phrase), FormatEPUB, true},
		{"docx", makeDOCX(t, phrase), FormatDOCX, true},
		{"xlsx", makeXLSX(t, phrase), FormatXLSX, true},
		{"pptx", makePPTX(t, phrase), FormatPPTX, true},
		{"xps", makeXPS(t, phrase), FormatXPS, true},
		{"fb2", makeFB2(phrase), FormatFB2, true},
		{"mobi", makeMOBI("<html><body><p>"+phrase+"</p></body></html>", true), FormatMOBI, true},
		{"palmdoc", makeMOBI(phrase, false), FormatMOBI, true},
		{"text", []byte("Notes\r\n\r\n" + phrase + "\r\n"), FormatText, false},
		{"markdown", []byte("# Notes\n\n" + phrase + "\n\n- item one\n- item two\n"), FormatMarkdown, false},
		{"utf16 text", utf16LE("Notes: " + phrase), FormatText, false},
		{"windows-1252 text", []byte("Caf\xe9 notes: " + phrase), FormatText, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc, err := Extract(context.Background(), c.data)
			if err != nil {
				t.Fatal(err)
			}
			if doc.Format != c.want || doc.Paged != c.paged {
				t.Errorf("got %q paged %v, want %q paged %v", doc.Format, doc.Paged, c.want, c.paged)
			}
			found := false
			for i, p := range doc.Pages {
				if c.paged && p.Number != i+1 || !c.paged && p.Number != 0 {
					t.Errorf("page %d has number %d", i, p.Number)
				}
				found = found || strings.Contains(p.Text, phrase)
			}
			if !found {
				t.Errorf("phrase not extracted: %+v", doc.Pages)
			}
		})
	}
	doc, _ := Extract(context.Background(), []byte("Caf\xe9 \x93quoted\x94"))
	if doc == nil || doc.Pages[0].Text != "Café “quoted”" {
		t.Errorf("Windows-1252 decoding: got %+v", doc)
	}
}

func utf16LE(s string) []byte {
	b := []byte{0xff, 0xfe}
	for _, r := range s {
		b = append(b, byte(r), byte(r>>8))
	}
	return b
}

// encryptPDF protects data with pdfcpu, with an empty user password when
// userPW is "" (anyone may open it; only editing is restricted).
func encryptPDF(t testing.TB, data []byte, userPW string) []byte {
	t.Helper()
	disablePdfcpuConfig.Do(api.DisableConfigDir)
	var out bytes.Buffer
	if err := api.Encrypt(bytes.NewReader(data), &out, model.NewAESConfiguration(userPW, "owner-secret", 256)); err != nil {
		t.Fatalf("encrypt: %v", err)
	}
	return out.Bytes()
}

func TestExtractBadFiles(t *testing.T) {
	good := makePDF(numberedPages(5))
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 64<<10)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"zero bytes", nil, ErrEmpty},
		{"truncated pdf", good[:len(good)/2], ErrCorrupt},
		{"pdf header only", []byte("%PDF-1.7\n"), ErrCorrupt},
		{"pdf with garbage body", append([]byte("%PDF-1.4\n"), append(random[:4096], "\n%%EOF\n"...)...), ErrCorrupt},
		{"random bytes", random, ErrUnsupported},
		{"encrypted pdf", encryptPDF(t, good, "user-secret"), ErrEncrypted},
		{"image-only pdf", makeImagePDF(), ErrNoText},
		{"whitespace text", []byte(" \n\t\n "), ErrNoText},
		{"cbz", makeZip(t, zipFile{name: "1.png", body: string(pngPixel)}), ErrUnsupported},
		{"truncated epub", makeEPUB(t, "text")[:200], ErrCorrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc, err := Extract(context.Background(), c.data)
			if !errors.Is(err, c.want) {
				t.Fatalf("Extract = %+v, %v; want %v", doc, err, c.want)
			}
			if doc != nil {
				t.Errorf("got a document with an error")
			}
		})
	}
}

func TestExtractEncryptedWithoutUserPassword(t *testing.T) {
	// Owner-password-only PDFs open for anyone, so they are indexed.
	doc, err := Extract(context.Background(), encryptPDF(t, makePDF(numberedPages(2)), ""))
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Pages) != 2 || !strings.Contains(doc.Pages[1].Text, "zq2x") {
		t.Errorf("unexpected pages: %+v", doc.Pages)
	}
}

func TestErrorMessages(t *testing.T) {
	_, err := Extract(context.Background(), encryptPDF(t, makePDF(numberedPages(1)), "pw"))
	if !strings.Contains(err.Error(), "password-protected PDFs are not supported") {
		t.Errorf("encrypted: %v", err)
	}
	_, err = Extract(context.Background(), makeImagePDF())
	want := "no text layer: its pages are probably scanned images, and OCR found no text on them"
	if !tesseractInstalled() {
		want = "no text layer: its pages are probably scanned images, and OCR is not available"
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("image-only: %v, want %q", err, want)
	}
	_, err = Extract(context.Background(), []byte{})
	if err.Error() != "the file is empty" {
		t.Errorf("empty: %v", err)
	}
}

func TestExtractHonoursContext(t *testing.T) {
	data := makePDF(numberedPages(3))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Extract(ctx, data); !errors.Is(err, ErrTooSlow) || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: got %v", err)
	}

	big := makePDF(numberedPages(4000))
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Extract(ctx, big)
	// A deadline is the document's problem, not a timeout worth retrying:
	// the error must not pass for context.DeadlineExceeded, which generic
	// classifiers (llm.IsTransient) take for a network timeout.
	if !errors.Is(err, ErrTooSlow) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: got %v, want ErrTooSlow without DeadlineExceeded", err)
	}
	expired, cancelExpired := context.WithDeadline(context.Background(), time.Now())
	defer cancelExpired()
	if _, err := Extract(expired, data); !errors.Is(err, ErrTooSlow) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("expired deadline: got %v, want ErrTooSlow without DeadlineExceeded", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Extract returned %v after a 5ms deadline", d)
	}
}

// TestExtractConcurrentDocuments checks that separate documents can be
// extracted in parallel (each has its own MuPDF context) and give the same
// text as when extracted one at a time.
func TestExtractConcurrentDocuments(t *testing.T) {
	inputs := [][]byte{
		makePDF(numberedPages(30)), makePDF(numberedPages(31)), makeEPUB(t, "parallel epub"),
		makeXPS(t, "parallel xps"), makeDOCX(t, "parallel docx"), makePDF(numberedPages(32)),
	}
	for _, name := range []string{"libtasn1.pdf", "shared-mime-info-spec.pdf"} {
		if data, err := readRealPDF(name); err == nil {
			inputs = append(inputs, data)
		}
	}
	want := make([]*Document, len(inputs))
	for i, in := range inputs {
		var err error
		if want[i], err = Extract(context.Background(), in); err != nil {
			t.Fatal(err)
		}
	}
	const rounds = 3
	var wg sync.WaitGroup
	errs := make(chan error, rounds*len(inputs))
	for range rounds {
		for i, in := range inputs {
			wg.Go(func() {
				got, err := Extract(context.Background(), in)
				switch {
				case err != nil:
					errs <- err
				case fmt.Sprint(got) != fmt.Sprint(want[i]):
					errs <- fmt.Errorf("input %d: parallel extraction differs", i)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestPageCount(t *testing.T) {
	if n, err := PageCount(makePDF(numberedPages(12))); n != 12 || err != nil {
		t.Errorf("pdf: got %d, %v", n, err)
	}
	if n, err := PageCount([]byte("some text")); n != 1 || err != nil {
		t.Errorf("text: got %d, %v", n, err)
	}
	if _, err := PageCount(nil); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty: got %v", err)
	}
	good := makePDF(numberedPages(2))
	if _, err := PageCount(good[:len(good)-40]); !errors.Is(err, ErrCorrupt) {
		t.Errorf("truncated: got %v", err)
	}
	if _, err := PageCount(encryptPDF(t, good, "pw")); !errors.Is(err, ErrEncrypted) {
		t.Errorf("encrypted: got %v", err)
	}
}

// TestMuPDFParallelInProcess reads documents from several goroutines in
// one process, as this package's tests do: MuPDF must read them one at a
// time (fitzMu), or EPUBs laid out at once crash HarfBuzz's allocator.
func TestMuPDFParallelInProcess(t *testing.T) {
	epubs := [][]byte{makeEPUB(t, "in-process epub"), makeEPUB(t, "another epub, laid out at the same time")}
	others := [][]byte{makePDF(numberedPages(40)), makeXPS(t, "in-process xps")}
	if data, err := readRealPDF("libtasn1.pdf"); err == nil {
		others = append(others, data)
	}
	inputs := append(epubs, others...)
	want := make([][]string, len(inputs))
	for i, in := range inputs {
		want[i] = rawPages(t, in)
	}
	read := func(reader, i int) {
		got, err := readPages(context.Background(), inputs[i])
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want[i]) {
			t.Errorf("reader %d input %d: parallel in-process read differs (%v)", reader, i, err)
		}
	}
	// Sixteen readers of five EPUBs and one other document each: without
	// fitzMu, six runs in ten crashed, and six in six built with -race.
	var wg sync.WaitGroup
	for reader := range 16 {
		wg.Go(func() {
			for k := range 5 {
				read(reader, k%len(epubs))
			}
			read(reader, len(epubs)+reader%len(others))
		})
	}
	wg.Wait()
}
