package server

// What the external tests (package server_test) see of the package's
// insides.

// MaxCuts is maxCuts.
const MaxCuts = maxCuts

// SubpageFileName is subpageFileName.
var SubpageFileName = subpageFileName

// WatchCuts has slice cut the PDFs of subpages until the test's cleanup,
// which calls the returned function.
func WatchCuts(slice func(cut func(data []byte, first, last int) ([]byte, error), data []byte, first, last int) ([]byte, error)) (restore func()) {
	cut := slicePDF
	slicePDF = func(data []byte, first, last int) ([]byte, error) { return slice(cut, data, first, last) }
	return func() { slicePDF = cut }
}

// ClientOf is clientOf.
var ClientOf = clientOf
