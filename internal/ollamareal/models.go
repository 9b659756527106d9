package ollamareal

// Model is a model this package can generate and create in a server.
type Model struct {
	// Name is what the model is created as (Ollama adds ":latest").
	Name string
	// Embedding says the model embeds (a BERT) rather than chats.
	Embedding bool
	write     func(dir string) error
	// template and parameters go to /api/create with the files: a chat
	// model needs a prompt template and its stop tokens.
	template   string
	parameters map[string]any
}

// The generated models. Names are the model's name on the server.
var (
	// TinyEmbed is a 2-layer BERT with 128 dimensions and a 512-token
	// context: small enough to load and embed in milliseconds, with a
	// WordPiece vocabulary of real words so that token counts resemble a
	// real English model's.
	TinyEmbed = bertModel("tinyembed", BertSpec{
		Hidden: 128, Layers: 2, Heads: 4, Intermediate: 256,
		Positions: 512, Words: 8000, Seed: 1,
	}, tinyParameters)

	// TinyChat is a 2-layer Qwen2 with 64 dimensions, a byte-level BPE
	// vocabulary and ChatML tokens, and qwen2.5's 32K context, so that
	// docsift's num_ctx of 8192 is what limits a prompt, as in production.
	TinyChat = Model{
		Name: "tinychat",
		write: func(dir string) error {
			return WriteQwen2(dir, Qwen2Spec{
				Hidden: 64, Layers: 2, Heads: 4, KVHeads: 2, Intermediate: 128,
				Positions: 32768, Merges: 1500, Seed: 2,
			})
		},
		template:   chatMLTemplate,
		parameters: map[string]any{"stop": chatStops, "num_thread": tinyParameters["num_thread"]},
	}

	// NomicSized has nomic-embed-text's sizes (768 dimensions, 12 layers of
	// 12 heads, 3072 intermediate, about 110M parameters in F16) for timing:
	// its speed, not its output, is what it shows. Its context is 2048
	// tokens, the length nomic-embed-text runs at by default.
	NomicSized = bertModel("nomic-sized", NomicSizes, nil)

	// NomicSizes are NomicSized's sizes, for a variant of it (say, on one
	// thread).
	NomicSizes = BertSpec{
		Hidden: 768, Layers: 12, Heads: 12, Intermediate: 3072,
		Positions: 2048, Words: 30000, Seed: 3,
	}

	// The stand-ins below have the sizes of the small embedding models in
	// Ollama's library that docsift's default was chosen among, as their
	// authors' config.json files give them, so that
	// llm's BenchmarkRealOllamaEmbedModels compares their speed on this
	// machine. They are plain BERTs with mean pooling and a WordPiece
	// vocabulary of 30,000 words (the real ones have 30,522, and
	// snowflake-arctic-embed and bge-small pool the [CLS] token instead):
	// differences that cost next to nothing beside the layers. Positions are
	// the models' 512, which Ollama reports as their context length. (The
	// real nomic-embed-text is not a plain BERT: it is nomic_bert, with
	// rotary positions and a gated feed-forward of three matrices where
	// BERT has two, so NomicSized, a BERT of its sizes, is if anything
	// faster than the model it stands for.)

	// AllMiniLMSized has all-minilm's sizes (sentence-transformers'
	// all-MiniLM-L6-v2: 384 dimensions, 6 layers of 12 heads, 1536
	// intermediate, about 22M parameters).
	AllMiniLMSized = bertModel("all-minilm-sized", BertSpec{
		Hidden: 384, Layers: 6, Heads: 12, Intermediate: 1536,
		Positions: 512, Words: 30000, Seed: 4,
	}, nil)

	// ArcticXSSized has snowflake-arctic-embed:xs's sizes, which are
	// all-MiniLM-L6-v2's, the model it was trained from.
	ArcticXSSized = bertModel("arctic-xs-sized", BertSpec{
		Hidden: 384, Layers: 6, Heads: 12, Intermediate: 1536,
		Positions: 512, Words: 30000, Seed: 5,
	}, nil)

	// ArcticSSized has snowflake-arctic-embed:s's sizes (384 dimensions, 12
	// layers of 12 heads, 1536 intermediate, about 33M parameters).
	ArcticSSized = bertModel("arctic-s-sized", BertSpec{
		Hidden: 384, Layers: 12, Heads: 12, Intermediate: 1536,
		Positions: 512, Words: 30000, Seed: 6,
	}, nil)

	// BGESmallSized has bge-small-en-v1.5's sizes, the same as
	// snowflake-arctic-embed:s's.
	BGESmallSized = bertModel("bge-small-sized", BertSpec{
		Hidden: 384, Layers: 12, Heads: 12, Intermediate: 1536,
		Positions: 512, Words: 30000, Seed: 7,
	}, nil)
)

// tinyParameters run the tiny models on one thread. They gain nothing from
// more, and llama.cpp's threads wait for each other by spinning: with test
// packages running side by side on two cores, two threads per runner made
// a 512-token answer take minutes instead of seconds. The nomic-sized
// model, which is for timing, keeps Ollama's default.
var tinyParameters = map[string]any{"num_thread": 1}

func bertModel(name string, s BertSpec, parameters map[string]any) Model {
	return Model{
		Name:       name,
		Embedding:  true,
		write:      func(dir string) error { return WriteBert(dir, s) },
		parameters: parameters,
	}
}
