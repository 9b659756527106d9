package ingest

import (
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/docsift/docsift/store"
)

// A chunk's title is searched as a field of its own with its document's
// name (see index.Entry): the document's title, and the headings of the
// sections the chunk holds. Extraction gives no metadata title
// (pdf.Document has pages of text only), so the title is what a reader
// sees first: the first line of the text that has letters, when it looks
// like a heading. HTML's <title> is written first by extraction, a
// Markdown document's first "# heading" is its title, and a PDF's first
// page usually starts with it; a document that opens with a paragraph has
// none, and is found by its name alone. A section heading is a paragraph
// of its own (extraction separates paragraphs with a blank line) that
// looks like a heading: "2.17. User modification" above the section that
// answers "can a user add types of their own".
//
// Heading limits: a title is a short phrase, not a sentence.
const (
	titleMaxWords = 12
	titleMaxBytes = 160
)

// documentTitle returns the title of a document whose first chunk is
// first, or "". A text of one line has none: it is all text.
func documentTitle(first string) string {
	for line := range strings.Lines(first) {
		raw := strings.TrimSpace(line)
		if !hasLetter(raw) {
			continue // blank, a page number, a rule
		}
		title := strings.TrimSpace(strings.TrimLeft(raw, "#")) // Markdown
		if headingLike(title) && raw != strings.TrimSpace(first) {
			return title
		}
		return ""
	}
	return ""
}

// headingLike reports whether line reads as a heading: a few words that do
// not end a sentence or a clause.
func headingLike(line string) bool {
	if line == "" || len(line) > titleMaxBytes || len(strings.Fields(line)) > titleMaxWords {
		return false
	}
	last, _ := utf8.DecodeLastRuneInString(line)
	return !strings.ContainsRune(".,;:!?", last)
}

func hasLetter(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) {
			return true
		}
	}
	return false
}

// chunkTitle is the title of a chunk of a document titled docTitle: that
// title and the headings in the chunk's text, one a line.
func chunkTitle(docTitle, text string) string {
	lines := []string{docTitle}
	whole := strings.TrimSpace(text)
	for block := range strings.SplitSeq(text, "\n\n") {
		if strings.TrimSpace(block) == whole {
			break // a chunk of one paragraph is all text
		}
		block = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(block), "#"))
		if block != docTitle && !strings.Contains(block, "\n") && hasLetter(block) && headingLike(block) {
			lines = append(lines, block)
		}
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// titlesOf returns the title of each document chunks belong to, by
// document id: from the document's first chunk, read from the store when
// it is not among chunks. A document deleted meanwhile has none.
func titlesOf(st *store.Store, chunks []store.Chunk) (map[string]string, error) {
	titles := make(map[string]string)
	for _, c := range chunks {
		if c.Position == 0 {
			titles[c.DocumentID] = documentTitle(c.Text)
		}
	}
	for _, c := range chunks {
		if _, done := titles[c.DocumentID]; done {
			continue
		}
		first, err := st.Chunk(store.ChunkID(c.DocumentID, 0))
		switch {
		case errors.Is(err, store.ErrNotFound):
			titles[c.DocumentID] = ""
		case err != nil:
			return nil, err
		default:
			titles[c.DocumentID] = documentTitle(first.Text)
		}
	}
	return titles, nil
}
