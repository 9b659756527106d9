package ollamareal

// Bert returns a BERT embedding model of the caller's sizes, run on one
// thread like the tiny models: for a test that needs a second embedding
// model, e.g. one of another dimension.
func Bert(name string, s BertSpec) Model { return bertModel(name, s, tinyParameters) }
