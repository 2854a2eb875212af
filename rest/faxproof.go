package rest

import (
	"bytes"
	"net/http"
	"strconv"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/web"
)

// A fax's pages and proof: previews before sending, the document as faxed
// and its pages, the transmission report and the signed delivery receipt;
// and the account's fax defaults. Files are served from signed links (the
// token in the path is the capability); every decision is core/faxes'.

func (a *api) faxProofRoutes() []route {
	key, capability := web.AuthAPIKey, web.AuthCapability
	return []route{
		{"createPreview", "POST", "/api/v1/previews", key, a.authed(a.createPreview)},
		{"getPreviewFile", "GET", core.LinkPreviewFile.Path(), capability, a.public(a.fileHandler(core.LinkPreviewFile))},
		{"getPreviewFilePage", "GET", core.LinkPreviewFilePage.Path(), capability, a.public(a.pageHandler(core.LinkPreviewFile))},
		{"getFaxDocument", "GET", "/api/v1/faxes/{id}/document", key, a.authed(a.getFaxDocument)},
		{"getFaxFile", "GET", core.LinkFaxFile.Path(), capability, a.public(a.fileHandler(core.LinkFaxFile))},
		{"getFaxFilePage", "GET", core.LinkFaxFilePage.Path(), capability, a.public(a.pageHandler(core.LinkFaxFile))},
		{"getFaxReportLink", "GET", "/api/v1/faxes/{id}/report", key, a.authed(a.getFaxReportLink)},
		{"getFaxReport", "GET", core.LinkFaxReport.Path(), capability, a.public(a.faxReport)},
		{"getFaxReceipt", "GET", "/api/v1/faxes/{id}/receipt", key, a.authed(a.getFaxReceipt)},
		{"getFaxSettings", "GET", "/api/v1/fax-settings", key, a.authed(a.getFaxSettings)},
		{"putFaxSettings", "PUT", "/api/v1/fax-settings", key, a.authed(a.putFaxSettings)},
	}
}

func (a *api) createPreview(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	var req faxes.SendRequest
	if err := web.DecodeJSON(w, r, &req, false); err != nil {
		return err
	}
	pv, err := a.svc.Faxes.Preview(r.Context(), p, req)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, pv)
	return nil
}

// fileHandler serves the PDF a file link of kind link names.
func (a *api) fileHandler(link core.Link) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		f, err := a.svc.Faxes.OpenFile(r.Context(), link, r.PathValue("token"))
		if err != nil {
			return err
		}
		defer f.Close()
		h := w.Header()
		h.Set("Content-Type", "application/pdf")
		// The name is an id with a prefix: safe inside the quotes.
		h.Set("Content-Disposition", `inline; filename="`+f.Name+`"`)
		h.Set("Cache-Control", "private, no-store")
		a.copyBody(w, r, f, f.Name)
		return nil
	}
}

// pageHandler serves one page of a file link's PDF as a PNG.
func (a *api) pageHandler(link core.Link) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		page, err := strconv.Atoi(r.PathValue("page"))
		if err != nil {
			return core.Errorf(core.KindNotFound, faxes.CodePageOutOfRange, "page must be a page number").With("field", "page")
		}
		img, err := a.svc.Faxes.PageImage(r.Context(), link, r.PathValue("token"), page)
		if err != nil {
			return err
		}
		h := w.Header()
		h.Set("Content-Type", "image/png")
		h.Set("Content-Length", strconv.Itoa(len(img)))
		// The link's bytes never change: a browser may keep them as long
		// as the link lives, and nobody else may.
		h.Set("Cache-Control", "private, max-age=3600, immutable")
		_, _ = w.Write(img)
		return nil
	}
}

func (a *api) getFaxDocument(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	files, err := a.svc.Faxes.FaxedDocument(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, files)
	return nil
}

func (a *api) getFaxReportLink(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	link, err := a.svc.Faxes.Report(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, link)
	return nil
}

// faxReport renders the transmission report a report link names.
func (a *api) faxReport(w http.ResponseWriter, r *http.Request) error {
	var buf bytes.Buffer
	if err := a.svc.Faxes.RenderReport(r.Context(), r.PathValue("token"), &buf); err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "application/pdf")
	h.Set("Content-Disposition", `inline; filename="transmission-report.pdf"`)
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	h.Set("Cache-Control", "private, no-store")
	_, _ = w.Write(buf.Bytes())
	return nil
}

func (a *api) getFaxReceipt(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	rc, err := a.svc.Faxes.Receipt(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, rc)
	return nil
}

func (a *api) getFaxSettings(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	st, err := a.svc.Faxes.GetSettings(r.Context(), p)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, st)
	return nil
}

func (a *api) putFaxSettings(w http.ResponseWriter, r *http.Request, p core.Principal) error {
	var st faxes.Settings
	if err := web.DecodeJSON(w, r, &st, false); err != nil {
		return err
	}
	st, err := a.svc.Faxes.PutSettings(r.Context(), p, st)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, st)
	return nil
}
