package pdf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"golang.org/x/image/tiff"
)

// Pages without a text layer (scans, and PNG, JPEG and TIFF uploads) are
// read with Tesseract OCR. MuPDF renders each such page to a grey image in
// the extraction worker (worker.go), and the worker runs the `tesseract`
// command on it as a child process of its own, one process per page.
//
// Why the command and not a Go binding to libtesseract (gosseract):
//
//   - A deadline per page. A cgo call into libtesseract cannot be stopped
//     from Go (the binding exposes no cancel hook), so a page that makes
//     Tesseract run for minutes could only be stopped by killing the whole
//     worker, losing the document. A tesseract process is killed alone,
//     after DefaultOCRPageTimeout, and the worker goes on with the next
//     page.
//   - Crash isolation. Leptonica and Tesseract are large C and C++ code
//     bases reading pixels derived from the upload; a crash in one takes
//     down one page's process and is reported as that page failing, not
//     the document (nor, without the worker, the server).
//   - Building from source. The binding needs libtesseract-dev, leptonica's
//     headers and a C++ toolchain at build time, and links the binary to
//     libtesseract: without it installed docsift would not even start, for
//     users who never OCR anything. With the command, `go build` is what it
//     was, and OCR is an optional runtime dependency found at start (see
//     CheckOCR): text PDFs work without it.
//
// The cost is a process start per page, which loads the language data:
// about 80 ms, against 1.5–4 s of recognition for a page at 300 dpi.
//
// Tesseract is told to use one thread (OMP_THREAD_LIMIT=1): its OpenMP
// threads spin while waiting for each other, and with indexing workers
// already running documents in parallel they only compete for the same
// cores. On the 2-CPU machine it was measured on, one thread read a page
// in 2.3 s and the default took 9.7 s.
const (
	// DefaultOCRLanguages is what OCR reads when no languages are given.
	DefaultOCRLanguages = "eng"

	// DefaultOCRDPI is the resolution PDF pages are rendered at for OCR.
	// 300 dpi is what Tesseract is trained for; on the project's PDFs it
	// reads 98.8% of characters right at 300 dpi and 97.7% at 200 (see
	// `docsift bench ocr`), and 300 keeps the small print of real scans
	// (footnotes, tables) readable at a cost of about 25% more time.
	DefaultOCRDPI = 300

	// DefaultOCRPageTimeout bounds the OCR of one page. A page at 300 dpi
	// takes 1.5–4 s on one core; a minute is room for a slow, busy machine
	// and a dense page, while a page that takes longer (a huge noisy
	// image) is given up rather than holding a worker.
	DefaultOCRPageTimeout = time.Minute

	// ocrMaxPixels caps the image of one page: a poster-sized page at 300
	// dpi, or a 100-megapixel photo, is scaled down to this. 40 megapixels
	// is an A2 page at 300 dpi; beyond it Tesseract gains nothing but time
	// and the rendering needs hundreds of megabytes.
	ocrMaxPixels = 40_000_000

	// textLayerMinLetters is the fewest letters a page's text layer must
	// have for the page not to be read with OCR too. A scan's text layer is
	// empty or holds what the scanner stamped on it (a page number, a
	// date); a page of text has hundreds. The OCR text replaces the layer
	// only when it has more letters, so a short real page (a part title)
	// loses nothing but the time of one OCR.
	textLayerMinLetters = 8

	// ocrMaxFailuresInARow is how many pages in a row may fail or time out
	// before OCR gives up on the rest of the document: by then Tesseract
	// is broken (a language pack removed) or every page is too hard, and
	// trying each remaining page would only cost a process or a minute.
	ocrMaxFailuresInARow = 3

	// ocrOutputLimit bounds what is kept of Tesseract's output for a page;
	// a dense page at 300 dpi is a few kilobytes of text.
	ocrOutputLimit = 1 << 20

	// ocrListTimeout bounds `tesseract --list-langs` at start.
	ocrListTimeout = 30 * time.Second

	// tesseractCommand is the command looked up in PATH by default.
	tesseractCommand = "tesseract"
)

// OCR configures optical character recognition of pages without a text
// layer. The zero value reads English with the tesseract found in PATH.
type OCR struct {
	// Languages are Tesseract language codes joined by "+", as in
	// "eng+deu"; empty means DefaultOCRLanguages. Each needs its language
	// pack installed (CheckOCR tells).
	Languages string `json:"languages,omitempty"`
	// Binary is the tesseract executable, a path or a name looked up in
	// PATH; empty means "tesseract".
	Binary string `json:"binary,omitempty"`
	// PageTimeout bounds the OCR of one page; zero means
	// DefaultOCRPageTimeout.
	PageTimeout time.Duration `json:"page_timeout,omitempty"`
	// DPI is the resolution PDF and XPS pages are rendered at for OCR;
	// zero means DefaultOCRDPI. Images are read at their own resolution.
	DPI int `json:"dpi,omitempty"`
}

func (o OCR) withDefaults() OCR {
	if langs, err := ParseOCRLanguages(o.Languages); err == nil {
		o.Languages = strings.Join(langs, "+") // " eng + deu" → "eng+deu"
	}
	if o.Binary == "" {
		o.Binary = tesseractCommand
	}
	if o.PageTimeout <= 0 {
		o.PageTimeout = DefaultOCRPageTimeout
	}
	if o.DPI <= 0 {
		o.DPI = DefaultOCRDPI
	}
	return o
}

// ErrOCRUnavailable means Tesseract is not installed (or cannot be run),
// so pages without a text layer cannot be read. Text documents are not
// affected.
var ErrOCRUnavailable = errors.New("OCR is not available: Tesseract is not installed")

// languageCode is one Tesseract language: "eng", "chi_sim", or a script
// model such as "script/Latin".
var languageCode = regexp.MustCompile(`^(?:script/)?[A-Za-z][A-Za-z0-9_]*$`)

// notALanguage are the data files Tesseract lists among its languages that
// read no text: OCR in them reads garbage.
var notALanguage = map[string]string{
	"osd": "orientation and script detection data",
	"equ": "equation detection data",
}

// languageNames are the names people give for the commonest languages,
// and their Tesseract codes.
var languageNames = map[string]string{
	"english": "eng", "german": "deu", "deutsch": "deu", "french": "fra", "spanish": "spa",
	"italian": "ita", "portuguese": "por", "dutch": "nld", "russian": "rus", "polish": "pol",
	"chinese": "chi_sim (simplified) or chi_tra (traditional)", "japanese": "jpn", "korean": "kor",
	"arabic": "ara", "turkish": "tur", "swedish": "swe", "danish": "dan", "norwegian": "nor",
	"finnish": "fin", "czech": "ces", "greek": "ell", "hebrew": "heb", "hindi": "hin", "ukrainian": "ukr",
}

// ParseOCRLanguages splits a "+"-joined list of Tesseract languages
// ("eng+deu") and checks that each is a well-formed code; empty means
// DefaultOCRLanguages.
func ParseOCRLanguages(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		s = DefaultOCRLanguages
	}
	var langs []string
	for l := range strings.SplitSeq(s, "+") {
		l = strings.TrimSpace(l)
		if !languageCode.MatchString(l) {
			return nil, fmt.Errorf("OCR languages %q: %q is not a Tesseract language code; give codes such as eng or deu joined by +, as in eng+deu", s, l)
		}
		if what, ok := notALanguage[l]; ok {
			return nil, fmt.Errorf("OCR languages %q: %q is Tesseract's %s, not a language; give codes such as eng or deu joined by +, as in eng+deu", s, l, what)
		}
		if code, ok := languageNames[strings.ToLower(l)]; ok {
			return nil, fmt.Errorf("OCR languages %q: %q is a language's name, not its Tesseract code: give %s", s, l, code)
		}
		if !slices.Contains(langs, l) {
			langs = append(langs, l)
		}
	}
	return langs, nil
}

// debianPackage names the Debian package holding a Tesseract language:
// tesseract-ocr-eng for eng, tesseract-ocr-chi-sim for chi_sim. Script
// models (script/Latin) are packaged by ISO 15924 code, which the name does
// not give, so for them it names the family.
func debianPackage(lang string) string {
	if name, ok := strings.CutPrefix(lang, "script/"); ok {
		return "the tesseract-ocr-script-* package for " + name
	}
	return "tesseract-ocr-" + strings.ToLower(strings.ReplaceAll(lang, "_", "-"))
}

// installHint says which Debian packages to install for OCR in langs.
func installHint(langs []string) string {
	pkgs := []string{"tesseract-ocr"}
	for _, l := range langs {
		if !strings.HasPrefix(l, "script/") {
			pkgs = append(pkgs, debianPackage(l))
		}
	}
	return "install it (Debian: apt-get install " + strings.Join(pkgs, " ") + ")"
}

// errOCRUnavailable is ErrOCRUnavailable with what to install and, when
// known, why the binary could not be used.
func errOCRUnavailable(o OCR, detail string) error {
	langs, err := ParseOCRLanguages(o.Languages)
	if err != nil {
		langs = []string{DefaultOCRLanguages}
	}
	if detail != "" {
		detail = " (" + detail + ")"
	}
	return fmt.Errorf("%w%s; %s", ErrOCRUnavailable, detail, installHint(langs))
}

// lookTesseract resolves o.Binary to an executable.
func lookTesseract(o OCR) (string, error) {
	bin, err := exec.LookPath(o.Binary)
	if err != nil {
		return "", errOCRUnavailable(o, err.Error())
	}
	return bin, nil
}

// CheckOCR checks that Tesseract runs and has every language o asks for,
// and returns the languages installed. Without Tesseract the error wraps
// ErrOCRUnavailable and says what to install: the server still starts,
// since text documents do not need it. A language that is not installed is
// an error naming the Debian package to install, so a server is not started
// that would fail every scan in that language.
func CheckOCR(ctx context.Context, o OCR) ([]string, error) {
	o = o.withDefaults()
	want, err := ParseOCRLanguages(o.Languages)
	if err != nil {
		return nil, err
	}
	bin, err := lookTesseract(o)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, ocrListTimeout)
	defer cancel()
	// Tesseract 5 lists on standard output, older versions on standard
	// error: read both.
	out, err := exec.CommandContext(ctx, bin, "--list-langs").CombinedOutput()
	if err != nil {
		return nil, errOCRUnavailable(o, fmt.Sprintf("%s --list-langs: %v: %s", bin, err, lastLine(string(out))))
	}
	installed := parseLanguageList(string(out))
	var missing, pkgs []string
	for _, l := range want {
		if !slices.Contains(installed, l) {
			missing = append(missing, strconv.Quote(l))
			pkgs = append(pkgs, debianPackage(l))
		}
	}
	switch len(missing) {
	case 0:
		return installed, nil
	case 1:
		return installed, fmt.Errorf("OCR language %s is not installed: install the Debian package %s (installed: %s)", missing[0], pkgs[0], strings.Join(installed, ", "))
	}
	return installed, fmt.Errorf("OCR languages %s are not installed: install the Debian packages %s (installed: %s)", strings.Join(missing, ", "), strings.Join(pkgs, " "), strings.Join(installed, ", "))
}

// parseLanguageList reads the output of `tesseract --list-langs`: a header
// line, then one language per line.
func parseLanguageList(out string) []string {
	var langs []string
	for line := range strings.SplitSeq(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.Contains(line, " ") || strings.HasSuffix(line, ":") {
			continue
		}
		langs = append(langs, line)
	}
	slices.Sort(langs)
	return langs
}

// Why a page that needed OCR has no OCR text (workerPage.Problem).
const (
	ocrProblemMissing = "missing" // Tesseract is not installed
	ocrProblemTimeout = "timeout" // past OCR.PageTimeout
	ocrProblemFailed  = "failed"  // rendering or Tesseract failed
)

// pageOCR reads pages with Tesseract inside the worker. It keeps what the
// pages before taught it: whether Tesseract is there at all, and how many
// pages in a row failed.
type pageOCR struct {
	cfg    OCR
	format Format
	bin    string
	// stopped, when set, is the problem every remaining page gets: OCR
	// gave up on the document (see ocrMaxFailuresInARow) or cannot run.
	stopped, stoppedDetail string
	failuresInARow         int
	// imageDPI is the resolution of an image upload's pixels, in MuPDF's
	// page units (see imageResolution); 0 until known.
	imageDPI float64
}

func newPageOCR(cfg OCR, f Format) *pageOCR {
	return &pageOCR{cfg: cfg.withDefaults(), format: f}
}

// read OCRs page i of doc into page when its text layer is too thin (see
// textLayerMinLetters), recording a problem instead when it cannot.
func (o *pageOCR) read(ctx context.Context, doc fitzPages, data []byte, i int, page *workerPage) {
	if countLetters(page.Text) >= textLayerMinLetters {
		return
	}
	if o.stopped == "" && o.bin == "" {
		bin, err := lookTesseract(o.cfg)
		if err != nil {
			o.stopped, o.stoppedDetail = ocrProblemMissing, err.Error()
		}
		o.bin = bin
	}
	if o.stopped != "" {
		page.Problem, page.Detail = o.stopped, o.stoppedDetail
		return
	}
	page.OCRTried = true
	text, problem, detail := o.recognisePage(ctx, doc, data, i)
	if problem != "" {
		page.Problem, page.Detail = problem, detail
		if o.failuresInARow++; o.failuresInARow >= ocrMaxFailuresInARow {
			o.stopped = problem
			o.stoppedDetail = fmt.Sprintf("OCR gave up after %d pages in a row failed; the last: %s", o.failuresInARow, detail)
		}
		return
	}
	o.failuresInARow = 0
	if countLetters(text) > countLetters(page.Text) {
		page.Text, page.OCR = text, true
	}
}

// fitzPages is what pageOCR needs of a MuPDF document.
type fitzPages interface {
	Bound(page int) (image.Rectangle, error)
	ImageDPI(page int, dpi float64) (*image.RGBA, error)
}

// recognisePage renders page i and runs Tesseract on it. It returns the
// text, or a problem (ocrProblemTimeout or ocrProblemFailed) and a detail.
func (o *pageOCR) recognisePage(ctx context.Context, doc fitzPages, data []byte, i int) (text, problem, detail string) {
	bound, err := doc.Bound(i)
	switch {
	case err != nil:
		return "", ocrProblemFailed, "its size could not be read"
	case bound.Dx() <= 0 || bound.Dy() <= 0:
		return "", ocrProblemFailed, "it is too small to read (under a point across)"
	}
	dpi, tessDPI := float64(o.cfg.DPI), o.cfg.DPI
	if o.format.IsImage() {
		// An image is read at its own resolution: resampling a scan
		// only loses or invents detail. Tesseract then estimates the
		// resolution from the text's size, as the image's declared one
		// (or MuPDF's default when it has none) may be wrong.
		if o.imageDPI == 0 {
			o.imageDPI = o.imageResolution(data, bound)
		}
		dpi, tessDPI = o.imageDPI, 0
	}
	w, h := float64(bound.Dx())*dpi/72, float64(bound.Dy())*dpi/72
	if px := w * h; px > ocrMaxPixels {
		scale := math.Sqrt(ocrMaxPixels / px)
		dpi *= scale
		if tessDPI > 0 {
			tessDPI = max(1, int(float64(tessDPI)*scale))
		}
	}
	img, err := doc.ImageDPI(i, dpi)
	if err != nil {
		// MuPDF says only "cannot run page contents"; an image too large
		// for it to decode is the likely cause worth naming.
		if o.format.IsImage() {
			return "", ocrProblemFailed, fmt.Sprintf("it could not be decoded to be read (it is %.0f×%.0f pixels: a smaller image, or one cut in parts, may read)", w, h)
		}
		return "", ocrProblemFailed, "the page could not be drawn to be read"
	}
	pgm := encodePGM(img)
	img = nil //nolint:ineffassign // the grey copy is all Tesseract needs; let the RGBA go
	if uniform(pgm) {
		return "", "", "" // a blank page: nothing for Tesseract to read, in seconds
	}
	text, err = o.tesseract(ctx, pgm, tessDPI)
	switch {
	case errors.Is(err, errOCRPageTimeout):
		return "", ocrProblemTimeout, err.Error()
	case err != nil:
		return "", ocrProblemFailed, err.Error()
	}
	return text, "", ""
}

// imageResolution returns the resolution at which MuPDF renders an image
// upload at its own pixel size: MuPDF measures an image page in points
// from the resolution the file declares, or from a default when it
// declares none, so the page's width in points and the image's width in
// pixels give it. A multi-page TIFF is taken to have one resolution, that
// of its first page, as scanners write them. When the image's size cannot
// be read, the PDF rendering resolution is used.
func (o *pageOCR) imageResolution(data []byte, bound image.Rectangle) float64 {
	var (
		cfg image.Config
		err error
	)
	r := bytes.NewReader(data)
	switch o.format {
	case FormatPNG:
		cfg, err = png.DecodeConfig(r)
	case FormatJPEG:
		cfg, err = jpeg.DecodeConfig(r)
	case FormatTIFF:
		cfg, err = tiff.DecodeConfig(r)
	default:
		err = errors.New("not an image")
	}
	if err != nil || cfg.Width <= 0 {
		return float64(o.cfg.DPI)
	}
	return 72 * float64(cfg.Width) / float64(bound.Dx())
}

// errOCRPageTimeout marks a page whose OCR passed OCR.PageTimeout.
var errOCRPageTimeout = errors.New("OCR of the page took too long")

// tesseract runs Tesseract on a PGM image and returns its text. dpi, when
// positive, is the image's resolution; otherwise Tesseract estimates it.
// The process gets OCR.PageTimeout and is killed past it.
func (o *pageOCR) tesseract(ctx context.Context, pgm []byte, dpi int) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, o.cfg.PageTimeout)
	defer cancel()
	args := []string{"stdin", "stdout", "-l", o.cfg.Languages}
	if dpi > 0 {
		args = append(args, "--dpi", strconv.Itoa(dpi))
	}
	cmd := exec.CommandContext(ctx, o.bin, args...)
	cmd.Env = append(os.Environ(), "OMP_THREAD_LIMIT=1")
	cmd.Stdin = bytes.NewReader(pgm)
	stdout := &limitBuffer{max: ocrOutputLimit}
	stderr := &tailBuffer{max: workerStderrTail}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = workerKillGrace
	// As with the worker itself (see runWorkerProcess): Tesseract dies
	// with the worker, however the worker dies, so a worker killed at the
	// document's deadline leaves no OCR running.
	cmd.SysProcAttr = workerSysProcAttr()
	runtime.LockOSThread()
	err := cmd.Run()
	runtime.UnlockOSThread()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "", fmt.Errorf("%w: it passed the limit of %s for one page", errOCRPageTimeout, o.cfg.PageTimeout)
	}
	if err != nil {
		detail := tesseractDetail(stderr.String())
		if detail == "" {
			detail = err.Error()
		}
		return "", fmt.Errorf("tesseract failed: %s", detail)
	}
	return strings.ToValidUTF8(strings.Trim(stdout.String(), "\f\n\r\t "), "\uFFFD"), nil
}

// tesseractDetail picks the telling line of Tesseract's standard error:
// the language it could not load, or else its last line.
func tesseractDetail(stderr string) string {
	for line := range strings.SplitSeq(stderr, "\n") {
		if strings.Contains(line, "Failed loading language") {
			return strings.TrimSpace(line) + " (is its language pack installed?)"
		}
	}
	return lastLine(stderr)
}

// encodePGM returns img as a binary PGM (portable greymap): a grey image in
// the simplest format Tesseract reads, costing nothing to encode, and a
// quarter of the RGBA pixels to pipe.
func encodePGM(img *image.RGBA) []byte {
	b := img.Bounds()
	header := fmt.Sprintf("P5\n%d %d\n255\n", b.Dx(), b.Dy())
	out := make([]byte, len(header), len(header)+b.Dx()*b.Dy())
	copy(out, header)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		row := img.Pix[img.PixOffset(b.Min.X, y):img.PixOffset(b.Max.X, y)]
		for p := 0; p+3 < len(row); p += 4 {
			// ITU-R BT.601 luma, as Leptonica converts colour to grey.
			out = append(out, byte((299*uint32(row[p])+587*uint32(row[p+1])+114*uint32(row[p+2])+500)/1000))
		}
	}
	return out
}

// blankContrast is the least difference between a page's darkest and
// lightest grey that can be print: under it the page is one tone (blank
// paper, with a scanner's noise), which Tesseract reads as nothing.
const blankContrast = 32

// uniform reports whether the grey image pgm (encodePGM's) is of one tone:
// a blank page, which is not worth a Tesseract run. Faint print still
// stands out from its paper by more than blankContrast.
func uniform(pgm []byte) bool {
	// The header is three lines: P5, the size, the largest value.
	pix := pgm
	for range 3 {
		i := bytes.IndexByte(pix, '\n')
		if i < 0 {
			return false
		}
		pix = pix[i+1:]
	}
	if len(pix) == 0 {
		return false
	}
	lo, hi := pix[0], pix[0]
	for _, v := range pix {
		lo, hi = min(lo, v), max(hi, v)
		if int(hi)-int(lo) >= blankContrast {
			return false
		}
	}
	return true
}

// countLetters counts the letters in s.
func countLetters(s string) int {
	n := 0
	for _, r := range s {
		if unicode.IsLetter(r) {
			n++
		}
	}
	return n
}

// limitBuffer keeps the first max bytes written to it.
type limitBuffer struct {
	max int
	buf []byte
}

func (l *limitBuffer) Write(p []byte) (int, error) {
	if room := l.max - len(l.buf); room > 0 {
		l.buf = append(l.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (l *limitBuffer) String() string { return string(l.buf) }
