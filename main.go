// Command docsift is a self-hosted document indexing and semantic search
// service. The command line lives in package cli.
package main

import (
	"os"

	"github.com/docsift/docsift/cli"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() { os.Exit(cli.Execute(version)) }
