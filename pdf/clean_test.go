package pdf

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestJoinParagraphs(t *testing.T) {
	cases := []struct {
		name, in, want string
		hyphenated     []string
	}{
		{"line breaks inside a paragraph", "one\ntwo\nthree", "one two three", nil},
		{"blank line keeps paragraphs", "one\n\n\n\ntwo", "one\n\ntwo", nil},
		{"hyphenated word joined", "asynchronous com-\nmands run", "asynchronous commands run", nil},
		{"known compound keeps hyphen", "a well-\nknown fact", "a well-known fact", []string{"well-known"}},
		{"capital after hyphen keeps it", "Jean-\nPaul", "Jean-Paul", nil},
		{"digit after hyphen keeps it", "UTF-\n8 text", "UTF-8 text", nil},
		{"option dash is not hyphenation", "use -\nx flag", "use - x flag", nil},
		{"dot leaders collapse", "Introduction . . . . . . . . 5\nUsage..........12", "Introduction 5 Usage 12", nil},
		{"ellipsis stays", "wait... what", "wait... what", nil},
		{"whitespace runs collapse", "a \t  b   c  ", "a b c", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := map[string]bool{}
			for _, w := range c.hyphenated {
				h[w] = true
			}
			got := joinParagraphs(strings.Split(c.in, "\n"), h)
			if got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestHyphenatedWordsFromDocument(t *testing.T) {
	raw := []string{
		"this is a well-known rule\nand a well-\nknown example\nof hyphen-\nation",
	}
	got := cleanPages(raw)[0]
	want := "this is a well-known rule and a well-known example of hyphenation"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestRunningHeadersAndFootersRemoved(t *testing.T) {
	var raw []string
	for i := 1; i <= 6; i++ {
		// "Table row CARD32 value" opens the body of every page but also
		// fills page bodies, so it is content and must stay.
		raw = append(raw, fmt.Sprintf("Chapter 3: Basic Features\n%d\n\nTable row CARD32 value\nBody text %s of the page.\nTable row CARD32 value\nmid\nTable row CARD32 value\nmid\n\nPage %d of 6\n", i, numberWords[i], i))
	}
	pages := cleanPages(raw)
	for i, p := range pages {
		for _, gone := range []string{"Chapter 3", "Page ", fmt.Sprintf("%d\n", i+1)} {
			if strings.Contains(p, gone) {
				t.Errorf("page %d still has %q: %q", i+1, gone, p)
			}
		}
		if !strings.Contains(p, "Body text "+numberWords[i+1]) {
			t.Errorf("page %d lost its body: %q", i+1, p)
		}
		if !strings.Contains(p, "CARD32") {
			t.Errorf("page %d lost a content line that also appears in bodies: %q", i+1, p)
		}
	}
}

func TestRunningLinesNeedRepetition(t *testing.T) {
	raw := []string{"Same title\nbody one", "Same title\nbody two"}
	pages := cleanPages(raw)
	// Two pages of two: a line on both is a header.
	for _, p := range pages {
		if strings.Contains(p, "Same title") {
			t.Errorf("header kept: %q", p)
		}
	}
	raw = []string{"Intro\nbody one", "Other\nbody two", "Intro\nbody three", "Else\nbody four"}
	pages = cleanPages(raw)
	if !strings.Contains(pages[0], "Intro") {
		t.Errorf("a line on 2 of 4 pages was removed: %q", pages[0])
	}
}

func TestNormalizeChars(t *testing.T) {
	in := "soft\u00adhyphen zero\u200bwidth no\u00a0break en\u2010dash\r\nline\rcr\x01ctl می\u200cخواهم 👨\u200d👩\u200d👧"
	want := "softhyphen zerowidth no break en-dash\nline\ncrctl می\u200cخواهم 👨\u200d👩\u200d👧"
	if got := normalizeChars(in); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestHasLeader checks that hasLeader, which spares most lines the
// expression, finds a leader exactly where dotLeader matches one.
func TestHasLeader(t *testing.T) {
	pieces := []string{".", "·", "…", " ", "\t", "a", "5", ". ", "..."}
	rng := rand.New(rand.NewPCG(3, 4))
	found := 0
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for n := rng.IntN(12); n >= 0; n-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		line := b.String()
		want := dotLeader.MatchString(line)
		if got := hasLeader(line); got != want {
			t.Fatalf("hasLeader(%q) = %v; dotLeader matches: %v", line, got, want)
		}
		if want {
			found++
		}
	}
	if found < 1000 {
		t.Fatalf("only %d of the lines had a leader: the test says little", found)
	}
}

func TestCleanPlainKeepsAuthorLines(t *testing.T) {
	in := "\n\n  Title  \n\n\n\nline one\nline   two\t\tend\n\n\n"
	want := "Title\n\nline one\nline two end"
	if got := cleanPlain(in); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestRunningLinesNeverEmptyAPage checks that header and footer removal
// keeps the text of a page it would otherwise empty: a generated report
// whose 10,000 pages differ only in their page numbers has nothing but
// "running" lines, and all of them are its content.
func TestRunningLinesNeverEmptyAPage(t *testing.T) {
	const n = 10000
	raw := make([]string, n)
	for i := range raw {
		raw[i] = fmt.Sprintf("Page %d of %d\nNo incidents were recorded for this shift.\n", i+1, n)
	}
	pages := cleanPages(raw)
	for i, p := range pages {
		if !strings.Contains(p, "No incidents were recorded") {
			t.Fatalf("page %d lost its only text: %q", i+1, p)
		}
	}

	// In a document with bodies, headers still go everywhere except on
	// a page that holds nothing else.
	raw = nil
	for i := 1; i <= 5; i++ {
		raw = append(raw, fmt.Sprintf("Chapter 3: Basic Features\nBody text %s of the page.\n%d", numberWords[i], i))
	}
	raw = append(raw, "Chapter 3: Basic Features\n6")
	pages = cleanPages(raw)
	for i, p := range pages[:5] {
		if strings.Contains(p, "Chapter 3") || !strings.Contains(p, "Body text") {
			t.Errorf("page %d: header kept or body lost: %q", i+1, p)
		}
	}
	if !strings.Contains(pages[5], "Chapter 3: Basic Features") {
		t.Errorf("page 6, which has only the header, was emptied: %q", pages[5])
	}
}

// TestExtractPagesDifferingOnlyInNumbers is the same report as a PDF: it
// must be indexed, not refused as having no text layer.
func TestExtractPagesDifferingOnlyInNumbers(t *testing.T) {
	const n = 500
	pages := make([][]string, n)
	for i := range pages {
		pages[i] = []string{fmt.Sprintf("Page %d of %d", i+1, n), "No incidents were recorded for this shift."}
	}
	doc, err := Extract(context.Background(), makePDF(pages))
	if err != nil {
		t.Fatalf("Extract = %v", err)
	}
	for _, p := range doc.Pages {
		if !strings.Contains(p.Text, "No incidents were recorded") {
			t.Fatalf("page %d lost its text: %q", p.Number, p.Text)
		}
	}
}
