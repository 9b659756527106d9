package search

import (
	"errors"
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
		{`{"metadata.a": {"eq": "1", "eq": "1"}}`, "filter", `key "eq" twice`},
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
		flt, err := ParseFilter(raw)
		if err != nil {
			var fe *FilterError
			if !errors.As(err, &fe) || fe.Path == "" || fe.Msg == "" {
				t.Fatalf("error %v is not a FilterError with a path and message", err)
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
