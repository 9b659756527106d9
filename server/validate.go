package server

// Request validation: every way a request body or field can be wrong becomes
// a 400 (or 413) that names the field and says what is wanted.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/docsift/docsift/internal/clip"
	"github.com/docsift/docsift/store"
	"github.com/labstack/echo/v4"
)

// decodeJSON reads a JSON object from the request body into v, limited to
// limit bytes, and turns every way it can go wrong into a 400 or 413 that
// names the problem. Unknown fields are refused: a misspelt optional field
// would otherwise be silently ignored.
func decodeJSON(c echo.Context, limit int64, v any) error {
	// The Content-Type is not checked: `curl -d` sends JSON labelled as a
	// form, and refusing it helps nobody. The body must parse, though.
	if err := reserveBody(c, limit); err != nil {
		return err
	}
	if cl := c.Request().ContentLength; cl > limit {
		return errorf(http.StatusRequestEntityTooLarge, "the request body is over the limit of %s", humanBytes(limit))
	}
	raw, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, limit))
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &maxErr):
		return errorf(http.StatusRequestEntityTooLarge, "the request body is over the limit of %s", humanBytes(limit))
	case errors.Is(err, errBodyTooSlow):
		return errTooSlow
	case err != nil:
		// The client went away or broke off its body: nothing to decode.
		return badRequest("the request body could not be read in full")
	}
	if err := checkUTF8("", raw); err != nil {
		return err
	}
	// A byte order mark, which some editors and Windows tools write, is
	// not part of the JSON (RFC 8259 lets a reader skip it).
	raw = bytes.TrimPrefix(raw, []byte("\ufeff"))
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err = dec.Decode(v)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			return badRequest("the request body must hold exactly one JSON object")
		}
		return nil
	}
	if errors.Is(err, io.EOF) {
		return badRequest("the request body is empty: send a JSON object")
	}
	return jsonError("", v, err)
}

// checkUTF8 refuses a JSON text that is not UTF-8, as JSON must be (RFC
// 8259): encoding/json would put U+FFFD in place of each byte it cannot
// read, and a text sent in Latin-1 would be stored with its accented
// letters lost. where, when set, says which part of the request it is.
func checkUTF8(where string, raw []byte) error {
	if utf8.Valid(raw) {
		return nil
	}
	at := 0
	for at < len(raw) {
		r, size := utf8.DecodeRune(raw[at:])
		if r == utf8.RuneError && size <= 1 {
			break
		}
		at += size
	}
	if where != "" {
		where += ": "
	}
	return badRequest("%snot UTF-8: byte %d (0x%02x) is not part of a UTF-8 character; send JSON in UTF-8", where, at, raw[at])
}

// jsonError says what is wrong with a JSON object that did not decode into
// v, in the API's words: field names as the client sent them, kinds as JSON
// names them. where, when set, says which part of the request it was.
func jsonError(where string, v any, err error) error {
	if where != "" {
		where += ": "
	}
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntaxErr):
		// Go's own words ("invalid character 'o' in literal null") say
		// little to a client; where it went wrong says more.
		return badRequest("%snot valid JSON: it goes wrong at byte %d; send a JSON object", where, syntaxErr.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return badRequest("%snot valid JSON: it ends before it is complete; send a JSON object", where)
	case errors.As(err, &typeErr) && typeErr.Field == "":
		return badRequest("%sthe request body must be a JSON object", where)
	case errors.As(err, &typeErr):
		field := clip.String(clientFieldPath(v, typeErr.Field)) // map keys are the client's
		want := jsonKind(typeErr.Type.Kind().String())
		if got, isNumber := strings.CutPrefix(typeErr.Value, "number "); isNumber && want == "a number" {
			return badRequest("%sfield %s: %s is out of range", where, field, clip.String(got))
		}
		return badRequest("%sfield %s must be %s, not %s", where, field, want, jsonValueKind(typeErr.Value))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.TrimPrefix(err.Error(), "json: unknown field ")
		if unquoted, err := strconv.Unquote(name); err == nil {
			name = unquoted
		}
		return badRequest("%sunknown field %s", where, clip.Quote(name))
	}
	return badRequest("%sthe JSON could not be read: %s", where, clip.String(strings.TrimPrefix(err.Error(), "json: ")))
}

// clientFieldPath rewrites encoding/json's path to a field of v
// ("queryFields.top_k") into the one the client wrote ("top_k"): the fields
// of an embedded struct are the object's own in JSON, but the path names
// the embedded Go type.
func clientFieldPath(v any, path string) string {
	t := reflect.TypeOf(v)
	var out []string
	for _, seg := range strings.Split(path, ".") {
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t != nil && t.Kind() == reflect.Struct {
			if f, ok := t.FieldByName(seg); ok && f.Anonymous {
				t = f.Type
				continue
			}
		}
		// Past the first real field, embedded types are rare enough not
		// to follow: keep the rest as it is, but for a list's index
		// (stringList), written as the client would: services[1].
		if strings.HasPrefix(seg, "[") && len(out) > 0 {
			out[len(out)-1] += seg
			continue
		}
		out, t = append(out, seg), nil
	}
	return strings.Join(out, ".")
}

// stringList and metadataValues are a request's list of strings and its
// object of strings, decoded here so that an element of another kind is
// named by its place ("field services[1] must be a string, not a
// number", "field metadata.year …"): encoding/json's own error names the
// list or the object alone.
type (
	stringList     []string
	metadataValues map[string]string
)

func (l *stringList) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(stringList, len(raw))
	for i, v := range raw {
		// joined to the list's name by clientFieldPath
		if err := decodeString(v, &out[i], "["+strconv.Itoa(i)+"]"); err != nil {
			return err
		}
	}
	*l = out
	return nil
}

func (m *metadataValues) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(metadataValues, len(raw))
	for k, v := range raw {
		var s string
		if err := decodeString(v, &s, k); err != nil { // encoding/json puts "metadata." before k
			return err
		}
		out[k] = s
	}
	*m = out
	return nil
}

// decodeString decodes v into s; a value of another kind is named by
// field, within the list or object encoding/json names.
func decodeString(v json.RawMessage, s *string, field string) error {
	err := json.Unmarshal(v, s)
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		typeErr.Field = field
	}
	return err
}

// jsonValueKind names the kind of value encoding/json found ("string",
// "number 1.5", "array", …) with an article, as jsonKind does.
func jsonValueKind(v string) string {
	switch kind, _, _ := strings.Cut(v, " "); kind {
	case "string":
		return "a string"
	case "number":
		return "a number"
	case "bool":
		return "true or false"
	case "array":
		return "an array"
	case "object":
		return "an object"
	}
	return v
}

// jsonKind names a Go kind the way a JSON client thinks of it.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "float64", "float32", "int", "int64":
		return "a number"
	case "bool":
		return "true or false"
	case "slice":
		return "an array"
	case "map", "struct":
		return "an object"
	}
	return kind
}

// humanBytes writes a size for people in units of 1024: whole ones
// exactly ("64 MiB"), others to a tenth ("97.7 KiB").
func humanBytes(n int64) string {
	if n < 1<<10 {
		return fmt.Sprintf("%d bytes", n)
	}
	unit, units := int64(1<<10), []string{"KiB", "MiB", "GiB", "TiB"}
	i := 0
	for n >= unit<<10 && i < len(units)-1 {
		unit <<= 10
		i++
	}
	if n%unit == 0 {
		return fmt.Sprintf("%d %s", n/unit, units[i])
	}
	return fmt.Sprintf("%.1f %s", float64(n)/float64(unit), units[i])
}

// overLimit says that size is over limit, in bytes when their units
// would round the two to one figure ("1.0 KiB, over the limit of 1 KiB").
func overLimit(size, limit int64) string {
	s, l := humanBytes(size), humanBytes(limit)
	if strings.Replace(s, ".0 ", " ", 1) == strings.Replace(l, ".0 ", " ", 1) {
		return fmt.Sprintf("%d bytes, over the limit of %d bytes (%s)", size, limit, l)
	}
	return s + ", over the limit of " + l
}

// checkQuery validates a query and its result count: the query is required,
// not blank and at most maxQueryRunes long; topK, when given, is a whole
// number from 1 to maxK (2.0 is whole, 2.5 is not).
func checkQuery(query *string, topK *float64, defaultK, maxK int) (string, int, error) {
	if query == nil {
		return "", 0, badRequest("query is required")
	}
	text := strings.TrimSpace(*query)
	// Invisible format characters (zero-width spaces, joiners, BOMs) alone
	// make a query that looks like something and searches for nothing.
	if strings.TrimFunc(text, func(r rune) bool { return unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) }) == "" {
		return "", 0, badRequest("query is empty")
	}
	if !strings.ContainsFunc(text, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }) {
		return "", 0, badRequest("query has no letters or digits to search for")
	}
	if n := utf8.RuneCountInString(text); n > maxQueryRunes {
		return "", 0, badRequest("query is %d characters, over the limit of %d", n, maxQueryRunes)
	}
	k := defaultK
	if topK != nil {
		v := *topK
		if v != math.Trunc(v) || v < 1 || v > float64(maxK) {
			return "", 0, badRequest("top_k must be a whole number from 1 to %d, got %s", maxK, jsonNumber(v))
		}
		k = int(v)
	}
	return text, k, nil
}

// jsonNumber writes v as JSON writers do (JavaScript's rule): without an
// exponent below 1e21, so that 1000000 is not echoed back as 1e+06.
func jsonNumber(v float64) string {
	if math.Abs(v) < 1e21 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func checkName(field, name string, required bool) error {
	switch {
	case name == "" && required:
		return badRequest("%s is required", field)
	case utf8.RuneCountInString(name) > maxNameLen:
		return badRequest("%s is longer than %d characters", field, maxNameLen)
	case strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return badRequest("%s must not contain control characters", field)
	}
	return nil
}

// maxExternalIDLen bounds an external id: long enough for a path or a
// URL, short enough to stay a key.
const maxExternalIDLen = 256

// checkExternalID accepts an absent (empty) external id, or one of at
// most maxExternalIDLen printable ASCII characters without spaces: ids
// callers already have (paths, URLs, database keys) fit, and none can look
// like another through Unicode lookalikes or invisible characters.
func checkExternalID(field, id string) error {
	if len(id) > maxExternalIDLen {
		return badRequest("%s is %d characters, over the limit of %d", field, len(id), maxExternalIDLen)
	}
	for i, r := range id {
		if r < 0x21 || r > 0x7e {
			return badRequest("%s must be printable ASCII without spaces (letters, digits and punctuation such as - _ . : /); character %d is %q", field, i+1, r)
		}
	}
	return nil
}

// checkCallerMetadata refuses metadata a caller of the API may not set:
// the key that ties a document to the upload session it came through,
// which the session's page lists and counts.
func checkCallerMetadata(m map[string]string) error {
	if _, ok := m[store.SessionMetaKey]; ok {
		return badRequest("metadata.%s is set by docsift on uploads through a hosted page: use another key", store.SessionMetaKey)
	}
	return nil
}

func checkMetadata(m map[string]string) error {
	if len(m) > maxMetadataKeys {
		return badRequest("metadata has %d keys, over the limit of %d", len(m), maxMetadataKeys)
	}
	size := 0
	for k, v := range m {
		if k == "" || !utf8.ValidString(k) {
			return badRequest("metadata keys must be non-empty strings")
		}
		size += len(k) + len(v)
	}
	if size > maxMetadataBytes {
		return badRequest("metadata is %s", overLimit(int64(size), maxMetadataBytes))
	}
	return nil
}

// checkServices accepts a non-empty list of known services that leaves the
// end user something to do. Without a Google OAuth client (driveOn false),
// a Drive-only session would open on a page with nothing to use: that is a
// 400 naming what the caller can ask for instead and what the operator
// must set, rather than a 503, because the request can be fixed by its
// sender at once.
func checkServices(services []string, driveOn bool) error {
	known := `"` + strings.Join(knownServices, `", "`) + `"`
	if len(services) == 0 {
		return badRequest("services is required: a non-empty list of %s", known)
	}
	usable := false
	for _, sv := range services {
		if !slices.Contains(knownServices, sv) {
			return badRequest("services holds unknown service %s: allowed are %s", clip.Quote(sv), known)
		}
		usable = usable || sv != serviceGoogleDrive || driveOn
	}
	if !usable {
		return badRequest("services: %s; include %q or %q", msgDriveOff, serviceFileUpload, serviceAll)
	}
	return nil
}

// maxRedirectURLBytes bounds a session's success and cancel URLs, as
// webhook URLs are bounded: browsers and proxies refuse longer ones.
const maxRedirectURLBytes = 2048

// checkRedirectURL accepts only absolute http(s) URLs: the end user's browser
// is sent there, so javascript:, data: and relative URLs are refused.
func checkRedirectURL(field, raw string) error {
	if raw == "" {
		return badRequest("%s is required", field)
	}
	if len(raw) > maxRedirectURLBytes {
		return badRequest("%s is %d bytes, over the limit of %d", field, len(raw), maxRedirectURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return badRequest("%s must be an absolute http or https URL, got %s", field, clip.Quote(raw))
	}
	return nil
}

// queryLimit reads the query parameter limit: def when it is absent, and a
// clear error unless it is a whole number from 1 to max.
func queryLimit(c echo.Context, def, max int) (int, error) {
	v := c.QueryParam("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, badRequest("limit must be a whole number from 1 to %d", max)
	}
	return n, nil
}

// queryPage reads the query parameters of a list a page at a time: limit,
// as queryLimit does, and cursor, which must be an id with prefix (the
// next_cursor of the page before) when given.
func queryPage(c echo.Context, def, max int, prefix string) (limit int, cursor string, err error) {
	if limit, err = queryLimit(c, def, max); err != nil {
		return 0, "", err
	}
	cursor = c.QueryParam("cursor")
	if c.QueryParams().Has("cursor") && !store.IsID(cursor, prefix) {
		return 0, "", badRequest("cursor is not a next_cursor this API gave: leave it out for the first page")
	}
	return limit, cursor, nil
}
