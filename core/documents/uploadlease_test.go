package documents_test

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/testenv"
)

// TestUploadLeaseAfterCrash: a PUT whose process died (it claimed the upload
// and never finished) holds the token only for the lease, not until the
// token expires.
func TestUploadLeaseAfterCrash(t *testing.T) {
	clock := testenv.NewClock()
	e := testenv.New(t, testenv.WithConfig(func(c *services.Config) { c.Now = clock.Now }))
	p := e.Principal(t, e.KeyATest)
	c, err := e.Svc.Documents.CreateUpload(ctx, p, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	// The dead PUT: claimed now, with the default lease, never renewed.
	now := clock.Now().UTC()
	if err := e.Store.ClaimUpload(ctx, c.Key, "dead-put", now, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	put := func() error {
		_, err := e.Svc.Documents.ReceiveUpload(ctx, c.UploadToken, bytes.NewReader(testenv.MinimalPDF(1)))
		return err
	}
	clock.Advance(30 * time.Second)
	testenv.WantCode(t, put(), documents.CodeUploadUsed)
	clock.Advance(31 * time.Second)
	if err := put(); err != nil {
		t.Fatalf("PUT after the dead PUT's lease lapsed: %v", err)
	}
	testenv.WantCode(t, put(), documents.CodeUploadUsed)
}

// blockingBody yields its first bytes, says so on started, then waits for
// release before yielding the rest.
type blockingBody struct {
	data    []byte
	started chan struct{}
	release chan struct{}
	n       int
}

func (b *blockingBody) Read(p []byte) (int, error) {
	if b.n == 0 {
		close(b.started)
		n := copy(p, b.data[:1])
		b.n = n
		return n, nil
	}
	<-b.release
	if b.n >= len(b.data) {
		return 0, io.EOF
	}
	n := copy(p, b.data[b.n:])
	b.n += n
	return n, nil
}

// TestUploadLeaseExcludesConcurrentPuts: while a PUT streams, another gets
// 409; a PUT whose lease lapsed and was taken over stores nothing, so one
// token never makes two documents.
func TestUploadLeaseExcludesConcurrentPuts(t *testing.T) {
	clock := testenv.NewClock()
	e := testenv.New(t, testenv.WithConfig(func(c *services.Config) { c.Now = clock.Now }))
	p := e.Principal(t, e.KeyATest)
	c, err := e.Svc.Documents.CreateUpload(ctx, p, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	slow := &blockingBody{data: testenv.MinimalPDF(1), started: make(chan struct{}), release: make(chan struct{})}
	type result struct {
		doc *documents.Document
		err error
	}
	first := make(chan result, 1)
	go func() {
		d, err := e.Svc.Documents.ReceiveUpload(ctx, c.UploadToken, slow)
		first <- result{d, err}
	}()
	<-slow.started

	_, err = e.Svc.Documents.ReceiveUpload(ctx, c.UploadToken, bytes.NewReader(testenv.MinimalPDF(2)))
	testenv.WantCode(t, err, documents.CodeUploadUsed)

	// The slow PUT's renewals run on real time and have not happened on the
	// injected clock: to the store its lease lapsed, as it would for a PUT
	// whose renewals failed for a whole minute. The next PUT takes over.
	clock.Advance(61 * time.Second)
	doc, err := e.Svc.Documents.ReceiveUpload(ctx, c.UploadToken, bytes.NewReader(testenv.MinimalPDF(2)))
	if err != nil {
		t.Fatalf("PUT after the lease lapsed: %v", err)
	}
	close(slow.release)
	r := <-first
	if r.err == nil {
		t.Fatalf("the PUT that lost its lease stored document %s beside %s", r.doc.ID, doc.ID)
	}
	testenv.WantCode(t, r.err, documents.CodeUploadUsed)
	u, err := e.Store.GetUpload(ctx, c.Key)
	if err != nil {
		t.Fatal(err)
	}
	if u.DocumentID == nil || *u.DocumentID != doc.ID {
		t.Fatalf("upload's document = %v, want %s", u.DocumentID, doc.ID)
	}
	if got, err := e.Svc.Documents.Get(ctx, p, doc.ID); err != nil || got.Pages != 2 {
		t.Fatalf("document of the winning PUT: %+v, %v", got, err)
	}
}
