package search

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/docsift/docsift/index"
	"github.com/docsift/docsift/internal/clip"
)

// A query's filter restricts it to some of the owner's documents. The
// grammar is JSON, every object holding exactly one key, so that each
// clause reads one way:
//
//	clause    = {"and": [clause, …]} | {"or": [clause, …]} | condition
//	condition = {"metadata.KEY": {"eq": "v"}} | {"metadata.KEY": {"in": ["v", …]}}
//	          | {"document_id": {"eq": "doc_…"}} | {"document_id": {"in": ["doc_…", …]}}
//	          | {"created_at": {"gte"|"gt": TIME, "lte"|"lt": TIME}}   (one bound or both)
//
// TIME is an RFC 3339 timestamp. Metadata values are strings, compared
// exactly; a document without the key matches neither eq nor in.
//
// Limits keep a filter cheap to read and to check against every document
// of an owner: nesting, clauses, listed values and strings are bounded,
// and so is the whole, which a reader checks before anything else.
const (
	maxFilterDepth   = 5    // levels of and/or
	maxFilterClauses = 64   // objects: and, or and conditions
	maxFilterValues  = 1024 // strings in all "in" lists together
	// maxFilterString bounds each key and value of a filter, in bytes:
	// filters compare labels, ids and short URLs, and 512 bytes hold any
	// of them (the longest id docsift takes from callers, an external_id,
	// is 256).
	maxFilterString = 512
	// maxFilterBytes is the longest a filter may be, its spaces left out.
	// No filter within the limits above is longer, written without \u
	// escapes: a clause holds at most three strings (created_at and its
	// two bounds; a metadata key and its value) and 64 bytes of names and
	// punctuation, and each value of an "in" list is a string, its quotes
	// and a comma. A longer one is refused before it is read, for the cost
	// of one pass over its bytes.
	maxFilterBytes = maxFilterClauses*(3*maxFilterString+64) + maxFilterValues*(maxFilterString+3)
	// maxMembers is the most keys an object of a filter holds: a clause
	// holds one, created_at's range two. Reading an object stops at the
	// one past it.
	maxMembers = 2
	// setFromValues is the size of an "in" list from which it is checked
	// through a map rather than by comparing each value.
	setFromValues = 8
)

// Filter is a parsed filter. The zero value is not a filter; use
// ParseFilter.
type Filter struct {
	root clause
	// hash names the filter for the index, which keeps the set of chunks
	// a filter allows for the next query with it (see index.Query): a
	// hash of its JSON without spaces, so that the same filter written
	// alike is the same key.
	hash string
}

// clause is one node of a filter.
type clause interface {
	match(d *index.Document) bool
}

// FilterError is a filter that is not valid: Path says where (filter,
// filter.and[1], filter.created_at.gte), Msg what is wrong, in the API's
// words.
type FilterError struct {
	Path string
	Msg  string
}

func (e *FilterError) Error() string { return e.Path + ": " + e.Msg }

// ParseFilter parses and validates a filter (the JSON of a query's
// "filter"). null is no filter: nil, nil. Its cost is linear in len(raw),
// and no error quotes more than a few hundred bytes of it.
func ParseFilter(raw []byte) (*Filter, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	if n := spaceless(raw); n > maxFilterBytes {
		return nil, &FilterError{"filter", fmt.Sprintf("is %d bytes without spaces, over the limit of %d: a filter holds at most %d clauses and %d values in \"in\" lists, of at most %d bytes each",
			n, maxFilterBytes, maxFilterClauses, maxFilterValues, maxFilterString)}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := readValue(dec, 0)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			err = errors.New("holds more than one JSON value")
		}
	}
	var syntax *json.SyntaxError
	var refused *readError
	switch {
	case errors.As(err, &syntax) || errors.Is(err, io.ErrUnexpectedEOF):
		return nil, &FilterError{"filter", "is not valid JSON: " + strings.TrimPrefix(err.Error(), "json: ")}
	case errors.As(err, &refused):
		return nil, &FilterError{refused.path(), refused.msg}
	case err != nil:
		return nil, &FilterError{"filter", err.Error()}
	}
	p := &filterParser{}
	root, err := p.clause("filter", v, 0)
	if err != nil {
		return nil, err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, &FilterError{"filter", "is not valid JSON: " + strings.TrimPrefix(err.Error(), "json: ")}
	}
	sum := sha256.Sum256(compact.Bytes())
	return &Filter{root: root, hash: string(sum[:])}, nil
}

// spaceless is the length of raw without the spaces between its tokens
// (what json.Compact would write), found without reading it as JSON.
func spaceless(raw []byte) int {
	n, inString, escaped := 0, false, false
	for _, b := range raw {
		switch {
		case inString:
			n++
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
		case b == ' ' || b == '\t' || b == '\n' || b == '\r':
		default:
			n++
			inString = b == '"'
		}
	}
	return n
}

// Match reports whether the filter allows a document.
func (f *Filter) Match(d *index.Document) bool { return f.root.match(d) }

// key is the name the index keeps the filter's chunks under; "" for no
// filter.
func (f *Filter) key() string {
	if f == nil {
		return ""
	}
	return f.hash
}

// indexFilter is the filter as the index asks it; nil for no filter.
func (f *Filter) indexFilter() index.Filter {
	if f == nil {
		return nil
	}
	return f.root.match
}

// filterParser checks the limits across a whole filter while it is read.
type filterParser struct {
	clauses, values int
}

func (p *filterParser) clause(path string, v any, depth int) (clause, error) {
	obj, ok := v.(object)
	if !ok {
		return nil, &FilterError{path, fmt.Sprintf(`must be an object such as {"metadata.department": {"eq": "legal"}}, not %s`, kindOf(v))}
	}
	if p.clauses++; p.clauses > maxFilterClauses {
		return nil, &FilterError{"filter", fmt.Sprintf("has more than %d clauses", maxFilterClauses)}
	}
	switch len(obj) {
	case 0:
		return nil, &FilterError{path, `is an empty object: give one condition, "and" or "or"`}
	case 1:
	default:
		return nil, &FilterError{path, fmt.Sprintf(`holds %d keys (%s): a clause holds exactly one; combine conditions with "and" or "or"`, len(obj), obj.keys())}
	}
	key, val := obj[0].key, obj[0].value
	switch {
	case key == "and" || key == "or":
		return p.combination(path+"."+key, key, val, depth+1)
	case key == "document_id":
		return p.stringCondition(path+"."+key, val, func(eq string) clause { return documentIs(eq) }, func(in []string) clause { return documentIn(newStringSet(in)) })
	case key == "created_at":
		return createdCondition(path+"."+key, val)
	case strings.HasPrefix(key, "metadata."):
		mkey := strings.TrimPrefix(key, "metadata.")
		if mkey == "" {
			return nil, &FilterError{path, `"metadata." names no key: write "metadata.KEY"`}
		}
		return p.stringCondition(path+"."+clip.String(key), val,
			func(eq string) clause { return metadataIs{mkey, eq} },
			func(in []string) clause { return metadataIn{mkey, newStringSet(in)} })
	}
	return nil, &FilterError{path, fmt.Sprintf(`unknown field %s: filter on "document_id", "created_at" or "metadata.KEY", or combine clauses with "and" or "or"`, clip.Quote(key))}
}

func (p *filterParser) combination(path, op string, v any, depth int) (clause, error) {
	if depth > maxFilterDepth {
		return nil, &FilterError{path, fmt.Sprintf(`"and" and "or" are nested more than %d deep`, maxFilterDepth)}
	}
	list, ok := v.([]any)
	if !ok {
		return nil, &FilterError{path, fmt.Sprintf("must be an array of clauses, not %s", kindOf(v))}
	}
	if len(list) == 0 {
		return nil, &FilterError{path, "must hold at least one clause"}
	}
	cs := make([]clause, len(list))
	for i, item := range list {
		c, err := p.clause(fmt.Sprintf("%s[%d]", path, i), item, depth)
		if err != nil {
			return nil, err
		}
		cs[i] = c
	}
	if len(cs) == 1 {
		return cs[0], nil
	}
	if op == "and" {
		return and(cs), nil
	}
	return or(cs), nil
}

// stringCondition reads {"eq": "v"} or {"in": ["v", …]}.
func (p *filterParser) stringCondition(path string, v any, eq func(string) clause, in func([]string) clause) (clause, error) {
	op, arg, err := oneOperator(path, v, `{"eq": "…"} or {"in": ["…", …]}`)
	if err != nil {
		return nil, err
	}
	path += "." + clip.String(op)
	switch op {
	case "eq":
		s, ok := arg.(string)
		if !ok {
			return nil, &FilterError{path, fmt.Sprintf("must be a string, not %s%s", kindOf(arg), quoteHint(arg))}
		}
		return eq(s), nil
	case "in":
		list, ok := arg.([]any)
		if !ok {
			return nil, &FilterError{path, fmt.Sprintf("must be an array of strings, not %s", kindOf(arg))}
		}
		if len(list) == 0 {
			return nil, &FilterError{path, "must hold at least one value"}
		}
		if p.values += len(list); p.values > maxFilterValues {
			return nil, &FilterError{"filter", fmt.Sprintf(`lists more than %d values in "in" arrays`, maxFilterValues)}
		}
		ss := make([]string, len(list))
		for i, item := range list {
			s, ok := item.(string)
			if !ok {
				return nil, &FilterError{fmt.Sprintf("%s[%d]", path, i), fmt.Sprintf("must be a string, not %s%s", kindOf(item), quoteHint(item))}
			}
			ss[i] = s
		}
		return in(ss), nil
	}
	return nil, &FilterError{path, fmt.Sprintf(`unknown operator %s: use "eq" or "in"`, clip.Quote(op))}
}

// oneOperator reads an object of exactly one operator.
func oneOperator(path string, v any, example string) (string, any, error) {
	obj, ok := v.(object)
	if !ok {
		return "", nil, &FilterError{path, fmt.Sprintf("must be an object such as %s, not %s", example, kindOf(v))}
	}
	if len(obj) != 1 {
		return "", nil, &FilterError{path, fmt.Sprintf("must hold exactly one operator, such as %s; it holds %d", example, len(obj))}
	}
	return obj[0].key, obj[0].value, nil
}

// createdCondition reads {"gte"|"gt": TIME, "lte"|"lt": TIME}, with one
// bound or both.
func createdCondition(path string, v any) (clause, error) {
	const example = `{"gte": "2026-01-01T00:00:00Z"}`
	obj, ok := v.(object)
	if !ok {
		return nil, &FilterError{path, fmt.Sprintf("must be an object such as %s, not %s", example, kindOf(v))}
	}
	if len(obj) == 0 {
		return nil, &FilterError{path, fmt.Sprintf("must hold a bound, such as %s", example)}
	}
	var r createdIn
	for _, m := range obj {
		at := path + "." + clip.String(m.key)
		var bound *time.Time
		switch m.key {
		case "gt", "gte":
			if r.from != nil {
				return nil, &FilterError{path, `holds two lower bounds: give one of "gt" and "gte"`}
			}
			bound, r.fromOpen = new(time.Time), m.key == "gt"
			r.from = bound
		case "lt", "lte":
			if r.to != nil {
				return nil, &FilterError{path, `holds two upper bounds: give one of "lt" and "lte"`}
			}
			bound, r.toOpen = new(time.Time), m.key == "lt"
			r.to = bound
		default:
			return nil, &FilterError{at, fmt.Sprintf(`unknown operator %s: use "gt", "gte", "lt" or "lte"`, clip.Quote(m.key))}
		}
		s, ok := m.value.(string)
		if !ok {
			return nil, &FilterError{at, fmt.Sprintf(`must be an RFC 3339 timestamp string such as "2026-01-01T00:00:00Z", not %s`, kindOf(m.value))}
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, &FilterError{at, fmt.Sprintf(`%s is not an RFC 3339 timestamp such as "2026-01-01T00:00:00Z"`, clip.Quote(s))}
		}
		*bound = t
	}
	if r.from != nil && r.to != nil && (r.to.Before(*r.from) || (r.to.Equal(*r.from) && (r.fromOpen || r.toOpen))) {
		return nil, &FilterError{path, "the range is empty: its lower bound is not before its upper bound"}
	}
	return r, nil
}

// quoteHint suggests quoting a number or boolean: metadata values are
// strings.
func quoteHint(v any) string {
	switch v := v.(type) {
	case json.Number:
		return fmt.Sprintf(` (values are strings: write %s)`, clip.Quote(string(v)))
	case bool:
		return fmt.Sprintf(` (values are strings: write "%t")`, v)
	}
	return ""
}

// The clauses.

type and []clause

func (cs and) match(d *index.Document) bool {
	for _, c := range cs {
		if !c.match(d) {
			return false
		}
	}
	return true
}

type or []clause

func (cs or) match(d *index.Document) bool {
	for _, c := range cs {
		if c.match(d) {
			return true
		}
	}
	return false
}

type metadataIs struct{ key, value string }

func (c metadataIs) match(d *index.Document) bool {
	v, ok := d.Meta(c.key)
	return ok && v == c.value
}

type metadataIn struct {
	key    string
	values stringSet
}

func (c metadataIn) match(d *index.Document) bool {
	v, ok := d.Meta(c.key)
	return ok && c.values.has(v)
}

type documentIs string

func (c documentIs) match(d *index.Document) bool { return d.ID == string(c) }

type documentIn stringSet

func (c documentIn) match(d *index.Document) bool { return stringSet(c).has(d.ID) }

// createdIn is a range of creation times; a nil bound is open.
type createdIn struct {
	from, to         *time.Time
	fromOpen, toOpen bool // gt, lt rather than gte, lte
}

func (c createdIn) match(d *index.Document) bool {
	t := d.CreatedAt
	if c.from != nil && (t.Before(*c.from) || (c.fromOpen && t.Equal(*c.from))) {
		return false
	}
	if c.to != nil && (t.After(*c.to) || (c.toOpen && t.Equal(*c.to))) {
		return false
	}
	return true
}

// stringSet is a set of strings: a list while short (comparing a few
// strings beats hashing one), a map beyond.
type stringSet struct {
	list []string
	set  map[string]struct{}
}

func newStringSet(ss []string) stringSet {
	if len(ss) < setFromValues {
		return stringSet{list: ss}
	}
	set := make(map[string]struct{}, len(ss))
	for _, s := range ss {
		set[s] = struct{}{}
	}
	return stringSet{set: set}
}

func (s stringSet) has(v string) bool {
	if s.set != nil {
		_, ok := s.set[v]
		return ok
	}
	for _, x := range s.list {
		if x == v {
			return true
		}
	}
	return false
}

// A JSON reader that keeps objects' keys in order and refuses a key given
// twice (which encoding/json would silently resolve to the last), so that
// no filter reads two ways. It stops at the first thing no filter holds,
// so that what it reads of a hostile filter costs no more than its bytes.

// object is a JSON object in the order its members were written.
type object []member

type member struct {
	key   string
	value any
}

// keys lists the object's keys, quoted and clipped, for an error.
func (o object) keys() string {
	ks := make([]string, len(o))
	for i, m := range o {
		ks[i] = clip.Quote(m.key)
	}
	return strings.Join(ks, ", ")
}

// maxJSONDepth bounds the nesting readValue follows, and so its stack:
// deeper than any filter within maxFilterDepth needs.
const maxJSONDepth = 4*maxFilterDepth + 8

// readError is what readValue refuses, at a place under the value it was
// reading: each level puts its own part of the place (".and", "[1]")
// before the error as it goes up, so that no place is built but the one
// an error names.
type readError struct {
	at  []string // the place's parts, innermost first
	msg string
}

func (e *readError) Error() string { return e.path() + ": " + e.msg }

// within puts a part of the place before the error's, when err is a
// readError.
func within(err error, part string) error {
	if re, ok := err.(*readError); ok {
		re.at = append(re.at, part)
	}
	return err
}

// maxPathBytes bounds a place an error names: past it, the middle goes.
const maxPathBytes = 200

// path is the error's place, from "filter".
func (e *readError) path() string {
	var b strings.Builder
	b.WriteString("filter")
	for i := len(e.at) - 1; i >= 0; i-- {
		b.WriteString(e.at[i])
	}
	p := b.String()
	if len(p) > maxPathBytes {
		// Keep the end, where the error is, from the start of a part.
		tail := p[len(p)-maxPathBytes+len("filter…"):]
		if i := strings.IndexAny(tail, ".["); i >= 0 {
			tail = tail[i:]
		}
		p = "filter…" + tail
	}
	return p
}

// readValue reads one JSON value: string, json.Number, bool, nil, []any or
// object. It refuses, as soon as it meets one, an object of more than
// maxMembers keys or with a key given twice, an array of more than
// maxFilterValues items, a key or string over maxFilterString bytes and
// nesting deeper than maxJSONDepth: none is in a filter.
func readValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf(`is nested deeper than a filter may be ("and" and "or" at most %d deep)`, maxFilterDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok := tok.(type) {
	case json.Delim:
		if tok == '[' {
			return readArray(dec, depth)
		}
		return readObject(dec, depth) // '{': Token returns no closing delimiter here
	case string:
		if len(tok) > maxFilterString {
			return nil, &readError{msg: fmt.Sprintf("is a string of %d bytes, over the limit of %d", len(tok), maxFilterString)}
		}
	}
	return tok, nil
}

func readObject(dec *json.Decoder, depth int) (object, error) {
	var obj object
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key := kt.(string)
		switch {
		case len(obj) == maxMembers:
			return nil, &readError{msg: fmt.Sprintf(`holds more than %d keys (%s and more): an object of a filter holds one (a created_at range two); combine conditions with "and" or "or"`,
				maxMembers, obj.keys())}
		case len(key) > maxFilterString:
			return nil, &readError{msg: fmt.Sprintf("holds a key of %d bytes (%s), over the limit of %d", len(key), clip.Quote(key), maxFilterString)}
		}
		for _, m := range obj {
			if m.key == key {
				return nil, &readError{msg: fmt.Sprintf("holds key %s twice in one object: give each key once", clip.Quote(key))}
			}
		}
		v, err := readValue(dec, depth+1)
		if err != nil {
			return nil, within(err, "."+clip.String(key))
		}
		obj = append(obj, member{key, v})
	}
	_, err := dec.Token() // '}'
	return obj, err
}

func readArray(dec *json.Decoder, depth int) ([]any, error) {
	list := []any{}
	for dec.More() {
		if len(list) == maxFilterValues {
			return nil, &readError{msg: fmt.Sprintf("holds more than %d values: a filter lists at most %d in \"in\" arrays, and at most %d clauses", maxFilterValues, maxFilterValues, maxFilterClauses)}
		}
		v, err := readValue(dec, depth+1)
		if err != nil {
			return nil, within(err, "["+strconv.Itoa(len(list))+"]")
		}
		list = append(list, v)
	}
	_, err := dec.Token() // ']'
	return list, err
}

// kindOf names a JSON value's kind with an article, as errors say it.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "true or false"
	case []any:
		return "an array"
	case object:
		return "an object"
	}
	// readValue returns nothing else; a Go type's name is no answer.
	return "a value of another kind"
}
