package pdf

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Extracted text is cleaned before it is chunked and embedded. Each rule
// below removes an artefact of page layout that would otherwise pollute
// chunks, split words the search cannot match, or bury the sentence and
// paragraph boundaries the chunker relies on. The rules are deliberately
// conservative: a missed artefact costs a little ranking quality, a wrongly
// removed line costs content.

const (
	// edgeLines is how many non-empty lines at the top and at the bottom of
	// a page are candidates for running headers and footers. Three covers
	// the common "page number / document title / section title" stack.
	edgeLines = 3

	// minRepeatPages is how many pages a line must open or close before it
	// is taken for a running header or footer. Chapter headers repeat on
	// every page of their chapter, so a share of the document would miss
	// short chapters; three pages is already unlikely for real content.
	minRepeatPages = 3

	// maxBodyShare is how often (relative to its edge appearances) a
	// repeated edge line may also appear in page bodies and still be
	// removed. A running header never appears mid-page; a table row or
	// code line that happens to start several pages does, and is kept.
	maxBodyShare = 0.25

	// minLeaderDots is the shortest run of dots (spaced or not) treated as
	// a table-of-contents leader; three dots are an ellipsis and stay.
	minLeaderDots = 4
)

var (
	// dotLeader matches leader dots, with or without spaces between them,
	// and the space around them.
	dotLeader = regexp.MustCompile(`[ \t]*(?:[.·…][ \t]*){` + strconv.Itoa(minLeaderDots) + `,}`)

	// spaceRun matches runs of horizontal whitespace inside a line.
	spaceRun = regexp.MustCompile(`[ \t]+`)

	// digitRun and romanLine normalise page numbers, so that "Page 7" and
	// "Page 8", or "vii" and "viii", count as the same running line. Only
	// free-standing numbers are masked: digits inside a word ("CARD32",
	// "x86") are content, and masking them would merge distinct lines.
	digitRun  = regexp.MustCompile(`\b[0-9]+\b`)
	romanLine = regexp.MustCompile(`^[ivxlcdm]+$`)

	// pageNumberLine matches lines that are nothing but a page number in
	// one of its usual dresses: "12", "- 12 -", "page 12 of 40", "xii".
	pageNumberLine = regexp.MustCompile(`^(?:page )?[-–—(\[ ]*#[-–—)\] ]*(?:(?:of|/) #)?$`)
)

// cleanPages cleans the pages of a laid-out document (MuPDF output).
// Lines inside a paragraph are joined, because MuPDF breaks lines where the
// page layout wrapped them, not where the author did; paragraphs (MuPDF's
// text blocks) stay separated by a blank line.
func cleanPages(raw []string) []string {
	pages := make([][]string, len(raw))
	for i, text := range raw {
		pages[i] = strings.Split(normalizeChars(text), "\n")
	}
	removeRunningLines(pages)
	hyphenated := hyphenatedWords(pages)
	out := make([]string, len(pages))
	for i, lines := range pages {
		out[i] = joinParagraphs(lines, hyphenated)
	}
	return out
}

// cleanPlain cleans text the author laid out (text, Markdown, HTML). Line
// breaks are the author's and are kept; only whitespace runs, leaders and
// stray characters are tidied, and runs of blank lines shrink to one, the
// paragraph break the chunker looks for.
func cleanPlain(text string) string {
	var out []string
	for _, line := range strings.Split(normalizeChars(text), "\n") {
		line = tidyLine(line)
		if line == "" && (len(out) == 0 || out[len(out)-1] == "") {
			continue
		}
		out = append(out, line)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// normalizeChars unifies line endings and removes characters that are
// invisible on the page but break word matching: soft hyphens (an
// unhyphenated word would not match its hyphenated rendering), zero-width
// spaces, word joiners, byte-order marks and stray control characters. The
// zero-width joiner and non-joiner stay: they change what is shown (a
// Persian word's letters joined or not, an emoji family as one or three
// faces), and analysis ignores them inside words. Exotic
// spaces (no-break, thin, em) become plain spaces and Unicode hyphens a
// plain "-", so tokenisers see one spelling.
func normalizeChars(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\r' || r == '\f' || r == '\v' || r == '\u2028' || r == '\u2029':
			b.WriteByte('\n')
		case r == '\u00ad' || r == '\u200b' || r == '\u2060' || r == '\ufeff':
			// invisible: drop
		case r == '\u2010' || r == '\u2011':
			b.WriteByte('-')
		case r == '\t':
			b.WriteByte('\t')
		case r == '\n':
			b.WriteByte('\n')
		case unicode.IsSpace(r):
			b.WriteByte(' ')
		case r == utf8.RuneError || unicode.IsControl(r):
			// undecodable or control: drop
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// tidyLine collapses table-of-contents leaders ("Intro ........ 5" becomes
// "Intro 5": runs of dots are noise tokens that dilute lexical scores and
// waste embedding context) and runs of spaces and tabs (layout alignment
// carries no meaning once text is flattened), and trims the line.
func tidyLine(line string) string {
	if hasLeader(line) {
		line = dotLeader.ReplaceAllString(line, " ")
	}
	if strings.Contains(line, "  ") || strings.IndexByte(line, '\t') >= 0 {
		line = spaceRun.ReplaceAllString(line, " ")
	}
	return strings.TrimSpace(line)
}

// hasLeader reports whether line holds what dotLeader matches: a run of
// minLeaderDots leader dots with nothing but spaces between them. Most
// lines have none, and looking for one with the expression cost more than
// the rest of cleaning a text upload.
func hasLeader(line string) bool {
	run := 0
	for _, r := range line {
		switch r {
		case '.', '·', '…':
			if run++; run == minLeaderDots {
				return true
			}
		case ' ', '\t':
		default:
			run = 0
		}
	}
	return false
}

// edgeKey normalises a line for header/footer matching: case and spacing
// are ignored and digits (and whole-line roman numerals) are masked, so a
// running footer "Page 7" matches "Page 8".
func edgeKey(line string) string {
	key := strings.ToLower(strings.Join(strings.Fields(line), " "))
	if romanLine.MatchString(key) {
		return "#"
	}
	return digitRun.ReplaceAllString(key, "#")
}

// removeRunningLines blanks running headers and footers: lines among the
// first or last edgeLines non-empty lines of at least minRepeatPages pages
// (page numbers masked). They repeat on every page, so left in place they
// would appear in most chunks, match every query that mentions the
// document title, and split sentences that run across a page break. A
// repeated line that also appears often in page bodies is content, not a
// header, and stays; a bare page number is always removed from the edges.
//
// A page is never emptied of its text, though: when its running lines are
// all it has, they are its content (a generated report whose pages differ
// only in their numbers, a page holding just a chapter title), and only
// its bare page numbers go.
func removeRunningLines(pages [][]string) {
	if len(pages) < 2 {
		return
	}
	threshold := min(minRepeatPages, len(pages))
	edge := map[string]int{}
	body := map[string]int{}
	for _, lines := range pages {
		seenEdge := map[string]bool{}
		seenBody := map[string]bool{}
		forEachLine(lines, func(i int, isEdge bool) {
			key := edgeKey(lines[i])
			if isEdge && !seenEdge[key] {
				seenEdge[key] = true
				edge[key]++
			} else if !isEdge && !seenBody[key] {
				seenBody[key] = true
				body[key]++
			}
		})
	}
	running := func(key string) bool {
		n := edge[key]
		if n < threshold {
			return false
		}
		return pageNumberLine.MatchString(key) || float64(body[key]) <= maxBodyShare*float64(n)
	}
	for _, lines := range pages {
		var drop []int
		bodyText := false // a word survives the removal
		forEachLine(lines, func(i int, isEdge bool) {
			if isEdge && running(edgeKey(lines[i])) {
				drop = append(drop, i)
			} else {
				bodyText = bodyText || hasWordChar(lines[i])
			}
		})
		for _, i := range drop {
			if bodyText || isPageNumber(lines[i]) {
				lines[i] = ""
			}
		}
	}
}

// isPageNumber reports whether line is nothing but a page number.
func isPageNumber(line string) bool {
	return pageNumberLine.MatchString(edgeKey(line))
}

// forEachLine calls fn for every non-empty line, saying whether it is among
// the first or last edgeLines non-empty lines of the page.
func forEachLine(lines []string, fn func(i int, isEdge bool)) {
	var idx []int
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			idx = append(idx, i)
		}
	}
	for k, i := range idx {
		fn(i, k < edgeLines || k >= len(idx)-edgeLines)
	}
}

// hyphenatedWords collects words written with a hyphen inside a line
// anywhere in the document ("well-known"), so that a line break after
// "well-" keeps its hyphen while "exam-" + "ple" becomes "example".
func hyphenatedWords(pages [][]string) map[string]bool {
	words := map[string]bool{}
	for _, lines := range pages {
		for _, line := range lines {
			if !strings.Contains(line, "-") {
				continue
			}
			for _, w := range strings.Fields(line) {
				w = strings.ToLower(strings.TrimFunc(w, isNotWordChar))
				if i := strings.IndexByte(w, '-'); i > 0 && i < len(w)-1 {
					words[w] = true
				}
			}
		}
	}
	return words
}

func isNotWordChar(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

// joinParagraphs turns a page's lines into paragraphs separated by one
// blank line, each paragraph on one line. A line ending in a letter and a
// hyphen continues its word on the next line, so no space is inserted; the
// hyphen itself is dropped ("com-" + "mands" gives "commands", since the
// split halves match nothing a user would type) unless the document writes
// that word with a hyphen elsewhere ("well-known") or the next line does
// not start with a lower-case letter ("Jean-Paul", "UTF-8").
func joinParagraphs(lines []string, hyphenated map[string]bool) string {
	var paras []string
	var cur []string // lines of the current paragraph
	flush := func() {
		if len(cur) > 0 {
			paras = append(paras, strings.Join(cur, " "))
			cur = cur[:0]
		}
	}
	for _, raw := range lines {
		line := tidyLine(raw)
		if line == "" {
			flush()
			continue
		}
		if len(cur) == 0 {
			cur = append(cur, line)
			continue
		}
		last := cur[len(cur)-1]
		switch hyphenBreak(last, line, hyphenated) {
		case dropHyphen:
			cur[len(cur)-1] = last[:len(last)-1] + line
		case keepHyphen:
			cur[len(cur)-1] = last + line
		default:
			cur = append(cur, line)
		}
	}
	flush()
	return strings.Join(paras, "\n\n")
}

// lineJoin says how a line continues onto the next.
type lineJoin int

const (
	newWord    lineJoin = iota // separate words: join with a space
	dropHyphen                 // a word split by hyphenation
	keepHyphen                 // a hyphenated word split at its hyphen
)

// hyphenBreak decides how text continues onto next (see joinParagraphs).
func hyphenBreak(text, next string, hyphenated map[string]bool) lineJoin {
	if !strings.HasSuffix(text, "-") || len(text) < 2 {
		return newWord
	}
	before, _ := utf8.DecodeLastRuneInString(text[:len(text)-1])
	if !unicode.IsLetter(before) {
		return newWord
	}
	first, _ := utf8.DecodeRuneInString(next)
	if !unicode.IsLower(first) {
		return keepHyphen
	}
	start := strings.LastIndexFunc(text[:len(text)-1], func(r rune) bool { return !unicode.IsLetter(r) && r != '-' })
	head := strings.ToLower(text[start+1 : len(text)-1])
	tailEnd := strings.IndexFunc(next, func(r rune) bool { return !unicode.IsLetter(r) })
	if tailEnd < 0 {
		tailEnd = len(next)
	}
	if hyphenated[head+"-"+strings.ToLower(next[:tailEnd])] {
		return keepHyphen
	}
	return dropHyphen
}

// hasWordChar reports whether s holds any letter or digit.
func hasWordChar(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}
