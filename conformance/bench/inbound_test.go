//go:build bench

package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/internal/testenv"
)

const (
	inboundFaxes   = 200
	inboundSenders = 8
	inboundPages   = 2
	// inboundReaders is how many pdftotext runs the baseline keeps going
	// at once: the text reader's own default concurrency.
	inboundReaders = 2
)

// benchInbound measures received faxes processed per second through the
// simulator on SQLite: each one stored as it arrives, recorded with its
// job, fetched from the blob store, checked and page-counted by the
// converter, stored as a PDF and read by pdftotext (digital pages), with
// the process's RSS. The baseline is what the text alone costs: pdftotext
// on the same PDF, inboundReaders at a time, as fast as it goes.
func benchInbound(t *testing.T, rep *report) {
	if _, err := exec.LookPath("pdftotext"); err != nil {
		rep.skipped("inbound faxes/s", "pdftotext (poppler-utils) is not installed")
		return
	}
	ctx := t.Context()
	e := testenv.New(t)
	p := e.Principal(t, e.KeyATest)
	n, err := e.Svc.Numbers.Buy(ctx, p, numbers.BuyRequest{Number: "+14155550180"})
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
	e.DrainQueue(t)
	dir := t.TempDir()
	pdf := testenv.MinimalPDF(inboundPages)
	src := filepath.Join(dir, "fax.pdf")
	if err := os.WriteFile(src, pdf, 0o600); err != nil {
		t.Fatal(err)
	}

	// Baseline: pdftotext alone.
	var runs atomic.Int64
	deadline := time.Now().Add(3 * time.Second)
	var wg sync.WaitGroup
	for range inboundReaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if err := exec.CommandContext(ctx, "pdftotext", "-layout", "-enc", "UTF-8", src, "-").Run(); err != nil {
					t.Error(err)
					return
				}
				runs.Add(1)
			}
		}()
	}
	wg.Wait()
	baseline := float64(runs.Load()) / 3

	_ = resetPeakRSS()
	rssBefore, _ := procStatusKB("VmRSS")
	start := time.Now()
	var next atomic.Int64
	for w := range inboundSenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= inboundFaxes {
				path := filepath.Join(dir, "in-"+core.RandomString(6)+".pdf")
				if err := os.WriteFile(path, pdf, 0o600); err != nil {
					t.Error(err)
					return
				}
				if _, err := e.Svc.Inbox.DeliverTestFax(context.WithoutCancel(ctx), "", inbox.TestInboundFax{To: n.E164, Path: path}); err != nil {
					t.Errorf("sender %d: %v", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	e.DrainQueue(t)
	elapsed := time.Since(start)
	page, err := e.Svc.Inbox.List(ctx, p, inbox.Query{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range page.Data {
		if f.Status != inbox.Received || f.TextStatus != inbox.TextExtracted {
			t.Fatalf("a received fax was not read: %+v", f)
		}
	}
	hwm, _ := procStatusKB("VmHWM")
	rate := inboundFaxes / elapsed.Seconds()
	rep.add("inbound faxes/s (simulator, SQLite)", "faxes/s", rate, baseline, ratioAtLeast(0.5), 1,
		"baseline: pdftotext alone on the same 2-page PDF, 2 at a time; peak RSS "+group(float64(hwm)/1024, 0)+" MB (was "+group(float64(rssBefore)/1024, 0)+" MB before)")
}
