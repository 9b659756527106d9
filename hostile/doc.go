// Package hostile is docsift's hostile suite: it starts a real `docsift
// serve` in a memory cgroup of its own and replays, through the server's
// public routes, each attack a hostile run found against it (issue 58):
// documents that unfold into gigabytes, webhooks into the operator's
// network and webhooks that never answer, one tenant's backlog of scans,
// subpages sliced without end and read by clients that stop reading, filters
// that cost quadratic time, uploads past a session's cap, the extraction
// child's environment, thousands of owners, connection floods, and
// requests that should be bounded. Each test states its bounds (the
// server stays up, its memory under a bound, the other tenant's upload
// indexed and its webhook delivered in time, nothing acknowledged lost)
// and logs what it measured.
//
// The tests carry the build tag hostile, so `go test ./...` leaves them
// out. Run them with
//
//	make test-hostile
//
// which builds the binary of this tree. DOCSIFT_HOSTILE_BIN names another
// binary to attack instead, such as an older build:
//
//	DOCSIFT_HOSTILE_BIN=/tmp/docsift-old make test-hostile
//
// The suite needs a writable memory cgroup (cgroup v2, or v1's memory
// controller): it runs as root, as CI does, or fails saying why.
// docs/hostile.md lists the bounds, the figures measured and what an older
// binary did.
package hostile
