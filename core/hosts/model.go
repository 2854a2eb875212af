// Package hosts is delegated hosts and agents (spec, Authentication
// section 4; Agent Auth Protocol 1.0-draft). A host is an agent runtime the
// owner provisioned from the console; it holds its own Ed25519 key pair and
// registers agents, each with a key pair of its own. An agent acts with the
// capabilities the owner granted by device approval; every send_fax waits
// for the owner's passkey with user verification.
//
// hostagent/ verifies the host and agent JWTs (signature, typ, alg, aud,
// time, replay through Service.AcceptJWT) and turns HTTP into the calls of
// this package; every rule about hosts, agents, grants, approvals and money
// is here.
package hosts

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
)

// Lifetimes and bounds of the delegated flow.
const (
	// EnrollmentTTL is how long a host enrollment token (host create
	// without a public key) may be used.
	EnrollmentTTL = time.Hour
	// DeviceApprovalTTL is how long a device code (user code and
	// verification link) stays valid; POST …/agent/device/code re-issues.
	DeviceApprovalTTL = 10 * time.Minute
	// DeviceInterval is the polling interval of GET …/agent/status, in
	// seconds.
	DeviceInterval = 5
	// DeviceMaxTries wrong user codes end a device code; the host has to
	// re-issue one.
	DeviceMaxTries = 5
	// SendTTL is how long a send_fax approval waits for the owner.
	SendTTL = 15 * time.Minute
	// MaxHostsPerOwner bounds the hosts (any status but revoked) of one
	// owner; MaxAgentsPerHost the agents (pending or active) of one host.
	MaxHostsPerOwner = 50
	MaxAgentsPerHost = 100
	// JWTMaxLifetime is the largest exp − iat of a host or agent
	// JWT; DelegatedJWTSkew the clock skew allowed on iat and exp. A jti is
	// remembered until exp + skew.
	JWTMaxLifetime = 60 * time.Second
	JWTSkew        = 30 * time.Second
)

// Error codes of the delegated flow (Agent Auth Protocol §5.13, plus ours).
// hostagent sends them as the "error" member of {error, message}.
const (
	CodeInvalidJWT           = "invalid_jwt"
	CodeAgentPending         = "agent_pending"
	CodeAgentRevoked         = "agent_revoked"
	CodeAgentRejected        = "agent_rejected"
	CodeAgentExpired         = "agent_expired"
	CodeHostRevoked          = "host_revoked"
	CodeCapabilityNotGranted = "capability_not_granted"
	CodeAgentExists          = "agent_exists"
	CodeAgentNotFound        = "agent_not_found"
	CodeHostNotFound         = "host_not_found"
	// CodeHostKeyInUse: the public key is another host's (or an agent's):
	// every host and agent has a key pair of its own.
	CodeHostKeyInUse = "key_in_use"
	// CodeInvalidPublicKey: not an Ed25519 public JWK.
	CodeInvalidPublicKey = "invalid_public_key"
	// CodeJWTReplayed: a host or agent JWT's jti was seen before.
	CodeJWTReplayed = "jwt_replayed"
	// CodeTooManyHosts / CodeTooManyAgents: MaxHostsPerOwner /
	// MaxAgentsPerHost reached.
	CodeTooManyHosts  = "too_many_hosts"
	CodeTooManyAgents = "too_many_agents"
	// Device page codes (the owner's side).
	CodeDeviceWrongCode    = "device_wrong_code"
	CodeDeviceTooManyTries = "device_too_many_tries"
	CodeDeviceExpired      = "device_code_expired"
	CodeDeviceDecided      = "device_decided"
	// CodeCapabilityWiden: the owner may narrow what an agent asked for,
	// never add to it.
	CodeCapabilityWiden = "capability_not_requested"
	// CodeUnknownCapability: a capability name faxhub does not have.
	CodeUnknownCapability = "unknown_capability"
)

// Capability is a delegated capability (spec: validate_fax, send_fax,
// get_fax_status, get_credits, create_credit_checkout; faxhub adds
// create_upload, how a delegated agent supplies a document larger than an
// inline file, and list_inbox and read_inbox_fax, so an agent can read the
// faxes the owner receives).
type Capability string

const (
	CapValidateFax          Capability = "validate_fax"
	CapCreateUpload         Capability = "create_upload"
	CapSendFax              Capability = "send_fax"
	CapGetFaxStatus         Capability = "get_fax_status"
	CapGetCredits           Capability = "get_credits"
	CapCreateCreditCheckout Capability = "create_credit_checkout"
	CapListInbox            Capability = "list_inbox"
	CapReadInboxFax         Capability = "read_inbox_fax"
)

// capabilityOps is the one table of what each capability lets an agent do:
// the core operation (and so, through scopeFor, the scope) it stands for.
// A delegated agent's Principal carries exactly the scopes of its granted
// capabilities.
var capabilityOps = map[Capability]core.Operation{
	CapValidateFax:          core.OpQuote,
	CapCreateUpload:         core.OpCreateUpload,
	CapSendFax:              core.OpSendFax,
	CapGetFaxStatus:         core.OpGetFax,
	CapGetCredits:           core.OpGetCredits,
	CapCreateCreditCheckout: core.OpCreditCheckout,
	CapListInbox:            core.OpListInbox,
	CapReadInboxFax:         core.OpReadInbox,
}

// Capabilities lists every delegated capability in documentation order (a
// new slice each call).
func Capabilities() []Capability {
	return []Capability{CapValidateFax, CapCreateUpload, CapSendFax, CapGetFaxStatus, CapGetCredits, CapCreateCreditCheckout, CapListInbox, CapReadInboxFax}
}

// CapabilityOperation is the core operation a capability stands for; false
// for an unknown capability.
func CapabilityOperation(c Capability) (core.Operation, bool) {
	op, ok := capabilityOps[c]
	return op, ok
}

// Status is where a host stands.
//
//	pending_enrollment → active (enrolled with its key) → revoked
//	pending_enrollment → revoked (token revoked) ; an expired token reads as expired
type Status string

const (
	PendingEnrollment Status = "pending_enrollment"
	Active            Status = "active"
	Revoked           Status = "revoked"
)

// Host is an agent runtime an owner provisioned. PublicKey is the host's
// Ed25519 public JWK in canonical form (PublicJWK.JSON); Thumbprint its
// RFC 7638 SHA-256 thumbprint, which the host may use as iss.
type Host struct {
	ID                  string       `db:"id" json:"hostId"`
	OwnerID             string       `db:"owner_id" json:"-"`
	Name                string       `db:"name" json:"name"`
	PublicKey           *string      `db:"public_key" json:"publicKey,omitempty"`
	Thumbprint          *string      `db:"thumbprint" json:"thumbprint,omitempty"`
	DefaultCapabilities []Capability `db:"-" json:"defaultCapabilities"`
	Status              Status       `db:"status" json:"status"`
	EnrollmentHash      *string      `db:"enrollment_hash" json:"-"`
	EnrollmentExpiresAt *time.Time   `db:"enrollment_expires_at" json:"enrollmentExpiresAt,omitempty"`
	CreatedAt           time.Time    `db:"created_at" json:"createdAt"`
	EnrolledAt          *time.Time   `db:"enrolled_at" json:"enrolledAt,omitempty"`
	RevokedAt           *time.Time   `db:"revoked_at" json:"revokedAt,omitempty"`
	LastUsedAt          *time.Time   `db:"last_used_at" json:"lastUsedAt,omitempty"`
}

// GetAgent is where a delegated agent stands.
//
//	pending → active (owner approved) | rejected (owner declined)
//	pending past its device code's expiry reads as expired until re-issued
//	pending | active → revoked (owner, its host, or its host's revocation)
type AgentStatus string

const (
	AgentPending  AgentStatus = "pending"
	AgentActive   AgentStatus = "active"
	AgentRejected AgentStatus = "rejected"
	AgentRevoked  AgentStatus = "revoked"
	AgentExpired  AgentStatus = "expired"
)

// Agent is an agent a host registered. Requested is what it asked
// for, Granted what the owner approved (a subset).
type Agent struct {
	ID         string       `db:"id" json:"agent_id"`
	HostID     string       `db:"host_id" json:"host_id"`
	OwnerID    string       `db:"owner_id" json:"-"`
	Name       string       `db:"name" json:"name"`
	PublicKey  string       `db:"public_key" json:"-"` // canonical public JWK
	Thumbprint string       `db:"thumbprint" json:"-"`
	Requested  []Capability `db:"-" json:"requested_capabilities"`
	Granted    []Capability `db:"-" json:"granted_capabilities"`
	Status     AgentStatus  `db:"status" json:"status"`
	// The current device code: its hash, expiry, wrong tries and the inbox
	// approval that mirrors it. Re-issuing replaces all four.
	UserCodeHash  string     `db:"user_code_hash" json:"-"`
	DeviceExpires time.Time  `db:"device_expires_at" json:"-"`
	DeviceTries   int        `db:"device_tries" json:"-"`
	ApprovalID    string     `db:"approval_id" json:"-"`
	CreatedAt     time.Time  `db:"created_at" json:"created_at"`
	ActivatedAt   *time.Time `db:"activated_at" json:"activated_at,omitempty"`
	RevokedAt     *time.Time `db:"revoked_at" json:"revoked_at,omitempty"`
	LastUsedAt    *time.Time `db:"last_used_at" json:"last_used_at,omitempty"`
}

// PublicJWK is a parsed Ed25519 public JWK: JSON is its canonical form
// (kty, crv, x only; what is stored), Thumbprint its RFC 7638 thumbprint
// (base64url SHA-256), Key the 32 raw key bytes.
type PublicJWK struct {
	JSON       string
	Thumbprint string
	Key        []byte
}

// CreateRequest is POST /api/auth/host/create (owner session) and the
// console's Hosts form. Without PublicKey the host is created
// pending_enrollment with a one-use enrollment token.
type CreateRequest struct {
	Name                string
	PublicKey           json.RawMessage // optional public JWK
	DefaultCapabilities []Capability
}

// Created is a new host; EnrollmentToken (shown once, stored hashed)
// is set when it was created without a key.
type Created struct {
	Host            *Host
	EnrollmentToken string
}

// WithAgents is one host as the owner's Hosts page lists it.
type WithAgents struct {
	Host   Host
	Agents []Agent
}

// AgentRequest is POST /api/auth/agent/register after the host
// JWT verified. AgentKey is the agent_public_key claim, parsed.
type AgentRequest struct {
	Name            string
	Mode            string // must be "delegated"
	PreferredMethod string // "" or "device_authorization"
	Capabilities    []Capability
	ForceApproval   bool
	AgentKey        PublicJWK
}

// DeviceApproval is the approval object of a pending agent (Agent Auth
// Protocol §7, RFC 8628 §3.2 names).
type DeviceApproval struct {
	Method                  string `json:"method"` // device_authorization
	VerificationURI         string `json:"verification_uri"`
	VerificationURIComplete string `json:"verification_uri_complete"`
	UserCode                string `json:"user_code"`
	ExpiresIn               int    `json:"expires_in"`
	Interval                int    `json:"interval"`
}

// AgentView is what register, status and device/code answer.
// Approval is set while the agent is pending and its code was just issued
// (register, device/code); status never repeats the user code.
type AgentView struct {
	Agent    *Agent
	Approval *DeviceApproval
}

// DeviceRequest is what the owner's device page shows.
type DeviceRequest struct {
	Host      *Host
	Agent     *Agent
	ExpiresAt time.Time
	TriesLeft int
}

// SendRequest is a send_fax capability call: a document already
// uploaded (DocumentID, or the UploadToken of a completed upload) and its
// destination. The adapter uploads an inline base64 file first
// (MaxInlineDocumentBytes) and passes the resulting document id.
type SendRequest struct {
	To          string
	DocumentID  string
	UploadToken string
	Cover       bool
	CoverText   string
	// Options are the send options (cover page, header, resolution,
	// sendAt, retry), checked by core/faxes as for any send.
	Options faxes.Options
}

// MaxInlineDocumentBytes bounds a document passed inline (base64) to a
// delegated capability, decoded; larger files go through create_upload.
const MaxInlineDocumentBytes = 256 << 10

// SendStatus is where a send_fax request stands, derived on every
// read: pending (the owner has not decided), sent (the fax exists: follow
// it), declined, expired.
type SendStatus string

const (
	SendPending  SendStatus = "pending"
	SendSent     SendStatus = "sent"
	SendDeclined SendStatus = "declined"
	SendExpired  SendStatus = "expired"
)

// Send is one send_fax request: exactly the fax the owner is
// asked to approve (document and its digest, destination, pages, cover,
// price). The fax is created only when the owner approves with a passkey
// and user verification, in the approval's transaction.
type Send struct {
	ID          string    `db:"id" json:"id"`
	OwnerID     string    `db:"owner_id" json:"-"`
	Mode        core.Mode `db:"mode" json:"mode"`
	HostID      string    `db:"host_id" json:"-"`
	AgentID     string    `db:"agent_id" json:"agent_id"`
	ApprovalID  string    `db:"approval_id" json:"-"`
	DocumentID  string    `db:"document_id" json:"document_id"`
	DocumentSHA string    `db:"document_sha256" json:"document_sha256"`
	To          string    `db:"to_number" json:"to"`
	Country     string    `db:"country" json:"country"`
	Pages       int       `db:"pages" json:"pages"`
	Cover       bool      `db:"cover" json:"cover"`
	CoverText   string    `db:"cover_text" json:"-"`
	// Options are the send options as checked (owner defaults filled in);
	// the fax created on approval gets them.
	Options      faxes.Options `db:"options" json:"-"`
	PriceMicros  int64         `db:"price_micros" json:"-"`
	Price        string        `db:"-" json:"price"`
	Currency     string        `db:"currency" json:"currency"`
	FaxID        *string       `db:"fax_id" json:"fax_id,omitempty"`
	Status       SendStatus    `db:"-" json:"status"`
	CreatedAt    time.Time     `db:"created_at" json:"created_at"`
	ExpiresAt    time.Time     `db:"expires_at" json:"expires_at"`
	ApprovalPath string        `db:"-" json:"-"` // the owner's inbox page of it
}

// Queries is the persistence of hosts, delegated agents, their send
// requests and the replay store of their JWT ids.
type Queries interface {
	// Create inserts h unless the owner has max live (not revoked)
	// hosts already (ErrConflict); ErrExists when h.Thumbprint is taken.
	CreateHost(ctx context.Context, h *Host, max int) error
	GetHost(ctx context.Context, id string) (*Host, error)
	GetHostByThumbprint(ctx context.Context, thumbprint string) (*Host, error)
	GetHostByEnrollment(ctx context.Context, tokenHash string) (*Host, error)
	// Enroll records the key of a pending_enrollment host whose token
	// is tokenHash and unexpired at at, and clears the token: ErrConflict
	// when no such host (used, expired, revoked), ErrExists when the
	// thumbprint is taken.
	EnrollHost(ctx context.Context, tokenHash string, name, publicKey, thumbprint string, at time.Time) (*Host, error)
	ListHosts(ctx context.Context, ownerID string) ([]Host, error)
	// Revoke revokes the owner's host and its pending/active agents;
	// ErrNoRows if the owner has no such unrevoked host.
	RevokeHost(ctx context.Context, ownerID, id string, at time.Time) error
	TouchHost(ctx context.Context, id string, at time.Time) error

	// CreateDelegatedAgent inserts a unless its host has max pending or
	// active agents (ErrConflict); ErrExists when a.Thumbprint is taken.
	CreateDelegatedAgent(ctx context.Context, a *Agent, max int) error
	GetDelegatedAgent(ctx context.Context, id string) (*Agent, error)
	GetDelegatedAgentByThumbprint(ctx context.Context, thumbprint string) (*Agent, error)
	// GetDelegatedAgentWithHost reads an agent and its host in one query.
	GetDelegatedAgentWithHost(ctx context.Context, agentID string) (*Agent, *Host, error)
	ListDelegatedAgents(ctx context.Context, ownerID string) ([]Agent, error)
	// ReissueDevice replaces a pending agent's device code; ErrConflict if
	// it is no longer pending.
	ReissueDevice(ctx context.Context, id, userCodeHash, approvalID string, expires time.Time) error
	// AddDeviceTry counts a wrong user code and returns the tries so far.
	AddDeviceTry(ctx context.Context, id string) (int, error)
	// DecideDelegatedAgent moves a pending agent to active with granted
	// (approve) or to rejected; ErrConflict if it is no longer pending or,
	// when codeHash is set, its device code is no longer that one (a
	// re-issue raced the owner's decision on the old code).
	DecideDelegatedAgent(ctx context.Context, id, codeHash string, approve bool, granted []Capability, at time.Time) error
	// RevokeAgent revokes a pending or active agent; ErrConflict
	// if it is rejected or revoked already.
	RevokeDelegatedAgent(ctx context.Context, id string, at time.Time) error
	TouchDelegatedAgent(ctx context.Context, id string, at time.Time) error

	CreateDelegatedSend(ctx context.Context, d *Send) error
	GetDelegatedSend(ctx context.Context, id string) (*Send, error)
	GetDelegatedSendByApproval(ctx context.Context, approvalID string) (*Send, error)
	// MarkDelegatedSendSent records the fax of an approved send, once;
	// ErrConflict if it has one already.
	MarkDelegatedSendSent(ctx context.Context, id, faxID string) error

	// CountPendingDelegatedSends counts agentID's sends without a fax whose
	// approval is pending and unexpired at now.
	CountPendingDelegatedSends(ctx context.Context, agentID string, now time.Time) (int, error)

	// InsertJWTID records (issuer, jti) until expires; ErrExists when it is
	// recorded already and has not expired at now (an expired record is
	// taken over). Of concurrent inserts exactly one succeeds.
	InsertJWTID(ctx context.Context, issuer, jti string, now, expires time.Time) error
}

// Store keeps hosts, delegated agents, their sends and JWT ids.
type Store interface {
	Tx
	core.Transactor
}

// Tx is a transaction of hosts.
type Tx interface {
	faxes.Tx
	approvals.Tx
	Queries
}

// Deps are the ports hosts drive.
type Deps struct {
	Store       Store
	Destination core.DestinationChecker
	Prices      *core.PriceTable
	Logger      *slog.Logger
	// Core prices, documents, approvals and creates the faxes agents send.
	Kernel *core.Kernel
	// Documents stores the documents agents send.
	Documents *documents.Service
	// Approvals asks the owner and reads their decisions.
	Approvals *approvals.Service
	// Credits reads balances and packs.
	Credits *credits.Service
	// Faxes creates, prices and reads faxes and drafts.
	Faxes *faxes.Service
}

// Service runs delegated hosts and agents.
type Service struct {
	cfg       core.Config
	d         Deps
	kernel    *core.Kernel
	approvals *approvals.Service
	codes     *approvals.CodeApproval[Capability]
	credits   *credits.Service
	faxes     *faxes.Service
	documents *documents.Service
}

// New returns the service; cfg is the kernel's configuration with its
// defaults applied.
func New(cfg core.Config, d Deps) *Service {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Prices == nil {
		d.Prices = core.DefaultPriceTable()
	}
	return &Service{cfg: cfg, d: d, kernel: d.Kernel, faxes: d.Faxes, credits: d.Credits, approvals: d.Approvals, documents: d.Documents,
		codes: approvals.NewCodeApproval(d.Approvals, deviceRules())}
}

func (s *Service) now() time.Time { return core.Clock(s.cfg.Now).Now() }

// Now is the service clock, which JWT times are checked against.
func (s *Service) Now() time.Time { return s.now() }

// inTx runs fn in one transaction of the store, typed as hosts'.
func (s *Service) inTx(ctx context.Context, fn func(tx Tx) error) error {
	return s.d.Store.InTx(ctx, func(tx core.Tx) error { return fn(tx.(Tx)) })
}
