package searxtest

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

func TestJSONFormat(t *testing.T) {
	s := New(t)
	resp, err := http.Get(s.URL + "/search?q=bbolt&format=json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Results []Result `json:"results"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || len(body.Results) != 3 || body.Results[0].URL == "" {
		t.Errorf("results = %+v, %v", body, err)
	}

	resp, err = http.Get(s.URL + "/search?q=bbolt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Content-Type") == "application/json" || len(b) == 0 {
		t.Errorf("without format=json: %s %q", resp.Header.Get("Content-Type"), b)
	}

	s.DisableJSON()
	resp, err = http.Get(s.URL + "/search?q=bbolt&format=json")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("JSON disabled: status %d, want 403", resp.StatusCode)
	}
}
