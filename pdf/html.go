package pdf

import (
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
// unnumbered page, with the title first, refusing text over limit bytes.
//
// It reads the document token by token rather than building its tree:
// a tree costs some hundred bytes a node, and a page of ten million
// empty elements (30 MB of "<p>") would cost the server gigabytes. The
// tokenizer keeps one token at a time, and what the tree builder would
// have worked out for visible text (which elements hide their content,
// where paragraphs end) is tracked with a stack of the hidden elements
// open and a count of the <pre>s.
func extractHTML(data []byte, limit int64) (*Document, error) {
	text, ok := decodeText(data, false)
	if !ok {
		return nil, &UnsupportedError{Found: "binary data or an unknown text encoding"}
	}
	var v visibleText
	z := html.NewTokenizer(strings.NewReader(text))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break // io.EOF: the tokenizer reads from memory
		}
		v.token(z.Token())
		if int64(v.body.Len()) > limit {
			return nil, errTextTooLong(limit)
		}
	}
	var b strings.Builder
	if title := strings.Join(strings.Fields(v.title), " "); title != "" {
		b.WriteString(title)
		b.WriteString("\n\n")
	}
	b.WriteString(v.body.String())
	return singlePage(FormatHTML, cleanPlain(b.String()))
}

// maxHTMLTitle bounds the title kept: a title is a line, and one that
// runs on (an unclosed <title>) is not.
const maxHTMLTitle = 4 << 10

// headElements may stand in <head>; any other start tag there begins the
// body, as a browser reads a page whose </head> and <body> were left out.
var headElements = map[atom.Atom]bool{
	atom.Title: true, atom.Meta: true, atom.Link: true, atom.Style: true, atom.Script: true,
	atom.Base: true, atom.Noscript: true, atom.Template: true,
}

// visibleText gathers a page's text from its tokens.
type visibleText struct {
	body    strings.Builder
	title   string
	inTitle bool
	hidden  []string // the hidden elements open, innermost last, by tag name
	pre     int      // <pre> and <textarea> elements open
}

func (v *visibleText) token(t html.Token) {
	switch t.Type {
	case html.TextToken:
		if len(v.hidden) == 1 && v.hidden[0] == "head" && strings.TrimSpace(t.Data) != "" {
			v.hidden = v.hidden[:0] // words in <head> begin the body
		}
		switch {
		case v.inTitle:
			if len(v.title) < maxHTMLTitle {
				v.title += t.Data
			}
		case len(v.hidden) == 0:
			v.text(t.Data)
		}
	case html.StartTagToken, html.SelfClosingTagToken:
		v.start(t, t.Type == html.SelfClosingTagToken)
	case html.EndTagToken:
		v.end(t)
	}
}

func (v *visibleText) start(t html.Token, selfClosing bool) {
	if len(v.hidden) == 1 && v.hidden[0] == "head" && !headElements[t.DataAtom] {
		v.hidden = v.hidden[:0] // the body began without a word
	}
	if len(v.hidden) > 0 {
		if !selfClosing && skippedElements[t.DataAtom] && !voidElements[t.DataAtom] {
			v.hidden = append(v.hidden, t.Data)
		} else if t.DataAtom == atom.Title && v.hidden[len(v.hidden)-1] == "head" && v.title == "" {
			v.inTitle = true
		}
		return
	}
	switch {
	case t.DataAtom == atom.Title:
		// A title outside <head> is still the page's title, not text.
		v.inTitle = !selfClosing && v.title == ""
		if !v.inTitle && !selfClosing {
			v.hidden = append(v.hidden, t.Data)
		}
		return
	case skippedElements[t.DataAtom]:
		if !selfClosing {
			v.hidden = append(v.hidden, t.Data)
		}
		return
	case t.DataAtom == atom.Img:
		// Alt text is the author's description of the image and is
		// what a screen reader says; it is worth finding.
		for _, a := range t.Attr {
			if a.Key == "alt" && strings.TrimSpace(a.Val) != "" {
				v.body.WriteString(" " + strings.TrimSpace(a.Val) + " ")
			}
		}
		return
	}
	// A start tag begins a line or a paragraph as its end tag ends one:
	// end tags are often left out (<li>one<li>two), and the next start
	// stands for them.
	switch {
	case paragraphElements[t.DataAtom]:
		v.paragraph()
	case lineElements[t.DataAtom] && t.DataAtom != atom.Br:
		v.beginWith('\n')
	case cellElements[t.DataAtom]:
		v.beginWith(' ')
	}
	if (t.DataAtom == atom.Pre || t.DataAtom == atom.Textarea) && !selfClosing {
		v.pre++
	}
	if t.DataAtom == atom.Br || selfClosing {
		v.closed(t.DataAtom)
	}
}

func (v *visibleText) end(t html.Token) {
	if v.inTitle && t.DataAtom == atom.Title {
		v.inTitle = false
		return
	}
	if len(v.hidden) > 0 {
		// An end tag closes the innermost open element of its name,
		// and any left open inside it.
		for i := len(v.hidden) - 1; i >= 0; i-- {
			if v.hidden[i] == t.Data {
				v.hidden = v.hidden[:i]
				break
			}
		}
		return
	}
	if (t.DataAtom == atom.Pre || t.DataAtom == atom.Textarea) && v.pre > 0 {
		v.pre--
	}
	v.closed(t.DataAtom)
}

// paragraph ends a paragraph with a blank line, once: markup of empty
// elements must not make text the limit counts.
func (v *visibleText) paragraph() {
	if !strings.HasSuffix(v.body.String(), "\n\n") {
		v.body.WriteString("\n\n")
	}
}

// beginWith writes c unless the text already ends with it: what a start
// tag writes for an end tag that may have been left out.
func (v *visibleText) beginWith(c byte) {
	if b := v.body.String(); b != "" && b[len(b)-1] != c {
		v.body.WriteByte(c)
	}
}

// closed writes what ends an element: a paragraph's blank line, a line's
// end, a space between cells.
func (v *visibleText) closed(a atom.Atom) {
	switch {
	case paragraphElements[a]:
		v.paragraph()
	case lineElements[a]:
		v.body.WriteByte('\n')
	case cellElements[a]:
		v.body.WriteByte(' ')
	}
}

// text writes a text token. Source whitespace is not meaningful in HTML
// outside <pre>, so it is collapsed to one space and line structure comes
// only from elements.
func (v *visibleText) text(s string) {
	if v.pre > 0 {
		v.body.WriteString(s)
		return
	}
	fields := strings.Fields(s)
	if len(fields) == 0 {
		if s != "" && !endsWithSpace(v.body.String()) {
			v.body.WriteByte(' ')
		}
		return
	}
	if startsWithSpace(s) {
		v.body.WriteByte(' ')
	}
	for i, f := range fields {
		if i > 0 {
			v.body.WriteByte(' ')
		}
		v.body.WriteString(f)
	}
	if endsWithSpace(s) {
		v.body.WriteByte(' ')
	}
}

// voidElements have no end tag, so they never open a hidden stretch.
var voidElements = map[atom.Atom]bool{
	atom.Area: true, atom.Base: true, atom.Br: true, atom.Col: true, atom.Embed: true,
	atom.Hr: true, atom.Img: true, atom.Input: true, atom.Link: true, atom.Meta: true,
	atom.Source: true, atom.Track: true, atom.Wbr: true,
}

func startsWithSpace(s string) bool {
	return s != "" && strings.ContainsRune(" \t\r\n\f", rune(s[0]))
}

func endsWithSpace(s string) bool {
	return s != "" && strings.ContainsRune(" \t\r\n\f", rune(s[len(s)-1]))
}
