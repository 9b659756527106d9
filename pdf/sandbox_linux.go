package pdf

import (
	"os"
	"os/exec"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

const (
	// workerOpenFiles caps the files a worker (and its Tesseract) holds
	// open: MuPDF opens none, the worker its pipes and a Tesseract's,
	// Tesseract its language data. A few dozen are in use at most.
	workerOpenFiles = 256
)

// sandboxReadFiles are single files a sandboxed worker may read: the
// dynamic linker's cache and preload list, which Tesseract's start reads,
// and the local time zone.
var sandboxReadFiles = []string{"/etc/ld.so.cache", "/etc/ld.so.preload", "/etc/localtime"}

// enterSandbox confines this process, a worker that has not yet read its
// document, and every process it starts: Landlock to read only what
// sandboxRules lists and to make no TCP connection nor bind (kernel ABI 4
// and later), nor reach any process outside the sandbox through an
// abstract socket (ABI 6) or a signal (ABI 8); seccomp (loadSeccompFilter)
// to create no socket at all. Each applies what the kernel supports; the
// report says what holds.
func enterSandbox(opts workerOptions) sandboxReport {
	limitWorkerResources()
	var r sandboxReport
	if opts.Sandbox.Off {
		r.LandlockErr, r.SeccompErr = "off", "off"
		return r
	}
	switch abi, err := llsys.LandlockGetABIVersion(); {
	case err != nil || abi < 1:
		r.LandlockErr = "the kernel has no Landlock, or it is off at boot"
		if err != nil {
			r.LandlockErr += ": " + err.Error()
		}
	default:
		// The newest configuration the library knows, reduced to what
		// the kernel supports: each newer ABI only refuses more.
		cfg := landlock.V11
		// Before landlockOneDomain, each thread enters a sandbox of its
		// own, alike but distinct, and a process inherits that of the
		// thread that started it. Landlock lets a sandboxed process signal
		// only processes in its own sandbox, so the worker could not kill
		// its Tesseract at the page's deadline whenever the kill came
		// from another thread than the start, as it does. So signals are
		// confined only where every thread shares one sandbox; before,
		// the worker can signal the other processes of the server's user.
		if abi < landlockOneDomain {
			cfg.Scoped &^= llsys.ScopeSignal
		}
		if err := cfg.BestEffort().Restrict(sandboxRules(opts)...); err != nil {
			r.LandlockErr = err.Error()
		} else {
			r.Landlock = abi
		}
	}
	if err := loadSeccompFilter(); err != nil {
		r.SeccompErr = err.Error()
	} else {
		r.Seccomp = true
	}
	return r
}

// sandboxRules are what a sandboxed worker may reach: read and run the
// system's programs and libraries (sandboxReadDirs, sandboxReadFiles, and
// what libgomp reads of the CPUs), the Tesseract it is configured with and
// TESSDATA_PREFIX; read and write /dev/null; and what opts.Sandbox adds. The server's
// data dir, its configuration and the user's files are not among them.
// Paths that do not exist are left out.
func sandboxRules(opts workerOptions) []landlock.Rule {
	rules := []landlock.Rule{
		landlock.RODirs(sandboxReadDirs...).IgnoreIfMissing(),
		landlock.ROFiles(sandboxReadFiles...).IgnoreIfMissing(),
		landlock.RODirs("/sys/devices/system/cpu").IgnoreIfMissing(),
		landlock.RWFiles(os.DevNull).IgnoreIfMissing(),
	}
	read := append([]string{os.Getenv("TESSDATA_PREFIX")}, opts.Sandbox.Read...)
	if opts.OCR != nil {
		if bin, err := exec.LookPath(opts.OCR.withDefaults().Binary); err == nil {
			read = append(read, bin)
		}
	}
	for _, p := range read {
		if rule, ok := pathRule(p, false); ok {
			rules = append(rules, rule)
		}
	}
	for _, p := range opts.Sandbox.Write {
		if rule, ok := pathRule(p, true); ok {
			rules = append(rules, rule)
		}
	}
	return rules
}

// pathRule grants access to path, read (and run) or read and write, with
// the rights of a directory or of a file as path is one: Landlock refuses
// a directory's rights on a file.
func pathRule(path string, write bool) (landlock.Rule, bool) {
	if path == "" {
		return nil, false
	}
	info, err := os.Stat(path) // through symlinks, as Landlock's rule goes
	switch {
	case err != nil:
		return nil, false
	case info.IsDir() && write:
		return landlock.RWDirs(path), true
	case info.IsDir():
		return landlock.RODirs(path), true
	case write:
		return landlock.RWFiles(path), true
	}
	return landlock.ROFiles(path), true
}

// limitWorkerResources sets the limits that cost a worker nothing: no
// core dumps (a crashing MuPDF would write gigabytes holding a tenant's
// document wherever the kernel's core pattern says) and workerOpenFiles.
// RLIMIT_NPROC is not among them: it counts every process and thread of
// the user, the server's included, so no value bounds the worker alone.
func limitWorkerResources() {
	_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{})
	_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: workerOpenFiles, Max: workerOpenFiles})
}
