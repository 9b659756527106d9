package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// benchCmd is `docsift bench`: a command per measurement, each in a file
// of its own (bench_*.go), sharing --json.
func benchCmd() *cobra.Command {
	cmd := groupCmd("bench", "Measure speed: the vector index, ingestion, queries against a server, OCR")
	var asJSON bool
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.AddCommand(benchIndexCmd(&asJSON), benchIngestCmd(&asJSON), benchQueryCmd(&asJSON), benchOCRCmd(&asJSON),
		benchFilterCmd(&asJSON), benchScaleCmd(&asJSON), benchClusterCmd(&asJSON))
	return cmd
}

// printResult prints v as JSON, or rows as an aligned two-column table.
func printResult(w io.Writer, asJSON bool, v any, rows [][2]string) error {
	if asJSON {
		return json.NewEncoder(w).Encode(v)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}

// flagInt is a whole-number flag and its value.
type flagInt struct {
	name  string
	value int
}

// atLeast refuses the first flag under least, naming it: a benchmark of
// zero of something would run and report nothing, or a default.
func atLeast(least int, flags ...flagInt) error {
	for _, f := range flags {
		if f.value < least {
			return fmt.Errorf("%s is %d: give %d or more", f.name, f.value, least)
		}
	}
	return nil
}
