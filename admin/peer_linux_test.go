package admin

import (
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/docsift/docsift/store/bolt"
)

// TestSocketRefusesOtherUsers serves the real admin API on a real socket
// to a set of users that is, and then is not, this test's: the client is
// answered, then refused in words naming both users. Which users the
// socket answers is given to listen, so a refusal is tested without a
// second user.
func TestSocketRefusesOtherUsers(t *testing.T) {
	me := os.Getuid()
	other := me + 1000
	for _, c := range []struct {
		name    string
		uids    []int
		refusal string // "" when answered
	}{
		{"the server's user", []int{me}, ""},
		{"another user", []int{other}, "the admin socket answers only the user the server runs as (uid " + strconv.Itoa(other) + ") and root; you are uid " + strconv.Itoa(me)},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			st, err := bolt.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			stop, err := listen(dir, handler(st, dir, nil, nil), c.uids)
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			client, err := Dial(dir)
			if err != nil {
				t.Fatal(err)
			}
			_, secret, err := client.CreateProject("through the socket")
			switch {
			case c.refusal == "" && (err != nil || secret == ""):
				t.Fatalf("create project as the server's user: %v", err)
			case c.refusal != "" && (err == nil || !strings.Contains(err.Error(), c.refusal)):
				t.Fatalf("create project as another user = %v, want a refusal saying %q", err, c.refusal)
			}
			want := 1
			if c.refusal != "" {
				want = 0
			}
			if ps, _ := st.Projects(); len(ps) != want {
				t.Errorf("the store holds %d projects after the call, want %d", len(ps), want)
			}
		})
	}
}

// TestSocketRefusesUnknownPeers: a connection whose peer cannot be told
// (not a unix socket) is refused, not answered.
func TestSocketRefusesUnknownPeers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: onlyUsers([]int{os.Getuid()}, http.NotFoundHandler()), ConnContext: withPeer}
	go srv.Serve(ln)
	defer srv.Close()
	resp, err := http.Get("http://" + ln.Addr().String() + "/projects")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a peer that cannot be told got HTTP %d, want 403", resp.StatusCode)
	}
}

// The server answers its own user and root.
func TestServerUIDs(t *testing.T) {
	uids := serverUIDs()
	if uids[0] != os.Getuid() || !slices.Contains(uids, 0) {
		t.Errorf("serverUIDs() = %v, want this user (%d) first, and root", uids, os.Getuid())
	}
}
