package core

import (
	"cmp"
	"context"
	"slices"
	"strings"
)

// Mode separates live money and real faxes from test data. Test mode always
// uses the simulated provider and test payments; the two never mix.
type Mode string

const (
	ModeLive Mode = "live"
	ModeTest Mode = "test"
)

// ParseMode accepts "live" or "test".
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case ModeLive, ModeTest:
		return Mode(s), nil
	}
	return "", Errorf(KindInvalid, CodeInvalidRequest, "mode must be live or test, got %q", s)
}

// Scope is a permission a principal carries.
type Scope string

const (
	ScopeFaxRead         Scope = "fax:read"
	ScopeFaxDraft        Scope = "fax:draft"
	ScopeFaxSend         Scope = "fax:send"
	ScopeInboxRead       Scope = "inbox:read"
	ScopeCreditsRead     Scope = "credits:read"
	ScopeCreditsCheckout Scope = "credits:checkout"
)

// FaxScopes returns the six product scopes, in documentation order (a new
// slice each call: callers may keep or change it).
func FaxScopes() []Scope {
	return []Scope{ScopeFaxRead, ScopeFaxDraft, ScopeFaxSend, ScopeInboxRead, ScopeCreditsRead, ScopeCreditsCheckout}
}

// ParseScopes splits a space-separated scope string, keeping only known
// product scopes when strict is false, or refusing unknown ones when true.
func ParseScopes(s string, strict bool) ([]Scope, error) {
	var out []Scope
	for _, f := range strings.Fields(s) {
		sc := Scope(f)
		if !slices.Contains(FaxScopes(), sc) {
			if strict {
				return nil, Errorf(KindInvalid, CodeInvalidRequest, "unknown scope %q", f)
			}
			continue
		}
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	return out, nil
}

// JoinScopes renders scopes space-separated, the OAuth form.
func JoinScopes(scopes []Scope) string {
	parts := make([]string, len(scopes))
	for i, s := range scopes {
		parts[i] = string(s)
	}
	return strings.Join(parts, " ")
}

// PrincipalKind says how a caller authenticated.
type PrincipalKind string

const (
	PrincipalAPIKey       PrincipalKind = "api_key"
	PrincipalOAuthGrant   PrincipalKind = "oauth_grant"
	PrincipalAgent        PrincipalKind = "agent_registration"
	PrincipalDelegated    PrincipalKind = "delegated_agent"
	PrincipalMachinePayer PrincipalKind = "machine_payer"
	PrincipalOwnerSession PrincipalKind = "owner_session"
)

// Principal is who is calling. Every core operation takes one and checks it
// with Authorize; adapters only build it.
type Principal struct {
	OwnerID string
	Kind    PrincipalKind
	Mode    Mode
	Scopes  []Scope
	// SubjectID is the credential's own id (API key id, grant id,
	// registration id, …): for audit and last-used tracking, never a secret.
	SubjectID string
	// ClientID is the OAuth client id or the agent's name, when there is
	// one; ClientName is how the owner knows it (the app's client_name, the
	// agent's name), for approvals and audit lines.
	ClientID   string
	ClientName string
	// Audience is the resource an access token was issued for, if any.
	Audience string
	// Operations, when not nil, are the only operations this principal may
	// perform, on top of its scopes: a scope is coarser than what some
	// credentials grant (a delegated agent holds capabilities, and its JWT
	// may name fewer of them), and Authorize must be the one check for
	// those too. Nil: every operation its scopes allow.
	Operations []Operation
}

// Has reports whether p carries scope s.
func (p Principal) Has(s Scope) bool { return slices.Contains(p.Scopes, s) }

// Operation is a core operation gated by a scope.
type Operation string

const (
	OpCreateUpload         Operation = "create_upload"
	OpGetDocument          Operation = "get_document"
	OpQuote                Operation = "quote"
	OpCreateDraft          Operation = "create_draft"
	OpGetDraft             Operation = "get_draft"
	OpSendFax              Operation = "send_fax"
	OpGetFax               Operation = "get_fax"
	OpListFaxes            Operation = "list_faxes"
	OpCancelFax            Operation = "cancel_fax"
	OpListInbox            Operation = "list_inbox"
	OpReadInbox            Operation = "read_inbox"
	OpSearchNumbers        Operation = "search_numbers"
	OpListNumbers          Operation = "list_numbers"
	OpBuyNumber            Operation = "buy_number"
	OpBuyNumberWithCredits Operation = "buy_number_with_credits"
	OpReleaseNumber        Operation = "release_number"
	OpSimulateInbound      Operation = "simulate_inbound_fax"
	OpGetCredits           Operation = "get_credits"
	OpCreditCheckout       Operation = "create_credit_checkout"
	// Agent tasks (A2A): reading and canceling one, buying credits under
	// an AP2 mandate.
	OpGetTask    Operation = "get_task"
	OpCancelTask Operation = "cancel_task"
	OpBuyCredits Operation = "buy_credits"
	// Events: reading the log needs any product scope (each event type is
	// then filtered by its own, events.Readable); webhook endpoints are the
	// account's settings, managed with an API key or in the console only.
	OpListEvents     Operation = "list_events"
	OpManageWebhooks Operation = "manage_webhooks"
	// OpSetCreditAlert sets the low-balance threshold: the account's
	// setting, like its webhooks.
	OpSetCreditAlert Operation = "set_credit_alert"
	// OpManageFaxSettings reads and sets the account's fax defaults (time
	// zone, header text, cover page sender): the account's setting.
	OpManageFaxSettings Operation = "manage_fax_settings"
)

// Broadcasts: one request makes up to 100 faxes, so sending one is an
// operation of its own (a delegated agent allowed send_fax is not allowed
// a hundred at once); reading them is reading faxes, canceling them is
// canceling faxes.
const (
	OpSendBatch   Operation = "send_batch"
	OpGetBatch    Operation = "get_batch"
	OpListBatches Operation = "list_batches"
	OpCancelBatch Operation = "cancel_batch"
)

// Scopes that are not product scopes, used only in scopeFor: scopeAny is
// met by any product scope, scopeAccount only by the account's own
// credentials (an API key, the owner's console session).
const (
	scopeAny     Scope = "*"
	scopeAccount Scope = "account"
)

// scopeFor is the one table that says which scope gates which operation.
// Every adapter's authorization goes through it (via Authorize), so MCP tools,
// A2A skills, delegated capabilities and REST endpoints cannot disagree.
var scopeFor = map[Operation]Scope{
	OpCreateUpload: ScopeFaxDraft,
	OpGetDocument:  ScopeFaxDraft,
	OpQuote:        ScopeFaxDraft,
	OpCreateDraft:  ScopeFaxDraft,
	OpGetDraft:     ScopeFaxDraft,
	OpSendFax:      ScopeFaxSend,
	OpGetFax:       ScopeFaxRead,
	OpListFaxes:    ScopeFaxRead,
	OpCancelFax:    ScopeFaxSend,
	OpListInbox:    ScopeInboxRead,
	OpReadInbox:    ScopeInboxRead,
	// Numbers: finding and listing them is reading; buying one prepares
	// something the owner pays for at a hosted checkout, like a draft;
	// releasing one cannot be undone, so it needs the sending scope.
	OpSearchNumbers: ScopeFaxRead,
	OpListNumbers:   ScopeFaxRead,
	OpBuyNumber:     ScopeFaxDraft,
	// Paying a number's first month from credits spends them, like a send.
	OpBuyNumberWithCredits: ScopeFaxSend,
	OpReleaseNumber:        ScopeFaxSend,
	// Test mode only: the simulator delivers a fax to the owner's number.
	OpSimulateInbound:   ScopeFaxSend,
	OpGetCredits:        ScopeCreditsRead,
	OpCreditCheckout:    ScopeCreditsCheckout,
	OpGetTask:           ScopeFaxRead,
	OpCancelTask:        ScopeFaxDraft,
	OpBuyCredits:        ScopeCreditsCheckout,
	OpListEvents:        scopeAny,
	OpManageWebhooks:    scopeAccount,
	OpSetCreditAlert:    scopeAccount,
	OpManageFaxSettings: scopeAccount,

	OpSendBatch:   ScopeFaxSend,
	OpGetBatch:    ScopeFaxRead,
	OpListBatches: ScopeFaxRead,
	OpCancelBatch: ScopeFaxSend,
}

// ScopeFor returns the scope that gates op ("" for an unknown operation).
// Operations met by any scope, or by the account's own credentials only,
// answer "".
func ScopeFor(op Operation) Scope {
	if s := scopeFor[op]; s != scopeAny && s != scopeAccount {
		return s
	}
	return ""
}

// Authorize checks that p may perform op. It is the only authorization check
// in faxhub.
func Authorize(p Principal, op Operation) error {
	if p.OwnerID == "" {
		return Errorf(KindUnauthenticated, CodeUnauthenticated, "authentication required")
	}
	need, ok := scopeFor[op]
	if !ok {
		return Errorf(KindForbidden, CodeInsufficientScope, "operation %q is not permitted", op)
	}
	if p.Operations != nil && !slices.Contains(p.Operations, op) {
		return Errorf(KindForbidden, CodeInsufficientScope, "this credential may not %s", strings.ReplaceAll(string(op), "_", " ")).With("operation", string(op))
	}
	switch need {
	case scopeAny:
		if len(p.Scopes) == 0 {
			return Errorf(KindForbidden, CodeInsufficientScope, "this credential holds no scope")
		}
	case scopeAccount:
		if p.Kind != PrincipalAPIKey && p.Kind != PrincipalOwnerSession {
			return Errorf(KindForbidden, CodeInsufficientScope, "only the account's API keys and its owner in the console may %s", strings.ReplaceAll(string(op), "_", " ")).With("operation", string(op))
		}
	default:
		if !p.Has(need) {
			return Errorf(KindForbidden, CodeInsufficientScope, "this credential lacks the %s scope", need).With("required_scope", string(need))
		}
	}
	return nil
}

// principal builds a Principal. It is the one place where a principal's
// mode is decided: an API key and an owner session carry their own (own),
// a machine payer the mode of its payment; every agent kind (OAuth grant,
// agent registration, delegated agent) acts in Config.AgentMode.
func (s *Kernel) NewPrincipal(kind PrincipalKind, ownerID string, scopes []Scope, subjectID, clientID, audience string, own Mode) Principal {
	mode := own
	switch kind {
	case PrincipalOAuthGrant, PrincipalAgent, PrincipalDelegated:
		mode = s.cfg.AgentMode
	}
	return Principal{OwnerID: ownerID, Kind: kind, Mode: mode, Scopes: slices.Clone(scopes),
		SubjectID: subjectID, ClientID: clientID, Audience: audience}
}

// GrantAccess is what an OAuth access token stands for, as the OAuth
// server verified it.
type GrantAccess struct {
	OwnerID  string
	GrantID  string
	ClientID string
	// ClientName is the app's registered client_name.
	ClientName string
	Audience   string
	// Scopes are the token's product scopes within what the grant allows
	// now.
	Scopes []Scope
}

// GrantPrincipal is the Principal of a verified chat-app (OAuth grant)
// access token.
func (s *Kernel) GrantPrincipal(g GrantAccess) Principal {
	p := s.NewPrincipal(PrincipalOAuthGrant, g.OwnerID, g.Scopes, g.GrantID, g.ClientID, g.Audience, "")
	p.ClientName = cmp.Or(g.ClientName, g.ClientID)
	return p
}

// OwnerPrincipal is the owner acting in the console with a first-party
// session: every scope, in the mode the page shows.
func OwnerPrincipal(ownerID string, mode Mode) Principal {
	return Principal{OwnerID: ownerID, Kind: PrincipalOwnerSession, Mode: mode, Scopes: FaxScopes()}
}

type principalKey struct{}

// WithPrincipal stores p in ctx; authentication middleware calls it.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal stored by WithPrincipal.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
