package faxes

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
)

// Error codes of a chat app's approved send: stable and machine-readable,
// part of the public API.
const (
	// CodeApprovalDeclined: the owner declined this send; nothing was
	// charged.
	CodeApprovalDeclined = "approval_declined"
	// CodeApprovalExpired: the owner did not decide in time; nothing was
	// charged.
	CodeApprovalExpired = "approval_expired"
)

const (
	// chatSendTTL is how long the owner has to approve a chat app's send
	// (never past its draft's expiry).
	chatSendTTL = 15 * time.Minute
	// maxPendingChatSends bounds the chat sends an owner has waiting at
	// once, over all their apps: a hostile app cannot flood the inbox.
	maxPendingChatSends = 20
)

// ChatSend is what a chat app's send_fax came to: the fax (Replayed: it
// was paid before), or the approval the owner must give first at
// ApprovalURL.
type ChatSend struct {
	Fax         *Fax
	Replayed    bool
	Approval    *approvals.Approval
	ApprovalURL string
}

// ChatSendDetails is what a chat_send approval shows the owner
// (Approval.Details).
type ChatSendDetails struct {
	App       string `json:"app"`
	ClientID  string `json:"clientId"`
	DraftID   string `json:"draftId"`
	To        string `json:"to"`
	From      string `json:"from,omitempty"`
	Pages     int    `json:"pages"`
	Cover     bool   `json:"cover"`
	CoverText string `json:"coverText,omitempty"`
	Header    string `json:"header,omitempty"`
	SendAt    string `json:"sendAt,omitempty"`
	Price     string `json:"price"`
	Currency  string `json:"currency"`
	Document  string `json:"documentSha256"`
}

// chatSendBinding is exactly the fax the owner approves, for exactly one
// app: its hash is the approval's binding, and a retry finds the approval
// by it.
type chatSendBinding struct {
	ClientID    string  `json:"clientId"`
	GrantID     string  `json:"grantId"`
	DraftID     string  `json:"draftId"`
	DocumentID  string  `json:"documentId"`
	DocumentSHA string  `json:"documentSha256"`
	To          string  `json:"to"`
	From        string  `json:"from"`
	Pages       int     `json:"pages"`
	Cover       bool    `json:"cover"`
	CoverText   string  `json:"coverText"`
	Options     Options `json:"options"`
	PriceMicros int64   `json:"priceMicros"`
	Currency    string  `json:"currency"`
}

// NeedsOwnerApproval reports whether p's sends wait for the owner's
// passkey: p is a chat app (an OAuth grant) that may draft but not send
// (no fax:send), or any chat app when the owner turned on "approve every
// send from chat apps". Other principals are never asked: an API key
// without fax:send is refused as before.
func (s *Service) NeedsOwnerApproval(ctx context.Context, p core.Principal) (bool, error) {
	if p.Kind != core.PrincipalOAuthGrant || s.d.Approvals == nil {
		return false, nil
	}
	if core.Authorize(p, core.OpCreateDraft) != nil {
		return false, nil // not even a draft: SendDraft's own refusal stands
	}
	if core.Authorize(p, core.OpSendFax) != nil {
		return true, nil
	}
	st, err := s.Settings(ctx, p.OwnerID)
	if err != nil {
		return false, err
	}
	return st.ApproveChatSends, nil
}

// SendChatDraft is a chat app's send_fax of a draft. Without the need for
// the owner's approval it is SendDraft. Otherwise it finds (or asks for) the
// owner's chat_send approval of exactly this fax for this app: pending →
// the approval to point the owner at; approved → the draft is paid once
// (SendDraft's idempotence by draft: retries return the same fax);
// declined, expired, or given for another fax → an error, nothing charged.
// approvalID, when set, is the approval the app was pointed at (its
// elicitation id): it must be bound to this very fax.
func (s *Service) SendChatDraft(ctx context.Context, p core.Principal, draftID, approvalID string) (*ChatSend, error) {
	need, err := s.NeedsOwnerApproval(ctx, p)
	if err != nil {
		return nil, err
	}
	if !need {
		f, replayed, err := s.SendDraft(ctx, p, draftID)
		if err != nil {
			return nil, err
		}
		return &ChatSend{Fax: f, Replayed: replayed}, nil
	}
	if err := s.CheckProvider(p.Mode); err != nil {
		return nil, err
	}
	d, err := s.d.Store.GetDraft(ctx, p.OwnerID, p.Mode, draftID)
	if err != nil {
		return nil, core.StoreErr(err, "draft")
	}
	doc, err := s.d.Store.GetDocument(ctx, p.OwnerID, p.Mode, d.DocumentID)
	if err != nil {
		return nil, core.StoreErr(err, "document")
	}
	b := chatSendBinding{ClientID: p.ClientID, GrantID: p.SubjectID, DraftID: d.ID, DocumentID: d.DocumentID, DocumentSHA: doc.SHA256,
		To: d.To, From: d.From, Pages: d.Pages, Cover: d.Cover, CoverText: d.CoverText, Options: d.Options, PriceMicros: d.PriceMicros, Currency: core.Currency}
	a, err := s.chatApproval(ctx, p, b, approvalID)
	if err != nil {
		return nil, err
	}
	// Paid already (its checkout, or this approval's earlier retry): the
	// same fax, nothing more charged.
	if f, ok, err := s.draftFax(ctx, p, d); ok || err != nil {
		if err != nil {
			return nil, err
		}
		return &ChatSend{Fax: f, Replayed: true, Approval: a}, nil
	}
	if a == nil {
		if err := s.DraftPayable(d); err != nil {
			return nil, err
		}
		if a, err = s.askChatSend(ctx, p, d, b); err != nil {
			return nil, err
		}
	}
	switch a.Status {
	case approvals.Pending:
		return &ChatSend{Approval: a, ApprovalURL: s.kernel.URL(core.LinkApprovalPage, nil, "id", a.ID)}, nil
	case approvals.Declined:
		return nil, core.Errorf(core.KindForbidden, CodeApprovalDeclined, "the owner declined this fax; nothing was sent or charged").With("approvalId", a.ID)
	case approvals.Expired:
		return nil, core.Errorf(core.KindConflict, CodeApprovalExpired,
			"the owner did not approve this fax in time; nothing was sent or charged. Make a new draft to ask again").With("approvalId", a.ID)
	}
	// Approved by the owner with their passkey: the owner's decision
	// authorizes this one spend, not p's scopes.
	f, replayed, err := s.payDraft(ctx, p, d)
	if err != nil {
		return nil, err
	}
	return &ChatSend{Fax: f, Replayed: replayed, Approval: a}, nil
}

// chatApproval is the approval of exactly binding b: the one named by
// approvalID (refused when it is not bound to b), or the newest with b's
// binding (nil when there is none).
func (s *Service) chatApproval(ctx context.Context, p core.Principal, b chatSendBinding, approvalID string) (*approvals.Approval, error) {
	if approvalID == "" {
		return s.d.Approvals.FindByBinding(ctx, p.OwnerID, approvals.KindChatSend, b)
	}
	if !core.HasPrefix(approvalID, core.PrefixApproval) || len(approvalID) > 100 {
		return nil, core.NotFound("approval")
	}
	a, err := s.d.Approvals.Get(ctx, p.OwnerID, approvalID)
	if err != nil {
		return nil, err
	}
	if a.Kind != approvals.KindChatSend || a.BindingHash != approvals.BindingHash(b) {
		return nil, core.Errorf(core.KindConflict, approvals.CodeApprovalBinding,
			"this approval was given for another fax (app, draft, document, destination, options or price differ); nothing was sent or charged").With("approvalId", a.ID)
	}
	return a, nil
}

// askChatSend asks the owner to approve the draft d for the app p
// (requires_uv, bound to b); approval.requested is emitted with it.
func (s *Service) askChatSend(ctx context.Context, p core.Principal, d *Draft, b chatSendBinding) (*approvals.Approval, error) {
	pending, err := s.d.Approvals.ListPending(ctx, p.OwnerID)
	if err != nil {
		return nil, err
	}
	n := 0
	for _, a := range pending {
		if a.Kind == approvals.KindChatSend {
			n++
		}
	}
	if n >= maxPendingChatSends {
		return nil, core.Errorf(core.KindRateLimited, core.CodeRateLimited,
			"%d faxes from chat apps wait for the owner's approval already; wait until they are decided or expire", n).WithRetryAfter(60)
	}
	ttl := min(chatSendTTL, d.ExpiresAt.Sub(s.now()))
	if ttl <= 0 {
		return nil, s.DraftPayable(d)
	}
	app := core.CutUTF8(cmp.Or(p.ClientName, p.ClientID, "A chat app"), 200)
	billed := d.Pages
	if d.Cover {
		billed++
	}
	price := core.FormatUSD(d.PriceMicros)
	details := ChatSendDetails{App: app, ClientID: p.ClientID, DraftID: d.ID, To: d.To, From: d.From, Pages: d.Pages, Cover: d.Cover,
		CoverText: d.CoverText, Header: d.Options.Header, Price: price, Currency: core.Currency, Document: b.DocumentSHA}
	summary := fmt.Sprintf("%s asks to send a %d-page fax to %s for $%s", app, billed, d.To, price)
	if d.Options.SendAt != nil {
		details.SendAt = core.RFC3339(*d.Options.SendAt)
		summary += " at " + details.SendAt
	}
	a, err := s.d.Approvals.Request(ctx, approvals.Request{
		OwnerID: p.OwnerID, Mode: p.Mode, Kind: approvals.KindChatSend, Requester: app, Summary: summary,
		Details: details, Binding: b, RequiresUV: true, TTL: ttl,
	})
	if errors.Is(err, core.ErrExists) {
		// A concurrent call asked for this very fax first (one approval
		// per binding, migration 00028): answer with that one.
		if a, err = s.d.Approvals.FindByBinding(ctx, p.OwnerID, approvals.KindChatSend, b); err == nil && a != nil {
			return a, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("ask the owner to approve a chat send: %w", err)
	}
	s.d.Logger.InfoContext(ctx, "chat send waits for the owner", "approval_id", a.ID, "draft_id", d.ID, "owner_id", p.OwnerID)
	return a, nil
}

// PreviewChatSend composes the pages of the draft an owner's chat_send
// approval asks about, as they will be faxed (the console shows them beside
// the facts). Another owner's approval, or another kind, is not found.
func (s *Service) PreviewChatSend(ctx context.Context, ownerID string, a *approvals.Approval) (*Preview, error) {
	if a == nil || a.OwnerID != ownerID || a.Kind != approvals.KindChatSend {
		return nil, core.NotFound("fax request")
	}
	var d ChatSendDetails
	if err := unmarshalDetails(a.Details, &d); err != nil {
		return nil, err
	}
	return s.PreviewDraft(ctx, core.OwnerPrincipal(ownerID, a.Mode), d.DraftID)
}

func unmarshalDetails(raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode approval details: %w", err)
	}
	return nil
}
