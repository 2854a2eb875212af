package mcp

import (
	"embed"
	"net/http"
	"strings"

	"github.com/faxhub/faxhub/core/web"
)

// UploadPagePath is the page a person opens to upload a file for a chat
// app. The upload token travels in the URL fragment (uploadPageUrl is
// {base}/upload#{token}), so it never reaches a server, a proxy or a log;
// the page's script reads it and PUTs the file to the upload URL without
// any OAuth header.
const UploadPagePath = "/upload"

//go:embed static/upload.html static/upload.js
var staticFS embed.FS

// registerUploadPage puts GET /upload and GET /upload/app.js on g. apiURL
// is the origin of /api/v1/uploads (the page PUTs there).
func registerUploadPage(g *web.Group, apiURL string) {
	apiURL = strings.TrimRight(apiURL, "/")
	html, _ := staticFS.ReadFile("static/upload.html")
	js, _ := staticFS.ReadFile("static/upload.js")
	page := strings.ReplaceAll(string(html), "{{API}}", apiURL)
	csp := "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; connect-src 'self' " + apiURL + "; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
	g.HandleFunc(web.Route{Name: "mcp.uploadPage", Methods: "GET", Path: UploadPagePath, Auth: web.AuthNone}, func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		_, _ = w.Write([]byte(page))
	})
	g.HandleFunc(web.Route{Name: "mcp.uploadScript", Methods: "GET", Path: UploadPagePath + "/app.js", Auth: web.AuthNone}, func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/javascript; charset=utf-8")
		h.Set("Cache-Control", "public, max-age=300")
		h.Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(js)
	})
}
