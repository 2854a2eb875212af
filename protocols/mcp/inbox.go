package mcp

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/faxhub/faxhub/core/inbox"
)

// The inbox tools: received faxes as text for the model, and a short-lived
// link for the PDF. The document's bytes never travel through MCP.

type listInboxIn struct {
	NumberID      string `json:"numberId,omitempty" jsonschema:"only faxes received on this number (its id from list_numbers)"`
	StartingAfter string `json:"startingAfter,omitempty" jsonschema:"nextCursor of the previous page"`
	Limit         int    `json:"limit,omitempty" jsonschema:"page size, 1 to 100 (default 20)"`
}

type inboxItemOut struct {
	ID            string `json:"id" jsonschema:"the received fax's id (inb_…); pass it to read_inbox_fax"`
	NumberID      string `json:"numberId"`
	From          string `json:"from" jsonschema:"the sender's number as the network gave it (may be empty)"`
	To            string `json:"to" jsonschema:"the owner's number it arrived on"`
	Pages         int    `json:"pages"`
	Status        string `json:"status" jsonschema:"receiving (being fetched and read), received or failed"`
	TextStatus    string `json:"textStatus,omitempty" jsonschema:"extracted, ocr_unavailable, empty, failed or truncated"`
	TextPreview   string `json:"textPreview,omitempty" jsonschema:"the start of the fax's text"`
	FailureReason string `json:"failureReason,omitempty"`
	ReceivedAt    string `json:"receivedAt"`
}

type listInboxOut struct {
	Faxes      []inboxItemOut `json:"faxes"`
	HasMore    bool           `json:"hasMore"`
	NextCursor string         `json:"nextCursor,omitempty"`
}

type readInboxIn struct {
	ID string `json:"id" jsonschema:"the received fax's id from list_inbox"`
}

type readInboxOut struct {
	inboxItemOut
	Text       string `json:"text" jsonschema:"the fax's text as read from its pages (text layer, or OCR of scanned pages)"`
	TextMethod string `json:"textMethod,omitempty" jsonschema:"how the text was read: text, ocr, text+ocr or none"`
	TextNote   string `json:"textNote,omitempty" jsonschema:"what could not be read, in plain words"`
	// DownloadURL is set once the fax is received.
	DownloadURL       string `json:"downloadUrl,omitempty" jsonschema:"a short-lived link to the PDF (no Authorization header needed); give it to the user to see the pages"`
	DownloadExpiresAt string `json:"downloadExpiresAt,omitempty"`
}

func (h *Handler) addInboxTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "list_inbox", Annotations: ann("List received faxes", true, false, true, false),
		Description: "List faxes received on the owner's numbers (in the token's mode), newest first, each with a preview of its text; optionally only one number's (numberId); page with startingAfter = nextCursor. Read one whole with read_inbox_fax." + scopeNote("list_inbox") + phiWarning},
		h.listInbox)
	mcp.AddTool(s, &mcp.Tool{Name: "read_inbox_fax", Annotations: ann("Read a received fax", true, false, true, false),
		Description: "Read one received fax: sender, pages, its text (textStatus and textNote say plainly when some of it could not be read, e.g. scanned pages with OCR not installed) and downloadUrl, a link to the PDF that works for a few minutes — give it to the user to see the pages; the document itself is never returned." + scopeNote("read_inbox_fax") + phiWarning},
		h.readInbox)
}

func inboxItem(f *inbox.InboundFax) inboxItemOut {
	return inboxItemOut{
		ID: f.ID, NumberID: f.NumberID, From: f.From, To: f.To, Pages: f.Pages, Status: string(f.Status), TextStatus: string(f.TextStatus),
		TextPreview: f.TextPreview, FailureReason: f.FailureReason, ReceivedAt: rfc3339(f.ReceivedAt),
	}
}

func (h *Handler) listInbox(ctx context.Context, _ *mcp.CallToolRequest, in listInboxIn) (*mcp.CallToolResult, listInboxOut, error) {
	const tool = "list_inbox"
	p, err := principal(ctx)
	if err != nil {
		return nil, listInboxOut{}, h.toolError(ctx, tool, err)
	}
	page, err := h.svc.Inbox.List(ctx, p, inbox.Query{NumberID: in.NumberID, StartingAfter: in.StartingAfter, Limit: in.Limit})
	if err != nil {
		return nil, listInboxOut{}, h.toolError(ctx, tool, err)
	}
	out := listInboxOut{Faxes: make([]inboxItemOut, 0, len(page.Data)), HasMore: page.HasMore, NextCursor: page.Next}
	for i := range page.Data {
		out.Faxes = append(out.Faxes, inboxItem(&page.Data[i]))
	}
	return nil, out, nil
}

func (h *Handler) readInbox(ctx context.Context, _ *mcp.CallToolRequest, in readInboxIn) (*mcp.CallToolResult, readInboxOut, error) {
	const tool = "read_inbox_fax"
	p, err := principal(ctx)
	if err != nil {
		return nil, readInboxOut{}, h.toolError(ctx, tool, err)
	}
	if in.ID == "" {
		return nil, readInboxOut{}, errors.New("invalid_request: id is required; list_inbox gives the ids")
	}
	f, err := h.svc.Inbox.Get(ctx, p, in.ID)
	if err != nil {
		return nil, readInboxOut{}, h.toolError(ctx, tool, err)
	}
	out := readInboxOut{inboxItemOut: inboxItem(f), Text: f.Text, TextMethod: f.TextMethod, TextNote: f.ReadingNote()}
	if f.Status == inbox.Received {
		link, err := h.svc.Inbox.Download(ctx, p, f.ID)
		if err != nil {
			return nil, readInboxOut{}, h.toolError(ctx, tool, err)
		}
		out.DownloadURL, out.DownloadExpiresAt = link.URL, rfc3339(link.ExpiresAt)
	}
	return nil, out, nil
}
