package rest

import "net/http"

// uploadCORS lets a page of any origin PUT a file to an upload URL: the
// MCP App runs in the chat host's sandboxed frame (an origin faxhub cannot
// know, often opaque), and the token in the path is the whole credential —
// no cookie or Authorization header is sent or accepted, so any origin may
// use the capability it holds. The preflight (OPTIONS) gets the same
// headers and 204.
func uploadCORS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Allow-Methods", "PUT")
		h.Set("Access-Control-Allow-Headers", "Content-Type")
		h.Set("Access-Control-Max-Age", "600")
		next.ServeHTTP(w, r)
	})
}

// noContent answers 204 (a CORS preflight).
func noContent(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }
