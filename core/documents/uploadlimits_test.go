package documents_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/testenv"
)

// TestUploadRateLimit: upload capabilities are limited per owner and mode,
// more strictly in test mode; a refusal says when to retry and the
// allowance comes back with time (injected clock).
func TestUploadRateLimit(t *testing.T) {
	clock := testenv.NewClock()
	e := testenv.New(t, testenv.WithConfig(func(c *services.Config) {
		c.Now = clock.Now
		c.SetLimit(core.LimitUpload, core.Rate{Interval: time.Second, Burst: 5})
		c.SetLimit(core.LimitTestUpload, core.Rate{Interval: 10 * time.Second, Burst: 3})
	}))
	for _, tc := range []struct {
		name  string
		key   string
		burst int
		wait  time.Duration
	}{
		{"test key", e.KeyATest, 3, 10 * time.Second},
		{"live key", e.KeyALive, 5, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := e.Principal(t, tc.key)
			for i := range tc.burst {
				if _, err := e.Svc.Documents.CreateUpload(ctx, p, "", 0); err != nil {
					t.Fatalf("upload %d of the burst: %v", i+1, err)
				}
			}
			_, err := e.Svc.Documents.CreateUpload(ctx, p, "", 0)
			testenv.WantCode(t, err, core.CodeRateLimited)
			if got := core.AsError(err).RetryAfterSeconds; got != int(tc.wait/time.Second) {
				t.Fatalf("RetryAfterSeconds = %d, want %d", got, int(tc.wait/time.Second))
			}
			clock.Advance(tc.wait)
			if _, err := e.Svc.Documents.CreateUpload(ctx, p, "", 0); err != nil {
				t.Fatalf("upload after waiting: %v", err)
			}
		})
	}
	// Another owner has its own allowance.
	if _, err := e.Svc.Documents.CreateUpload(ctx, e.Principal(t, e.KeyBTest), "", 0); err != nil {
		t.Fatal(err)
	}
}

// TestUploadRateDefaults: test mode is stricter than live, and neither is
// stricter than the send rate (every fax needs an upload).
func TestUploadRateDefaults(t *testing.T) {
	e := testenv.New(t)
	k := e.Svc.Kernel
	live, test, send := k.Rate(core.LimitUpload), k.Rate(core.LimitTestUpload), k.Rate(core.LimitSend)
	if test.Burst >= live.Burst || test.Interval <= live.Interval {
		t.Fatalf("test mode (%d, %v) is not stricter than live (%d, %v)", test.Burst, test.Interval, live.Burst, live.Interval)
	}
	if test.Burst < send.Burst || test.Interval > send.Interval {
		t.Fatalf("test upload rate (%d, %v) is stricter than the send rate (%d, %v)", test.Burst, test.Interval, send.Burst, send.Interval)
	}
}

// TestStorageQuota: unsent documents count against the owner's quota per
// mode; past it a PUT (and a new capability once it is used up) gets 413
// storage_quota_exceeded, and sending a document frees its share.
func TestStorageQuota(t *testing.T) {
	one := int64(len(testenv.MinimalPDF(1)))
	e := testenv.New(t, testenv.WithoutWorkers(), testenv.WithConfig(func(c *services.Config) {
		c.Storage.QuotaBytes = 2*one + one/2
	}))
	p := e.Principal(t, e.KeyATest)
	put := func() (string, error) {
		t.Helper()
		c, err := e.Svc.Documents.CreateUpload(ctx, p, "", 0)
		if err != nil {
			return "", err
		}
		_, err = e.Svc.Documents.ReceiveUpload(ctx, c.UploadToken, bytes.NewReader(testenv.MinimalPDF(1)))
		return c.UploadToken, err
	}
	first, err := put()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := put(); err != nil {
		t.Fatal(err)
	}
	_, err = put()
	testenv.WantCode(t, err, documents.CodeStorageQuota)
	if ce := core.AsError(err); ce.Kind != core.KindTooLarge || ce.Fields["used"] != 2*one || ce.Fields["limit"] != 2*one+one/2 {
		t.Fatalf("quota error: kind %v fields %v", ce.Kind, ce.Fields)
	}

	// Live mode and other owners have their own quota.
	pl := e.Principal(t, e.KeyALive)
	if c, err := e.Svc.Documents.CreateUpload(ctx, pl, "", 0); err != nil {
		t.Fatal(err)
	} else if _, err := e.Svc.Documents.ReceiveUpload(ctx, c.UploadToken, bytes.NewReader(testenv.MinimalPDF(1))); err != nil {
		t.Fatalf("live upload: %v", err)
	}

	// Sending a document takes it out of the unsent bytes.
	if _, _, err := e.Svc.Faxes.Send(ctx, p, "q1", faxes.SendRequest{To: "+12125550100", UploadToken: first}); err != nil {
		t.Fatal(err)
	}
	if _, err := put(); err != nil {
		t.Fatalf("upload after sending one document: %v", err)
	}
	// Now the quota is full (two unsent): a new capability is refused at once.
	if _, err := put(); core.ErrorCode(err) != documents.CodeStorageQuota {
		t.Fatalf("third unsent document: %v", err)
	}
}

// TestStorageQuotaRefusesCapabilityWhenFull: once the quota is used up a
// new capability is refused before anything is uploaded.
func TestStorageQuotaRefusesCapabilityWhenFull(t *testing.T) {
	one := int64(len(testenv.MinimalPDF(1)))
	e := testenv.New(t, testenv.WithConfig(func(c *services.Config) { c.Storage.QuotaBytes = one }))
	p := e.Principal(t, e.KeyATest)
	e.Upload(t, p, 1)
	_, err := e.Svc.Documents.CreateUpload(ctx, p, "", 0)
	testenv.WantCode(t, err, documents.CodeStorageQuota)
}
