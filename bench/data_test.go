package bench

// The shared sample data some tests and benchmarks read, skipping when it
// is absent.
const (
	msmarcoDir = "../../shared/data/msmarco-5k"
	pdfDir     = "../../shared/data/pdf"
)
