package server

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func TestClientFieldPath(t *testing.T) {
	var req customerQueryRequest
	for _, c := range []struct{ path, want string }{
		{"queryFields.top_k", "top_k"},
		{"customer_id", "customer_id"},
		{"metadata.key", "metadata.key"},
	} {
		if got := clientFieldPath(&req, c.path); got != c.want {
			t.Errorf("clientFieldPath(%q) = %q, want %q", c.path, got, c.want)
		}
	}
}

// FuzzParseDataPart feeds the data part of /upload/file, which anyone with
// an API key can fill with anything: it must answer a 4xx in the API's
// words, or a part that says the same when encoded again.
func FuzzParseDataPart(f *testing.F) {
	for _, seed := range []string{
		`{"owner_id": "cus_x"}`,
		`{"owner_id": "prj_x", "name": "a.pdf", "metadata": {"source": "web"}}`,
		`{"owner_id": 1}`, `{"metadata": {"a": 1}}`, `{"metadata": []}`,
		`[]`, `{`, `{"text": "x"}`, `{"a": 1} {"b": 2}`, ``, `null`, `{"owner_id": "x", "owner_id": "y"}`,
		`{"name": "\u0000"}`, `{"owner_id": "` + strings.Repeat("x", 300) + `"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		d, err := parseDataPart(raw)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || (ae.status != http.StatusBadRequest && ae.status != http.StatusRequestEntityTooLarge) {
				t.Fatalf("parseDataPart(%q) = %v, want a 400 or 413", raw, err)
			}
			if strings.Contains(ae.msg, "json: ") || strings.Contains(ae.msg, "Go ") || strings.Contains(ae.msg, "uploadData") {
				t.Fatalf("parseDataPart(%q): message %q speaks of Go internals", raw, ae.msg)
			}
			return
		}
		if d == nil || d.Text != nil {
			t.Fatalf("parseDataPart(%q) = %+v with no error", raw, d)
		}
	})
}

func TestParseDataPartRefusesTrailingData(t *testing.T) {
	if _, err := parseDataPart([]byte(`{"owner_id": "x"} {"owner_id": "y"}`)); err == nil {
		t.Error("two objects in the data part were accepted")
	}
	d, err := parseDataPart([]byte(`{"owner_id": "x", "metadata": {"k": "v"}}`))
	if err != nil || !reflect.DeepEqual(d, &uploadData{OwnerID: "x", Metadata: map[string]string{"k": "v"}}) {
		t.Errorf("parseDataPart = %+v, %v", d, err)
	}
}

// Sizes read the same on the upload page as in its limit: round ones
// exactly, others to a tenth, in units of 1024.
func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{512: "512 bytes", 4 << 10: "4 KiB", 100000: "97.7 KiB", 64 << 20: "64 MiB", 1500000: "1.4 MiB", 3 << 30: "3 GiB", 5 << 40: "5 TiB", 2<<50 + 1: "2048.0 TiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
	// A size just over its limit is not said to be the limit.
	for _, c := range []struct {
		size, limit int64
		want        string
	}{
		{1025, 1024, "1025 bytes, over the limit of 1024 bytes (1 KiB)"},
		{1100, 1024, "1.1 KiB, over the limit of 1 KiB"},
		{64<<20 + 1, 64 << 20, "67108865 bytes, over the limit of 67108864 bytes (64 MiB)"},
		{3 << 30, 64 << 20, "3 GiB, over the limit of 64 MiB"},
	} {
		if got := overLimit(c.size, c.limit); got != c.want {
			t.Errorf("overLimit(%d, %d) = %q, want %q", c.size, c.limit, got, c.want)
		}
	}
}
