package app_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	machinepay "github.com/faxhub/faxhub/core/machine"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/app"
	"github.com/faxhub/faxhub/internal/testenv"
)

// machineReadCeilingMB is the most sixty concurrent maximal machine
// requests may grow the heap (docs/limits.md, docs/payments.md): the
// bodies being decoded at once are bounded by
// machine.Config.DocumentReadBytes (32 MiB of body, two maximal
// bodies), each holding about four times its size while it is decoded,
// plus the garbage the collector has not yet reclaimed.
const machineReadCeilingMB = 384

// paddedPDF is a valid one-page PDF of exactly size bytes: its content
// stream is padded with spaces.
func paddedPDF(t *testing.T, size int) []byte {
	t.Helper()
	build := func(pad int) []byte {
		var b bytes.Buffer
		var offsets []int
		obj := func(body string) {
			offsets = append(offsets, b.Len())
			fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", len(offsets), body)
		}
		b.WriteString("%PDF-1.4\n")
		obj("<< /Type /Catalog /Pages 2 0 R >>")
		obj("<< /Type /Pages /Kids [3 0 R] /Count 1 >>")
		obj("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>")
		text := "0 0 m 10 10 l S" + strings.Repeat(" ", pad)
		obj(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(text), text))
		xref := b.Len()
		fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
		for _, off := range offsets {
			fmt.Fprintf(&b, "%010d 00000 n \n", off)
		}
		fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
		return b.Bytes()
	}
	base := len(build(0))
	// The padding's digits change the offsets: adjust until exact.
	pad := size - base
	for range 4 {
		got := len(build(pad))
		if got == size {
			break
		}
		pad += size - got
	}
	pdf := build(pad)
	if len(pdf) != size {
		t.Fatalf("padded PDF of %d bytes, want %d", len(pdf), size)
	}
	return pdf
}

// heapObjects is the bytes of heap objects, live or not yet swept: what
// the process holds for them.
func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestMachineDocumentReadsMemory sends sixty maximal machine fax requests
// (a 10 MiB PDF, a 14 MB body: what one address's burst allows) at once
// and checks how much the heap grew at its peak. Before issue 26 each
// request decoded its document as soon as it arrived, so the sixty held
// ~24 MB each at once; now the bodies decoded at once are bounded and the
// others wait their turn.
func TestMachineDocumentReadsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 60 bodies of 14 MB")
	}
	if raceEnabled {
		t.Skip("the race detector distorts memory measurements")
	}
	m := newMachine(t, func(o *app.Options) {
		prev := o.Core
		o.Core = func(c *services.Config) {
			prev(c)
			c.Machine.MaxPDFBytes = 0 // the default, 10 MiB
			// Waiting their turn may take the last ones longer than the
			// default 30 s on a busy machine: the test is about memory.
			c.Machine.DocumentReadWait = 5 * time.Minute
		}
	})
	limit := m.a.Svc.Machine.MaxBodyBytes()
	pdf := paddedPDF(t, int(m.a.Svc.Config().Machine.MaxPDFBytes))
	body, err := json.Marshal(map[string]any{"to": deliverable, "base64": base64.StdEncoding.EncodeToString(pdf), "request_id": "req-memory"})
	if err != nil {
		t.Fatal(err)
	}
	pdf = nil
	if int64(len(body)) > limit || int64(len(body)) < limit-8<<10 {
		t.Fatalf("body of %d bytes; the limit is %d", len(body), limit)
	}
	// One request first, so what every request shares (the challenge
	// secret, the request's row, pools) is there before the baseline.
	if res := m.do("POST", "/api/v1/machine/faxes", body, nil); res.status != http.StatusPaymentRequired {
		t.Fatalf("first request: %d %s", res.status, res.body)
	}

	const n = 59 // the first request took one of the address's 60
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: n, MaxIdleConnsPerHost: n}}
	t.Cleanup(client.CloseIdleConnections)
	runtime.GC()
	base := heapObjects()
	var peak uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if h := heapObjects(); h > peak {
				peak = h
			}
			select {
			case <-stop:
				return
			default:
				runtime.Gosched()
			}
		}
	}()
	var wg sync.WaitGroup
	statuses := make(chan int, n)
	for range n {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, m.base+"/api/v1/machine/faxes", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses <- resp.StatusCode
		})
	}
	wg.Wait()
	close(stop)
	<-sampled
	close(statuses)
	for s := range statuses {
		if s != http.StatusPaymentRequired {
			t.Errorf("a request answered %d, want 402", s)
		}
	}
	grew := int64(peak) - int64(base)
	t.Logf("%d concurrent requests of %d bytes: the heap grew by %d MB at its peak", n+1, len(body), grew>>20)
	if grew > machineReadCeilingMB<<20 {
		t.Errorf("the heap grew by %d MB; the ceiling is %d MB", grew>>20, machineReadCeilingMB)
	}
}

// TestMachineDocumentReadsBusy: a request that finds the room for
// decoding documents taken longer than it waits is refused with 503
// machine_payments_busy and Retry-After, and gets its 402 once there is
// room.
func TestMachineDocumentReadsBusy(t *testing.T) {
	m := newMachine(t, func(o *app.Options) {
		prev := o.Core
		o.Core = func(c *services.Config) {
			prev(c)
			c.Machine.DocumentReadWait = time.Millisecond
		}
	})
	release, err := m.a.Svc.Machine.ReserveDocumentRead(t.Context(), m.a.Svc.Config().Machine.DocumentReadBytes)
	if err != nil {
		t.Fatal(err)
	}
	body := faxBody(t, deliverable, testenv.MinimalPDF(1), "req-busy")
	busy := m.do("POST", "/api/v1/machine/faxes", body, nil)
	busy.problem(t, http.StatusServiceUnavailable, machinepay.CodeMachineBusy)
	if busy.header.Get("Retry-After") == "" {
		t.Error("no Retry-After")
	}
	m.do("POST", "/api/v1/machine/faxes/validate", []byte(`{"to":"`+deliverable+`","pages":1}`), nil).problem(t, http.StatusServiceUnavailable, machinepay.CodeMachineBusy)
	release()
	release() // twice is once
	if res := m.do("POST", "/api/v1/machine/faxes", body, nil); res.status != http.StatusPaymentRequired {
		t.Fatalf("with room: %d %s", res.status, res.body)
	}
}
