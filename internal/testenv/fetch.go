package testenv

import (
	"io"
	"net/http"
	"testing"
)

// Fetched is what a GET of a link answered.
type Fetched struct {
	Code        int
	ContentType string
	Body        []byte
}

// Fetch GETs url as a client following a link does (no credentials): the
// signed links of previews, documents as faxed and reports.
func Fetch(t testing.TB, url string) Fetched {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return Fetched{resp.StatusCode, resp.Header.Get("Content-Type"), b}
}
