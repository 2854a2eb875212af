package convert

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pdfcpu ships about 500 real-world and generated PDFs with its source. When
// the module cache holds them, every one must get the same verdict and page
// count through our index as from pdfcpu alone.
func TestPDFCPUCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("reads ~500 PDFs")
	}
	dir := pdfcpuSourceDir(t)
	var files []string
	filepath.WalkDir(filepath.Join(dir, "pkg"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.EqualFold(filepath.Ext(p), ".pdf") {
			files = append(files, p)
		}
		return nil
	})
	if len(files) == 0 {
		t.Skip("no PDFs in " + dir)
	}
	var refused int
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		direct, derr := validateWithPDFCPU(context.Background(), f, st.Size())
		_, ierr := indexPDF(context.Background(), f, st.Size())
		f.Close()
		ours, oerr := pdfPages(context.Background(), p)
		if ierr != nil {
			// Refusing what pdfcpu would repair is a choice (see pdfPages);
			// it must stay rare.
			refused++
			t.Logf("index refuses %s (pdfcpu alone: %d pages, %v): %v", filepath.Base(p), direct, derr, ierr)
			if oerr == nil {
				t.Errorf("%s: index failed but pdfPages succeeded", p)
			}
			continue
		}
		if (derr == nil) != (oerr == nil) || direct != ours {
			t.Errorf("%s: pdfcpu alone says %d pages (%v); through the index %d pages (%v)", p, direct, derr, ours, oerr)
		}
	}
	if refused > len(files)/100 {
		t.Errorf("the index refuses %d of %d files", refused, len(files))
	}
	t.Logf("%d PDFs, %d refused by the index", len(files), refused)
}

func pdfcpuSourceDir(t *testing.T) string {
	// Tests run in the package directory, inside the module, so go list
	// resolves the exact pdfcpu version in use.
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/pdfcpu/pdfcpu").Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		t.Skip("cannot locate the pdfcpu module source")
	}
	return dir
}
