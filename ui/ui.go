// Package ui holds the pages docsift serves to people rather than programs:
// the hosted upload page a session URL opens, the console for project
// owners, and the friendly pages shown when a link is unknown or expired.
//
// Everything is embedded in the binary. Air-gapped installs have no CDN to
// fetch a script or a font from, and a strict Content-Security-Policy
// (script-src 'self') is simplest to keep when every byte comes from here.
// The package holds files only; the server decides routes and headers.
package ui

import (
	"embed"
	"io/fs"
)

//go:embed assets templates
var files embed.FS

// Assets is the static files the pages load (CSS, JavaScript), served by
// their base names.
func Assets() fs.FS { return sub("assets") }

// Templates is the html/template sources of the pages.
func Templates() fs.FS { return sub("templates") }

func sub(dir string) fs.FS {
	f, err := fs.Sub(files, dir)
	if err != nil {
		panic("ui: " + err.Error()) // the directory is embedded; this cannot fail
	}
	return f
}
