package convert

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/inbox"
)

// TextOptions configures a TextReader. The zero value is usable.
type TextOptions struct {
	// PdftotextPath, PdftoppmPath and TesseractPath are the tools (poppler-utils
	// and tesseract-ocr). Empty means the plain name looked up on PATH at each
	// extraction, so installing them needs no restart.
	PdftotextPath, PdftoppmPath, TesseractPath string
	// Timeout bounds one whole extraction, text layer and OCR together
	// (default 2m), not its wait for a slot.
	Timeout time.Duration
	// MaxOCRPages bounds the pages OCR reads per document (default 50); the
	// rest are named in the note.
	MaxOCRPages int
	// OCRLang is tesseract's language (default "eng").
	OCRLang string
	// MaxConcurrent bounds simultaneous extractions (default 2): OCR keeps a
	// core busy for seconds per page.
	MaxConcurrent int
}

// TextReader implements inbox.TextExtractor with poppler's pdftotext for the
// text layer and tesseract for pages that have none (scans, fax images).
type TextReader struct {
	opts TextOptions
	// slots holds one token per running extraction.
	slots chan struct{}
}

var _ inbox.TextExtractor = (*TextReader)(nil)

// Bounds of text extraction.
const (
	// scannedBelow: a page whose text layer has fewer non-space characters
	// is taken for an image (a page number or a short stamp over a scan);
	// one short line of real text (a cover note) is more than that.
	scannedBelow = 8
	// maxLayerOutput bounds what pdftotext may write: -layout pads columns
	// with spaces, so it is a few times the text kept.
	maxLayerOutput = 4 * inbox.MaxText
	// ocrLongSide is the rendered page's longer side in pixels: 300 dpi on
	// US Letter, and bounded whatever size a page claims to be.
	ocrLongSide = 3300
	// toolWaitDelay is how long a tool's output may stay open after it
	// exited or was killed: a grandchild holding it must not keep Wait
	// waiting.
	toolWaitDelay = 2 * time.Second
	// noteLen bounds a tool's message quoted in a note.
	noteLen = 160
)

// NewTextReader returns a TextReader with opts' defaults filled in.
func NewTextReader(opts TextOptions) *TextReader {
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	if opts.MaxOCRPages <= 0 {
		opts.MaxOCRPages = 50
	}
	if opts.OCRLang == "" {
		opts.OCRLang = "eng"
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = 2
	}
	return &TextReader{opts: opts, slots: make(chan struct{}, opts.MaxConcurrent)}
}

func lookTool(configured, name string) (string, error) {
	if configured != "" {
		return exec.LookPath(configured)
	}
	return exec.LookPath(name)
}

// Extract implements inbox.TextExtractor. Every problem with the document or
// the tools, running out of time included, is reported in the result
// (TextFailed and a note) so the fax is still received; the error is only
// the caller's context being cancelled, when the work should be retried.
func (r *TextReader) Extract(ctx context.Context, path string, pages int) (inbox.ExtractedText, error) {
	if err := ctx.Err(); err != nil {
		return abandoned(err)
	}
	select {
	case r.slots <- struct{}{}:
	case <-ctx.Done():
		return abandoned(ctx.Err())
	}
	defer func() { <-r.slots }()
	tctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	res := r.extract(tctx, path, pages)
	if errors.Is(ctx.Err(), context.Canceled) {
		return inbox.ExtractedText{}, fmt.Errorf("extract text: %w", ctx.Err())
	}
	return res, nil
}

// abandoned answers a context that ended before the work began (while
// the fax waited for a slot behind others): nothing was tried, so it is an
// error for the caller to retry later, not a failed reading recorded for
// good.
func abandoned(err error) (inbox.ExtractedText, error) {
	return inbox.ExtractedText{}, fmt.Errorf("extract text: no slot before the time ran out: %w", err)
}

func failed(note string) inbox.ExtractedText {
	return inbox.ExtractedText{Status: inbox.TextFailed, Method: "none", Note: note}
}

// page is one page's text and where it came from.
type page struct {
	text string
	// scanned: the text layer is (nearly) empty, so the page is an image.
	scanned bool
	ocr     bool
}

func (r *TextReader) extract(ctx context.Context, path string, pages int) inbox.ExtractedText {
	bin, err := lookTool(r.opts.PdftotextPath, "pdftotext")
	if err != nil {
		return failed("the text could not be read: pdftotext (Debian package poppler-utils) is not installed on this server")
	}
	// An absolute path never reads as one of the tools' options.
	if path, err = filepath.Abs(path); err != nil {
		return failed(fmt.Sprintf("the text could not be read: %v", err))
	}
	out, cut, err := runTool(ctx, bin, maxLayerOutput, "-layout", "-enc", "UTF-8", path, "-")
	if err != nil {
		return failed("the text could not be read: " + toolFailure(ctx, "pdftotext", r.opts.Timeout, err))
	}
	doc := splitPages(out, cut)
	var notes []string
	if cut {
		// The last page read may be partial and later ones are missing;
		// the text is longer than what is kept anyway.
		notes = append(notes, fmt.Sprintf("the text layer is longer than %s; %s", byteSize(maxLayerOutput), unreadAfter(len(doc), pages)))
	}
	var scanned []int
	for i, p := range doc {
		if p.scanned && !(cut && i == len(doc)-1) {
			scanned = append(scanned, i)
		}
	}
	var ocr ocrOutcome
	if len(scanned) > 0 {
		ocr = r.ocrPages(ctx, path, doc, scanned)
		if ocr.note != "" {
			notes = append(notes, ocr.note)
		}
	}
	res := summarise(doc)
	if res.Note != "" {
		notes = append(notes, res.Note)
	}
	res.Note = strings.Join(notes, "; ")
	// The worst finding is the status; the note lists them all.
	switch {
	case ocr.status == inbox.TextFailed:
		res.Status = inbox.TextFailed
	case cut || ocr.status == inbox.TextTruncated || res.Status == inbox.TextTruncated:
		res.Status = inbox.TextTruncated
	case ocr.status == inbox.TextOCRUnavailable:
		res.Status = inbox.TextOCRUnavailable
	}
	return res
}

// unreadAfter says what the cut text layer left out (read pages, the last
// of them partly, of a document of pages), for a note.
func unreadAfter(read, pages int) string {
	if pages > read {
		return fmt.Sprintf("the text from page %d on (of %d pages) was not read", read, pages)
	}
	return fmt.Sprintf("the text from page %d on was not read", read)
}

// ocrOutcome is what OCR could not do: status is empty when it read every
// scanned page, TextOCRUnavailable without the tools, TextTruncated past
// MaxOCRPages, TextFailed on a tool error or the timeout.
type ocrOutcome struct {
	status inbox.TextStatus
	note   string
}

// ocrPages reads the scanned pages of doc (their indexes, in order) with
// tesseract, at most MaxOCRPages of them, into doc.
func (r *TextReader) ocrPages(ctx context.Context, path string, doc []page, scanned []int) ocrOutcome {
	tess, err := lookTool(r.opts.TesseractPath, "tesseract")
	if err != nil {
		return ocrOutcome{inbox.TextOCRUnavailable, fmt.Sprintf("OCR is not available: tesseract-ocr is not installed on this server, so %s without a text layer %s no text",
			pagesWord(len(scanned)), hasHave(len(scanned)))}
	}
	ppm, err := lookTool(r.opts.PdftoppmPath, "pdftoppm")
	if err != nil {
		return ocrOutcome{inbox.TextOCRUnavailable, fmt.Sprintf("OCR is not available: pdftoppm (poppler-utils) is not installed on this server, so %s without a text layer %s no text",
			pagesWord(len(scanned)), hasHave(len(scanned)))}
	}
	dir, err := os.MkdirTemp("", "faxhub-ocr-")
	if err != nil {
		return ocrOutcome{inbox.TextFailed, fmt.Sprintf("OCR could not start: %v", err)}
	}
	defer os.RemoveAll(dir)

	todo := scanned[:min(len(scanned), r.opts.MaxOCRPages)]
	// A page tesseract cannot read does not stop the others; running out
	// of time or language data does.
	var bad []int
	var why string
	for n, i := range todo {
		text, err := r.ocrPage(ctx, ppm, tess, dir, path, i+1)
		switch {
		case err == nil:
			if nonSpace(text) > 0 {
				doc[i].text, doc[i].ocr = text, true
			}
			continue
		case ctx.Err() != nil:
			return ocrOutcome{inbox.TextFailed, fmt.Sprintf("OCR of %s stopped: %s", pageList(todo[n:]), toolFailure(ctx, "OCR", r.opts.Timeout, err))}
		case noLanguage(err):
			return ocrOutcome{inbox.TextOCRUnavailable, fmt.Sprintf("OCR is not available: tesseract has no data for language %q (Debian package tesseract-ocr-%s), so %s without a text layer %s no text",
				r.opts.OCRLang, strings.ReplaceAll(r.opts.OCRLang, "+", " tesseract-ocr-"), pagesWord(len(scanned)), hasHave(len(scanned)))}
		}
		if bad = append(bad, i); len(bad) == 1 {
			why = toolFailure(ctx, "OCR", r.opts.Timeout, err)
		}
	}
	if len(bad) > 0 {
		return ocrOutcome{inbox.TextFailed, fmt.Sprintf("OCR of %s failed: %s", pageList(bad), why)}
	}
	if rest := scanned[len(todo):]; len(rest) > 0 {
		return ocrOutcome{inbox.TextTruncated, fmt.Sprintf("%s without a text layer %s not read: OCR reads at most %s of a fax",
			pageList(rest), wasWere(len(rest)), pagesWord(r.opts.MaxOCRPages))}
	}
	return ocrOutcome{}
}

// ocrPage renders page nr (1-based) in grey and reads it with tesseract.
func (r *TextReader) ocrPage(ctx context.Context, ppm, tess, dir, path string, nr int) (string, error) {
	prefix := filepath.Join(dir, "page")
	n := strconv.Itoa(nr)
	if _, _, err := runTool(ctx, ppm, 0, "-scale-to", strconv.Itoa(ocrLongSide), "-gray", "-png",
		"-f", n, "-l", n, "-singlefile", path, prefix); err != nil {
		return "", fmt.Errorf("render page %d: %w", nr, err)
	}
	img := prefix + ".png"
	defer os.Remove(img)
	out, _, err := runTool(ctx, tess, inbox.MaxText, img, "stdout", "-l", r.opts.OCRLang)
	if err != nil {
		return "", fmt.Errorf("read page %d: %w", nr, err)
	}
	return tidyPage(out), nil
}

// toolError is a tool that failed: its exit and the first line of what it
// said, never all of it (it may quote the document).
type toolError struct {
	err  error
	said string
}

func (e *toolError) Error() string {
	if e.said == "" {
		return e.err.Error()
	}
	return e.err.Error() + ": " + e.said
}

func (e *toolError) Unwrap() error { return e.err }

// runTool runs bin in a process group of its own, killed with ctx, and
// returns at most limit bytes of its standard output (nothing when limit
// is 0) and whether there was more: then the tool is stopped.
func runTool(ctx context.Context, bin string, limit int64, args ...string) (out []byte, cut bool, err error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	// Tools may start helpers; the group lets a timeout kill all of them.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = toolWaitDelay
	// tesseract would start a thread per core in each of MaxConcurrent
	// extractions.
	cmd.Env = append(os.Environ(), "OMP_THREAD_LIMIT=1")
	var stderr tailBuffer
	cmd.Stderr = &stderr
	stdout := io.Reader(eofReader{})
	if limit > 0 {
		pipe, err := cmd.StdoutPipe()
		if err != nil {
			return nil, false, err
		}
		stdout = pipe
	}
	if err := cmd.Start(); err != nil {
		return nil, false, err
	}
	out, rerr := io.ReadAll(io.LimitReader(stdout, limit+1))
	if int64(len(out)) > limit {
		out, cut = out[:limit], true
		// Still running (not waited for), so the group id is its own.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	werr := cmd.Wait()
	switch {
	case ctx.Err() != nil:
		return nil, false, ctx.Err()
	case cut:
		return out, true, nil
	case werr != nil:
		return nil, false, &toolError{err: werr, said: firstLine(stderr.String())}
	case rerr != nil:
		return nil, false, rerr
	}
	return out, false, nil
}

// noLanguage says whether tesseract failed for want of its language data.
func noLanguage(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Failed loading language") || strings.Contains(msg, "Error opening data file")
}

// eofReader is the output of a tool whose output is not read (it goes to
// /dev/null).
type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// toolFailure says why a tool run failed, for a note.
func toolFailure(ctx context.Context, tool string, timeout time.Duration, err error) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Sprintf("%s did not finish in the time allowed for reading a fax (at most %s)", tool, timeout)
	}
	msg := err.Error()
	if len(msg) > noteLen {
		msg = strings.ToValidUTF8(msg[:noteLen], "") + "…"
	}
	return msg
}

// splitPages splits pdftotext's output at its form feeds: one ends every
// page. When the output was cut, its last piece is a partial page.
func splitPages(out []byte, cut bool) []page {
	parts := strings.Split(string(out), "\f")
	if !cut && len(parts) > 1 && strings.TrimSpace(parts[len(parts)-1]) == "" {
		parts = parts[:len(parts)-1]
	}
	doc := make([]page, len(parts))
	for i, p := range parts {
		t := tidyPage([]byte(p))
		doc[i] = page{text: t, scanned: nonSpace(t) < scannedBelow}
	}
	return doc
}

// tidyPage makes a tool's text storable and compact: valid UTF-8 without
// control characters (PostgreSQL refuses NUL; a form feed would split
// pages), trailing spaces and blank lines at either end removed, the
// indentation -layout gives columns kept.
func tidyPage(b []byte) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !unicode.IsControl(r) {
			return r
		}
		return -1
	}, s)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRightFunc(l, unicode.IsSpace)
	}
	for len(lines) > 0 && lines[0] == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}

func nonSpace(s string) int {
	n := 0
	for _, r := range s {
		if !unicode.IsSpace(r) {
			n++
		}
	}
	return n
}

// summarise joins doc's pages with form feeds, cuts the text at
// inbox.MaxText, and says how it was read.
func summarise(doc []page) inbox.ExtractedText {
	texts := make([]string, len(doc))
	layer, ocr := false, false
	for i, p := range doc {
		texts[i] = p.text
		if nonSpace(p.text) == 0 {
			continue
		}
		if p.ocr {
			ocr = true
		} else {
			layer = true
		}
	}
	res := inbox.ExtractedText{Text: strings.Join(texts, "\f"), Status: inbox.TextExtracted}
	switch {
	case layer && ocr:
		res.Method = "text+ocr"
	case ocr:
		res.Method = "ocr"
	case layer:
		res.Method = "text"
	default:
		res.Method, res.Status, res.Text = "none", inbox.TextEmpty, ""
	}
	if len(res.Text) > inbox.MaxText {
		res.Text = core.CutUTF8(res.Text, inbox.MaxText)
		res.Status = inbox.TextTruncated
		res.Note = fmt.Sprintf("the text was cut at %s", byteSize(inbox.MaxText))
	}
	return res
}

func byteSize(n int) string {
	if n%(1<<10) == 0 {
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// pageList names pages (0-based indexes) for a note: "page 3", "pages 2,
// 4 and 7", or "12 pages (3 to 40)" when there are many.
func pageList(idx []int) string {
	nrs := make([]string, len(idx))
	for i, x := range idx {
		nrs[i] = strconv.Itoa(x + 1)
	}
	switch {
	case len(nrs) == 1:
		return "page " + nrs[0]
	case len(nrs) <= 5:
		return "pages " + strings.Join(nrs[:len(nrs)-1], ", ") + " and " + nrs[len(nrs)-1]
	default:
		return fmt.Sprintf("%d pages (%s to %s)", len(nrs), nrs[0], nrs[len(nrs)-1])
	}
}

func pagesWord(n int) string {
	if n == 1 {
		return "1 page"
	}
	return fmt.Sprintf("%d pages", n)
}

func hasHave(n int) string {
	if n == 1 {
		return "has"
	}
	return "have"
}

func wasWere(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}
