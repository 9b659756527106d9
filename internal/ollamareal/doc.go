// Package ollamareal runs the real Ollama server (github.com/ollama/ollama at
// the version in go.mod) in tests, with small random-weight models generated
// here, so that docsift's Ollama client is checked against the server it
// will meet in production and not only against the stand-in in
// internal/ollamatest.
//
// Nothing is downloaded: the server binary is built from the Go module cache
// by scripts/ollama-build.sh, and the models are written by this package
// (config.json, model.safetensors, tokenizer.json) with a fixed seed and
// imported through Ollama's own /api/create, which converts them to GGUF as
// it would a model from a hub. The weights are random, so the models say
// nothing useful; what the tests check is the wire behaviour: shapes,
// statuses, error texts, token counts, truncation and streaming.
//
// Tests call Start; when no binary is found they skip, unless
// DOCSIFT_REQUIRE_OLLAMA=1 says the run must exercise the real server (make
// test-ollama sets it).
package ollamareal
