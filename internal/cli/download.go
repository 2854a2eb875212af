package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/faxhub/faxhub/rest/client"
)

// maxDownloadBytes bounds a downloaded PDF (a received fax or a report).
const maxDownloadBytes = 200 << 20

// saveLink reads the answer of a call that returns a signed link to a PDF
// ({url, expiresAt}: a report, a received fax) and downloads it to out.
func (s *state) saveLink(ctx context.Context, res *http.Response, err error, out string) error {
	if err != nil {
		return err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if err != nil {
		return err
	}
	if err := client.Check(res, body); err != nil {
		return err
	}
	var link struct {
		URL       string    `json:"url"`
		ExpiresAt time.Time `json:"expiresAt"`
	}
	if err := json.Unmarshal(body, &link); err != nil || link.URL == "" {
		return fmt.Errorf("the API's link answer is not understood: %.200s", body)
	}
	return s.download(ctx, link.URL, link.ExpiresAt, out)
}

// download GETs a signed link (its own credential: no Authorization) and
// writes the PDF to out ("-": stdout). With --json it prints where it went.
func (s *state) download(ctx context.Context, url string, expires time.Time, out string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	hc := s.env.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		return client.Check(res, body)
	}
	var w io.Writer = s.env.Stdout
	if out != "-" {
		f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	n, err := io.Copy(w, io.LimitReader(res.Body, maxDownloadBytes+1))
	if err != nil {
		return err
	}
	if n > maxDownloadBytes {
		return fmt.Errorf("the download is larger than %d MB", maxDownloadBytes>>20)
	}
	if out == "-" {
		return nil
	}
	if s.json {
		writeJSON(s.env.Stdout, map[string]any{"file": out, "bytes": n, "url": url, "expiresAt": expires})
		return nil
	}
	fmt.Fprintf(s.env.Stdout, "wrote %s (%d bytes)\n", out, n)
	return nil
}
