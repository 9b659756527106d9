// Package pdf turns an uploaded document into text per page, and slices
// PDFs for subpages. Despite its name it reads every format docsift
// indexes, not only PDF:
//
//   - detect.go: which format a document is, from a sample of its content
//     (its head and tail, a zip archive's directory), whatever its name
//     says; Supported lists the formats for messages and the API docs.
//   - extract.go, fitz.go, worker.go: text per page from PDF, XPS, EPUB,
//     FB2, MOBI and Office Open XML (DOCX, XLSX, PPTX) through MuPDF, in a
//     child process with a deadline that reads the stored file itself and
//     is killed when it overruns; outline.go gives each page its sections.
//   - ocr.go: pages with no text layer, and PNG, JPEG and TIFF images,
//     read by Tesseract, which the child runs page by page.
//   - html.go, text.go, clean.go: HTML, plain text and Markdown, read in
//     this process, and the text of every format cleaned alike.
//   - limits.go, unzip.go: the limits on pages and text, counted in the
//     child and again here, and zip-based formats inflated and counted
//     before MuPDF unpacks them.
//   - sandbox*.go, seccomp_linux.go: what the child may do (its
//     environment, Landlock, a seccomp filter), checked once at start by
//     CheckSandbox.
//   - slice.go: Slice, a run of a PDF's pages as a PDF of their own (what
//     a subpage serves; see package subpage), with pdfcpu.
//
// The package keeps the name the design card gives this room: PDF is the
// format it is built around (MuPDF's page model, page numbers, slicing),
// the other paged formats are read as MuPDF lays them out in pages, and
// the rest become one page without a number. A name such as "extract"
// would say more, but move a room every other document names; this
// comment says instead what the room holds.
package pdf
