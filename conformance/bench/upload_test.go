//go:build bench

package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core/services"
)

const (
	uploadPages      = 10
	uploadImageBytes = 10 << 20 // ten 10 MiB images: a 100 MiB PDF
	uploadRuns       = 5
	rssTargetMB      = 32
)

// writeBigPDF streams a valid PDF of pages pages, each with an uncompressed
// grey image of about imageBytes, to path (the layout of a large scan; the
// same generator as core/convert's memory test). It returns the size.
func writeBigPDF(path string, pages, imageBytes int) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	var off int64
	var offs []int64
	var werr error
	put := func(s string) {
		if werr != nil {
			return
		}
		n, err := bw.WriteString(s)
		off += int64(n)
		werr = err
	}
	begin := func() int {
		offs = append(offs, off)
		put(fmt.Sprintf("%d 0 obj\n", len(offs)))
		return len(offs)
	}
	put("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	begin()
	put("<< /Type /Catalog /Pages 2 0 R >>\nendobj\n")
	kids := make([]string, pages)
	for i := range pages {
		kids[i] = fmt.Sprintf("%d 0 R", 3+i*3) // page, image, contents
	}
	begin()
	put(fmt.Sprintf("<< /Type /Pages /Count %d /Kids [%s] >>\nendobj\n", pages, strings.Join(kids, " ")))
	side := 1
	for side*side < imageBytes {
		side++
	}
	row := string(bytes.Repeat([]byte{0x5a}, side))
	font := "/Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >>"
	for i := range pages {
		page := begin()
		put(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /Im0 %d 0 R >> %s >> /Contents %d 0 R >>\nendobj\n",
			page+1, font, page+2))
		begin()
		put(fmt.Sprintf("<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 /Length %d >>\nstream\n", side, side, side*side))
		for range side {
			put(row)
		}
		put("\nendstream\nendobj\n")
		content := fmt.Sprintf("q 612 0 0 792 0 0 cm /Im0 Do Q BT /F1 24 Tf 72 700 Td (Page %d) Tj ET", i+1)
		begin()
		put(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream\nendobj\n", len(content), content))
	}
	xref := off
	put(fmt.Sprintf("xref\n0 %d\n0000000000 65535 f \n", len(offs)+1))
	for _, o := range offs {
		put(fmt.Sprintf("%010d 00000 n \n", o))
	}
	put(fmt.Sprintf("trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offs)+1, xref))
	if werr != nil {
		return 0, werr
	}
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	return off, f.Close()
}

// procStatusKB reads a kB field (VmRSS, VmHWM) of /proc/self/status.
func procStatusKB(field string) (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc/self/status", field)
}

// resetPeakRSS sets VmHWM back to the current RSS.
func resetPeakRSS() error { return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// benchUpload PUTs a 100 MiB PDF to an upload capability and to a handler
// that only copies the body to a file, uploadRuns times each, alternating,
// and reports the median MB/s; it also reports how far the process's peak
// RSS rose above its RSS during the faxhub PUTs (the largest of the runs).
func benchUpload(t *testing.T, rep *report) {
	ctx := t.Context()
	pdf := filepath.Join(t.TempDir(), "big.pdf")
	size, err := writeBigPDF(pdf, uploadPages, uploadImageBytes)
	if err != nil {
		t.Fatal(err)
	}
	env := benchEnv(t, "", func(c *services.Config) { c.Documents.MaxUploadBytes = 256 << 20 })
	srv := apiServer(t, env)
	base := newBaseline(t)
	baseSrv := serve(t, base.handler(testLogger(t)))
	client := newClient(1)
	defer client.CloseIdleConnections()

	put := func(url string, out any) (time.Duration, error) {
		f, err := os.Open(pdf)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		req, err := http.NewRequestWithContext(ctx, "PUT", url, f)
		if err != nil {
			return 0, err
		}
		req.ContentLength = size // streamed from the file, not buffered
		req.Header.Set("Content-Type", "application/pdf")
		// Each PUT starts with no dirty pages: once a few hundred MB are
		// dirty the kernel throttles writers to the disk's speed, and the
		// runs before would otherwise slow the ones after.
		syscall.Sync()
		start := time.Now()
		err = call(client, req, out)
		return time.Since(start), err
	}
	mbps := func(d time.Duration) float64 { return float64(size) / (1 << 20) / d.Seconds() }

	// Untimed warm-up of both paths (connections, code, the file in the
	// page cache).
	if _, err := put(baseSrv.URL+"/baseline/uploads", nil); err != nil {
		t.Fatal(err)
	}

	rssOK := true
	var fxRates, blRates []float64
	var peakGrowKB int64
	for i := range uploadRuns {
		d, err := put(baseSrv.URL+"/baseline/uploads", nil)
		if err != nil {
			t.Fatalf("baseline PUT: %v", err)
		}
		blRates = append(blRates, mbps(d))

		token, err := newUpload(ctx, client, srv, env.KeyATest)
		if err != nil {
			t.Fatal(err)
		}
		debug.FreeOSMemory() // a GC, and free memory handed back, so growth is not hidden in idle heap
		var before int64
		if err := resetPeakRSS(); err != nil {
			if rssOK {
				t.Logf("cannot reset the peak RSS (%v); the RSS figure is skipped", err)
			}
			rssOK = false
		} else if before, err = procStatusKB("VmRSS"); err != nil {
			t.Logf("%v; the RSS figure is skipped", err)
			rssOK = false
		}
		var out struct {
			Stored   bool `json:"stored"`
			Document struct {
				Pages       int   `json:"pages"`
				SourceBytes int64 `json:"sourceBytes"`
			} `json:"document"`
		}
		d, err = put(srv.URL+"/api/v1/uploads/"+token, &out)
		if err != nil {
			t.Fatalf("faxhub PUT: %v", err)
		}
		if rssOK {
			hwm, err := procStatusKB("VmHWM")
			if err != nil {
				t.Fatal(err)
			}
			peakGrowKB = max(peakGrowKB, hwm-before)
			t.Logf("run %d: RSS %d MB before the faxhub PUT, peak %d MB (+%d KB)", i+1, before>>10, hwm>>10, hwm-before)
		}
		if !out.Stored || out.Document.Pages != uploadPages {
			t.Fatalf("faxhub PUT: stored=%v pages=%d, want a stored %d-page document", out.Stored, out.Document.Pages, uploadPages)
		}
		fxRates = append(fxRates, mbps(d))
		t.Logf("run %d: faxhub %.0f MB/s, baseline %.0f MB/s", i+1, fxRates[i], blRates[i])
	}
	name := fmt.Sprintf("upload   PUT of a %d MB PDF (median of %d)", size>>20, uploadRuns)
	rep.add(name, "MB/s", median(fxRates), median(blRates), ratioAtLeast(0.5), 0,
		"upload: faxhub spools the body to disk while hashing it (SHA-256), checks the magic bytes, indexes and validates the PDF "+
			"(pdfcpu) in place and counts pages, moves the spooled file into the file blob store and records the document. "+
			"Baseline: io.Copy of the body to a file. Every PUT starts after a sync. MB = 2^20 bytes.")
	if rssOK {
		rep.add("upload   peak RSS growth during the faxhub PUT", "MB", float64(peakGrowKB)/1024, nan, atMost(rssTargetMB, "MB"), 1,
			"peak RSS: VmHWM after the PUT minus VmRSS before it, high-water mark reset through /proc/self/clear_refs after a GC "+
				"(largest of the runs). The process also holds the HTTP client, which streams the body from the file in small buffers, so it adds little.")
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
