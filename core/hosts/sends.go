package hosts

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
)

// maxPendingSendsPerAgent bounds the send requests an agent can have
// waiting in the owner's inbox at once.
const maxPendingSendsPerAgent = 20

// SendDetails is what a fax_send approval shows (Approval.Details).
type SendDetails struct {
	SendID    string `json:"sendId"`
	HostID    string `json:"hostId"`
	HostName  string `json:"hostName"`
	AgentID   string `json:"agentId"`
	AgentName string `json:"agentName"`
	To        string `json:"to"`
	Country   string `json:"country"`
	Pages     int    `json:"pages"`
	Cover     bool   `json:"cover"`
	CoverText string `json:"coverText,omitempty"`
	// What the send options change, for the owner to see (the approval
	// page lists them): the cover page's subject and recipient, the
	// header line, the resolution, when it goes out, the retry policy.
	CoverSubject   string       `json:"coverSubject,omitempty"`
	CoverRecipient string       `json:"coverRecipient,omitempty"`
	Header         string       `json:"header,omitempty"`
	Resolution     string       `json:"resolution,omitempty"`
	SendAt         string       `json:"sendAt,omitempty"`
	Retry          string       `json:"retry,omitempty"`
	Price          string       `json:"price"`
	Currency       string       `json:"currency"`
	Document       SendDocument `json:"document"`
}

// SendDocument describes the document of a send for the owner.
type SendDocument struct {
	ID         string `json:"id"`
	SHA256     string `json:"sha256"`
	SourceType string `json:"sourceType"`
	Bytes      int64  `json:"bytes"`
}

// delegatedSendBinding is exactly the fax the owner approves: its hash is
// the approval's binding.
type delegatedSendBinding struct {
	SendID      string `json:"sendId"`
	DocumentID  string `json:"documentId"`
	DocumentSHA string `json:"documentSha256"`
	To          string `json:"to"`
	Pages       int    `json:"pages"`
	Cover       bool   `json:"cover"`
	CoverText   string `json:"coverText"`
	PriceMicros int64  `json:"priceMicros"`
	Currency    string `json:"currency"`
	// Options: the owner approves the cover page, header, resolution,
	// schedule and retry policy too.
	Options faxes.Options `json:"options"`
}

func (d *Send) binding() delegatedSendBinding {
	return delegatedSendBinding{SendID: d.ID, DocumentID: d.DocumentID, DocumentSHA: d.DocumentSHA, To: d.To, Pages: d.Pages,
		Cover: d.Cover, CoverText: d.CoverText, PriceMicros: d.PriceMicros, Currency: d.Currency, Options: d.Options}
}

// optionDetails puts what the send options change into the approval's
// details, in words.
func optionDetails(sd *SendDetails, o faxes.Options) {
	if cp := o.CoverPage; cp != nil {
		sd.CoverSubject = cp.Subject
		sd.CoverRecipient = strings.TrimSpace(strings.Join(slices.DeleteFunc([]string{cp.RecipientName, cp.RecipientCompany}, func(s string) bool { return s == "" }), ", "))
	}
	sd.Header, sd.Resolution = o.Header, string(o.Resolution)
	if o.SendAt != nil {
		sd.SendAt = core.RFC3339(*o.SendAt)
	}
	if r := o.Retry; r != nil {
		sd.Retry = fmt.Sprintf("%d calls in all, %d minutes apart, when busy or unanswered", r.Attempts, r.DelayMinutes)
	}
}

// approvalPagePath is the owner's inbox page of an approval.
func (s *Service) approvalPagePath(id string) string {
	return s.kernel.LinkPath(core.LinkApprovalPage, "id", id)
}

// RequestSend checks the send (scope fax:send through the
// send_fax grant, provider, cover, destination, document, quote) and asks
// the owner: an approval of kind ApprovalFaxSend, requires_uv, bound to
// this exact fax. Nothing is charged or queued.
func (s *Service) RequestSend(ctx context.Context, p core.Principal, a *Agent, r SendRequest) (*Send, error) {
	if err := AuthorizeCapability(p, a, CapSendFax); err != nil {
		return nil, err
	}
	if a.Status != AgentActive || p.OwnerID != a.OwnerID {
		return nil, core.Errorf(core.KindForbidden, CodeAgentRevoked, "this agent is not active")
	}
	host, err := s.d.Store.GetHost(ctx, a.HostID)
	if err != nil {
		return nil, fmt.Errorf("delegated send: %w", err)
	}
	if host.Status != Active {
		return nil, core.Errorf(core.KindForbidden, CodeHostRevoked, "this agent's host was revoked by its owner")
	}
	if err := s.faxes.CheckProvider(p.Mode); err != nil {
		return nil, err
	}
	// The options are checked (and the owner's sender defaults filled
	// in) now, as for any send: the owner approves them as they will be
	// faxed.
	opts, err := s.faxes.PrepareOptions(ctx, p, faxes.SendRequest{To: r.To, Cover: r.Cover, CoverText: r.CoverText, Options: r.Options})
	if err != nil {
		return nil, err
	}
	e164, country, err := s.d.Destination.Check(r.To)
	if err != nil {
		return nil, err
	}
	doc, err := s.faxes.ResolveDocument(ctx, p, r.UploadToken, r.DocumentID)
	if err != nil {
		return nil, err
	}
	if doc.Pages > s.documents.MaxPages() {
		return nil, core.Errorf(core.KindUnprocessable, documents.CodeTooManyPages, "at most %d pages can be sent", s.documents.MaxPages())
	}
	q, err := s.d.Prices.Quote(e164, country, doc.Pages, opts.HasCover())
	if err != nil {
		return nil, err
	}
	now := s.now()
	if n, err := s.d.Store.CountPendingDelegatedSends(ctx, a.ID, now); err != nil {
		return nil, fmt.Errorf("delegated send: %w", err)
	} else if n >= maxPendingSendsPerAgent {
		return nil, core.Errorf(core.KindRateLimited, core.CodeRateLimited,
			"this agent has %d faxes waiting for the owner's approval already; wait until they are decided or expire", n).WithRetryAfter(60)
	}
	d := &Send{
		ID: core.NewID(core.PrefixDelegatedSend), OwnerID: p.OwnerID, Mode: p.Mode, HostID: host.ID, AgentID: a.ID,
		DocumentID: doc.ID, DocumentSHA: doc.SHA256, To: e164, Country: country, Pages: doc.Pages, Cover: opts.HasCover(),
		CoverText: opts.CoverMessage(), Options: opts, PriceMicros: q.AmountMicros, Price: core.FormatUSD(q.AmountMicros), Currency: core.Currency,
		Status: SendPending, CreatedAt: now, ExpiresAt: now.Add(SendTTL),
	}
	requester := a.Name + " on " + host.Name
	billed := d.Pages
	if d.Cover {
		billed++
	}
	details := SendDetails{SendID: d.ID, HostID: host.ID, HostName: host.Name, AgentID: a.ID, AgentName: a.Name,
		To: e164, Country: country, Pages: d.Pages, Cover: d.Cover, CoverText: d.CoverText, Price: d.Price, Currency: d.Currency,
		Document: SendDocument{ID: doc.ID, SHA256: doc.SHA256, SourceType: doc.SourceType, Bytes: doc.SourceBytes}}
	optionDetails(&details, opts)
	summary := fmt.Sprintf("Send a %d-page fax to %s for $%s", billed, e164, d.Price)
	if opts.SendAt != nil {
		summary += " at " + core.RFC3339(*opts.SendAt)
	}
	err = s.inTx(ctx, func(tx Tx) error {
		appr, err := s.approvals.RequestIn(ctx, tx, approvals.Request{
			OwnerID: p.OwnerID, Mode: p.Mode, Kind: approvals.KindFaxSend, Requester: requester, RequiresUV: true, TTL: SendTTL,
			Summary: summary, Details: details,
			Binding: d.binding(),
		})
		if err != nil {
			return err
		}
		d.ApprovalID, d.ExpiresAt = appr.ID, appr.ExpiresAt
		return tx.CreateDelegatedSend(ctx, d)
	})
	if err != nil {
		return nil, fmt.Errorf("delegated send: %w", err)
	}
	d.ApprovalPath = s.approvalPagePath(d.ApprovalID)
	s.d.Logger.InfoContext(ctx, "delegated send waits for the owner", "send_id", d.ID, "agent_id", a.ID, "owner_id", p.OwnerID)
	return d, nil
}

// GetSend reads one of agent a's send requests with its status
// derived (and the fax when sent); another agent's reads as not found.
func (s *Service) GetSend(ctx context.Context, p core.Principal, a *Agent, id string) (*Send, *faxes.Fax, error) {
	if p.OwnerID == "" || a == nil || p.OwnerID != a.OwnerID {
		return nil, nil, core.Errorf(core.KindUnauthenticated, core.CodeUnauthenticated, "authentication required")
	}
	if !core.HasPrefix(id, core.PrefixDelegatedSend) || len(id) > 100 {
		return nil, nil, core.NotFound("send request")
	}
	d, err := s.d.Store.GetDelegatedSend(ctx, id)
	if errors.Is(err, core.ErrNoRows) || (err == nil && (d.AgentID != a.ID || d.OwnerID != p.OwnerID)) {
		return nil, nil, core.NotFound("send request")
	} else if err != nil {
		return nil, nil, fmt.Errorf("get delegated send: %w", err)
	}
	d.Price, d.ApprovalPath = core.FormatUSD(d.PriceMicros), s.approvalPagePath(d.ApprovalID)
	if d.FaxID != nil {
		d.Status = SendSent
		fp := p
		fp.Mode = d.Mode
		f, err := s.faxes.Load(ctx, fp, *d.FaxID)
		if err != nil {
			return nil, nil, err
		}
		return d, f, nil
	}
	d.Status = SendPending
	appr, err := s.approvals.Get(ctx, d.OwnerID, d.ApprovalID)
	switch {
	case core.ErrorKind(err) == core.KindNotFound:
		d.Status = SendExpired // purged: it can no longer be approved
	case err != nil:
		return nil, nil, err
	case appr.Status == approvals.Declined:
		d.Status = SendDeclined
	case appr.Status == approvals.Expired, !s.now().Before(d.ExpiresAt):
		d.Status = SendExpired
	}
	return d, nil, nil
}

// ApproveSend is the owner's approval of a fax_send (user
// verification and binding already checked by DecideApproval): in ONE
// transaction the approval is consumed, the agent, its host, its grant and
// the document are checked again, the fax is created and paid with credits,
// and the send records its fax. If anything fails, nothing is written and
// the approval stays pending (insufficient credits: top up, approve again).
func (s *Service) ApproveSend(ctx context.Context, ownerID string, a *approvals.Approval, data []byte) error {
	now := s.now()
	var f *faxes.Fax
	var send *Send
	err := s.inTx(ctx, func(tx Tx) error {
		var err error
		if send, err = tx.GetDelegatedSendByApproval(ctx, a.ID); err != nil {
			return fmt.Errorf("read send request: %w", err)
		}
		if send.OwnerID != ownerID {
			return core.NotFound("send request")
		}
		if err := approvals.Record(ctx, tx, ownerID, a.ID, approvals.Approved, data, now); errors.Is(err, core.ErrConflict) {
			return core.Errorf(core.KindConflict, approvals.CodeApprovalState, "this request was decided already or expired")
		} else if err != nil {
			return core.StoreErr(err, "approval")
		}
		agent, err := tx.GetDelegatedAgent(ctx, send.AgentID)
		if err != nil {
			return fmt.Errorf("read agent: %w", err)
		}
		switch {
		case agent.Status != AgentActive:
			return core.Errorf(core.KindForbidden, CodeAgentRevoked, "the agent that asked is %s now; nothing was sent", agent.Status)
		case !slices.Contains(agent.Granted, CapSendFax):
			return core.Errorf(core.KindForbidden, CodeCapabilityNotGranted, "the agent that asked no longer has send_fax; nothing was sent")
		}
		host, err := tx.GetHost(ctx, send.HostID)
		if err != nil {
			return fmt.Errorf("read host: %w", err)
		}
		if host.Status != Active {
			return core.Errorf(core.KindForbidden, CodeHostRevoked, "the host of the agent that asked was revoked; nothing was sent")
		}
		if err := s.faxes.CheckProvider(send.Mode); err != nil {
			return err
		}
		doc, err := tx.GetDocument(ctx, ownerID, send.Mode, send.DocumentID)
		if errors.Is(err, core.ErrNoRows) || (err == nil && (doc.SHA256 != send.DocumentSHA || doc.Pages != send.Pages)) {
			return core.Errorf(core.KindConflict, approvals.CodeApprovalBinding, "the document changed or is gone since the request; nothing was sent")
		} else if err != nil {
			return fmt.Errorf("read document: %w", err)
		}
		f = &faxes.Fax{
			ID: core.NewID(core.PrefixFax), OwnerID: ownerID, Mode: send.Mode, Status: faxes.Queued, To: send.To,
			DocumentID: send.DocumentID, Pages: send.Pages, Cover: send.Cover, CoverText: send.CoverText, Options: send.Options,
			PriceMicros: send.PriceMicros, Currency: send.Currency, PaymentMethod: faxes.PayCredits, CreatedAt: now, UpdatedAt: now,
			SentBy: faxes.SentByAgent(agent.ID, agent.Name, host.Name),
		}
		// Scheduled until its sendAt; approved after it, it goes now.
		s.faxes.Schedule(f)
		s.faxes.Present(f, nil)
		if err := s.faxes.CreateFax(ctx, tx, faxes.NewFax{Fax: f,
			HoldReason: "hold for fax " + f.ID + " to " + f.To + " sent by " + agent.Name + " on " + host.Name}); err != nil {
			return err
		}
		if err := tx.MarkDelegatedSendSent(ctx, send.ID, f.ID); errors.Is(err, core.ErrConflict) {
			return core.Errorf(core.KindConflict, approvals.CodeApprovalState, "this fax was sent already")
		} else if err != nil {
			return fmt.Errorf("mark send sent: %w", err)
		}
		return nil
	})
	if credits.IsInsufficient(err) {
		return s.credits.Insufficient(ctx, core.Principal{OwnerID: ownerID, Mode: send.Mode}, send.PriceMicros).
			With("approvalPath", s.approvalPagePath(a.ID))
	}
	if err != nil {
		return err
	}
	s.d.Logger.InfoContext(ctx, "delegated fax queued", "fax_id", f.ID, "send_id", send.ID, "owner_id", ownerID, "mode", f.Mode)
	return nil
}

// PreviewSend composes the pages of the delegated send an owner's fax_send
// approval asks about, as they will be faxed if approved (the console
// shows them beside the facts); the document must be the one the agent
// asked with (its SHA-256). Another owner's approval is not found.
func (s *Service) PreviewSend(ctx context.Context, ownerID, approvalID string) (*faxes.Preview, error) {
	send, err := s.d.Store.GetDelegatedSendByApproval(ctx, approvalID)
	if err != nil || send.OwnerID != ownerID {
		if err == nil || errors.Is(err, core.ErrNoRows) {
			return nil, core.NotFound("fax request")
		}
		return nil, fmt.Errorf("read send of approval %s: %w", approvalID, err)
	}
	f := &faxes.Fax{OwnerID: ownerID, Mode: send.Mode, To: send.To, DocumentID: send.DocumentID, Pages: send.Pages,
		Cover: send.Cover, CoverText: send.CoverText, Options: send.Options}
	return s.faxes.PreviewPending(ctx, core.OwnerPrincipal(ownerID, send.Mode), f, send.DocumentSHA)
}
