package pdf

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Text files arrive in whatever encoding the user's editor wrote. docsift
// accepts UTF-8 (with or without a BOM), UTF-16 with a BOM (what Windows
// tools write as "Unicode"), and, as a fallback for older files, text that
// is not valid UTF-8 but reads as Windows-1252 (a superset of Latin-1). The
// fallback is only taken when the bytes look like mostly-ASCII prose, so
// binary data is still refused rather than indexed as mojibake.
const (
	// maxControlRatio is the share of control characters (other than tab,
	// newline, carriage return and form feed) above which content is
	// treated as binary.
	maxControlRatio = 0.01

	// maxHighByteRatio is the share of non-ASCII bytes above which
	// non-UTF-8 content is not believed to be Windows-1252 text.
	maxHighByteRatio = 0.3

	// markdownMinScore is how much Markdown syntax the first lines must
	// show before text is called Markdown (see looksLikeMarkdown).
	markdownMinScore = 3

	// markdownSniffLines bounds how many lines looksLikeMarkdown reads.
	markdownSniffLines = 200
)

var (
	bomUTF8    = []byte{0xef, 0xbb, 0xbf}
	bomUTF16LE = []byte{0xff, 0xfe}
	bomUTF16BE = []byte{0xfe, 0xff}
)

// decodeText returns data as a UTF-8 string, or false when it is not text.
// partial says data is a prefix of the file, so an incomplete character at
// its end is not held against it.
func decodeText(data []byte, partial bool) (string, bool) {
	switch {
	case bytes.HasPrefix(data, bomUTF8):
		data = data[len(bomUTF8):]
		if partial {
			data = trimIncompleteUTF8(data)
		}
		if !utf8.Valid(data) {
			return "", false
		}
		return string(data), notBinary(string(data))
	case bytes.HasPrefix(data, bomUTF16LE), bytes.HasPrefix(data, bomUTF16BE):
		return decodeUTF16(data, partial)
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return "", false
	}
	valid := data
	if partial {
		valid = trimIncompleteUTF8(data)
	}
	if utf8.Valid(valid) {
		s := string(valid)
		return s, notBinary(s)
	}
	high := 0
	for _, b := range data {
		if b >= 0x80 {
			high++
		}
	}
	if float64(high) > maxHighByteRatio*float64(len(data)) {
		return "", false
	}
	s := decodeWindows1252(data)
	return s, notBinary(s)
}

// trimIncompleteUTF8 drops a multi-byte sequence truncated at the end of b.
func trimIncompleteUTF8(b []byte) []byte {
	for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}

func decodeUTF16(data []byte, partial bool) (string, bool) {
	bigEndian := data[0] == 0xfe
	data = data[2:]
	if len(data)%2 != 0 {
		if !partial {
			return "", false
		}
		data = data[:len(data)-1]
	}
	units := make([]uint16, len(data)/2)
	for i := range units {
		hi, lo := data[2*i], data[2*i+1]
		if !bigEndian {
			hi, lo = lo, hi
		}
		units[i] = uint16(hi)<<8 | uint16(lo)
	}
	s := string(utf16.Decode(units))
	if strings.ContainsRune(s, 0) {
		return "", false
	}
	return s, notBinary(s)
}

// windows1252 maps bytes 0x80–0x9f, where Windows-1252 differs from
// Latin-1. Zero marks the five undefined bytes, which decode to U+FFFD.
var windows1252 = [32]rune{
	'€', 0, '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', 0, 'Ž', 0,
	0, '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', 0, 'ž', 'Ÿ',
}

func decodeWindows1252(data []byte) string {
	var b strings.Builder
	b.Grow(len(data) + len(data)/8)
	for _, c := range data {
		switch {
		case c < 0x80:
			b.WriteByte(c)
		case c < 0xa0:
			r := windows1252[c-0x80]
			if r == 0 {
				r = utf8.RuneError
			}
			b.WriteRune(r)
		default:
			b.WriteRune(rune(c))
		}
	}
	return b.String()
}

// notBinary reports whether s has few enough control characters to be text.
func notBinary(s string) bool {
	controls, total := 0, 0
	for _, r := range s {
		total++
		if isStrayControl(r) {
			controls++
		}
	}
	return float64(controls) <= maxControlRatio*float64(total)
}

// DropStrayControls removes the control characters that carry no meaning
// in text (see isStrayControl), as extraction does: text sent as text may
// hold a few (a terminal's colour codes) without being binary data, which
// too many of them would otherwise say it is.
func DropStrayControls(s string) string {
	if !strings.ContainsFunc(s, isStrayControl) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if isStrayControl(r) {
			return -1
		}
		return r
	}, s)
}

// isStrayControl reports control characters that carry no meaning in text
// (everything below space except tab, newline, carriage return, form feed).
func isStrayControl(r rune) bool {
	return r < 0x20 && r != '\t' && r != '\n' && r != '\r' && r != '\f' || r == 0x7f
}

var (
	mdHeading = regexp.MustCompile(`^#{1,6}\s+\S`)
	mdFence   = regexp.MustCompile("^(```|~~~)")
	mdList    = regexp.MustCompile(`^\s{0,3}([-*+]|\d{1,3}[.)])\s+\S`)
	mdLink    = regexp.MustCompile(`\[[^\]\n]+\]\([^)\s]+\)`)
	mdEmph    = regexp.MustCompile(`(\*\*|__)\S[^*_\n]*\S?(\*\*|__)|` + "`[^`\n]+`")
	mdQuote   = regexp.MustCompile(`^>\s`)
	mdSetext  = regexp.MustCompile(`^(=+|-+)\s*$`)
)

// mayLink and mayEmph hold for every line mdLink and mdEmph match, and
// for few others: the regular expressions, unanchored, read the whole of
// every line, and most are prose.
func mayLink(line string) bool { return strings.Contains(line, "](") }
func mayEmph(line string) bool {
	return strings.Contains(line, "**") || strings.Contains(line, "__") || strings.IndexByte(line, '`') >= 0
}

// looksLikeMarkdown scores Markdown syntax in the first lines of text:
// headings and code fences count twice because plain prose rarely has them,
// lists, links, emphasis and quotes once. Misjudging costs little, since
// Markdown and plain text are extracted the same way; the format is kept so
// callers can show it.
func looksLikeMarkdown(text string) bool {
	score := 0
	prev, lines := "", 0
	for line := range strings.Lines(text) {
		if lines++; lines > markdownSniffLines {
			break
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case mdHeading.MatchString(line), mdFence.MatchString(line):
			score += 2
		case mdSetext.MatchString(line) && strings.TrimSpace(prev) != "":
			score += 2
		case mdList.MatchString(line), mdQuote.MatchString(line):
			score++
		}
		if mayLink(line) && mdLink.MatchString(line) || mayEmph(line) && mdEmph.MatchString(line) {
			score++
		}
		if score >= markdownMinScore {
			return true
		}
		prev = line
	}
	return false
}

// TextFormat says whether a text reads as Markdown or as plain text.
func TextFormat(text string) Format {
	if looksLikeMarkdown(text) {
		return FormatMarkdown
	}
	return FormatText
}

// extractText returns plain text or Markdown as one unnumbered page,
// refusing text over limit bytes.
func extractText(f Format, data []byte, limit int64) (*Document, error) {
	text, ok := decodeText(data, false)
	if !ok {
		return nil, &UnsupportedError{Found: "binary data or an unknown text encoding"}
	}
	if int64(len(text)) > limit {
		return nil, errTextTooLong(limit)
	}
	return singlePage(f, cleanPlain(text))
}

// singlePage wraps the text of an unpaged format, refusing empty text.
func singlePage(f Format, text string) (*Document, error) {
	if !hasWordChar(text) {
		return nil, errNoText(f)
	}
	return &Document{Format: f, Paged: false, Pages: []Page{{Number: 0, Text: text}}}, nil
}

// readFull reads into buf until it is full or the reader ends.
func readFull(r io.Reader, buf []byte) (int, error) {
	n, err := io.ReadFull(r, buf)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = nil
	}
	return n, err
}
