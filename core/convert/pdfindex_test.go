package convert

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
)

// The index must read every well-formed layout itself (falling back to
// pdfcpu alone would hide its bugs on small files), and pdfcpu must reach the
// same verdict through the patched view as on the real file.
func TestIndexAgreesWithPDFCPU(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		data    []byte
		patches int // streams hidden from pdfcpu
	}{
		{"small streams only", pdfBytes(t, pdfSpec{pages: 3}), 0},
		{"large images", pdfBytes(t, pdfSpec{pages: 3, imageBytes: 50000}), 3},
		{"large images, indirect lengths", pdfBytes(t, pdfSpec{pages: 3, imageBytes: 50000, indirectLengths: true}), 3},
		{"junk before header", pdfBytes(t, pdfSpec{pages: 2, imageBytes: 50000, junk: "garbage\n"}), 2},
		{"xref stream", rewritePDF(t, pdfBytes(t, pdfSpec{pages: 4, imageBytes: 50000})), 4},
		{"incremental update", appendUpdate(t, pdfBytes(t, pdfSpec{pages: 2, imageBytes: 50000})), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			idx, err := indexPDF(context.Background(), bytes.NewReader(tt.data), int64(len(tt.data)))
			if err != nil {
				t.Fatal(err)
			}
			if len(idx.patches) != tt.patches {
				t.Errorf("%d patches, want %d", len(idx.patches), tt.patches)
			}
			viaIndex, err := validateWithPDFCPU(context.Background(), &patchedReader{r: bytes.NewReader(tt.data), size: int64(len(tt.data)), patches: idx.patches}, int64(len(tt.data)))
			if err != nil {
				t.Fatal(err)
			}
			direct, err := validateWithPDFCPU(context.Background(), bytes.NewReader(tt.data), int64(len(tt.data)))
			if err != nil {
				t.Fatal(err)
			}
			if viaIndex != direct {
				t.Errorf("pages: %d through the index, %d directly", viaIndex, direct)
			}
		})
	}
}

func TestPatchedReader(t *testing.T) {
	t.Parallel()
	data := []byte("0123456789abcdefghij")
	p := &patchedReader{r: bytes.NewReader(data), size: int64(len(data)), patches: []patch{
		{off: 2, b: []byte("XY")}, {off: 9, b: []byte("ZZZ")},
	}}
	want := "01XY45678ZZZcdefghij"
	for _, chunk := range []int{1, 3, 7, 64} {
		if _, err := p.Seek(0, 0); err != nil {
			t.Fatal(err)
		}
		var got []byte
		buf := make([]byte, chunk)
		for {
			n, err := p.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil {
				break
			}
		}
		if string(got) != want {
			t.Errorf("chunk %d: %q, want %q", chunk, got, want)
		}
	}
}

// A large file whose structure the index cannot read is refused rather than
// handed to pdfcpu, which would load it whole.
func TestLargeDamagedPDF(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "big.pdf")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	writePDF(t, f, pdfSpec{pages: 3, imageBytes: 4 << 20})
	st, _ := f.Stat()
	// Cut into the last image: the xref and trailer are gone.
	if err := f.Truncate(st.Size() - 1<<20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = newConverter(t, Options{}).ToPDF(context.Background(), documents.ConvertRequest{Src: p, Kind: documents.FilePDF, Dst: p + ".out"})
	wantCode(t, err, core.KindUnprocessable, documents.CodeCorruptDocument)
}

const measureEnv = "FAXHUB_MEASURE_PDF"

// TestPDFMemoryBounded counts the pages of a 100 MB PDF (ten 10 MB image
// streams) in a child process and checks how much its peak RSS grew. pdfcpu
// alone grows it by the file's size; through the index it must stay under
// 32 MB.
func TestPDFMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 100 MB file")
	}
	if raceEnabled {
		t.Skip("the race detector's shadow memory makes RSS meaningless")
	}
	p := filepath.Join(t.TempDir(), "big.pdf")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	writePDF(t, f, pdfSpec{pages: 10, imageBytes: 10 << 20})
	st, _ := f.Stat()
	f.Close()

	measure := func(mode string) (pages, grewKB int) {
		rest, _ := measureInChild(t, "TestMeasurePDFChild", measureEnv+"="+mode+":"+p)
		fmt.Sscanf(rest, "pages=%d grew_kb=%d", &pages, &grewKB)
		t.Logf("%s: %d MB PDF, %d pages: peak RSS grew by %d KB", mode, st.Size()>>20, pages, grewKB)
		return pages, grewKB
	}
	pages, grewKB := measure("indexed")
	if pages != 10 {
		t.Fatalf("pages = %d, want 10", pages)
	}
	if grewKB > 32<<10 {
		t.Errorf("peak RSS grew by %d MB; the budget is 32 MB", grewKB>>10)
	}
	// For the record (and to notice if a pdfcpu upgrade makes the index
	// unnecessary): pdfcpu on its own.
	measure("pdfcpu-only")
}

func TestMeasurePDFChild(t *testing.T) {
	mode, p, ok := strings.Cut(os.Getenv(measureEnv), ":")
	if !ok {
		t.Skip("helper for TestPDFMemoryBounded")
	}
	before := peakRSSKB(t)
	var pages int
	var err error
	if mode == "indexed" {
		pages, err = pdfPages(context.Background(), p)
	} else {
		var f *os.File
		if f, err = os.Open(p); err == nil {
			defer f.Close()
			st, _ := f.Stat()
			pages, err = validateWithPDFCPU(context.Background(), f, st.Size())
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("MEASURE pages=%d grew_kb=%d\n", pages, peakRSSKB(t)-before)
}

// measureInChild runs the test named child in a new process of this test
// binary with env set, so that its peak RSS is its own, and returns the
// rest of the "MEASURE " line it printed ("" and the output if none).
func measureInChild(t *testing.T, child, env string) (rest string, out []byte) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.v")
	cmd.Env = append(os.Environ(), env)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if r, ok := strings.CutPrefix(strings.TrimSpace(line), "MEASURE "); ok {
			rest = r
		}
	}
	return rest, out
}

func peakRSSKB(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return n
		}
	}
	t.Skip("no VmHWM")
	return 0
}

// A PDF with more pages than the limit is refused from its page tree before
// pdfcpu builds its object graph (~7 KB a page: 150 MB for 20,000 pages
// before the check), whether the catalog is stored at an offset or in an
// object stream.
func TestPDFPageLimitBeforeValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		data     []byte
		declared int
		code     string
	}{
		{"classic xref, over the limit", pdfBytes(t, pdfSpec{pages: 40}), 40, documents.CodeTooManyPages},
		{"object streams, over the limit", rewritePDF(t, pdfBytes(t, pdfSpec{pages: 40})), 40, documents.CodeTooManyPages},
		{"at the limit", pdfBytes(t, pdfSpec{pages: 30}), 30, ""},
		{"object streams, at the limit", rewritePDF(t, pdfBytes(t, pdfSpec{pages: 30})), 30, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			idx, err := indexPDF(context.Background(), bytes.NewReader(tt.data), int64(len(tt.data)))
			if err != nil {
				t.Fatal(err)
			}
			if idx.declaredPages != tt.declared {
				t.Errorf("declared pages = %d, want %d", idx.declaredPages, tt.declared)
			}
			// Page objects are counted at offsets and in object streams
			// alike, in case /Count lies.
			if idx.pageObjects != tt.declared {
				t.Errorf("page objects = %d, want %d", idx.pageObjects, tt.declared)
			}
			p := writeTemp(t, "doc.pdf", tt.data)
			c := newConverter(t, Options{})
			pages, err := c.ToPDF(context.Background(), documents.ConvertRequest{Src: p, Kind: documents.FilePDF, Dst: p + ".out", MaxPages: 30})
			if counted, cerr := c.CountPDF(context.Background(), documents.CountRequest{PDF: tt.data, MaxPages: 30}); counted != pages || core.ErrorCode(cerr) != core.ErrorCode(err) {
				t.Errorf("CountPDF = %d, %v; ToPDF = %d, %v", counted, cerr, pages, err)
			}
			if tt.code != "" {
				wantCode(t, err, core.KindUnprocessable, tt.code)
				return
			}
			if err != nil || pages != tt.declared {
				t.Fatalf("pages = %d, %v", pages, err)
			}
		})
	}
}

// A page tree whose /Count understates its kids is refused by its page
// objects.
func TestPDFPageLimitLyingCount(t *testing.T) {
	t.Parallel()
	b := bytes.Replace(pdfBytes(t, pdfSpec{pages: 40}), []byte("/Count 40"), []byte("/Count 1 "), 1)
	p := writeTemp(t, "doc.pdf", b)
	_, err := newConverter(t, Options{}).ToPDF(context.Background(), documents.ConvertRequest{Src: p, Kind: documents.FilePDF, Dst: p + ".out", MaxPages: 30})
	wantCode(t, err, core.KindUnprocessable, documents.CodeTooManyPages)
}
