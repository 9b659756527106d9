package pdf

import (
	"context"
	"errors"
	"testing"
)

func TestExtractHTML(t *testing.T) {
	in := `<!DOCTYPE html>
<html><head><title>  The   Title </title><style>p { color: red }</style>
<script>var x = "<p>not text</p>";</script></head>
<body>
<h1>Heading</h1>
<p>First   paragraph with
   an &amp; entity and <b>bold</b> words.</p>
<ul><li>one</li><li>two</li></ul>
<table><tr><td>cell a</td><td>cell b</td></tr></table>
<img src="x.png" alt="a chart of sales">
<noscript>enable js</noscript>
<p>Last<br>line</p>
</body></html>`
	doc, err := Extract(context.Background(), []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if doc.Format != FormatHTML || doc.Paged || len(doc.Pages) != 1 || doc.Pages[0].Number != 0 {
		t.Fatalf("unexpected document shape: %+v", doc)
	}
	want := "The Title\n\nHeading\n\nFirst paragraph with an & entity and bold words.\n\none\ntwo\n\ncell a cell b\n\na chart of sales\n\nLast\nline"
	if got := doc.Pages[0].Text; got != want {
		t.Errorf("got:\n%q\nwant:\n%q", got, want)
	}
}

func TestExtractHTMLWithoutText(t *testing.T) {
	_, err := Extract(context.Background(), []byte("<html><body><script>x()</script></body></html>"))
	if !errors.Is(err, ErrNoText) {
		t.Fatalf("got %v, want ErrNoText", err)
	}
	if err.Error() == ErrNoText.Error() {
		t.Errorf("HTML without text should not talk about scanned PDFs: %v", err)
	}
}
