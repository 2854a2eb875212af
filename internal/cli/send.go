package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	pdfapi "github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/schollz/progressbar/v3"

	"github.com/faxhub/faxhub/rest/client"
	"github.com/faxhub/faxhub/rest/client/api"
)

// maxJoinBytes bounds the PDFs joined in memory for a send of several
// files (the server's default upload limit is 50 MB).
const maxJoinBytes = 50 << 20

func (s *state) sendFax(ctx context.Context, files []string, f sendFlags) error {
	req := api.SendFaxRequest{To: f.to}
	if f.at != "" {
		t, err := time.Parse(time.RFC3339, f.at)
		if err != nil {
			return usagef("--at %q is not an RFC 3339 time (e.g. 2026-12-01T09:00:00Z)", f.at)
		}
		req.SendAt = &t
	}
	if f.header != "" {
		req.Header = &f.header
	}
	if f.from != "" {
		req.From = &f.from
	}
	if f.resolution != "" {
		r := api.SendFaxRequestResolution(f.resolution)
		if !r.Valid() {
			return usagef("--resolution is standard or fine, not %q", f.resolution)
		}
		req.Resolution = &r
	}
	if f.cover {
		req.Cover = &f.cover
	}
	setCoverPage(&req, f.coverPage)
	sdk, err := s.client()
	if err != nil {
		return err
	}
	body, size, err := s.document(files)
	if err != nil {
		return err
	}
	defer body.Close()
	progress, done := s.progress(size)
	up, err := sdk.Upload(ctx, body, size, progress)
	done()
	if err != nil {
		return err
	}
	req.UploadToken = &up.UploadToken
	fax, err := sdk.SendFax(ctx, f.key, req)
	if err != nil {
		return err
	}
	if f.watch {
		return s.watch(ctx, sdk, fax.Id)
	}
	if s.json {
		writeJSON(s.env.Stdout, fax)
		return nil
	}
	printFax(s.env.Stdout, fax)
	return nil
}

// setCoverPage puts the --cover-… flags in req.CoverPage; it stays nil
// when none is set.
func setCoverPage(req *api.SendFaxRequest, flags map[string]*string) {
	set := func(name string) *string {
		if v := flags[name]; v != nil && *v != "" {
			return v
		}
		return nil
	}
	any := false
	for _, v := range flags {
		any = any || (v != nil && *v != "")
	}
	if !any {
		return
	}
	// The field's type is an anonymous struct of the generated code:
	// decoding {} allocates one without repeating it here.
	_ = json.Unmarshal([]byte("{}"), &req.CoverPage)
	cp := req.CoverPage
	cp.Message, cp.RecipientCompany, cp.RecipientName = set("message"), set("recipient-company"), set("recipient-name")
	cp.SenderCompany, cp.SenderFax, cp.SenderName = set("sender-company"), set("sender-fax"), set("sender-name")
	cp.SenderPhone, cp.Subject = set("sender-phone"), set("subject")
}

// document opens what to upload: the one file as it is, or several PDFs
// joined into one (the server converts a single file of any supported
// type; joining other types would need that conversion here).
func (s *state) document(files []string) (io.ReadCloser, int64, error) {
	if len(files) == 1 {
		f, err := os.Open(files[0])
		if err != nil {
			return nil, 0, usageErr{err}
		}
		st, err := f.Stat()
		if err != nil || !st.Mode().IsRegular() {
			f.Close()
			return nil, 0, usagef("%s is not a regular file", files[0])
		}
		return f, st.Size(), nil
	}
	var parts []io.ReadSeeker
	var total int64
	for _, name := range files {
		b, err := readBounded(name, maxJoinBytes-total)
		if err != nil {
			return nil, 0, err
		}
		if !bytes.HasPrefix(b, []byte("%PDF-")) {
			return nil, 0, usagef("%s is not a PDF: several files are joined only when all are PDFs; send other types one at a time", name)
		}
		total += int64(len(b))
		parts = append(parts, bytes.NewReader(b))
	}
	var out bytes.Buffer
	if err := pdfapi.MergeRaw(parts, &out, false, nil); err != nil {
		return nil, 0, fmt.Errorf("join %s: %w", strings.Join(files, ", "), err)
	}
	return io.NopCloser(&out), int64(out.Len()), nil
}

func readBounded(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, usageErr{err}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, usagef("the files are larger than %d MB together", maxJoinBytes>>20)
	}
	return b, nil
}

// progress is an upload progress bar on stderr when it is a terminal
// (and not with --json); done clears it.
func (s *state) progress(size int64) (client.Progress, func()) {
	if s.json || !s.env.Terminal(s.env.Stderr) {
		return nil, func() {}
	}
	bar := progressbar.NewOptions64(size, progressbar.OptionSetWriter(s.env.Stderr),
		progressbar.OptionSetDescription("uploading"), progressbar.OptionShowBytes(true),
		progressbar.OptionClearOnFinish(), progressbar.OptionSetRenderBlankState(true))
	return func(sent, _ int64) { _ = bar.Set64(sent) }, func() { _ = bar.Finish() }
}

// watch follows a fax until it ends: a live status line on a terminal, a
// line per change otherwise, the final fax as JSON with --json. A fax
// that ends undelivered exits 4.
func (s *state) watch(ctx context.Context, sdk *client.Client, id string) error {
	live := !s.json && s.env.Terminal(s.env.Stdout)
	f, err := sdk.WaitFax(ctx, id, client.WaitOptions{After: s.env.After, OnChange: func(f *api.Fax) {
		if s.json {
			return
		}
		line := fmt.Sprintf("%s  %s  attempt %d", f.Id, f.Status, f.AttemptCount)
		if live {
			fmt.Fprintf(s.env.Stdout, "\r\033[K%s", line)
		} else {
			fmt.Fprintln(s.env.Stdout, line)
		}
	}})
	if live {
		fmt.Fprintln(s.env.Stdout)
	}
	if err != nil {
		return err
	}
	if s.json {
		writeJSON(s.env.Stdout, f)
	}
	if f.Status != api.FaxStatusDelivered {
		return faxNotSent{status: string(f.Status), reason: str(f.FailureReason)}
	}
	return nil
}
