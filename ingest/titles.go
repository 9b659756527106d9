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
// not end a sentence or a clause, and that are not one of the short lines
// that documents hold besides headings (see notHeading).
func headingLike(line string) bool {
	if line == "" || len(line) > titleMaxBytes || len(strings.Fields(line)) > titleMaxWords {
		return false
	}
	last, _ := utf8.DecodeLastRuneInString(line)
	return !strings.ContainsRune(".,;:!?", last) && !notHeading(line)
}

// Short lines that are not headings, each recognised by what marks it:
//   - a list item starts with a bullet, or with a dash, star or plus and a
//     space (the list markers of Markdown and of plain text);
//   - program text and data hold symbols that a heading, a phrase of
//     words, has no use for: assignments, tags, brackets, pipes, escapes;
//   - a reference or an address line holds a URL or an e-mail address;
//   - a label and its value ("der len: the bytes of the encoded string",
//     "AliasList: 4 CARD32 N_ALIASES") goes on after its colon in lower
//     case or digits, where a heading's subtitle ("Chapter 2: ASN.1
//     structure handling") starts as a title does, with a capital.
//
// Such a line taken for a heading would be searched in the head field,
// weighted as what the chunk is about, and lengthen the head of the chunk
// whose real heading it sits beside.
const (
	bulletMarks   = "•◦▪▫‣⁃∙●○■□➢➤►▶✓✔"
	listMarks     = "-–—*+"
	notInHeadings = "=<>{}[]|\\"
)

func notHeading(line string) bool {
	first, size := utf8.DecodeRuneInString(line)
	if strings.ContainsRune(bulletMarks, first) ||
		strings.ContainsRune(listMarks, first) && strings.HasPrefix(line[size:], " ") {
		return true
	}
	if strings.ContainsAny(line, notInHeadings) || strings.Contains(line, "://") ||
		strings.Contains(line, "www.") || strings.Contains(line, "@") {
		return true
	}
	if _, value, ok := strings.Cut(line, ": "); ok {
		r, _ := utf8.DecodeRuneInString(strings.TrimSpace(value))
		return unicode.IsLower(r) || unicode.IsDigit(r)
	}
	return false
}

// headingKey is what two spellings of one heading share: its letters and
// digits, in lower case.
func headingKey(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return unicode.ToLower(r)
		}
		return -1
	}, s)
}

func hasLetter(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) {
			return true
		}
	}
	return false
}

// chunkTitle is the title of chunk c of a document titled docTitle: that
// title, the sections c's page sits in (from the document's metadata and
// outline, see pdf.Page.Sections), and the headings in c's text, one a
// line, each once: a heading the outline also names is one heading, and
// counting it twice would weigh it as two. Headings are compared by their
// letters and digits, as outlines drop or change the punctuation of the
// headings they list ("Non-regular files", "Nonregular files").
func chunkTitle(docTitle string, c store.Chunk) string {
	var lines []string
	seen := map[string]bool{}
	add := func(line string) {
		if key := headingKey(line); key != "" && !seen[key] {
			seen[key] = true
			lines = append(lines, line)
		}
	}
	add(docTitle)
	for _, s := range c.Sections {
		add(s)
	}
	whole := strings.TrimSpace(c.Text)
	for block := range strings.SplitSeq(c.Text, "\n\n") {
		if strings.TrimSpace(block) == whole {
			break // a chunk of one paragraph is all text
		}
		block = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(block), "#"))
		if !strings.Contains(block, "\n") && hasLetter(block) && headingLike(block) {
			add(block)
		}
	}
	return strings.Join(lines, "\n")
}

// titlesOf returns the title of each document chunks belong to, by
// document id: from the document's first chunk, read from the store when
// it is not among chunks. A document deleted meanwhile has none.
func titlesOf(st store.Backend, chunks []store.Chunk) (map[string]string, error) {
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
