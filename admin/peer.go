package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
)

// Who may use the admin socket. The socket file is made readable by its
// owner only and lies in the data dir, which the server creates for its
// user alone; but a data dir made by hand may be open to others, and the
// file has the process's default mode for the moment between its creation
// and its chmod. So the server also asks the kernel who is at the other
// end of each connection (SO_PEERCRED, see peer_linux.go) and answers
// only its own user and root: root can read the data dir, and the server's
// memory, anyway, so refusing it would protect nothing and stop an
// operator's `sudo docsift key create`. Where the kernel cannot be asked
// (systems without SO_PEERCRED), the file's mode is all there is.

// errNoPeerCred is peerUID's error where the system cannot tell who is
// connected.
var errNoPeerCred = errors.New("this system cannot tell who is at the other end of a unix socket")

// peerKey is the context key of a connection's peer.
type peerKey struct{}

// peer is who is at the other end of a connection, as far as the kernel
// says.
type peer struct {
	uid int
	err error
}

// serverUIDs are the users answered by the server's admin socket: the
// server's own user and root.
func serverUIDs() []int {
	if uid := os.Getuid(); uid != 0 {
		return []int{uid, 0}
	}
	return []int{0}
}

// withPeer records the peer of c in ctx, for onlyUsers; it is the admin
// server's ConnContext.
func withPeer(ctx context.Context, c net.Conn) context.Context {
	uid, err := peerUID(c)
	return context.WithValue(ctx, peerKey{}, peer{uid: uid, err: err})
}

// describeUsers names the users uids (serverUIDs') in words.
func describeUsers(uids []int) string {
	if uids[0] == 0 {
		return "root, the user the server runs as"
	}
	return fmt.Sprintf("the user the server runs as (uid %d) and root", uids[0])
}

// onlyUsers answers the requests of the users allowed (uids) with h and
// refuses every other user's with 403 and why. Where the system cannot
// tell the peer, it answers everyone (see the comment at the top).
func onlyUsers(uids []int, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := r.Context().Value(peerKey{}).(peer)
		var refusal string
		switch {
		case errors.Is(p.err, errNoPeerCred):
		case p.err != nil:
			refusal = fmt.Sprintf("the admin socket could not tell which user is connecting (%v), so it answers nobody on this connection", p.err)
		case !slices.Contains(uids, p.uid):
			refusal = fmt.Sprintf("the admin socket answers only %s; you are uid %d: run the command as that user", describeUsers(uids), p.uid)
		}
		if refusal != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			json.NewEncoder(w).Encode(errorReply{Error: refusal})
			return
		}
		h.ServeHTTP(w, r)
	})
}
