package convert

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/internal/require"
)

func needSoffice(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"soffice", "libreoffice"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	require.Missing(t, "LibreOffice", "apt-get install libreoffice-writer-nogui libreoffice-calc-nogui")
	return ""
}

// sofficeConvert converts src to format with LibreOffice directly, to make
// real legacy DOC and XLS fixtures.
func sofficeConvert(t *testing.T, bin, src, format string) string {
	t.Helper()
	dir := t.TempDir()
	profile := filepath.Join(dir, "profile")
	cmd := exec.Command(bin, "--headless", "--norestore", "-env:UserInstallation=file://"+profile,
		"--convert-to", format, "--outdir", dir, src)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("soffice --convert-to %s: %v\n%s", format, err, out)
	}
	out := filepath.Join(dir, strings.TrimSuffix(filepath.Base(src), filepath.Ext(src))+"."+strings.Split(format, ":")[0])
	if _, err := os.Stat(out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestOfficeToPDF(t *testing.T) {
	bin := needSoffice(t)
	t.Parallel()
	docx := writeTemp(t, "three.docx", docxBytes(t, 3))
	xlsx := writeTemp(t, "sheet.xlsx", xlsxBytes(t))
	tests := []struct {
		name  string
		src   func(t *testing.T) string
		kind  documents.FileKind
		pages int
	}{
		{"docx with two page breaks", func(*testing.T) string { return docx }, documents.FileDOCX, 3},
		{"xlsx", func(*testing.T) string { return xlsx }, documents.FileXLSX, 1},
		{"odt", func(t *testing.T) string { return writeTemp(t, "a.odt", odtBytes(t)) }, documents.FileODT, 1},
		{"ods", func(t *testing.T) string { return writeTemp(t, "a.ods", odsBytes(t)) }, documents.FileODS, 1},
		{"rtf with a page break", func(t *testing.T) string {
			return writeTemp(t, "a.rtf", []byte(`{\rtf1\ansi\deff0 {\fonttbl {\f0 Times New Roman;}}\f0\fs24 First page.\par\page Second page.\par}`))
		}, documents.FileRTF, 2},
		{"doc", func(t *testing.T) string { return sofficeConvert(t, bin, docx, "doc:MS Word 97") }, documents.FileDOC, 3},
		{"xls", func(t *testing.T) string { return sofficeConvert(t, bin, xlsx, "xls:MS Excel 97") }, documents.FileXLS, 1},
	}
	c := newConverter(t, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// The service spools uploads to a name without an extension;
			// so do we.
			b, err := os.ReadFile(tt.src(t))
			if err != nil {
				t.Fatal(err)
			}
			src := writeTemp(t, "source", b)
			kind, err := c.Detect(context.Background(), src)
			if err != nil || kind != tt.kind {
				t.Fatalf("Detect = %q, %v; want %q", kind, err, tt.kind)
			}
			dst := filepath.Join(t.TempDir(), "document.pdf")
			pages, err := c.ToPDF(context.Background(), documents.ConvertRequest{Src: src, Kind: kind, Dst: dst})
			if err != nil {
				t.Fatal(err)
			}
			if pages != tt.pages {
				t.Errorf("pages = %d, want %d", pages, tt.pages)
			}
			if n, err := pdfPages(context.Background(), dst); err != nil || n != pages {
				t.Errorf("output re-validated: %d pages, %v", n, err)
			}
			// LibreOffice's layout (classic xref, indirect lengths) must be
			// read by the index, not left to the small-file fallback.
			f, err := os.Open(dst)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			st, _ := f.Stat()
			if _, err := indexPDF(context.Background(), f, st.Size()); err != nil {
				t.Errorf("index of LibreOffice output: %v", err)
			}
		})
	}
}

func TestOfficeBrokenDocument(t *testing.T) {
	needSoffice(t)
	t.Parallel()
	// Detect accepts it (the entries are right) but it is no Word document.
	b := zipBytes(t,
		zipEntry{"[Content_Types].xml", "<Types"},
		zipEntry{"word/document.xml", "\x00\x01 not xml"},
	)
	src := writeTemp(t, "source", b)
	c := newConverter(t, Options{})
	kind, err := c.Detect(context.Background(), src)
	if err != nil || kind != documents.FileDOCX {
		t.Fatalf("Detect = %q, %v", kind, err)
	}
	_, err = c.ToPDF(context.Background(), documents.ConvertRequest{Src: src, Kind: kind, Dst: filepath.Join(t.TempDir(), "out.pdf")})
	wantCode(t, err, core.KindUnprocessable, documents.CodeConversionFailed)
}

// Conversions beyond MaxConcurrent wait for a slot instead of failing, and
// parallel jobs do not trip over each other's LibreOffice profile.
func TestOfficeConcurrent(t *testing.T) {
	needSoffice(t)
	t.Parallel()
	c := newConverter(t, Options{MaxConcurrent: 2})
	src := writeTemp(t, "source", docxBytes(t, 2))
	var wg sync.WaitGroup
	errs := make([]error, 4)
	pages := make([]int, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pages[i], errs[i] = c.ToPDF(context.Background(), documents.ConvertRequest{Src: src, Kind: documents.FileDOCX, Dst: filepath.Join(t.TempDir(), "out.pdf")})
		}()
	}
	wg.Wait()
	for i := range errs {
		if errs[i] != nil || pages[i] != 2 {
			t.Errorf("job %d: %d pages, %v", i, pages[i], errs[i])
		}
	}
}

func TestOfficeMissingLibreOffice(t *testing.T) {
	t.Parallel()
	c := newConverter(t, Options{SofficePath: filepath.Join(t.TempDir(), "no", "soffice")})
	src := writeTemp(t, "source", docxBytes(t, 1))
	_, err := c.ToPDF(context.Background(), documents.ConvertRequest{Src: src, Kind: documents.FileDOCX, Dst: filepath.Join(t.TempDir(), "out.pdf")})
	wantCode(t, err, core.KindUnsupportedMedia, documents.CodeLibreOfficeMissing)
	if !strings.Contains(err.Error(), "LibreOffice, which is not installed on this server") {
		t.Errorf("message: %v", err)
	}
}

// A hung conversion is killed with its whole process group when the timeout
// expires. The stand-in for soffice forks a grandchild and waits, as the real
// launcher does with soffice.bin.
func TestOfficeTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	script := filepath.Join(dir, "soffice")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nsleep 60 &\necho $! > "+pidFile+"\nwait\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	c := newConverter(t, Options{SofficePath: script, Timeout: 500 * time.Millisecond})
	src := writeTemp(t, "source", docxBytes(t, 1))
	start := time.Now()
	_, err := c.ToPDF(context.Background(), documents.ConvertRequest{Src: src, Kind: documents.FileDOCX, Dst: filepath.Join(t.TempDir(), "out.pdf")})
	wantCode(t, err, core.KindUnprocessable, documents.CodeConversionFailed)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s to give up", d)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	// The grandchild is reparented to init, which reaps it; until then it is
	// a zombie, which kill(0) still reports as existing. Poll.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			break
		}
		if isZombie(pid) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d survived the timeout", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

func TestOfficeCancelledWhileWaitingForASlot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "soffice")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nsleep 60\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	c := newConverter(t, Options{SofficePath: script, MaxConcurrent: 1, Timeout: 30 * time.Second})
	src := writeTemp(t, "source", docxBytes(t, 1))
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := c.ToPDF(ctx, documents.ConvertRequest{Src: src, Kind: documents.FileDOCX, Dst: filepath.Join(dir, "a.pdf")})
		first <- err
	}()
	// Let the first job take the only slot, then queue a second.
	time.Sleep(200 * time.Millisecond)
	second := make(chan error, 1)
	go func() {
		_, err := c.ToPDF(ctx, documents.ConvertRequest{Src: src, Kind: documents.FileDOCX, Dst: filepath.Join(dir, "b.pdf")})
		second <- err
	}()
	time.Sleep(100 * time.Millisecond)
	cancel()
	for _, ch := range []chan error{first, second} {
		select {
		case err := <-ch:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("got %v, want context.Canceled", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("cancellation did not stop the conversion")
		}
	}
}

// A document LibreOffice lays out to more pages than the limit is refused
// with too_many_pages (from the result's page tree, before pdfcpu reads
// it), not as a failed conversion. The stand-in for soffice writes a
// 40-page PDF.
func TestOfficeTooManyPages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	many := writeTemp(t, "many.pdf", pdfBytes(t, pdfSpec{pages: 40}))
	script := filepath.Join(dir, "soffice")
	body := "#!/bin/sh\nwhile [ $# -gt 0 ]; do if [ \"$1\" = --outdir ]; then out=$2; fi; shift; done\ncp " + many + " \"$out/document.pdf\"\n"
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	c := newConverter(t, Options{SofficePath: script})
	src := writeTemp(t, "source", docxBytes(t, 1))
	dst := filepath.Join(dir, "out.pdf")
	_, err := c.ToPDF(context.Background(), documents.ConvertRequest{Src: src, Kind: documents.FileDOCX, Dst: dst, MaxPages: 30})
	wantCode(t, err, core.KindUnprocessable, documents.CodeTooManyPages)
	if pages, err := c.ToPDF(context.Background(), documents.ConvertRequest{Src: src, Kind: documents.FileDOCX, Dst: dst, MaxPages: 40}); err != nil || pages != 40 {
		t.Fatalf("at the limit: %d pages, %v", pages, err)
	}
}
