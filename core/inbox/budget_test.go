package inbox_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/blob"
	"github.com/faxhub/faxhub/core/convert"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/internal/fixtures"
	"github.com/faxhub/faxhub/internal/require"
	"github.com/faxhub/faxhub/internal/testenv"
)

// jobCtx stands for a process_inbound job's context: River gives it a
// deadline, and the test decides when that deadline is spent (expire) or
// near (shorten), so nothing waits on the wall clock.
type jobCtx struct {
	context.Context
	mu       sync.Mutex
	deadline time.Time
	done     chan struct{}
	err      error
}

func newJobCtx() *jobCtx {
	return &jobCtx{Context: context.Background(), deadline: time.Now().Add(time.Hour), done: make(chan struct{})}
}

func (c *jobCtx) Deadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadline, true
}

func (c *jobCtx) Done() <-chan struct{} { return c.done }

func (c *jobCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// end ends the job: DeadlineExceeded when its time ran out, Canceled when
// the process stops (or is killed) mid-job.
func (c *jobCtx) end(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
		close(c.done)
	}
}

// shorten makes little of the job's time left.
func (c *jobCtx) shorten(left time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = time.Now().Add(left)
}

// countingConverter is the real converter, counting conversions and
// calling after once each returns.
type countingConverter struct {
	documents.Converter
	n     atomic.Int32
	after func()
}

func (c *countingConverter) ToPDF(ctx context.Context, req documents.ConvertRequest) (int, error) {
	c.n.Add(1)
	pages, err := c.Converter.ToPDF(ctx, req)
	if c.after != nil {
		c.after()
	}
	return pages, err
}

// textFunc is a TextExtractor made of a function.
type textFunc func(ctx context.Context, path string, pages int) (inbox.ExtractedText, error)

func (f textFunc) Extract(ctx context.Context, path string, pages int) (inbox.ExtractedText, error) {
	return f(ctx, path, pages)
}

// inboxFor builds an inbox on e's database, blobs and services with the
// real converter (wrapped by conv when set) and text as its reader.
func inboxFor(t *testing.T, e *testenv.Env, conv *countingConverter, text inbox.TextExtractor) *inbox.Service {
	t.Helper()
	blobs, err := blob.Open(ctx, e.App.BlobURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { blobs.Close() })
	var c documents.Converter = convert.New(convert.Options{TempDir: t.TempDir()})
	if conv != nil {
		conv.Converter = c
		c = conv
	}
	return inbox.New(e.Svc.Config().Config, inbox.Deps{
		Store: e.Store, Queue: e.Queue, Blobs: blobs, Converter: c, Text: text,
		Kernel: e.Svc.Kernel, Documents: e.Svc.Documents, Numbers: e.Svc.Numbers, Faxes: e.Svc.Faxes,
	})
}

// receivingNumber buys number for p and has it placed, without workers.
func receivingNumber(t *testing.T, e *testenv.Env, p core.Principal, number string) *numbers.Number {
	t.Helper()
	n, err := e.Svc.Numbers.Buy(ctx, p, numbers.BuyRequest{Number: number})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := e.Svc.Checkout.StartNumber(ctx, p, n.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Svc.Checkout.Complete(ctx, cs.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.Svc.Numbers.PlaceOrder(ctx, n.ID); err != nil {
		t.Fatal(err)
	}
	return n
}

// simulate delivers doc to a test number of A; no worker runs its job.
func simulate(t *testing.T, e *testenv.Env, p core.Principal, to string, doc []byte) *inbox.InboundFax {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := e.Svc.Inbox.Simulate(ctx, p, inbox.TestInboundFax{To: to, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// A long scanned fax whose reading uses up the job's time is received: its
// document stored, the text read so far kept and textStatus/textNote
// saying what was not read. It used to fail at the final write with
// "context deadline exceeded" and be retried, conversion and all, for a
// day.
func TestLargeInboundFaxIsReceivedWhenReadingRunsOutOfTime(t *testing.T) {
	e, _ := testenv.Clocked(t)
	p := e.Principal(t, e.KeyATest)
	n := receivingNumber(t, e, p, "+12125550170")
	const pages = 120
	f := simulate(t, e, p, n.E164, fixtures.MultiPageTIFF(pages, 48, 64))

	job := newJobCtx()
	var textDeadline time.Time
	// OCR of a long scan: it reads the first page, then the job's time runs
	// out; like convert.TextReader it keeps what it read and says what not.
	slowOCR := textFunc(func(tctx context.Context, path string, n int) (inbox.ExtractedText, error) {
		if _, err := os.Stat(path); err != nil {
			t.Errorf("the PDF to read: %v", err)
		}
		textDeadline, _ = tctx.Deadline()
		job.end(context.DeadlineExceeded)
		<-tctx.Done()
		return inbox.ExtractedText{Text: "page one", Status: inbox.TextFailed, Method: "ocr",
			Note: "OCR of pages 2–" + strconv.Itoa(n) + " stopped: OCR did not finish in the time allowed for reading a fax"}, nil
	})
	svc := inboxFor(t, e, nil, slowOCR)
	if err := svc.Process(job, f.ID, false); err != nil {
		t.Fatalf("process: %v", err)
	}
	got, err := e.Svc.Inbox.Get(ctx, p, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != inbox.Received || got.Pages != pages || got.Bytes == 0 || got.Text != "page one" ||
		got.TextStatus != inbox.TextFailed || !strings.Contains(got.TextNote, "pages 2–120") {
		t.Fatalf("received fax: status %s pages %d bytes %d text %q %s %q (failure %q)",
			got.Status, got.Pages, got.Bytes, got.Text, got.TextStatus, got.TextNote, got.FailureReason)
	}
	if jd, _ := job.Deadline(); !textDeadline.Before(jd) {
		t.Errorf("reading the text may use the whole job (%s, job %s): nothing is left for the final write", textDeadline, jd)
	}
	link, err := e.Svc.Inbox.Download(ctx, p, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	rc, _, err := e.Svc.Inbox.OpenDownload(ctx, link.URL[strings.LastIndex(link.URL, "/")+1:])
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
}

// The document is stored (converted, counted) before its text is read, and
// a later run resumes at the text: neither a job left with too little time
// after the conversion nor a process killed while reading makes the next
// run convert the document again.
func TestInboundFaxResumesAfterTheStoredStep(t *testing.T) {
	e, _ := testenv.Clocked(t)
	p := e.Principal(t, e.KeyATest)
	n := receivingNumber(t, e, p, "+12125550171")
	const pages = 40
	real := convert.NewTextReader(convert.TextOptions{})

	for _, tc := range []struct {
		name string
		// first is the first run: it ends without reading the text.
		first func(t *testing.T, conv *countingConverter, job *jobCtx) inbox.TextExtractor
	}{
		{"little time left after the conversion", func(t *testing.T, conv *countingConverter, job *jobCtx) inbox.TextExtractor {
			conv.after = func() { job.shorten(2 * time.Second) }
			return real
		}},
		{"killed while reading", func(t *testing.T, conv *countingConverter, job *jobCtx) inbox.TextExtractor {
			return textFunc(func(context.Context, string, int) (inbox.ExtractedText, error) {
				job.end(context.Canceled)
				// What convert.TextReader answers when its caller's context is
				// cancelled.
				return inbox.ExtractedText{}, fmt.Errorf("extract text: %w", context.Canceled)
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := simulate(t, e, p, n.E164, testenv.MinimalPDF(pages))
			conv := &countingConverter{}
			job := newJobCtx()
			svc := inboxFor(t, e, conv, tc.first(t, conv, job))
			err := svc.Process(job, f.ID, false)
			if err == nil {
				t.Fatal("the first run ended without an error, so its job would not run again")
			}
			got, _ := e.Svc.Inbox.Get(ctx, p, f.ID)
			if got.Status != inbox.Receiving {
				t.Fatalf("after the first run: %s %q", got.Status, got.FailureReason)
			}

			conv.after = nil
			svc = inboxFor(t, e, conv, real)
			if err := svc.Process(newJobCtx(), f.ID, false); err != nil {
				t.Fatalf("second run: %v", err)
			}
			if c := conv.n.Load(); c != 1 {
				t.Errorf("the document was converted %d times; the second run must resume after the stored step", c)
			}
			got, _ = e.Svc.Inbox.Get(ctx, p, f.ID)
			if got.Status != inbox.Received || got.Pages != pages || got.Bytes == 0 {
				t.Fatalf("after the second run: %s pages %d bytes %d %q", got.Status, got.Pages, got.Bytes, got.FailureReason)
			}
			if _, err := exec.LookPath("pdftotext"); err != nil {
				require.Missing(t, "pdftotext", "apt-get install poppler-utils")
			}
			if got.TextStatus != inbox.TextExtracted || !strings.Contains(got.Text, "faxhub test page 40") {
				t.Fatalf("text: %s %q %q", got.TextStatus, got.TextNote, core.CutUTF8(got.Text, 200))
			}
		})
	}
}
