# docsift: `make run` builds and serves, `make test` runs every test.
GO      ?= go
# TESTFLAGS adds go test flags to make test, e.g. -run or -skip.
TESTFLAGS ?=
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: build run test lint bench fuzz clean

# golangci-lint at the version .golangci.yml was written for, built by the
# go command from the module proxy (and cached by it) on first use.
GOLANGCI_LINT ?= $(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/docsift .

run: build
	./bin/docsift serve

test: lint
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) test -race -timeout 20m $(TESTFLAGS) ./...

# The linters of .golangci.yml (go vet among them) over every package.
lint:
	$(GOLANGCI_LINT) run ./...

# Go benchmarks of the index, the lexical scorer, the embedder and extraction.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./index/ ./llm/ ./pdf/

# A short run of every fuzz target.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzChunkPages -fuzztime 30s ./ingest/
	$(GO) test -run '^$$' -fuzz FuzzExtract -fuzztime 30s ./pdf/
	$(GO) test -run '^$$' -fuzz FuzzReadSnapshot -fuzztime 30s ./index/
	$(GO) test -run '^$$' -fuzz FuzzParseDataPart -fuzztime 30s ./server/
	$(GO) test -run '^$$' -fuzz FuzzParseFilter -fuzztime 30s ./search/

clean:
	rm -rf bin/

# The real Ollama server (github.com/ollama/ollama at go.mod's version): the
# script builds it once into a cache outside the clone, then every test
# named RealOllama, in every package, runs against it and may not skip.
# One package at a time (-p 1): each starts its own Ollama, and several
# runners spinning on two cores made one of them take minutes to answer.
.PHONY: test-ollama bench-ollama
test-ollama:
	bin=$$(scripts/ollama-build.sh) && DOCSIFT_REQUIRE_OLLAMA=1 DOCSIFT_OLLAMA_BIN="$$bin" $(GO) test -p 1 -timeout 30m -run RealOllama ./...

# Embeddings/s of a nomic-embed-text-sized model and the tiny chat model's
# tokens/s on the real server, the candidate default embedders' speeds side
# by side (BenchmarkRealOllamaEmbedModels, docs/benchmarks.md's "The real
# Ollama"), and docsift's ingest throughput with the nomic-sized model
# beside Ollama's own on the same requests (bench).
bench-ollama:
	bin=$$(scripts/ollama-build.sh) && DOCSIFT_REQUIRE_OLLAMA=1 DOCSIFT_OLLAMA_BIN="$$bin" $(GO) test -run '^$$' -bench RealOllama -benchtime 1x -timeout 90m ./llm/ollama/ ./bench/

# The hostile suite (hostile/): a real `docsift serve` in a memory cgroup
# the suite makes (so it runs as root, as CI does), attacked through its
# public routes with each finding of the hostile run. It builds the binary
# of this tree; DOCSIFT_HOSTILE_BIN=path attacks another. See
# docs/hostile.md.
.PHONY: test-hostile
test-hostile:
	$(GO) vet -tags hostile ./hostile/
	$(GO) test -tags hostile -count=1 -v -timeout 20m $(TESTFLAGS) ./hostile/
