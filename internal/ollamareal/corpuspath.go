package ollamareal

// CorpusPath is the path of the MS MARCO sample that Text reads, or "" when
// it was not found and Text falls back to a short built-in text, which
// repeats too much to stand for real documents in a measurement.
func CorpusPath() string {
	if c := loadCorpus(); c.Source != "built-in" {
		return c.Source
	}
	return ""
}
