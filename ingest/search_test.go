package ingest

import (
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/search"
)

// searcher is the query side over e, for tests that check what an indexing
// outcome means for searches.
func searcher(e *Engine) *search.Service {
	return search.New(e, e.store, llm.NewExtractive(), nil, e.log)
}
