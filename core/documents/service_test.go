package documents_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/testenv"
)

func TestUploadErrors(t *testing.T) {
	// The app's own goroutines (the webhook dispatcher) read the clock while
	// a subtest moves it: an injected clock safe for concurrent use.
	clock := testenv.NewClock()
	e := testenv.New(t, testenv.WithConfig(func(c *services.Config) { c.Now = clock.Now; c.Documents.MaxPages = 5 }))
	p := e.Principal(t, e.KeyATest)
	newCap := func(ct string, max int64) *documents.Capability {
		c, err := e.Svc.Documents.CreateUpload(ctx, p, ct, max)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	put := func(token string, body []byte) error {
		_, err := e.Svc.Documents.ReceiveUpload(ctx, token, bytes.NewReader(body))
		return err
	}

	t.Run("single use", func(t *testing.T) {
		c := newCap("", 0)
		if err := put(c.UploadToken, testenv.MinimalPDF(1)); err != nil {
			t.Fatal(err)
		}
		testenv.WantCode(t, put(c.UploadToken, testenv.MinimalPDF(1)), documents.CodeUploadUsed)
	})
	t.Run("failed put leaves token usable", func(t *testing.T) {
		c := newCap("", 0)
		testenv.WantCode(t, put(c.UploadToken, []byte("%PDF-1.4 truncated")), documents.CodeCorruptDocument)
		if err := put(c.UploadToken, testenv.MinimalPDF(2)); err != nil {
			t.Fatalf("retry after a failed PUT: %v", err)
		}
	})
	t.Run("too large for maxBytes", func(t *testing.T) {
		c := newCap("", 100)
		testenv.WantCode(t, put(c.UploadToken, testenv.MinimalPDF(1)), documents.CodeFileTooLarge)
	})
	t.Run("maxBytes above server limit", func(t *testing.T) {
		_, err := e.Svc.Documents.CreateUpload(ctx, p, "", 51<<20)
		testenv.WantCode(t, err, documents.CodeFileTooLarge)
	})
	t.Run("too many pages", func(t *testing.T) {
		testenv.WantCode(t, put(newCap("", 0).UploadToken, testenv.MinimalPDF(6)), documents.CodeTooManyPages)
	})
	t.Run("empty", func(t *testing.T) {
		testenv.WantCode(t, put(newCap("", 0).UploadToken, nil), documents.CodeEmptyFile)
	})
	t.Run("unsupported", func(t *testing.T) {
		testenv.WantCode(t, put(newCap("", 0).UploadToken, []byte("just some text, not a document")), documents.CodeUnsupportedType)
	})
	t.Run("content type mismatch", func(t *testing.T) {
		testenv.WantCode(t, put(newCap("image/png", 0).UploadToken, testenv.MinimalPDF(1)), documents.CodeContentTypeMismatch)
	})
	t.Run("unsupported declared type", func(t *testing.T) {
		_, err := e.Svc.Documents.CreateUpload(ctx, p, "text/plain", 0)
		testenv.WantCode(t, err, documents.CodeUnsupportedType)
	})
	t.Run("forged", func(t *testing.T) {
		c := newCap("", 0)
		testenv.WantCode(t, put(strings.Replace(c.UploadToken, ".", ".x", 1), testenv.MinimalPDF(1)), documents.CodeUploadInvalid)
	})
	t.Run("expired", func(t *testing.T) {
		c := newCap("", 0)
		clock.Advance(2 * time.Hour)
		defer clock.Advance(-2 * time.Hour)
		testenv.WantCode(t, put(c.UploadToken, testenv.MinimalPDF(1)), documents.CodeUploadExpired)
	})
	t.Run("concurrent puts store one document", func(t *testing.T) {
		c := newCap("", 0)
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok, used := 0, 0
		for range 10 {
			wg.Go(func() {
				err := put(c.UploadToken, testenv.MinimalPDF(1))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case core.ErrorCode(err) == documents.CodeUploadUsed:
					used++
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if ok != 1 || used != 9 {
			t.Fatalf("ok=%d used=%d", ok, used)
		}
	})
}
