package tasks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/seal"
	"github.com/faxhub/faxhub/core/webhooks"
)

// Push notifications (A2A push notification configs): an agent registers
// a URL on one of its tasks, and each change of the task's subject (the
// events of core/events whose subject is the task's draft, the fax it
// became, or its number) is POSTed there as an A2A 1.0 StreamResponse by
// the webhook delivery engine (core/webhooks: the same dispatcher,
// retries, SSRF guard, caps and delivery log), as a destination of its own
// kind. docs/a2a.md#push-notifications is the receiver's guide.

// Bounds of push notification configs.
const (
	// MaxPushConfigsPerTask is how many configs one task may have.
	MaxPushConfigsPerTask = 5
	// MaxPushConfigsPerOwner is how many configs an owner may have in one
	// mode, every task together: each event of the owner is matched
	// against them, so they stay few. Configs go with their task's
	// retention (PushConfigRetention) or when deleted.
	MaxPushConfigsPerOwner = 100
	// MaxPushConfigIDBytes, MaxPushTokenBytes and MaxPushCredentialsBytes
	// bound what a config carries.
	MaxPushConfigIDBytes    = 128
	MaxPushTokenBytes       = 512
	MaxPushCredentialsBytes = 2048
	// PushJWTLifetime is how long the JWT of one attempt is valid: long
	// enough for clocks a little apart, short enough that a captured one
	// is soon worthless (the body hash binds it to one body anyway).
	PushJWTLifetime = 5 * time.Minute
	// PushConfigRetention is how long a config is kept after it was made:
	// a task is long over by then (a draft lives days, a fax is final in
	// hours).
	PushConfigRetention = 30 * 24 * time.Hour
	// PushJWTType is the typ of the JWTs that authenticate deliveries.
	PushJWTType = "JWT"
)

// Codes of push notification config refusals.
const (
	CodePushConfigNotFound   = "push_config_not_found"
	CodeTooManyPushConfigs   = "too_many_push_configs"
	CodePushNotConfigured    = "push_not_configured"
	pushSealSecret           = "a2a-push-secrets"
	purposePushToken         = "a2a push token"
	purposePushCredentials   = "a2a push credentials"
	pushUserAgent            = "faxhub-a2a-push/1.0"
	HeaderNotificationToken  = "A2A-Notification-Token"
	HeaderNotificationJWT    = "A2A-Notification-JWT"
	TargetA2APush            = webhooks.TargetKind("a2a_push")
	pushConfigNotFoundFormat = "task %s has no push notification config %q"
)

// PushConfig is a stored push notification config.
type PushConfig struct {
	ID      string    `db:"id"`
	OwnerID string    `db:"owner_id"`
	Mode    core.Mode `db:"mode"`
	TaskID  string    `db:"task_id"`
	// ConfigID is the client's id for it (the task id when it sent none).
	ConfigID string `db:"config_id"`
	URL      string `db:"url"`
	// Token and Credentials are sealed (nil when absent).
	Token       []byte    `db:"token"`
	AuthScheme  string    `db:"auth_scheme"`
	Credentials []byte    `db:"credentials"`
	CreatedAt   time.Time `db:"created_at"`
	// LastPushed is the hex SHA-256 of the last body its receiver
	// acknowledged (empty: none yet): a notification that would send the
	// same body again is skipped.
	LastPushed string `db:"last_pushed"`
}

// PushConfigRequest sets a push notification config on a task.
type PushConfigRequest struct {
	TaskID string
	// ID names the config among the task's; empty: the task id (a task
	// with one config needs no name). Setting an existing id replaces it.
	ID    string
	URL   string
	Token string
	// AuthScheme and Credentials are what the receiver asked faxhub to
	// send in Authorization (A2A's authentication): Bearer or Basic.
	AuthScheme  string
	Credentials string
}

// PushConfigView is a config as it is shown back: never its secrets.
// HasToken and HasCredentials say whether they are set.
type PushConfigView struct {
	TaskID         string
	ID             string
	URL            string
	HasToken       bool
	AuthScheme     string
	HasCredentials bool
	CreatedAt      time.Time
}

// PushRenderer renders the body of one push notification: the task as it
// stands, in the protocol's JSON (protocols/a2a: a StreamResponse).
type PushRenderer func(v *View) ([]byte, error)

// PushQueries are the store operations of push notification configs.
type PushQueries interface {
	// CreatePushConfig inserts c; ErrExists when the task already has
	// its config id.
	CreatePushConfig(ctx context.Context, c *PushConfig) error
	// UpdatePushConfig writes c's url and secrets, and forgets what was
	// last pushed (the URL may name another receiver).
	UpdatePushConfig(ctx context.Context, c *PushConfig) error
	// SetPushConfigPushed records the digest of the body the config's
	// receiver acknowledged last; ErrNoRows when the config is gone.
	SetPushConfigPushed(ctx context.Context, id, digest string) error
	GetPushConfig(ctx context.Context, ownerID, taskID, configID string) (*PushConfig, error)
	// GetPushConfigByID reads a config for the delivery engine (no owner).
	GetPushConfigByID(ctx context.Context, id string) (*PushConfig, error)
	// ListPushConfigs lists a task's configs, oldest first.
	ListPushConfigs(ctx context.Context, ownerID, taskID string) ([]PushConfig, error)
	CountPushConfigs(ctx context.Context, ownerID string, mode core.Mode) (int, error)
	DeletePushConfig(ctx context.Context, ownerID, taskID, configID string) error
	DeletePushConfigByID(ctx context.Context, id string) error
	// PushConfigTargets lists the ids of the owner's configs in mode on
	// tasks whose subject is subjectID, or the draft that the fax
	// subjectID was paid from.
	PushConfigTargets(ctx context.Context, ownerID string, mode core.Mode, subjectID string) ([]string, error)
	// LockWebhookOwner serializes an owner's config creations (the bound
	// holds on PostgreSQL too).
	LockWebhookOwner(ctx context.Context, ownerID string) error
	PurgePushConfigs(ctx context.Context, before time.Time) (int64, error)
}

// PushAvailable reports whether this server sends push notifications: it
// needs the delivery engine, the issuer's signer and a renderer.
func (s *Service) PushAvailable() bool {
	return s.d.Webhooks != nil && s.d.Signer != nil && s.d.PushBody != nil
}

func pushBad(field, format string, args ...any) error {
	return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, format, args...).With("field", field)
}

// headerSafe: visible ASCII only (no space, no control): what is sent in a
// header can neither inject another nor be folded.
func headerSafe(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] <= 0x20 || v[i] >= 0x7f {
			return false
		}
	}
	return true
}

func (s *Service) checkPushRequest(r *PushConfigRequest) error {
	if r.ID == "" {
		r.ID = r.TaskID
	}
	switch {
	case len(r.ID) > MaxPushConfigIDBytes || !headerSafe(r.ID):
		return pushBad("id", "the push notification config id must be 1 to %d visible ASCII characters", MaxPushConfigIDBytes)
	case len(r.Token) > MaxPushTokenBytes || !headerSafe(r.Token):
		return pushBad("token", "the token must be at most %d visible ASCII characters (it is sent in the %s header)", MaxPushTokenBytes, HeaderNotificationToken)
	case len(r.Credentials) > MaxPushCredentialsBytes || !headerSafe(r.Credentials):
		return pushBad("authentication.credentials", "authentication.credentials must be at most %d visible ASCII characters (they are sent in the Authorization header)", MaxPushCredentialsBytes)
	}
	switch strings.ToLower(r.AuthScheme) {
	case "":
		if r.Credentials != "" {
			return pushBad("authentication.scheme", "authentication.credentials need a scheme: Bearer or Basic")
		}
	case "bearer":
		r.AuthScheme = "Bearer"
	case "basic":
		r.AuthScheme = "Basic"
	default:
		return pushBad("authentication.scheme", "authentication scheme %q is not offered: use Bearer or Basic (or none: every notification carries a JWT signed by faxhub)", core.CutUTF8(r.AuthScheme, 64))
	}
	if r.AuthScheme != "" && r.Credentials == "" {
		return pushBad("authentication.credentials", "authentication scheme %s needs credentials", r.AuthScheme)
	}
	if err := s.d.Webhooks.CheckURL(r.URL); err != nil {
		return err
	}
	return nil
}

func (s *Service) pushSecret(ctx context.Context) ([]byte, error) {
	return s.d.Store.Secret(ctx, pushSealSecret)
}

// sealPush seals v for config id; nil when v is empty.
func sealPush(secret []byte, purpose, id, v string) ([]byte, error) {
	if v == "" {
		return nil, nil
	}
	return seal.Seal(secret, purpose, []byte(id), []byte(v))
}

func openPush(secret []byte, purpose, id string, sealed []byte) (string, error) {
	if len(sealed) == 0 {
		return "", nil
	}
	b, err := seal.Open(secret, purpose, []byte(id), sealed)
	if err != nil {
		return "", fmt.Errorf("open %s of %s: %w", purpose, id, err)
	}
	return string(b), nil
}

// pushTask checks that p may follow tasks and reads one of p's tasks.
func (s *Service) pushTask(ctx context.Context, p core.Principal, taskID string) (*Task, error) {
	if err := core.Authorize(p, core.OpGetTask); err != nil {
		return nil, err
	}
	if !s.PushAvailable() {
		return nil, core.Errorf(core.KindUnavailable, CodePushNotConfigured, "this server does not send push notifications; follow the task with SubscribeToTask or GetTask")
	}
	return s.agentTask(ctx, p, taskID)
}

// CheckPushConfig checks r without a task (A2A SendMessage checks the
// config it carries before the message starts a task).
func (s *Service) CheckPushConfig(ctx context.Context, p core.Principal, r PushConfigRequest) error {
	if err := core.Authorize(p, core.OpGetTask); err != nil {
		return err
	}
	if !s.PushAvailable() {
		return core.Errorf(core.KindUnavailable, CodePushNotConfigured, "this server does not send push notifications; follow the task with SubscribeToTask or GetTask")
	}
	return s.checkPushRequest(&r)
}

// SetPushConfig sets a push notification config on one of p's tasks
// (needs fax:read, as GetTask): created, or replaced when the task has one
// of that id. Another owner's task is not_found, as in Get.
func (s *Service) SetPushConfig(ctx context.Context, p core.Principal, r PushConfigRequest) (*PushConfigView, error) {
	t, err := s.pushTask(ctx, p, r.TaskID)
	if err != nil {
		return nil, err
	}
	if err := s.checkPushRequest(&r); err != nil {
		return nil, err
	}
	secret, err := s.pushSecret(ctx)
	if err != nil {
		return nil, fmt.Errorf("set push config: %w", err)
	}
	var out *PushConfig
	err = s.inTx(ctx, func(tx Tx) error {
		if err := tx.LockWebhookOwner(ctx, p.OwnerID); err != nil {
			return err
		}
		c, err := tx.GetPushConfig(ctx, p.OwnerID, t.ID, r.ID)
		found := err == nil
		switch {
		case errors.Is(err, core.ErrNoRows):
			if err := s.pushRoom(ctx, tx, p, t); err != nil {
				return err
			}
			c = &PushConfig{ID: core.NewID(core.PrefixPushConfig), OwnerID: p.OwnerID, Mode: p.Mode, TaskID: t.ID, ConfigID: r.ID, CreatedAt: s.now()}
		case err != nil:
			return err
		}
		c.URL, c.AuthScheme = r.URL, r.AuthScheme
		if c.Token, err = sealPush(secret, purposePushToken, c.ID, r.Token); err != nil {
			return err
		}
		if c.Credentials, err = sealPush(secret, purposePushCredentials, c.ID, r.Credentials); err != nil {
			return err
		}
		if found {
			err = tx.UpdatePushConfig(ctx, c)
		} else {
			err = tx.CreatePushConfig(ctx, c)
		}
		if err != nil {
			return err
		}
		out = c
		return nil
	})
	if err != nil {
		if core.ErrorKind(err) != core.KindInternal {
			return nil, err
		}
		return nil, fmt.Errorf("set push config: %w", err)
	}
	s.d.Logger.InfoContext(ctx, "push notification config set", "task_id", t.ID, "config", out.ID, "owner_id", p.OwnerID)
	return pushView(out), nil
}

// pushRoom refuses a new config over the task's or the owner's bound.
func (s *Service) pushRoom(ctx context.Context, tx Tx, p core.Principal, t *Task) error {
	list, err := tx.ListPushConfigs(ctx, p.OwnerID, t.ID)
	if err != nil {
		return err
	}
	if len(list) >= MaxPushConfigsPerTask {
		return core.Errorf(core.KindConflict, CodeTooManyPushConfigs, "task %s has %d push notification configs, the most it may have; delete one first", t.ID, len(list)).With("limit", MaxPushConfigsPerTask)
	}
	n, err := tx.CountPushConfigs(ctx, p.OwnerID, p.Mode)
	if err != nil {
		return err
	}
	if n >= MaxPushConfigsPerOwner {
		return core.Errorf(core.KindConflict, CodeTooManyPushConfigs, "this account has %d %s-mode push notification configs, the most it may have; delete some first", n, p.Mode).With("limit", MaxPushConfigsPerOwner)
	}
	return nil
}

func pushView(c *PushConfig) *PushConfigView {
	return &PushConfigView{TaskID: c.TaskID, ID: c.ConfigID, URL: c.URL, HasToken: len(c.Token) > 0, AuthScheme: c.AuthScheme,
		HasCredentials: len(c.Credentials) > 0, CreatedAt: c.CreatedAt}
}

func pushConfigNotFound(taskID, id string) error {
	return core.Errorf(core.KindNotFound, CodePushConfigNotFound, pushConfigNotFoundFormat, taskID, id)
}

// GetPushConfig reads one config of one of p's tasks (id empty: the
// task's unnamed one).
func (s *Service) GetPushConfig(ctx context.Context, p core.Principal, taskID, id string) (*PushConfigView, error) {
	t, err := s.pushTask(ctx, p, taskID)
	if err != nil {
		return nil, err
	}
	if id == "" {
		id = t.ID
	}
	c, err := s.d.Store.GetPushConfig(ctx, p.OwnerID, t.ID, id)
	if errors.Is(err, core.ErrNoRows) {
		return nil, pushConfigNotFound(t.ID, id)
	}
	if err != nil {
		return nil, fmt.Errorf("get push config: %w", err)
	}
	return pushView(c), nil
}

// ListPushConfigs lists the configs of one of p's tasks (at most
// MaxPushConfigsPerTask: not paginated).
func (s *Service) ListPushConfigs(ctx context.Context, p core.Principal, taskID string) ([]PushConfigView, error) {
	t, err := s.pushTask(ctx, p, taskID)
	if err != nil {
		return nil, err
	}
	list, err := s.d.Store.ListPushConfigs(ctx, p.OwnerID, t.ID)
	if err != nil {
		return nil, fmt.Errorf("list push configs: %w", err)
	}
	out := make([]PushConfigView, 0, len(list))
	for i := range list {
		out = append(out, *pushView(&list[i]))
	}
	return out, nil
}

// DeletePushConfig deletes one config of one of p's tasks; its pending
// deliveries end without another attempt.
func (s *Service) DeletePushConfig(ctx context.Context, p core.Principal, taskID, id string) error {
	t, err := s.pushTask(ctx, p, taskID)
	if err != nil {
		return err
	}
	if id == "" {
		id = t.ID
	}
	err = s.d.Store.DeletePushConfig(ctx, p.OwnerID, t.ID, id)
	if errors.Is(err, core.ErrNoRows) {
		return pushConfigNotFound(t.ID, id)
	}
	if err != nil {
		return fmt.Errorf("delete push config: %w", err)
	}
	return nil
}

// PurgePushConfigs deletes the configs older than PushConfigRetention
// (the garbage collector's).
func (s *Service) PurgePushConfigs(ctx context.Context) (int64, error) {
	n, err := s.d.Store.PurgePushConfigs(ctx, s.now().Add(-PushConfigRetention))
	if err != nil {
		return 0, fmt.Errorf("purge push configs: %w", err)
	}
	return n, nil
}

// PushDestination is the delivery engine's destination of push
// notifications; register it with webhooks.Service.Register.
func (s *Service) PushDestination() webhooks.Destination { return &pushDest{s: s} }

// pushDest delivers to push notification configs. Its targets take one
// attempt at a time (webhooks.SerialDestination) and each body is the task
// as it stands when the attempt is claimed: a receiver sees the task's
// states in order, the last push carrying the latest.
type pushDest struct{ s *Service }

func (*pushDest) Kind() webhooks.TargetKind { return TargetA2APush }
func (*pushDest) Serial()                   {}

func (*pushDest) Targets(ctx context.Context, tx webhooks.Tx, e *events.Event) ([]webhooks.Target, error) {
	q, ok := tx.(PushQueries)
	if !ok {
		return nil, errors.New("the store does not keep push notification configs")
	}
	ids, err := q.PushConfigTargets(ctx, e.OwnerID, e.Mode, e.SubjectID)
	if err != nil {
		return nil, err
	}
	out := make([]webhooks.Target, 0, len(ids))
	for _, id := range ids {
		out = append(out, webhooks.Target{Kind: TargetA2APush, ID: id})
	}
	return out, nil
}

// pushClaims are the claims of a notification's JWT.
type pushClaims struct {
	Iss string `json:"iss"`
	Aud string `json:"aud"`
	IAT int64  `json:"iat"`
	Exp int64  `json:"exp"`
	JTI string `json:"jti"`
	// TaskID names the task the body is about.
	TaskID string `json:"task_id"`
	// BodySHA256 is the hex SHA-256 of the exact body bytes.
	BodySHA256 string `json:"request_body_sha256"`
}

// Request, in the claim's transaction, only checks that the config is
// still there; Finish renders and authenticates the notification.
func (x *pushDest) Request(ctx context.Context, tx webhooks.Tx, d *webhooks.Delivery, _ []byte, _ time.Time) (*webhooks.Request, error) {
	q, ok := tx.(PushQueries)
	if !ok {
		return nil, errors.New("the store does not keep push notification configs")
	}
	c, err := q.GetPushConfigByID(ctx, d.TargetID)
	if errors.Is(err, core.ErrNoRows) || (err == nil && (c.OwnerID != d.OwnerID || c.Mode != d.Mode)) {
		return nil, &webhooks.Refusal{Reason: "the push notification config was deleted"}
	}
	if err != nil {
		return nil, err
	}
	if !x.s.PushAvailable() {
		return nil, &webhooks.Refusal{Reason: "this server no longer sends push notifications"}
	}
	return &webhooks.Request{URL: c.URL, Header: map[string]string{}}, nil
}

// errNotPrepared is what the delivery log says of a notification that
// could not be rendered or signed (the server log has why).
var errNotPrepared = errors.New("the notification could not be prepared on faxhub's side; it is retried")

// Finish renders the task as it stands now (after the claim: the
// target's previous attempt is over, so no later state was sent before)
// and authenticates it: the token in A2A-Notification-Token, a JWT signed
// with the issuer's key in Authorization, or in A2A-Notification-JWT when
// the receiver asked for its own credentials there. The event itself is
// not sent: the task is.
func (x *pushDest) Finish(ctx context.Context, d *webhooks.Delivery, r *webhooks.Request, at time.Time) error {
	var skip *webhooks.Skip
	if err := x.finish(ctx, d, r, at); errors.As(err, &skip) {
		return err
	} else if err != nil {
		x.s.d.Logger.ErrorContext(ctx, "push notification not prepared", "delivery", d.ID, "config", d.TargetID, "err", err)
		return errNotPrepared
	}
	return nil
}

func (x *pushDest) finish(ctx context.Context, d *webhooks.Delivery, r *webhooks.Request, at time.Time) error {
	s := x.s
	c, err := s.d.Store.GetPushConfigByID(ctx, d.TargetID)
	if err != nil {
		return fmt.Errorf("read push config: %w", err)
	}
	p := core.Principal{OwnerID: c.OwnerID, Mode: c.Mode}
	t, err := s.d.Store.GetAgentTask(ctx, c.OwnerID, c.TaskID)
	if err != nil {
		return fmt.Errorf("read task %s: %w", c.TaskID, err)
	}
	v, err := s.view(ctx, p, t)
	if err != nil {
		return err
	}
	body, err := s.d.PushBody(v)
	if err != nil {
		return fmt.Errorf("render push notification: %w", err)
	}
	sum := sha256.Sum256(body)
	digest := hex.EncodeToString(sum[:])
	if digest == c.LastPushed {
		// Events that change nothing the task shows (after it is final,
		// every later event of its fax) would push the same task again.
		return &webhooks.Skip{Reason: "not sent: the receiver already acknowledged the task as it stands (the same body)"}
	}
	secret, err := s.pushSecret(ctx)
	if err != nil {
		return err
	}
	token, err := openPush(secret, purposePushToken, c.ID, c.Token)
	if err != nil {
		return err
	}
	creds, err := openPush(secret, purposePushCredentials, c.ID, c.Credentials)
	if err != nil {
		return err
	}
	jwt, err := s.d.Signer.SignJWT(ctx, PushJWTType, pushClaims{
		Iss: s.merchantIssuer(), Aud: c.URL, IAT: at.Unix(), Exp: at.Add(PushJWTLifetime).Unix(), JTI: core.NewID(core.PrefixJWTID),
		TaskID: t.ID, BodySHA256: digest,
	})
	if err != nil {
		return fmt.Errorf("sign push notification: %w", err)
	}
	r.URL, r.Body = c.URL, body
	r.Header = map[string]string{"Content-Type": "application/json", "User-Agent": pushUserAgent}
	if token != "" {
		r.Header[HeaderNotificationToken] = token
	}
	if creds != "" {
		r.Header["Authorization"] = c.AuthScheme + " " + creds
		r.Header[HeaderNotificationJWT] = jwt
	} else {
		r.Header["Authorization"] = "Bearer " + jwt
	}
	return nil
}

// Attempted remembers the body a receiver acknowledged (so that the same
// is not pushed again), and deletes a config whose receiver answered 410
// Gone: it wants no more.
func (x *pushDest) Attempted(ctx context.Context, tx webhooks.Tx, d *webhooks.Delivery, o *webhooks.Outcome) error {
	q, ok := tx.(PushQueries)
	if !ok || o.Test {
		return nil
	}
	if o.Delivered {
		sum := sha256.Sum256(o.Body)
		err := q.SetPushConfigPushed(ctx, d.TargetID, hex.EncodeToString(sum[:]))
		if err != nil && !errors.Is(err, core.ErrNoRows) {
			return err
		}
		return nil
	}
	if !o.Gone {
		return nil
	}
	err := q.DeletePushConfigByID(ctx, d.TargetID)
	if err != nil && !errors.Is(err, core.ErrNoRows) {
		return err
	}
	x.s.d.Logger.InfoContext(ctx, "push notification config deleted: its receiver answered 410", "config", d.TargetID, "owner_id", d.OwnerID)
	return nil
}
