package search

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docsift/docsift/index"
)

func TestFilterMatches(t *testing.T) {
	jan := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	legal := &index.Document{ID: "doc_a", CreatedAt: jan, Metadata: map[string]string{"dept": "legal", "region": "eu"}}
	sales := &index.Document{ID: "doc_b", CreatedAt: jan.Add(time.Hour), Metadata: map[string]string{"dept": "sales"}}
	bare := &index.Document{ID: "doc_c", CreatedAt: jan.Add(2 * time.Hour)}
	many := `["a","b","c","d","e","f","g","h","legal"]` // a map-backed set
	for _, c := range []struct {
		filter string
		want   []*index.Document
	}{
		{`{"metadata.dept": {"eq": "legal"}}`, []*index.Document{legal}},
		{`{"metadata.dept": {"in": ["sales", "hr"]}}`, []*index.Document{sales}},
		{`{"metadata.dept": {"in": ` + many + `}}`, []*index.Document{legal}},
		{`{"metadata.dept": {"eq": ""}}`, nil},
		{`{"document_id": {"in": ["doc_c", "doc_a"]}}`, []*index.Document{legal, bare}},
		{`{"document_id": {"eq": "doc_b"}}`, []*index.Document{sales}},
		{`{"created_at": {"gt": "2026-01-01T00:00:00Z"}}`, []*index.Document{sales, bare}},
		{`{"created_at": {"gte": "2026-01-01T00:00:00Z", "lt": "2026-01-01T02:00:00Z"}}`, []*index.Document{legal, sales}},
		{`{"created_at": {"lte": "2026-01-01T01:00:00+00:00"}}`, []*index.Document{legal, sales}},
		{`{"created_at": {"gte": "2026-01-01T02:00:00Z", "lte": "2026-01-01T02:00:00Z"}}`, []*index.Document{bare}},
		{`{"and": [{"metadata.region": {"eq": "eu"}}, {"metadata.dept": {"eq": "legal"}}]}`, []*index.Document{legal}},
		{`{"or": [{"metadata.dept": {"eq": "sales"}}, {"document_id": {"eq": "doc_c"}}]}`, []*index.Document{sales, bare}},
		{`{"and": [{"or": [{"metadata.dept": {"eq": "sales"}}]}]}`, []*index.Document{sales}},
	} {
		f, err := ParseFilter([]byte(c.filter))
		if err != nil {
			t.Errorf("%s: %v", c.filter, err)
			continue
		}
		for _, d := range []*index.Document{legal, sales, bare} {
			want := false
			for _, w := range c.want {
				want = want || w == d
			}
			if got := f.Match(d); got != want {
				t.Errorf("%s on %s: %v, want %v", c.filter, d.ID, got, want)
			}
		}
	}
	if f, err := ParseFilter([]byte(" null ")); f != nil || err != nil {
		t.Errorf("null: %v, %v; want no filter", f, err)
	}
	if f, err := ParseFilter(nil); f != nil || err != nil || f.indexFilter() != nil {
		t.Errorf("absent: %v, %v; want no filter", f, err)
	}
}

// The index keeps a filter's chunks under its key: one filter written
// with other spaces is the same key, another filter another key.
func TestFilterKeys(t *testing.T) {
	key := func(raw string) string {
		t.Helper()
		f, err := ParseFilter([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		return f.key()
	}
	a := key(`{"metadata.team": {"eq": "a"}}`)
	if b := key(" {\"metadata.team\":{\"eq\":\"a\"}}\n"); a == "" || b != a {
		t.Errorf("one filter, two spacings: keys %q and %q", a, b)
	}
	if b := key(`{"metadata.team": {"eq": "b"}}`); b == a {
		t.Error("two filters, one key")
	}
	var none *Filter
	if none.key() != "" {
		t.Error("no filter has a key")
	}
}

func TestFilterErrorsNameThePart(t *testing.T) {
	for _, c := range []struct{ filter, path, msg string }{
		{`[]`, "filter", "must be an object"},
		{`{"and": [{"metadata.a": {"eq": "1"}}, {"or": [{"metadata.b": {"eq": 2}}]}]}`, "filter.and[1].or[0].metadata.b.eq", `values are strings: write "2"`},
		{`{"created_at": {"gte": "yesterday"}}`, "filter.created_at.gte", "RFC 3339"},
		{`{"created_at": {}}`, "filter.created_at", "must hold a bound"},
		{`{"created_at": {"lt": "2026-01-01T00:00:00Z", "lte": "2026-01-01T00:00:00Z"}}`, "filter.created_at", "two upper bounds"},
		{`{"created_at": {"gt": "2026-01-01T00:00:00Z", "lt": "2026-01-01T00:00:00Z"}}`, "filter.created_at", "range is empty"},
		{`{"metadata.a": {"eq": "1"}} {}`, "filter", "more than one JSON value"},
		{`{"metadata.a": {"eq": "1", "eq": "1"}}`, "filter.metadata.a", `key "eq" twice`},
		{strings.Repeat(`{"and": [`, 30) + `{}` + strings.Repeat(`]}`, 30), "filter", `nested deeper than a filter may be ("and" and "or" at most 5 deep)`},
	} {
		_, err := ParseFilter([]byte(c.filter))
		var fe *FilterError
		if !errors.As(err, &fe) {
			t.Errorf("%s: error %v, want a FilterError", c.filter, err)
			continue
		}
		if fe.Path != c.path || !strings.Contains(fe.Msg, c.msg) {
			t.Errorf("%s: %q at %q, want %q at %q", c.filter, fe.Msg, fe.Path, c.msg, c.path)
		}
	}
}

// FuzzParseFilter: any input is refused with a FilterError or parses into
// a filter that checks documents without panicking.
func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{
		`{"metadata.dept": {"eq": "legal"}}`,
		`{"and": [{"metadata.a": {"in": ["x", "y"]}}, {"created_at": {"gte": "2026-01-01T00:00:00Z"}}, {"or": [{"document_id": {"in": ["doc_a"]}}]}]}`,
		`{"created_at": {"gt": "2026-01-01T00:00:00Z", "lte": "2027-01-01T00:00:00+02:00"}}`,
		`{"document_id": {"eq": "doc_a"}}`,
		`null`, `[]`, `{}`, `{"and": []}`,
	} {
		f.Add([]byte(s))
	}
	docs := []*index.Document{
		{ID: "doc_a", CreatedAt: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), Metadata: map[string]string{"dept": "legal", "a": "x"}},
		{ID: "doc_b"},
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var compact bytes.Buffer
		if json.Compact(&compact, raw) == nil && spaceless(raw) != compact.Len() {
			t.Fatalf("spaceless = %d, json.Compact writes %d bytes", spaceless(raw), compact.Len())
		}
		flt, err := ParseFilter(raw)
		if err != nil {
			var fe *FilterError
			if !errors.As(err, &fe) || fe.Path == "" || fe.Msg == "" {
				t.Fatalf("error %v is not a FilterError with a path and message", err)
			}
			if len(err.Error()) > maxErrorBytes {
				t.Fatalf("an error of %d bytes: %.200s…", len(err.Error()), err)
			}
			return
		}
		if flt == nil {
			return
		}
		for _, d := range docs {
			flt.Match(d)
		}
	})
}

// manyKeys is the filter of the hostile run: n distinct keys in one object,
// 13 bytes each.
func manyKeys(n int) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%07d":1`, i)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// costsOf is the time one call of f and one of g take: the least of five
// rounds of calls, each run for 20 ms at least, in turns (f, g, f, g, ...)
// so that a busy moment of a shared machine falls on both rather than on
// one. The two mean something only beside each other.
func costsOf(f, g func()) (time.Duration, time.Duration) {
	one := func(f func()) time.Duration {
		n, start := 0, time.Now()
		for n == 0 || time.Since(start) < 20*time.Millisecond {
			f()
			n++
		}
		return time.Since(start) / time.Duration(n)
	}
	a, b := time.Duration(1<<63-1), time.Duration(1<<63-1)
	for range 5 {
		a, b = min(a, one(f)), min(b, one(g))
	}
	return a, b
}

// maxErrorBytes bounds a filter error, whatever the filter: a path and a
// sentence, quoting a few clipped pieces of the input.
const maxErrorBytes = 512

// TestFilterParseIsLinear: ten times the input costs about ten times as
// much to refuse or parse (or less, where reading stops early), never a
// hundred times, whatever its shape. The 100,000 keys of the hostile run
// were compared with one another in pairs: 35 s of CPU.
func TestFilterParseIsLinear(t *testing.T) {
	repeat := func(head, item, sep, tail string, n int) []byte {
		var b bytes.Buffer
		b.WriteString(head)
		for i := range n {
			if i > 0 {
				b.WriteString(sep)
			}
			b.WriteString(strings.ReplaceAll(item, "#", strconv.Itoa(i)))
		}
		b.WriteString(tail)
		return b.Bytes()
	}
	for _, c := range []struct {
		name string
		of   func(n int) []byte
	}{
		{"keys of one object", manyKeys},
		{"keys of one condition", func(n int) []byte { return repeat(`{"metadata.a":{`, `"op#":"v"`, ",", "}}", n) }},
		{"clauses of an or", func(n int) []byte { return repeat(`{"or":[`, `{"metadata.k#":{"eq":"v"}}`, ",", "]}", n) }},
		{"values of an in list", func(n int) []byte { return repeat(`{"metadata.a":{"in":[`, `"v#"`, ",", "]}}", n) }},
		{"numbers in an array", func(n int) []byte { return repeat(`{"and":[`, `#`, ",", "]}", n) }},
		{"objects in objects", func(n int) []byte { return repeat(``, `{"and":[`, "", "", n) }},
		{"one long value", func(n int) []byte { return repeat(`{"metadata.a":{"eq":"`, `xxxxxxxxxx`, "", `"}}`, n) }},
		{"spaces", func(n int) []byte { return repeat(`{"metadata.a":`, "          ", "", `{"eq":"v"}}`, n) }},
	} {
		const n = 2_000
		small, large := c.of(n), c.of(10*n)
		a, b := costsOf(func() { ParseFilter(small) }, func() { ParseFilter(large) })
		// Linear is 10 at most; quadratic, 100.
		if ratio := float64(b) / float64(a); ratio > 30 {
			t.Errorf("%s: %d bytes cost %.1f times what %d bytes cost (%v, %v)", c.name, len(large), ratio, len(small), b, a)
		}
	}
}

// TestHugeFilterRefusedAtOnce: the hostile run's filter (1.3 MB, 100,000
// keys) is refused before it is read as JSON: in a few allocations, none
// per key, and in less time than encoding/json takes to check that it is
// JSON at all, with an error of a few hundred bytes. It used to take 13 to
// 35 s of CPU and answer with 1.2 MB of its own keys.
func TestHugeFilterRefusedAtOnce(t *testing.T) {
	raw := manyKeys(100_000)
	_, err := ParseFilter(raw)
	var fe *FilterError
	if !errors.As(err, &fe) || fe.Path != "filter" || !strings.Contains(fe.Msg, "over the limit of "+strconv.Itoa(maxFilterBytes)) {
		t.Fatalf("error %.300v, want the filter's size over its limit", err)
	}
	if len(err.Error()) > 300 {
		t.Fatalf("the error is %d bytes: %.300s…", len(err.Error()), err)
	}
	// Three, the error's; a few more when the race detector drops what
	// fmt's pool holds. Reading it took some per key.
	if allocs := testing.AllocsPerRun(5, func() { ParseFilter(raw) }); allocs > 20 {
		t.Errorf("refusing it took %.0f allocations", allocs)
	}
	refuse, valid := costsOf(func() { ParseFilter(raw) }, func() { json.Valid(raw) })
	if refuse > valid {
		t.Errorf("refusing it took %v, longer than json.Valid's one pass (%v)", refuse, valid)
	}
}

// The limit on a filter's size is above every filter within the other
// limits: the largest such filter is refused for what it breaks, never for
// its size, and one byte more of it is.
func TestFilterSizeLimitFitsEveryFilter(t *testing.T) {
	long := func(c byte, n int) string { return strings.Repeat(string(c), n) }
	value := `"` + long('v', maxFilterString) + `"`
	var values []string
	for range maxFilterValues / (maxFilterClauses - 2) {
		values = append(values, value)
	}
	var clauses []string
	for i := range maxFilterClauses - 2 { // the and, the or
		if i == 0 {
			clauses = append(clauses, `{"created_at":{"gte":"2026-01-01T00:00:00Z","lte":"2027-01-01T00:00:00`+long('0', maxFilterString-19)+`Z"}}`)
			continue
		}
		key := fmt.Sprintf("metadata.%d", i) + long('k', maxFilterString-len(fmt.Sprintf("metadata.%d", i)))
		clauses = append(clauses, `{"`+key+`":{"in":[`+strings.Join(values, ",")+`]}}`)
	}
	raw := `{"and":[{"or":[` + strings.Join(clauses, ",") + `]}]}`
	if n := spaceless([]byte(raw)); n > maxFilterBytes || n < maxFilterBytes*3/4 {
		t.Fatalf("the test's filter is %d bytes; the limit is %d", n, maxFilterBytes)
	}
	_, err := ParseFilter([]byte(raw))
	if err == nil || strings.Contains(err.Error(), "bytes without spaces") {
		// Its created_at bound is not a timestamp: that is the error.
		t.Fatalf("a filter within the limits: %.300v", err)
	}
	if !strings.Contains(err.Error(), "filter.and[0].or[0].created_at.lte") {
		t.Fatalf("a filter within the limits: %.300v", err)
	}
	if _, err := ParseFilter([]byte(long(' ', 10) + `{"metadata.a":{"eq":"` + long('v', maxFilterBytes) + `"}}`)); err == nil || !strings.Contains(err.Error(), "bytes without spaces") {
		t.Fatalf("a filter over the size limit: %.300v", err)
	}
}

// However hostile a filter, its error quotes a few clipped pieces of it.
func TestFilterErrorsAreShort(t *testing.T) {
	long := strings.Repeat("\u0000", maxFilterString/6) + strings.Repeat("k", 600)
	nested := strings.Repeat(`{"and":[{"`+strings.Repeat("k", 100)+`":[`, 6) + `{"a":1,"b":2,"c":3}`
	for _, raw := range []string{
		string(manyKeys(10_000)),
		`{"` + long + `":1}`,
		`{"metadata.` + strings.Repeat("\u0001", 80) + `":{"eq":` + strings.Repeat("9", 400_000) + `}}`,
		`{"metadata.a":{"in":[` + strings.Repeat(`"a",`, 5000) + `"b"]}}`,
		`{"created_at":{"gte":"` + strings.Repeat("\u0002", 80) + `"}}`,
		`{"metadata.` + strings.Repeat("\u0003", 80) + `":{"` + strings.Repeat("\u0004", 80) + `":"x"}}`,
		`{"` + strings.Repeat("\u0005", 80) + `":1,"` + strings.Repeat("\u0006", 80) + `":2,"c":3}`,
		nested,
		`{"metadata.a":{"eq":"` + strings.Repeat("x", 500_000) + `"}}`,
		`{"metadata.a":{"eq":"x"}} ` + strings.Repeat("}", 500_000),
	} {
		_, err := ParseFilter([]byte(raw))
		if err == nil {
			t.Errorf("%.80s…: accepted", raw)
			continue
		}
		if len(err.Error()) > maxErrorBytes {
			t.Errorf("%.80s…: an error of %d bytes: %.300s…", raw, len(err.Error()), err)
		}
	}
	// A path through nesting of long keys keeps its end.
	_, err := ParseFilter([]byte(nested))
	var fe *FilterError
	if !errors.As(err, &fe) || len(fe.Path) > maxPathBytes+len("…") || !strings.HasPrefix(fe.Path, "filter…") || !strings.HasSuffix(fe.Path, "[0]") {
		t.Errorf("nested: %v", err)
	}
}

// Errors name a value's kind as JSON does, never by a Go type.
func TestKindOfSaysNoGoType(t *testing.T) {
	for _, v := range []any{struct{}{}, map[string]any{}, 1.5, []string{}} {
		if k := kindOf(v); strings.ContainsAny(k, "[]{}.") || strings.Contains(k, "float") || strings.Contains(k, "map") {
			t.Errorf("kindOf(%T) = %q", v, k)
		}
	}
}

// BenchmarkHugeFilter is the hostile run's filter: 1.3 MB, 100,000 keys.
func BenchmarkHugeFilter(b *testing.B) {
	raw := manyKeys(100_000)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		ParseFilter(raw)
	}
}
