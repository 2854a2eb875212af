package convert

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
)

// officeExt names the input file for LibreOffice: it detects formats by
// content, but the extension picks the import filter it tries first.
var officeExt = map[documents.FileKind]string{
	documents.FileDOC: ".doc", documents.FileDOCX: ".docx", documents.FileXLS: ".xls", documents.FileXLSX: ".xlsx",
	documents.FileODT: ".odt", documents.FileODS: ".ods", documents.FileRTF: ".rtf",
}

func (c *Converter) soffice() (string, error) {
	if c.opts.SofficePath != "" {
		return exec.LookPath(c.opts.SofficePath)
	}
	p, err := exec.LookPath("soffice")
	if err != nil {
		p, err = exec.LookPath("libreoffice")
	}
	return p, err
}

// officeToPDF converts an office document with LibreOffice in headless mode,
// on a warm LibreOffice of the pool (officeworker.go) unless Options.ColdOffice
// says otherwise or none could be started. A cold conversion gets its own
// profile directory: LibreOffice runs once per profile, and a shared profile
// would serialise every conversion.
func (c *Converter) officeToPDF(ctx context.Context, req documents.ConvertRequest) (pages int, err error) {
	bin, err := c.soffice()
	if err != nil {
		e := core.Errorf(core.KindUnsupportedMedia, documents.CodeLibreOfficeMissing,
			"converting %s documents needs LibreOffice, which is not installed on this server; upload a PDF or an image instead", kindName(req.Kind))
		e.Err = err
		return 0, e
	}
	err = c.withSlot(ctx, c.office, req.OwnerID, func(ctx context.Context) (err error) {
		pages, err = c.runOffice(ctx, bin, req.Src, req.Kind, req.Dst, req.MaxPages)
		return err
	})
	return pages, err
}

// runOffice converts in a slot of its own.
func (c *Converter) runOffice(ctx context.Context, bin, src string, kind documents.FileKind, dst string, maxPages int) (int, error) {
	// Each conversion has its own input and output directories, removed
	// when it ends, whichever LibreOffice reads them.
	job, err := os.MkdirTemp(c.opts.TempDir, "faxhub-soffice-")
	if err != nil {
		return 0, fmt.Errorf("create conversion directory: %w", err)
	}
	defer os.RemoveAll(job)
	in, out := filepath.Join(job, "in"), filepath.Join(job, "out")
	for _, d := range []string{in, out} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return 0, fmt.Errorf("create conversion directory: %w", err)
		}
	}
	input := filepath.Join(in, "document"+officeExt[kind])
	if err := linkOrCopy(src, input); err != nil {
		return 0, fmt.Errorf("stage %s for conversion: %w", kindName(kind), err)
	}

	if err := c.convertOffice(ctx, bin, job, out, input, kind); err != nil {
		return 0, err
	}
	result := filepath.Join(out, "document.pdf")
	if st, err := os.Stat(result); err != nil || st.Size() == 0 {
		return 0, conversionFailed(err, "LibreOffice could not convert the %s document; check that it opens in an office application", kindName(kind))
	}
	// A short document can lay out to thousands of pages: refuse them
	// before pdfcpu reads them all.
	pages, err := pdfPagesLimit(ctx, result, maxPages)
	if err != nil {
		var ce *core.Error
		if errors.As(err, &ce) && ce.Code == documents.CodeTooManyPages {
			return 0, err
		}
		if errors.As(err, &ce) {
			// Our converter produced a PDF we cannot read: that is a failed
			// conversion, not a damaged upload.
			return 0, conversionFailed(err, "the %s document was converted but the result is unusable", kindName(kind))
		}
		return 0, err
	}
	if err := moveFile(result, dst); err != nil {
		return 0, err
	}
	return pages, nil
}

// convertOffice converts input into out on a warm LibreOffice, or on a cold
// one of its own when there is no warm one.
func (c *Converter) convertOffice(ctx context.Context, bin, job, out, input string, kind documents.FileKind) error {
	if w := c.pool.get(); w != nil {
		err := c.convertWarm(ctx, w, bin, job, out, input, kind)
		c.pool.put(w)
		if !errors.Is(err, errNoWarmOffice) {
			return err
		}
	}
	profile := filepath.Join(job, "profile")
	if err := os.Mkdir(profile, 0o700); err != nil {
		return fmt.Errorf("create conversion directory: %w", err)
	}
	return c.runSoffice(ctx, bin, job, (&url.URL{Scheme: "file", Path: profile}).String(), out, input, kind)
}

// runSoffice runs `soffice --convert-to pdf` on the profile at profileURL:
// a conversion of its own when no LibreOffice runs on that profile, else a
// client handing input to the one that does and waiting for it.
func (c *Converter) runSoffice(ctx context.Context, bin, job, profileURL, out, input string, kind documents.FileKind) error {
	tctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	cmd := exec.CommandContext(tctx, bin,
		"--headless", "--norestore", "--nologo", "--nodefault", "--nolockcheck",
		"-env:UserInstallation="+profileURL,
		"--convert-to", "pdf", "--outdir", out, input)
	cmd.Dir = job
	// soffice is a launcher: the real work happens in soffice.bin, a child.
	// Its own process group lets a timeout kill all of it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A grandchild holding our output pipes must not keep Wait waiting.
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(os.Environ(), "TMPDIR="+job)
	var output tailBuffer
	cmd.Stdout, cmd.Stderr = &output, &output
	// After a normal exit the group is empty (the launcher waits for
	// soffice.bin), and killing it then could hit a reused process group id.
	err := cmd.Run()
	switch {
	case errors.Is(tctx.Err(), context.DeadlineExceeded):
		return c.officeTimeout(tctx, kind)
	case ctx.Err() != nil:
		return fmt.Errorf("convert %s: %w", kindName(kind), ctx.Err())
	case err != nil:
		return conversionFailed(fmt.Errorf("%w: %s", err, output.String()),
			"LibreOffice could not convert the %s document; check that it opens in an office application", kindName(kind))
	}
	return nil
}

// officeTimeout is the error of a LibreOffice conversion whose time ran out.
func (c *Converter) officeTimeout(ctx context.Context, kind documents.FileKind) error {
	return conversionFailed(ctx.Err(), "LibreOffice did not finish converting the %s document within %s", kindName(kind), c.opts.Timeout)
}

func isOfficeTimeout(err error) bool { return errors.Is(err, context.DeadlineExceeded) }

// tailBuffer keeps the last few KB written to it: enough of LibreOffice's
// output to explain a failure, without trusting it to be short.
type tailBuffer struct{ b []byte }

const tailMax = 4 << 10

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > tailMax {
		t.b = append(t.b[:0], t.b[len(t.b)-tailMax:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return strings.TrimSpace(string(t.b)) }

func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	return copyFile(src, dst)
}

func moveFile(src, dst string) error {
	if err := os.Rename(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("move converted pdf: %w", err)
	}
	defer in.Close()
	return writeFile(dst, func(w io.Writer) error {
		_, err := io.Copy(w, in)
		return err
	})
}
