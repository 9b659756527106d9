package ollama

import "testing"

// TestDefaultEmbedModelTaskPrefixes checks that the default model and the
// others compared when it was chosen get the prefixes their model cards
// give: snowflake-arctic-embed and bge-small-en-v1.5 want an instruction
// before a query and nothing before a passage; all-minilm wants neither.
func TestDefaultEmbedModelTaskPrefixes(t *testing.T) {
	const instruction = "Represent this sentence for searching relevant passages: "
	for model, want := range map[string]taskPrefixes{
		DefaultEmbedModel:                  {query: instruction},
		"snowflake-arctic-embed:s":         {query: instruction},
		"snowflake-arctic-embed:22m":       {query: instruction},
		"someone/bge-small-en-v1.5:latest": {query: instruction},
		"all-minilm:l6-v2":                 {},
		"nomic-embed-text":                 {passage: "search_document: ", query: "search_query: "},
	} {
		if got := prefixesFor(model); got != want {
			t.Errorf("prefixesFor(%q) = %+v, want %+v", model, got, want)
		}
	}
}
