package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestServeGoogleClientFlagsGoTogether(t *testing.T) {
	for _, args := range [][]string{
		{"--google-client-id", "1234-abc.apps.googleusercontent.com"},
		{"--google-client-secret", "GOCSPX-x"},
	} {
		_, err := runCLI(t, append([]string{"serve", "--addr", freeAddr(t), "--data", t.TempDir()}, args...)...)
		if err == nil || !strings.Contains(err.Error(), "--google-client-id and --google-client-secret go together") {
			t.Errorf("serve %v: %v, want the two flags named", args, err)
		}
	}
}

// TestServeWithGoogleClient configures Drive import through the
// environment twins and checks that a Drive-only session is accepted and
// its sign-in goes to Google with the server's redirect URI.
func TestServeWithGoogleClient(t *testing.T) {
	dir := t.TempDir()
	p := createProject(t, dir, "drive")
	t.Setenv("DOCSIFT_GOOGLE_CLIENT_ID", "1234-abc.apps.googleusercontent.com")
	t.Setenv("DOCSIFT_GOOGLE_CLIENT_SECRET", "GOCSPX-secret")
	srv := startServe(t, dir, freeAddr(t))

	body := `{"project_id": "` + p.ProjectID + `", "services": ["google_drive"], "success_url": "https://app.example/ok", "cancel_url": "https://app.example/no"}`
	req, _ := http.NewRequest(http.MethodPost, srv.base+"/session/single-tenant", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+p.APIKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var sess struct {
		URL string `json:"url"`
	}
	json.NewDecoder(resp.Body).Decode(&sess)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || sess.URL == "" {
		t.Fatalf("a google_drive session: HTTP %d", resp.StatusCode)
	}

	resp, err = http.Post(sess.URL+"/drive/connect", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var connect struct {
		AuthURL string `json:"auth_url"`
	}
	if err := json.Unmarshal(raw, &connect); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("connect: HTTP %d %s", resp.StatusCode, raw)
	}
	u, err := url.Parse(connect.AuthURL)
	if err != nil || u.Host != "accounts.google.com" {
		t.Fatalf("the sign-in goes to %q, want Google", connect.AuthURL)
	}
	if got := u.Query().Get("redirect_uri"); got != srv.base+"/oauth/google/callback" {
		t.Errorf("redirect_uri %q, want %s/oauth/google/callback", got, srv.base)
	}
	if strings.Contains(connect.AuthURL, "GOCSPX") {
		t.Error("the client secret is in the consent URL")
	}
}
