package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	long := strings.Repeat("é", 1000) // two bytes each: a truncation may fall inside one
	for _, c := range []struct{ in, str, quote string }{
		{"", "", `""`},
		{"owner_id", "owner_id", `"owner_id"`},
		{strings.Repeat("a", Max), strings.Repeat("a", Max), `"` + strings.Repeat("a", Max) + `"`},
		{strings.Repeat("a", Max+1), strings.Repeat("a", Max) + "…", `"` + strings.Repeat("a", Max) + `"…`},
		{long, strings.Repeat("é", Max/2) + "…", `"` + strings.Repeat("é", Max/2) + `"…`},
		{"a" + long, "a" + strings.Repeat("é", Max/2-1) + "…", `"a` + strings.Repeat("é", Max/2-1) + `"…`},
		{"line\nbreak", "line\nbreak", `"line\nbreak"`},
	} {
		if got := String(c.in); got != c.str || !utf8.ValidString(got) {
			t.Errorf("String(%.20q…) = %q, want %q", c.in, got, c.str)
		}
		if got := Quote(c.in); got != c.quote {
			t.Errorf("Quote(%.20q…) = %q, want %q", c.in, got, c.quote)
		}
	}
	// Control characters quote to four bytes each: fewer of them fit.
	for _, s := range []string{strings.Repeat("\x00", 1<<20), strings.Repeat("a\u2028\xff", 1<<10), "\x01" + strings.Repeat("é", 100)} {
		got := Quote(s)
		if len(got) > Max+len(`""…`) || !strings.HasSuffix(got, `"…`) || len(got) < Max-4 {
			t.Errorf("Quote(%.20q…) = %s: %d bytes", s, got, len(got))
		}
	}
	if got := Quote(strings.Repeat("\x00", 16)); got != `"`+strings.Repeat(`\x00`, 16)+`"` {
		t.Errorf("Quote of 16 NULs = %s", got)
	}
}

func TestTo(t *testing.T) {
	if got := To("abcdef", 6); got != "abcdef" {
		t.Errorf("To at its length = %q", got)
	}
	if got := To("abcdé", 5); got != "abcd…" {
		t.Errorf("To inside a character = %q", got)
	}
}
