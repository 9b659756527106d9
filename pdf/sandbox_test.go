package pdf

import (
	"strings"
	"testing"
)

// TestSandboxReport checks what the server is told where a part is
// missing.
func TestSandboxReport(t *testing.T) {
	for _, c := range []struct {
		name string
		r    sandboxReport
		desc string
		err  string
	}{
		{"whole", sandboxReport{Landlock: 7, Seccomp: true}, "Landlock ABI 7 (files, TCP), seccomp (no sockets, io_uring, namespaces or tracing)", ""},
		{"old Landlock", sandboxReport{Landlock: 3, Seccomp: true}, "Landlock ABI 3 (files), seccomp", ""},
		{"no Landlock", sandboxReport{LandlockErr: "the kernel has no Landlock", Seccomp: true}, "seccomp", "Landlock is unavailable (the kernel has no Landlock): the worker can read every file the server's user can"},
		{"no seccomp", sandboxReport{Landlock: 7, SeccompErr: "operation not permitted"}, "Landlock ABI 7", "the worker can open UDP and local sockets, the admin socket included (Landlock refuses it TCP only)"},
		{"neither", sandboxReport{Landlock: 2, SeccompErr: "x"}, "Landlock ABI 2", "the worker can reach the network and local sockets"},
		{"exposed", sandboxReport{Landlock: 7, Seccomp: true, Exposed: []string{"/usr/data"}}, "Landlock", "the worker can open /usr/data"},
		{"other system", sandboxReport{Unsupported: "darwin"}, "", "no sandbox on darwin"},
	} {
		t.Run(c.name, func(t *testing.T) {
			desc, err := c.r.describe()
			if !strings.HasPrefix(desc, c.desc) {
				t.Errorf("description %q, want %q", desc, c.desc)
			}
			if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Errorf("error %v, want %q", err, c.err)
			}
		})
	}
}
