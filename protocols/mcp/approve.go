package mcp

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
)

// inputRequiredVersion is the first protocol version with multi-round-trip
// requests (SEP-2322): a tool result may ask for input (inputRequests) and
// the client retries with requestState. Older clients get URL elicitation
// as the -32042 URLElicitationRequired error instead.
const inputRequiredVersion = "2026-07-28"

// approvalRef is the approval a send_fax retry names: approvalId (the
// elicitationId it was given), else the requestState of a multi-round-trip
// retry; "" finds it by the draft.
func approvalRef(req *mcp.CallToolRequest, in sendIn) string {
	if in.ApprovalID != "" {
		return in.ApprovalID
	}
	if req != nil && req.Params != nil && core.HasPrefix(req.Params.RequestState, core.PrefixApproval) {
		return req.Params.RequestState
	}
	return ""
}

// multiRoundTrip reports whether the client of req negotiated a protocol
// with input-required results, as the SDK decides it: a session without
// initialize parameters speaks the newest protocol.
func multiRoundTrip(req *mcp.CallToolRequest) bool {
	if req == nil || req.Session == nil {
		return false
	}
	ip := req.Session.InitializeParams()
	return ip == nil || ip.ProtocolVersion >= inputRequiredVersion
}

// askOwner answers a send_fax that waits for the owner's passkey with a
// URL-mode elicitation of the approval page: an input-required result for
// clients that speak it, the -32042 error for the others. The approval id
// is the elicitation id and the request state, so a retry names it.
func (h *Handler) askOwner(ctx context.Context, req *mcp.CallToolRequest, cs *faxes.ChatSend) (*mcp.CallToolResult, error) {
	el := &mcp.ElicitParams{
		Mode: "url", URL: cs.ApprovalURL, ElicitationID: cs.Approval.ID,
		Message: "The owner approves this fax with their passkey on faxhub before it is sent or charged: " + cs.Approval.Summary +
			". Open the link, then call send_fax again with the same draftId (and approvalId " + cs.Approval.ID + "). Expires " +
			core.RFC3339(cs.Approval.ExpiresAt) + ".",
	}
	h.opts.Logger.InfoContext(ctx, "send_fax waits for the owner", "approval_id", cs.Approval.ID)
	if multiRoundTrip(req) {
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{cs.Approval.ID: el}, RequestState: cs.Approval.ID}, nil
	}
	// The SDK's URLElicitationRequiredError, with the page in the message
	// too: a host that relays only an error's message to an MCP App (or
	// to the model) still carries the link.
	data, err := json.Marshal(map[string]any{"elicitations": []*mcp.ElicitParams{el}})
	if err != nil {
		return nil, fmt.Errorf("encode elicitation: %w", err)
	}
	return nil, &jsonrpc.Error{Code: mcp.CodeURLElicitationRequired, Data: data,
		Message: "URL elicitation required: the owner approves this fax at " + cs.ApprovalURL + " (approvalId " + cs.Approval.ID + ")"}
}
