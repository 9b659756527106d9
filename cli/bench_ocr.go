package cli

import (
	"fmt"
	"os"

	"github.com/docsift/docsift/bench/ocrbench"
	"github.com/docsift/docsift/pdf"
	"github.com/spf13/cobra"
)

// benchOCRCmd is `docsift bench ocr`: OCR's accuracy and speed on scans of
// pages with a text layer. asJSON is bench's --json.
func benchOCRCmd(asJSON *bool) *cobra.Command {
	var cfg ocrbench.Config
	cmd := &cobra.Command{
		Use:   "ocr [PDF or folder ...]",
		Short: "OCR accuracy and pages per second: pages of PDFs with a text layer, scanned and read back",
		Long: `Scan pages of PDFs that have a text layer (render them to images at
each --dpi, as a clean scan), read the scans back through the extraction
worker with Tesseract, and compare with the text layer: character accuracy
is 1 − Levenshtein distance / characters, over whitespace-normalised text.`,
		Example: `  docsift bench ocr ../shared/data/pdf
  docsift bench ocr --pages 10 --dpi 300 manual.pdf`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			if cfg.Pages < 1 {
				return fmt.Errorf("--pages is %d: give at least 1", cfg.Pages)
			}
			for _, dpi := range cfg.DPIs {
				if dpi < 50 || dpi > 1200 {
					return fmt.Errorf("--dpi %d is not a scan resolution: give one from 50 to 1200", dpi)
				}
			}
			cfg.Files = files
			res, err := ocrbench.Measure(cmd.Context(), cfg, os.Stderr)
			if err != nil {
				return err
			}
			return printResult(cmd.OutOrStdout(), *asJSON, res, ocrRows(res))
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Pages, "pages", ocrbench.DefaultPages, "pages scanned per PDF, spread over those with text")
	f.IntSliceVar(&cfg.DPIs, "dpi", ocrbench.DefaultDPIs, "scan resolutions")
	f.StringVar(&cfg.OCR.Languages, "ocr-languages", pdf.DefaultOCRLanguages, "Tesseract languages, joined by +")
	return cmd
}

// ocrRows are bench ocr's figures as table rows, two per resolution.
func ocrRows(res *ocrbench.Result) [][2]string {
	var rows [][2]string
	for _, r := range res.Runs {
		rows = append(rows,
			[2]string{fmt.Sprintf("%d dpi", r.DPI), fmt.Sprintf("accuracy %.2f%% over %d pages (%d characters); worst %.2f%% (%s)", 100*r.Accuracy, r.Pages, r.Characters, 100*r.WorstAccuracy, r.WorstPage)},
			[2]string{"", fmt.Sprintf("%.2f pages/s (%.1f s, one document at a time)", r.PagesPerSecond, r.Seconds)})
	}
	return rows
}
