//go:build bench

package bench

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core/convert"
	"github.com/faxhub/faxhub/core/documents"
)

// Samples per figure: a cold LibreOffice takes about 1.5 s, a warm
// conversion about 0.2 s.
const (
	officeColdRuns = 10
	officeWarmRuns = 30
)

// benchOffice times DOCX → PDF on the converter's warm LibreOffice pool
// against a cold `soffice --convert-to` of the same file (a fresh profile
// each time, which is what the converter did before issue 32), and a cold
// one reusing its profile (what a warm profile alone saves).
func benchOffice(t *testing.T, rep *report) {
	bin, err := exec.LookPath("soffice")
	if err != nil {
		rep.skipped("office DOCX → PDF", "LibreOffice (soffice) is not installed")
		return
	}
	ctx := t.Context()
	dir := t.TempDir()
	c := convert.New(convert.Options{MaxConcurrent: 1, TempDir: dir})
	defer c.Close()
	var reusedProfile []time.Duration
	for _, pages := range []int{1, 20} {
		src := filepath.Join(dir, fmt.Sprintf("doc%d.docx", pages))
		if err := os.WriteFile(src, benchDOCX(pages), 0o600); err != nil {
			t.Fatal(err)
		}
		cold := make([]time.Duration, 0, officeColdRuns)
		for i := range officeColdRuns {
			profile := filepath.Join(dir, fmt.Sprintf("cold-%d-%d", pages, i))
			cold = append(cold, coldSoffice(t, ctx, bin, profile, src))
		}
		if pages == 1 {
			profile := filepath.Join(dir, "reused")
			coldSoffice(t, ctx, bin, profile, src) // creates the profile
			for range officeColdRuns {
				reusedProfile = append(reusedProfile, coldSoffice(t, ctx, bin, profile, src))
			}
		}
		start := time.Now()
		warmConvert(t, ctx, c, src, pages)
		first := time.Since(start)
		warm := make([]time.Duration, 0, officeWarmRuns)
		for range officeWarmRuns {
			warm = append(warm, warmConvert(t, ctx, c, src, pages))
		}
		t.Logf("DOCX %d pages: cold %v, warm %v (first, starting LibreOffice: %v)", pages, cold, warm, first)
		note := ""
		if pages == 1 {
			note = fmt.Sprintf("Warm: core/convert with one warm LibreOffice (%d conversions after one that starts it, %s); baseline: `soffice --headless --convert-to pdf` with a fresh profile (%d runs), as faxhub converted before issue 32. Both sequential.",
				officeWarmRuns, first.Round(time.Millisecond), officeColdRuns)
		}
		for _, q := range []struct {
			name string
			q    float64
			g    goal
		}{{"p50", 0.50, ratioAtMost(0.5)}, {"p99", 0.99, noTarget()}} {
			rep.add(fmt.Sprintf("office   DOCX → PDF, %d page(s), %s: warm pool against cold soffice", pages, q.name), "ms",
				ms(durationPercentile(warm, q.q)), ms(durationPercentile(cold, q.q)), q.g, 0, note)
			note = ""
		}
		if pages == 1 {
			rep.add("office   DOCX → PDF, 1 page, p50: cold soffice on a reused profile against a fresh one", "ms",
				ms(durationPercentile(reusedProfile, 0.5)), ms(durationPercentile(cold, 0.5)), noTarget(), 0,
				"What a warm profile alone saves, without a warm process.")
		}
	}
	rep.add("office   warm pool RSS (1 LibreOffice, idle after the conversions)", "MB",
		float64(c.OfficeRSS())/(1<<20), nan, noTarget(), 0, "VmRSS summed over the worker's process group; --convert-slots (2 by default) such processes per faxhub process.")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func durationPercentile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// coldSoffice converts src with a LibreOffice of its own on profile.
func coldSoffice(t *testing.T, ctx context.Context, bin, profile, src string) time.Duration {
	t.Helper()
	out := t.TempDir()
	start := time.Now()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--norestore", "--nologo", "--nodefault", "--nolockcheck",
		"-env:UserInstallation="+(&url.URL{Scheme: "file", Path: profile}).String(),
		"--convert-to", "pdf", "--outdir", out, src)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("soffice: %v\n%s", err, b)
	}
	d := time.Since(start)
	if _, err := os.Stat(filepath.Join(out, strings.TrimSuffix(filepath.Base(src), ".docx")+".pdf")); err != nil {
		t.Fatalf("soffice wrote no PDF: %v", err)
	}
	return d
}

func warmConvert(t *testing.T, ctx context.Context, c *convert.Converter, src string, pages int) time.Duration {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "out.pdf")
	start := time.Now()
	got, err := c.ToPDF(ctx, documents.ConvertRequest{OwnerID: "bench", Src: src, Kind: documents.FileDOCX, Dst: dst})
	d := time.Since(start)
	if err != nil || got != pages {
		t.Fatalf("warm conversion: %d pages, %v", got, err)
	}
	return d
}

// benchDOCX is a Word document of pages pages separated by page breaks.
func benchDOCX(pages int) []byte {
	var body strings.Builder
	for i := 1; i <= pages; i++ {
		if i > 1 {
			body.WriteString(`<w:p><w:r><w:br w:type="page"/></w:r></w:p>`)
		}
		fmt.Fprintf(&body, `<w:p><w:r><w:t>This is page %d of the benchmark fax.</w:t></w:r></w:p>`, i)
	}
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	for _, e := range [][2]string{
		{"[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`},
		{"_rels/.rels", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`},
		{"word/document.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` + body.String() + `</w:body></w:document>`},
	} {
		w, _ := z.Create(e[0])
		w.Write([]byte(e[1]))
	}
	z.Close()
	return b.Bytes()
}
