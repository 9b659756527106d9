package pdf

import (
	"fmt"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// HTML is reduced to the text a reader would see. A real parser is used
// rather than tag-stripping regexps so that entities, comments, CDATA,
// unclosed tags and "<" inside scripts are all handled the way a browser
// would handle them.

// skippedElements hold no reader-visible text (or, for head, only the title,
// which is taken separately).
var skippedElements = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Head: true, atom.Svg: true, atom.Math: true, atom.Iframe: true,
	atom.Object: true, atom.Canvas: true, atom.Select: true,
}

// paragraphElements end a paragraph: they become a blank line, which is what
// the chunker splits on.
var paragraphElements = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Section: true, atom.Article: true,
	atom.Header: true, atom.Footer: true, atom.Main: true, atom.Aside: true,
	atom.Nav: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true,
	atom.H5: true, atom.H6: true, atom.Blockquote: true, atom.Pre: true,
	atom.Table: true, atom.Ul: true, atom.Ol: true, atom.Dl: true,
	atom.Figure: true, atom.Form: true, atom.Hr: true, atom.Address: true,
	atom.Details: true, atom.Fieldset: true, atom.Body: true,
}

// lineElements end a line but not a paragraph (list items, table rows).
var lineElements = map[atom.Atom]bool{
	atom.Li: true, atom.Tr: true, atom.Dt: true, atom.Dd: true, atom.Br: true,
	atom.Caption: true, atom.Figcaption: true, atom.Summary: true,
	atom.Legend: true, atom.Option: true,
}

// cellElements are separated by a space so adjacent cells do not merge
// into one word.
var cellElements = map[atom.Atom]bool{atom.Td: true, atom.Th: true}

// extractHTML returns the visible text of an HTML document as one
// unnumbered page, with the title first.
func extractHTML(data []byte) (*Document, error) {
	text, ok := decodeText(data, false)
	if !ok {
		return nil, &UnsupportedError{Found: "binary data or an unknown text encoding"}
	}
	root, err := html.Parse(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("pdf: parse html: %w", ErrCorrupt)
	}
	var b strings.Builder
	if title := findTitle(root); title != "" {
		b.WriteString(title)
		b.WriteString("\n\n")
	}
	writeVisibleText(&b, root, false)
	return singlePage(FormatHTML, cleanPlain(b.String()))
}

// findTitle returns the document's <title>, whitespace-collapsed.
func findTitle(n *html.Node) string {
	if n.Type == html.ElementNode && n.DataAtom == atom.Title {
		var b strings.Builder
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.TextNode {
				b.WriteString(c.Data)
			}
		}
		return strings.Join(strings.Fields(b.String()), " ")
	}
	if n.Type == html.ElementNode && n.DataAtom == atom.Body {
		return ""
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if t := findTitle(c); t != "" {
			return t
		}
	}
	return ""
}

// writeVisibleText appends the text under n. Source whitespace is not
// meaningful in HTML outside <pre>, so it is collapsed to one space and
// line structure comes only from elements.
func writeVisibleText(b *strings.Builder, n *html.Node, pre bool) {
	switch n.Type {
	case html.TextNode:
		if pre {
			b.WriteString(n.Data)
			return
		}
		fields := strings.Fields(n.Data)
		if len(fields) == 0 {
			if n.Data != "" {
				b.WriteByte(' ')
			}
			return
		}
		if startsWithSpace(n.Data) {
			b.WriteByte(' ')
		}
		b.WriteString(strings.Join(fields, " "))
		if endsWithSpace(n.Data) {
			b.WriteByte(' ')
		}
		return
	case html.ElementNode:
		if skippedElements[n.DataAtom] {
			return
		}
		if n.DataAtom == atom.Img {
			// Alt text is the author's description of the image and is
			// what a screen reader says; it is worth finding.
			for _, a := range n.Attr {
				if a.Key == "alt" && strings.TrimSpace(a.Val) != "" {
					b.WriteString(" " + strings.TrimSpace(a.Val) + " ")
				}
			}
			return
		}
	case html.CommentNode, html.DoctypeNode:
		return
	}
	if n.Type == html.ElementNode && paragraphElements[n.DataAtom] {
		b.WriteString("\n\n")
	}
	pre = pre || n.DataAtom == atom.Pre || n.DataAtom == atom.Textarea
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		writeVisibleText(b, c, pre)
	}
	if n.Type != html.ElementNode {
		return
	}
	switch {
	case paragraphElements[n.DataAtom]:
		b.WriteString("\n\n")
	case lineElements[n.DataAtom]:
		b.WriteByte('\n')
	case cellElements[n.DataAtom]:
		b.WriteByte(' ')
	}
}

func startsWithSpace(s string) bool {
	return s != "" && strings.ContainsRune(" \t\r\n\f", rune(s[0]))
}

func endsWithSpace(s string) bool {
	return s != "" && strings.ContainsRune(" \t\r\n\f", rune(s[len(s)-1]))
}
