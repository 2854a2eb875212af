package hostagent

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/hosts"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/web"
)

// readExecute reads POST …/capability/execute strictly: the capability
// name first (to know its argument struct), then the whole body again with
// core/web's strict decoder into {capability, arguments: *argsStruct}, so
// an unknown, case-folded or duplicate argument is refused by name.
func (h *Handler) readExecute(w http.ResponseWriter, r *http.Request) (capability, any, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxExecuteBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return capability{}, nil, core.Errorf(core.KindTooLarge, core.CodeInvalidRequest,
				"the body is larger than %d bytes; upload larger documents with create_upload", maxExecuteBytes)
		}
		return capability{}, nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the body could not be read")
	}
	// One pass reads the capability and keeps its arguments' bytes for
	// the unknown-member check below.
	var peek struct {
		Capability string          `json:"capability"`
		Arguments  json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(body, &peek); err != nil {
		// Not a JSON object with a string capability: the strict decoder
		// says what is wrong with it.
		var generic struct {
			Capability string          `json:"capability"`
			Arguments  json.RawMessage `json:"arguments"`
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		if err := decode(w, r, &generic, maxExecuteBytes); err != nil {
			return capability{}, nil, err
		}
	}
	c, ok := h.capability(peek.Capability)
	if !ok {
		if peek.Capability == "" {
			return capability{}, nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "capability is required")
		}
		return capability{}, nil, core.Errorf(core.KindNotFound, codeCapabilityNotFound, "faxhub has no capability %q (see discovery)", peek.Capability)
	}
	args := c.newArgs()
	// A nested member unknown to the arguments (cover_page.fax_number) is
	// named by its path; the strict decoder would name it without one.
	if len(peek.Arguments) > 0 {
		if p := web.UnknownMember(peek.Arguments, args); p != "" {
			return capability{}, nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "%s has no argument %s", c.Name, p).With("field", p)
		}
	}
	env := reflect.New(reflect.StructOf([]reflect.StructField{
		{Name: "Capability", Type: reflect.TypeFor[string](), Tag: `json:"capability"`},
		{Name: "Arguments", Type: reflect.TypeOf(args), Tag: `json:"arguments"`},
	}))
	env.Elem().Field(1).Set(reflect.ValueOf(args))
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	if err := decode(w, r, env.Interface(), maxExecuteBytes); err != nil {
		return capability{}, nil, err
	}
	if a := env.Elem().Field(1).Interface(); !reflect.ValueOf(a).IsNil() {
		args = a
	}
	return c, args, nil
}

// execute is POST /api/auth/capability/execute with an agent JWT.
func (h *Handler) execute(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	va, err := h.verifyAgent(r, true)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	c, args, err := h.readExecute(w, r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	p := h.svc.Hosts.Principal(va.Host, va.Agent, va.Capabilities)
	if err := hosts.AuthorizeCapability(p, va.Agent, c.Name); err != nil {
		h.writeError(w, r, err)
		return
	}
	if c.Name == hosts.CapSendFax {
		h.sendFax(w, r, p, va.Agent, args.(*sendFaxArgs))
		return
	}
	data, err := h.run(ctx, p, c.Name, args)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data})
}

func required(name, v string) error {
	if v == "" {
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the argument %s is required", name).With("field", name)
	}
	return nil
}

// run executes a synchronous capability through core.
func (h *Handler) run(ctx context.Context, p core.Principal, c hosts.Capability, args any) (any, error) {
	switch c {
	case hosts.CapValidateFax:
		return h.validateFax(ctx, p, args.(*validateFaxArgs))
	case hosts.CapCreateUpload:
		a := args.(*createUploadArgs)
		u, err := h.svc.Documents.CreateUpload(ctx, p, a.ContentType, a.MaxBytes)
		if err != nil {
			return nil, err
		}
		out := map[string]any{"upload_url": u.UploadURL, "upload_token": u.UploadToken, "method": u.Method, "expires_at": core.RFC3339(u.ExpiresAt), "max_bytes": u.MaxBytes}
		if u.ContentType != "" {
			out["content_type"] = u.ContentType
		}
		return out, nil
	case hosts.CapGetFaxStatus:
		a := args.(*getFaxStatusArgs)
		if err := required("fax_id", a.FaxID); err != nil {
			return nil, err
		}
		f, err := h.svc.Faxes.Get(ctx, p, a.FaxID)
		if err != nil {
			return nil, err
		}
		return faxData(f)
	case hosts.CapGetCredits:
		cr, err := h.svc.Credits.BalanceFor(ctx, p)
		if err != nil {
			return nil, err
		}
		return map[string]any{"mode": cr.Mode, "balance": cr.Available, "balance_cents": cr.AvailableCents, "held": cr.Held, "held_cents": cr.HeldCents, "currency": cr.Currency}, nil
	case hosts.CapListInbox:
		a := args.(*listInboxArgs)
		page, err := h.svc.Inbox.List(ctx, p, inbox.Query{NumberID: a.NumberID, StartingAfter: a.StartingAfter, Limit: a.Limit})
		if err != nil {
			return nil, err
		}
		faxes := make([]map[string]any, 0, len(page.Data))
		for i := range page.Data {
			item, err := inboxItemData(&page.Data[i])
			if err != nil {
				return nil, err
			}
			faxes = append(faxes, item)
		}
		out := map[string]any{"faxes": faxes, "has_more": page.HasMore}
		if page.Next != "" {
			out["next_cursor"] = page.Next
		}
		return out, nil
	case hosts.CapReadInboxFax:
		a := args.(*readInboxArgs)
		if err := required("id", a.ID); err != nil {
			return nil, err
		}
		f, err := h.svc.Inbox.Get(ctx, p, a.ID)
		if err != nil {
			return nil, err
		}
		var link *inbox.Link
		if f.Status == inbox.Received {
			if link, err = h.svc.Inbox.Download(ctx, p, f.ID); err != nil {
				return nil, err
			}
		}
		return inboxFaxData(f, link)
	case hosts.CapCreateCreditCheckout:
		a := args.(*checkoutArgs)
		if err := required("pack", a.Pack); err != nil {
			return nil, err
		}
		cs, err := h.svc.Checkout.StartCreditPack(ctx, p, a.Pack)
		if err != nil {
			return nil, err
		}
		return map[string]any{"checkout_url": cs.CheckoutURL, "pack": cs.PackID, "amount": cs.Amount, "credit": cs.Credit, "currency": cs.Currency, "expires_at": core.RFC3339(cs.ExpiresAt)}, nil
	}
	return nil, core.Errorf(core.KindNotFound, codeCapabilityNotFound, "capability %q cannot be executed", c)
}

// validateFax prices pages, or an uploaded document's pages. It never
// takes a file: a quote has no side effects, and storing an inline file
// would be one (docs/hostagent.md).
func (h *Handler) validateFax(ctx context.Context, p core.Principal, a *validateFaxArgs) (any, error) {
	if err := required("to", a.To); err != nil {
		return nil, err
	}
	pages := a.Pages
	if a.DocumentID != "" {
		if a.Pages != nil {
			return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "give pages or document_id, not both").With("field", "pages")
		}
		doc, err := h.svc.Documents.Get(ctx, p, a.DocumentID)
		if err != nil {
			return nil, err
		}
		pages = &doc.Pages
	}
	q, err := h.svc.Faxes.Quote(ctx, p, faxes.QuoteRequest{To: a.To, Pages: pages, Cover: a.Cover})
	if err != nil {
		return nil, err
	}
	return snakeCase(q)
}

// inlineDocument stores a tiny inline file the way an agent's PUT would
// (create an upload, receive it) and returns its document id.
func (h *Handler) inlineDocument(ctx context.Context, p core.Principal, agent *hosts.Agent, b64 string) (string, error) {
	if err := hosts.AuthorizeCapability(p, agent, hosts.CapCreateUpload); err != nil {
		return "", core.Errorf(core.KindForbidden, hosts.CodeCapabilityNotGranted,
			"content_base64 is an upload: the agent needs the create_upload capability as well (or pass document_id / upload_token)")
	}
	if base64.StdEncoding.DecodedLen(len(b64)) > hosts.MaxInlineDocumentBytes+2 {
		return "", core.Errorf(core.KindTooLarge, documents.CodeFileTooLarge, "inline files are limited to %d bytes decoded; use create_upload and PUT the file", hosts.MaxInlineDocumentBytes)
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return "", core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "content_base64 is not valid standard base64").With("field", "content_base64")
	}
	if len(data) > hosts.MaxInlineDocumentBytes {
		return "", core.Errorf(core.KindTooLarge, documents.CodeFileTooLarge, "inline files are limited to %d bytes decoded; use create_upload and PUT the file", hosts.MaxInlineDocumentBytes)
	}
	u, err := h.svc.Documents.CreateUpload(ctx, p, "", int64(len(data)))
	if err != nil {
		return "", err
	}
	doc, err := h.svc.Documents.ReceiveUpload(ctx, u.UploadToken, bytes.NewReader(data))
	if err != nil {
		return "", err
	}
	return doc.ID, nil
}

// statusURL is where an agent polls a send request.
func (h *Handler) statusURL(id string) (string, error) {
	u, err := h.url("hostagent.capabilityStatus")
	if err != nil {
		return "", err
	}
	return u + "?id=" + url.QueryEscape(id), nil
}

// sendFax asks the owner (core: an approval requiring user verification,
// bound to this exact fax) and answers 202 pending with the status URL.
func (h *Handler) sendFax(w http.ResponseWriter, r *http.Request, p core.Principal, agent *hosts.Agent, a *sendFaxArgs) {
	ctx := r.Context()
	if err := required("to", a.To); err != nil {
		h.writeError(w, r, err)
		return
	}
	n := 0
	for _, s := range []string{a.DocumentID, a.UploadToken, a.ContentBase64} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		h.writeError(w, r, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "give exactly one of document_id, upload_token or content_base64"))
		return
	}
	// The options' form first: a malformed send_at is refused before an
	// inline file is stored.
	if _, err := a.options(); err != nil {
		h.writeError(w, r, err)
		return
	}
	docID := a.DocumentID
	if a.ContentBase64 != "" {
		var err error
		if docID, err = h.inlineDocument(ctx, p, agent, a.ContentBase64); err != nil {
			h.writeError(w, r, err)
			return
		}
	}
	opts, err := a.options()
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	ds, err := h.svc.Hosts.RequestSend(ctx, p, agent, hosts.SendRequest{To: a.To, DocumentID: docID, UploadToken: a.UploadToken, Cover: a.Cover, CoverText: a.CoverText, Options: opts})
	if err != nil {
		h.writeError(w, r, snakeField(err))
		return
	}
	su, err := h.statusURL(ds.ID)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	// Where the owner approves it (their inbox shows it too).
	approval, err := h.url("passkeys.approval", "id", ds.ApprovalID)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	send, err := sendJSON(ds)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", su)
	writeJSON(w, http.StatusAccepted, map[string]any{
		"status": "pending", "status_url": su, "id": ds.ID, "approval_id": ds.ApprovalID, "expires_at": core.RFC3339(ds.ExpiresAt),
		"approval_url": approval,
		"send":         send,
	})
}

// sendJSON is what the owner is asked to approve, as the agent sees it:
// the send options as checked (the owner's sender fields filled in) at
// its top level, snake_case.
func sendJSON(ds *hosts.Send) (map[string]any, error) {
	out, err := snakeCase(ds.Options)
	if err != nil {
		return nil, err
	}
	for k, v := range map[string]any{"id": ds.ID, "to": ds.To, "country": ds.Country, "pages": ds.Pages, "cover": ds.Cover,
		"document_id": ds.DocumentID, "document_sha256": ds.DocumentSHA, "price": ds.Price, "currency": ds.Currency,
		"created_at": core.RFC3339(ds.CreatedAt), "expires_at": core.RFC3339(ds.ExpiresAt)} {
		out[k] = v
	}
	return out, nil
}

// sendStatus is GET /api/auth/capability/status?id=dsn_… with a fresh
// agent JWT of the agent that asked: pending, sent (data is the fax),
// declined or expired.
func (h *Handler) sendStatus(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	va, err := h.verifyAgent(r, false)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	id := r.URL.Query().Get("id")
	if id == "" {
		h.writeError(w, r, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "id is required (the send request's id)"))
		return
	}
	p := h.svc.Hosts.Principal(va.Host, va.Agent, va.Capabilities)
	ds, fax, err := h.svc.Hosts.GetSend(ctx, p, va.Agent, id)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	send, err := sendJSON(ds)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	out := map[string]any{"status": ds.Status, "id": ds.ID, "send": send}
	if ds.Status == hosts.SendPending {
		if out["status_url"], err = h.statusURL(ds.ID); err != nil {
			h.writeError(w, r, err)
			return
		}
	}
	if fax != nil {
		if out["data"], err = faxData(fax); err != nil {
			h.writeError(w, r, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// snakeField names the field of a core error as this door names its
// arguments: core says coverPage.subject, retry.delayMinutes and sendAt
// (REST's names), the agent sent cover_page.subject, retry.delay_minutes
// and send_at.
func snakeField(err error) error {
	e, ok := errors.AsType[*core.Error](err)
	if !ok {
		return err
	}
	f, ok := e.Fields["field"].(string)
	if !ok || f == "" {
		return err
	}
	parts := strings.Split(f, ".")
	for i := range parts {
		parts[i] = snakeName(parts[i])
	}
	snake := strings.Join(parts, ".")
	if snake == f {
		return err
	}
	out := e.With("field", snake)
	out.Message = strings.ReplaceAll(out.Message, f, snake)
	return out
}
