package passkeys

import (
	"crypto/hmac"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/text/language"
	"golang.org/x/text/language/display"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/web"
)

// The send page's helpers: the upload (streamed into core's upload, as the
// API's PUT is), the number check as it is typed, and the preview's page
// images on the console's origin.

// uploadAccept is the file chooser's accept list: what core converts.
const uploadAccept = ".pdf,.png,.jpg,.jpeg,.tif,.tiff,.gif,.doc,.docx,.xls,.xlsx,.odt,.ods,.rtf," +
	"application/pdf,image/png,image/jpeg,image/tiff,image/gif"

// uploadFormOverhead is what a multipart body may hold besides the file:
// the form token, boundaries and part headers.
const uploadFormOverhead = 16 << 10

// maxUploadField bounds a text part of the upload form (the form token).
const maxUploadField = 1 << 10

// uploadDocument stores the posted file as a document of the page's mode,
// through core's upload (the same type detection, conversion, page count
// and limits as PUT /api/v1/uploads/{token}). The body is bounded by the
// upload maximum before anything is read, and the form token (the
// X-CSRF-Token header, or a "csrf" part before the file) is checked before
// the file is: the file part is streamed into core, never parsed whole. A
// page gets a redirect back to the form with the document (PRG); send.js
// (Accept: application/json) gets the document.
func (c *Console) uploadDocument(w http.ResponseWriter, r *http.Request) {
	s := c.bodySession(w, r)
	if s == nil {
		return
	}
	mode, err := pageMode(r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	maxFile := c.svc.Documents.MaxUploadBytes()
	tooLarge := core.Errorf(core.KindTooLarge, documents.CodeFileTooLarge, "the file is larger than %s", humanBytes(maxFile)).With("limit", maxFile)
	if r.ContentLength > maxFile+uploadFormOverhead {
		c.fail(w, r, tooLarge)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFile+uploadFormOverhead)
	mr, err := r.MultipartReader()
	if err != nil {
		c.fail(w, r, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "choose a file to upload"))
		return
	}
	token := r.Header.Get("X-CSRF-Token")
	for {
		part, err := mr.NextPart()
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				err = tooLarge
			} else {
				err = core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "choose a file to upload")
			}
			c.fail(w, r, err)
			return
		}
		switch part.FormName() {
		case "csrf":
			b, _ := io.ReadAll(io.LimitReader(part, maxUploadField))
			token = string(b)
			continue
		case "file":
		default:
			continue // read past by NextPart, within the body's bound
		}
		if !hmac.Equal([]byte(token), []byte(s.csrf)) {
			c.fail(w, r, core.Errorf(core.KindForbidden, codeCSRF, "this form has expired; reload the page and try again"))
			return
		}
		if part.FileName() == "" {
			c.fail(w, r, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "choose a file to upload"))
			return
		}
		c.receiveDocument(w, r, sendPrincipal(s, mode), part, tooLarge)
		return
	}
}

// receiveDocument creates an upload for p and streams body into it.
func (c *Console) receiveDocument(w http.ResponseWriter, r *http.Request, p core.Principal, body io.Reader, tooLarge error) {
	ctx := r.Context()
	up, err := c.svc.Documents.CreateUpload(ctx, p, "", 0)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	doc, err := c.svc.Documents.ReceiveUpload(ctx, up.UploadToken, body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			err = tooLarge
		}
		c.fail(w, r, err)
		return
	}
	loc := "/console/send?mode=" + string(p.Mode) + "&document=" + url.QueryEscape(doc.ID)
	if wantsJSON(r) {
		web.WriteJSON(w, http.StatusOK, map[string]any{
			"location": loc,
			"document": map[string]any{"id": doc.ID, "pages": doc.Pages, "sourceType": doc.SourceType, "bytes": doc.SourceBytes},
			"summary":  documentSummary(doc),
		})
		return
	}
	http.Redirect(w, r, loc, http.StatusSeeOther)
}

// documentSummary is a document in a sentence.
func documentSummary(d *documents.Document) string {
	pages := "1 page"
	if d.Pages != 1 {
		pages = strconv.Itoa(d.Pages) + " pages"
	}
	return pages + ", " + documentKind(d.SourceType) + ", " + humanBytes(d.SourceBytes)
}

// documentKind names a detected media type as people know it.
func documentKind(mt string) string {
	switch documents.FileKind(mt) {
	case documents.FilePDF:
		return "PDF"
	case documents.FilePNG:
		return "PNG image"
	case documents.FileJPEG:
		return "JPEG image"
	case documents.FileTIFF:
		return "TIFF image"
	case documents.FileGIF:
		return "GIF image"
	case documents.FileDOC, documents.FileDOCX, documents.FileRTF:
		return "Word document"
	case documents.FileXLS, documents.FileXLSX:
		return "Excel workbook"
	case documents.FileODT:
		return "OpenDocument text"
	case documents.FileODS:
		return "OpenDocument spreadsheet"
	}
	return mt
}

// checkNumber is the number check as it is typed (JSON for send.js): the
// destination's facts and a sentence saying them, or its refusal as
// problem+json. Counted per owner by core.
func (c *Console) checkNumber(w http.ResponseWriter, r *http.Request, s *signedIn) {
	mode, err := pageMode(r)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	to := r.URL.Query().Get("to")
	if len(to) > maxPhoneInput {
		to = to[:maxPhoneInput]
	}
	chk, err := c.svc.Faxes.CheckDestination(r.Context(), sendPrincipal(s, mode), strings.TrimSpace(to))
	if err != nil {
		e := core.AsError(err)
		if e.Kind == core.KindInternal {
			c.log.ErrorContext(r.Context(), "number check", "err", err)
		} else if isDestinationRefusal(e.Code) {
			err = e.With("summary", destinationRefusal(e))
		}
		if e.RetryAfterSeconds > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfterSeconds))
		}
		writeProblem(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	web.WriteJSON(w, http.StatusOK, struct {
		*faxes.DestinationCheck
		CountryName string `json:"countryName"`
		Summary     string `json:"summary"`
	}{chk, countryName(chk.Country), checkSentence(chk)})
}

// maxPhoneInput bounds a typed number before it is checked (E.164 is at
// most 16 characters; a hint about punctuation needs a few more).
const maxPhoneInput = 64

// checkSentence says a checked destination for the owner.
func checkSentence(d *faxes.DestinationCheck) string {
	s := d.E164 + ": " + countryName(d.Country) + " (" + d.Country + "), " + numberTypeText(d.Type) + ". $" + d.PerPage + " a page"
	if d.Cover != "" && d.Cover != "0.00" && d.Cover != "0" {
		s += ", $" + d.Cover + " for a cover page"
	}
	if d.Minimum != "" && d.Minimum != "0.00" && d.Minimum != "0" {
		s += ", at least $" + d.Minimum + " a fax"
	}
	return s + "."
}

// destinationRefusal says why a number is refused, with core's hint.
func destinationRefusal(e *core.Error) string {
	msg := e.Message
	if h, _ := e.Fields["hint"].(string); h != "" {
		msg += " (" + h + ")"
	}
	switch e.Code {
	case core.CodePremiumDestination:
		msg += ". Premium-rate numbers charge the caller extra; faxhub refuses them before anything is charged."
	case core.CodeUnsupportedDestination:
		msg += ". Nothing is charged."
	}
	return msg
}

// countryName is a region's English name, or its code.
func countryName(code string) string {
	reg, err := language.ParseRegion(code)
	if err != nil {
		return code
	}
	if n := display.English.Regions().Name(reg); n != "" {
		return n
	}
	return code
}

// numberTypeText says libphonenumber's number type in words.
func numberTypeText(t string) string {
	switch t {
	case "fixed_line":
		return "landline"
	case "mobile":
		return "mobile number"
	case "fixed_line_or_mobile":
		return "landline or mobile (the plan does not tell them apart)"
	case "toll_free":
		return "toll-free number"
	case "voip":
		return "VoIP number"
	case "uan":
		return "company number (UAN)"
	}
	return strings.ReplaceAll(t, "_", " ") + " number"
}
