// Package clip bounds what an error message quotes of its caller's input.
// A name, a value, an id or a path in a request can be as long as the
// request may be (a megabyte of body, of headers): an error that echoed it
// whole would hand it back, and to every log and screen it reaches.
package clip

import (
	"strconv"
	"unicode/utf8"
)

// Max is the most bytes of one piece of input a message quotes: enough to
// recognise a field name, an id or the start of a value.
const Max = 64

// String is s truncated to at most Max bytes, at a character's start,
// and followed by "…" when it was truncated.
func String(s string) string { return To(s, Max) }

// To is s truncated to at most n bytes, as String truncates it to Max.
func To(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:truncateAt(s, n)] + "…"
}

// Quote is s quoted as Go's %q quotes it, in at most Max bytes between the
// quotes (a control character takes four, \x01), with "…" after the
// closing quote when s was truncated, so that it is not read as part of s.
func Quote(s string) string {
	n := min(len(s), Max)
	for {
		n = truncateAt(s, n)
		q := strconv.Quote(s[:n])
		over := len(q) - 2 - Max
		switch {
		case over <= 0 && n == len(s):
			return q
		case over <= 0:
			return q + "…"
		}
		n -= (over + 3) / 4 // each byte quotes to four at most
	}
}

// truncateAt is where s is truncated to at most n bytes: not inside a
// UTF-8 character.
func truncateAt(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}
