package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/faxhub/faxhub/rest/client/api"
)

// Progress is told how many bytes of an upload have been sent so far, and
// the total (-1 when unknown). It is called from the goroutine sending.
type Progress func(sent, total int64)

// Upload sends a document: it creates an upload (POST /api/v1/uploads),
// then PUTs the bytes of r (size bytes; -1 when unknown) to its URL, which
// the server converts to PDF and stores. The result's UploadToken names the
// document in SendFax. The file type is detected by the server from the
// bytes. progress may be nil.
func (c *Client) Upload(ctx context.Context, r io.Reader, size int64, progress Progress) (*api.UploadResult, error) {
	created, err := c.api.CreateUploadWithResponse(ctx, api.CreateUploadJSONRequestBody{})
	if err != nil {
		return nil, fmt.Errorf("create upload: %w", err)
	}
	capability, err := answer("create upload", created.HTTPResponse, created.Body, created.JSON200)
	if err != nil {
		return nil, err
	}
	if progress != nil {
		r = &countingReader{r: r, total: size, progress: progress}
	}
	// The upload URL is its own credential (a capability): no
	// Authorization header goes with the bytes.
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, capability.UploadUrl, io.NopCloser(r))
	if err != nil {
		return nil, fmt.Errorf("upload: %w", err)
	}
	req.ContentLength = max(size, -1)
	if size == 0 {
		req.Body = http.NoBody
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	res, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("upload: %w", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxAnswer))
	if err != nil {
		return nil, fmt.Errorf("upload: read answer: %w", err)
	}
	if err := Check(res, body); err != nil {
		return nil, err
	}
	var out api.UploadResult
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("upload: decode answer: %w", err)
	}
	return &out, nil
}

// UploadFile uploads the file at path (see Upload).
func (c *Client) UploadFile(ctx context.Context, path string, progress Progress) (*api.UploadResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return c.Upload(ctx, f, st.Size(), progress)
}

// maxAnswer bounds what the client reads of an answer it decodes itself
// (an upload's result is a few hundred bytes).
const maxAnswer = 1 << 20

type countingReader struct {
	r        io.Reader
	sent     int64
	total    int64
	progress Progress
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.sent += int64(n)
		c.progress(c.sent, c.total)
	}
	return n, err
}
