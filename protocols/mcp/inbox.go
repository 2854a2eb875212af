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

type listInboxOut struct {
	Faxes      []inbox.ItemView `json:"faxes"`
	HasMore    bool             `json:"hasMore"`
	NextCursor string           `json:"nextCursor,omitempty"`
}

type readInboxIn struct {
	ID string `json:"id" jsonschema:"the received fax's id from list_inbox"`
}

func (h *Handler) addInboxTools(s *mcp.Server) {
	mcp.AddTool(s, tool(&mcp.Tool{Name: "list_inbox", Annotations: ann("List received faxes", true, false, true, false),
		Description: "List faxes received on the owner's numbers (in the token's mode), newest first, each with a preview of its text; optionally only one number's (numberId); page with startingAfter = nextCursor. Read one whole with read_inbox_fax." + scopeNote("list_inbox") + phiWarning}),
		h.listInbox)
	mcp.AddTool(s, tool(&mcp.Tool{Name: "read_inbox_fax", Annotations: ann("Read a received fax", true, false, true, false),
		Description: "Read one received fax: sender, pages, its text (textStatus and textNote say plainly when some of it could not be read, e.g. scanned pages with OCR not installed) and downloadUrl, a link to the PDF that works for a few minutes — give it to the user to see the pages; the document itself is never returned." + scopeNote("read_inbox_fax") + phiWarning}),
		h.readInbox)
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
	out := listInboxOut{Faxes: make([]inbox.ItemView, 0, len(page.Data)), HasMore: page.HasMore, NextCursor: page.Next}
	for i := range page.Data {
		out.Faxes = append(out.Faxes, inbox.PresentItem(&page.Data[i]))
	}
	return nil, out, nil
}

func (h *Handler) readInbox(ctx context.Context, _ *mcp.CallToolRequest, in readInboxIn) (*mcp.CallToolResult, inbox.FaxView, error) {
	const tool = "read_inbox_fax"
	p, err := principal(ctx)
	if err != nil {
		return nil, inbox.FaxView{}, h.toolError(ctx, tool, err)
	}
	if in.ID == "" {
		return nil, inbox.FaxView{}, errors.New("invalid_request: id is required; list_inbox gives the ids")
	}
	f, err := h.svc.Inbox.Get(ctx, p, in.ID)
	if err != nil {
		return nil, inbox.FaxView{}, h.toolError(ctx, tool, err)
	}
	var link *inbox.Link
	if f.Status == inbox.Received {
		if link, err = h.svc.Inbox.Download(ctx, p, f.ID); err != nil {
			return nil, inbox.FaxView{}, h.toolError(ctx, tool, err)
		}
	}
	return nil, inbox.PresentFax(f, link), nil
}
