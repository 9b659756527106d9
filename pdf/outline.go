package pdf

import (
	"cmp"
	"slices"
	"strings"
	"unicode"

	"github.com/gen2brain/go-fitz"
)

// A document's own account of its structure: the metadata title its author
// or tool gave it, and its outline (PDF bookmarks, an EPUB's table of
// contents), which names every section and the page it starts on. A page's
// text alone rarely says which section it belongs to (the heading is a
// page or more above), yet a question names the topic, "the field
// functions", more often than the words of the answer. So each page is
// given the titles of where it sits, to be searched with the headings of
// its chunks (see ingest's chunkTitle): the innermost section open at its
// top, which it continues, and the sections that start on it.

// Limits on what is taken from a document's structure: an outline of
// thousands of entries (generated indexes) or titles of paragraphs are not
// headings, and a page's titles are searched with each of its chunks.
const (
	maxOutlineEntries = 5000
	maxSectionTitle   = 200 // bytes
	maxPageSections   = 8
)

// outlineEntry is one entry of an outline: its depth (1 is top level),
// title and 0-based page.
type outlineEntry struct {
	Level int
	Title string
	Page  int
}

// readOutline returns doc's metadata title and outline, cleaned; either
// may be empty. Reading them never fails an extraction: a document with a
// broken outline still has its text.
func readOutline(doc *fitz.Document) (title string, outline []outlineEntry) {
	title = cleanTitle(doc.Metadata()["title"])
	toc, err := doc.ToC()
	if err != nil {
		return title, nil
	}
	for _, o := range toc {
		if len(outline) == maxOutlineEntries {
			break
		}
		if t := cleanTitle(o.Title); t != "" && o.Page >= 0 && o.Level >= 1 {
			outline = append(outline, outlineEntry{Level: o.Level, Title: t, Page: o.Page})
		}
	}
	return title, outline
}

// cleanTitle trims a title read from a document: MuPDF pads metadata
// values with NULs, and titles hold control characters and runs of spaces.
func cleanTitle(s string) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r)
	}), " ")
	if len(s) > maxSectionTitle {
		return ""
	}
	return s
}

// pageSections returns the Sections of each of n pages: title, when not
// empty, then the innermost outline section open at the page's top and the
// sections starting on it, in outline order, at most maxPageSections.
func pageSections(title string, outline []outlineEntry, n int) [][]string {
	out := make([][]string, n)
	if title == "" && len(outline) == 0 {
		return out
	}
	// Outlines list sections in reading order, which is page order but
	// for a stray entry; within a page the order stays.
	outline = slices.Clone(outline)
	slices.SortStableFunc(outline, func(a, b outlineEntry) int { return cmp.Compare(a.Page, b.Page) })
	// open is the innermost section open at the top of the next page:
	// the last entry starting on an earlier page.
	open := ""
	next := 0
	for p := range n {
		var titles []string
		if title != "" {
			titles = append(titles, title)
		}
		if open != "" {
			titles = append(titles, open)
		}
		for ; next < len(outline) && outline[next].Page <= p; next++ {
			if outline[next].Page == p {
				titles = append(titles, outline[next].Title)
			}
			open = outline[next].Title
		}
		out[p] = titles[:min(len(titles), maxPageSections)]
	}
	return out
}
