package rest

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/web"
)

// The inbox endpoints: received faxes with their text, a signed download
// link, the link's public download, the providers' media download, and the
// test-mode simulator of a received fax.

func (a *api) listInbox(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	q, limit, err := listQuery(r, "numberId", "startingAfter")
	if err != nil {
		return err
	}
	// startingAfter is accepted as a spelling of starting_after, the
	// cursor parameter of every other list.
	after := q.Get("starting_after")
	if q.Has("startingAfter") {
		if q.Has("starting_after") {
			return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "give starting_after or startingAfter, not both").With("parameter", "startingAfter")
		}
		after = q.Get("startingAfter")
	}
	page, err := a.svc.Inbox.List(r.Context(), p, inbox.Query{NumberID: q.Get("numberId"), StartingAfter: after, Limit: limit})
	if err != nil {
		return err
	}
	if page.Data == nil {
		page.Data = []inbox.InboundFax{}
	}
	web.WriteJSON(w, http.StatusOK, page)
	return nil
}

func (a *api) getInboxFax(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	f, err := a.svc.Inbox.Get(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, f)
	return nil
}

func (a *api) inboxDownload(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	link, err := a.svc.Inbox.Download(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, link)
	return nil
}

// inboxFile serves the PDF of a signed download link: the token in the
// path is the capability, so there is no Authorization header.
func (a *api) inboxFile(w http.ResponseWriter, r *http.Request) error {
	rc, f, err := a.svc.Inbox.OpenDownload(r.Context(), r.PathValue("token"))
	if err != nil {
		return err
	}
	defer rc.Close()
	h := w.Header()
	h.Set("Content-Type", "application/pdf")
	// The id is a prefix and base32: safe inside the quotes as it is.
	h.Set("Content-Disposition", `attachment; filename="`+f.ID+`.pdf"`)
	h.Set("Cache-Control", "private, no-store")
	if f.Bytes > 0 {
		h.Set("Content-Length", strconv.FormatInt(f.Bytes, 10))
	}
	a.copyBody(w, r, rc, f.ID)
	return nil
}

// providerMedia serves a sending fax's PDF to the provider that fetches it
// (a media link): the bytes themselves with their length, never a
// redirect, never cached.
func (a *api) providerMedia(w http.ResponseWriter, r *http.Request) error {
	rc, size, err := a.svc.Faxes.OpenProviderMedia(r.Context(), r.PathValue("token"))
	if err != nil {
		return err
	}
	defer rc.Close()
	h := w.Header()
	h.Set("Content-Type", "application/pdf")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.FormatInt(size, 10))
	a.copyBody(w, r, rc, "media")
	return nil
}

// copyBody streams a document; once the header is out a failure can only
// be logged.
func (a *api) copyBody(w http.ResponseWriter, r *http.Request, rc io.Reader, what string) {
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	if _, err := io.Copy(w, rc); err != nil {
		a.log.WarnContext(r.Context(), "serving a document failed", "document", what, "error", err)
	}
}

// Bounds of the simulate form besides the file.
const (
	// multipartOverhead is what the form may add to the file's bytes
	// (boundaries, part headers, to and from).
	multipartOverhead = 16 << 10
	maxFormField      = 256
	maxFormParts      = 8
)

// simulateInbound delivers an uploaded file to one of the caller's test
// numbers as if the simulated provider had received it. The body is a
// multipart form: file (the document), to (a number id or E.164) and an
// optional from.
func (a *api) simulateInbound(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	// Refused before the body is read; core refuses both again.
	if err := core.Authorize(p, core.OpSimulateInbound); err != nil {
		return err
	}
	if p.Mode != core.ModeTest {
		return core.Errorf(core.KindForbidden, inbox.CodeTestModeOnly, "only a test-mode API key can simulate a received fax; live faxes arrive from the provider")
	}
	maxFile := a.svc.Config().Documents.MaxUploadBytes
	limit := maxFile + multipartOverhead
	if r.ContentLength > limit {
		return core.Errorf(core.KindTooLarge, documents.CodeFileTooLarge,
			"the body is %d bytes; this server accepts files of at most %d", r.ContentLength, maxFile).With("limit", maxFile)
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		return core.Errorf(core.KindUnsupportedMedia, core.CodeUnsupportedContentType, "send the body as multipart/form-data with the fields file, to and (optionally) from")
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	form, err := readSimulateForm(r, a.svc.Config().TempDir, maxFile)
	if form.path != "" {
		defer os.Remove(form.path) // core consumes it; this covers the failures before
	}
	if err != nil {
		return err
	}
	f, err := a.svc.Inbox.Simulate(r.Context(), p, inbox.TestInboundFax{To: form.to, From: form.from, Path: form.path})
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, f)
	return nil
}

type simulateForm struct {
	to, from, path string
}

// readSimulateForm streams the multipart body: the file part is spooled to
// a temporary file (at most maxFile bytes), the text fields are bounded.
// form.path is set as soon as the temporary file exists.
func readSimulateForm(r *http.Request, dir string, maxFile int64) (form simulateForm, err error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return form, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the multipart body is malformed: %v", err)
	}
	seen := map[string]bool{}
	for parts := 0; ; parts++ {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return form, bodyErr(err, maxFile, "the multipart body is malformed")
		}
		name := part.FormName()
		if parts >= maxFormParts || seen[name] {
			return form, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the form has a repeated field %q or too many fields", name).With("parameter", name)
		}
		seen[name] = true
		switch name {
		case "file":
			form.path, err = spoolPart(part, dir, maxFile)
		case "to", "from":
			var v string
			v, err = readField(part, name)
			if name == "to" {
				form.to = v
			} else {
				form.from = v
			}
		default:
			err = core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "unknown form field %q; this endpoint takes file, to and from", name).With("parameter", name)
		}
		if err != nil {
			return form, bodyErr(err, maxFile, "the form could not be read")
		}
	}
	switch {
	case form.path == "":
		return form, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the form field file (the document to receive) is required").With("parameter", "file")
	case strings.TrimSpace(form.to) == "":
		return form, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the form field to (one of your test numbers: its id or E.164) is required").With("parameter", "to")
	}
	return form, nil
}

func readField(part io.Reader, name string) (string, error) {
	b, err := io.ReadAll(io.LimitReader(part, maxFormField+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxFormField {
		return "", core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the form field %s is longer than %d bytes", name, maxFormField).With("parameter", name)
	}
	if p := web.DisplayTextProblem(string(b)); p != "" {
		return "", core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the form field %s %s", name, p).With("parameter", name)
	}
	return string(b), nil
}

// spoolPart copies the file part to a temporary file in dir, failing when
// it is larger than maxFile.
func spoolPart(part io.Reader, dir string, maxFile int64) (string, error) {
	tmp, err := os.CreateTemp(dir, "faxhub-simulate-")
	if err != nil {
		return "", fmt.Errorf("spool simulated fax: %w", err)
	}
	path := tmp.Name()
	n, err := io.Copy(tmp, io.LimitReader(part, maxFile+1))
	if cerr := tmp.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("spool simulated fax: %w", cerr)
	}
	if err == nil && n > maxFile {
		err = core.Errorf(core.KindTooLarge, documents.CodeFileTooLarge, "the file is larger than %d bytes", maxFile).With("limit", maxFile)
	}
	return path, err
}

// bodyErr turns a failed read of the body into a client error: too large
// when the body exceeded its bound, malformed otherwise. core errors pass
// through.
func bodyErr(err error, maxFile int64, what string) error {
	var ce *core.Error
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &ce):
		return err
	case errors.As(err, &mbe):
		return core.Errorf(core.KindTooLarge, documents.CodeFileTooLarge, "the body is larger than this server accepts (files of at most %d bytes)", maxFile).With("limit", maxFile)
	}
	return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "%s: %v", what, err)
}
