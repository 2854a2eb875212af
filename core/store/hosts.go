package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/hosts"
)

var _ hosts.Queries = (*DB)(nil)

// Capability lists are stored space-joined (migration 00010).
func joinCaps(cs []hosts.Capability) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = string(c)
	}
	return strings.Join(parts, " ")
}

func splitCaps(s string) []hosts.Capability {
	f := fields(s)
	out := make([]hosts.Capability, len(f))
	for i, c := range f {
		out[i] = hosts.Capability(c)
	}
	return out
}

type hostRow struct {
	hosts.Host
	RawCaps string `db:"raw_caps"`
}

const hostSelect = `SELECT id, owner_id, name, public_key, thumbprint, default_capabilities AS raw_caps, status,
	enrollment_hash, enrollment_expires_at, created_at, enrolled_at, revoked_at, last_used_at FROM hosts`

func (r hostRow) host() *hosts.Host {
	h := r.Host
	h.DefaultCapabilities = splitCaps(r.RawCaps)
	return &h
}

func (x q) getHost(ctx context.Context, where string, args ...any) (*hosts.Host, error) {
	var r hostRow
	if err := x.get(ctx, x.reader(), &r, hostSelect+" WHERE "+where, args...); err != nil {
		return nil, err
	}
	return r.host(), nil
}

// CreateHost serialises the owner's host creations on the owner's row, so
// that the count and the insert do not interleave with another replica's.
// An unenrolled host whose token expired does not count.
func (x q) CreateHost(ctx context.Context, h *hosts.Host, max int) error {
	err := x.atomic(ctx, func(x q) error {
		var id string
		if err := x.get(ctx, x.writer(), &id, "SELECT id FROM owners WHERE id = ?"+x.forUpdate(), h.OwnerID); err != nil {
			return err
		}
		var n int
		if err := x.get(ctx, x.writer(), &n, `SELECT COUNT(*) FROM hosts WHERE owner_id = ? AND status <> ?
			AND NOT (status = ? AND enrollment_expires_at <= ?)`,
			h.OwnerID, hosts.Revoked, hosts.PendingEnrollment, h.CreatedAt); err != nil {
			return err
		}
		if n >= max {
			return core.ErrConflict
		}
		n64, err := x.exec(ctx, `INSERT INTO hosts (id, owner_id, name, public_key, thumbprint, default_capabilities, status,
			enrollment_hash, enrollment_expires_at, created_at, enrolled_at, revoked_at, last_used_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			h.ID, h.OwnerID, h.Name, h.PublicKey, h.Thumbprint, joinCaps(h.DefaultCapabilities), h.Status,
			h.EnrollmentHash, h.EnrollmentExpiresAt, h.CreatedAt, h.EnrolledAt, h.RevokedAt, h.LastUsedAt)
		if err == nil && n64 == 0 {
			err = core.ErrExists
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("create host: %w", err)
	}
	return nil
}

func (x q) GetHost(ctx context.Context, id string) (*hosts.Host, error) {
	h, err := x.getHost(ctx, "id = ?", id)
	if err != nil {
		return nil, fmt.Errorf("get host: %w", err)
	}
	return h, nil
}

func (x q) GetHostByThumbprint(ctx context.Context, thumbprint string) (*hosts.Host, error) {
	h, err := x.getHost(ctx, "thumbprint = ?", thumbprint)
	if err != nil {
		return nil, fmt.Errorf("get host by thumbprint: %w", err)
	}
	return h, nil
}

func (x q) GetHostByEnrollment(ctx context.Context, tokenHash string) (*hosts.Host, error) {
	h, err := x.getHost(ctx, "enrollment_hash = ?", tokenHash)
	if err != nil {
		return nil, fmt.Errorf("get host by enrollment: %w", err)
	}
	return h, nil
}

// EnrollHost is one compare-and-set on the token's row: the key goes in
// and the token out together, so a token enrols at most one key. It runs
// under a savepoint: a taken thumbprint (ErrExists) leaves a caller's
// transaction usable on PostgreSQL.
func (x q) EnrollHost(ctx context.Context, tokenHash string, name, publicKey, thumbprint string, at time.Time) (*hosts.Host, error) {
	var h *hosts.Host
	err := x.atomic(ctx, func(x q) error {
		x.db.caches.agents.changed() // rowcache.go: in the writer's batch
		n, err := x.exec(ctx, `UPDATE hosts SET public_key = ?, thumbprint = ?, name = COALESCE(NULLIF(?, ''), name),
			status = ?, enrolled_at = ?, enrollment_hash = NULL
			WHERE enrollment_hash = ? AND status = ? AND enrollment_expires_at > ?`,
			publicKey, thumbprint, name, hosts.Active, at, tokenHash, hosts.PendingEnrollment, at)
		if err != nil {
			return err
		}
		if n == 0 {
			return core.ErrConflict
		}
		var r hostRow
		if err := x.get(ctx, x.writer(), &r, hostSelect+" WHERE thumbprint = ?", thumbprint); err != nil {
			return err
		}
		h = r.host()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("enroll host: %w", err)
	}
	return h, nil
}

func (x q) ListHosts(ctx context.Context, ownerID string) ([]hosts.Host, error) {
	var rows []hostRow
	if err := x.sel(ctx, &rows, hostSelect+" WHERE owner_id = ? ORDER BY created_at DESC, id DESC", ownerID); err != nil {
		return nil, fmt.Errorf("list hosts: %w", err)
	}
	out := make([]hosts.Host, len(rows))
	for i, r := range rows {
		out[i] = *r.host()
	}
	return out, nil
}

// RevokeHost revokes the host and, in the same transaction, its pending
// and active agents: no replica can see a live agent of a revoked host.
func (x q) RevokeHost(ctx context.Context, ownerID, id string, at time.Time) error {
	err := x.atomic(ctx, func(x q) error {
		x.db.caches.agents.changed() // rowcache.go: in the writer's batch
		n, err := x.exec(ctx, "UPDATE hosts SET status = ?, revoked_at = ? WHERE id = ? AND owner_id = ? AND status <> ?",
			hosts.Revoked, at, id, ownerID, hosts.Revoked)
		if err != nil {
			return err
		}
		if n == 0 {
			return core.ErrNoRows
		}
		_, err = x.exec(ctx, "UPDATE delegated_agents SET status = ?, revoked_at = ? WHERE host_id = ? AND status IN (?, ?)",
			hosts.AgentRevoked, at, id, hosts.AgentPending, hosts.AgentActive)
		return err
	})
	if err != nil {
		return fmt.Errorf("revoke host: %w", err)
	}
	return nil
}

func (x q) TouchHost(ctx context.Context, id string, at time.Time) error {
	if _, err := x.exec(ctx, "UPDATE hosts SET last_used_at = ? WHERE id = ?", at, id); err != nil {
		return fmt.Errorf("touch host: %w", err)
	}
	// A last use is not a revocation (rowcache.go).
	x.db.caches.agents.update(func(r *agentWithHost) bool {
		if r.h.ID != id {
			return false
		}
		*r = r.clone()
		r.h.LastUsedAt = usedAt(at)
		return true
	})
	return nil
}

type delegatedAgentRow struct {
	hosts.Agent
	RawRequested string `db:"raw_requested"`
	RawGranted   string `db:"raw_granted"`
}

const delegatedAgentSelect = `SELECT id, host_id, owner_id, name, public_key, thumbprint, requested AS raw_requested,
	granted AS raw_granted, status, user_code_hash, device_expires_at, device_tries, approval_id, created_at,
	activated_at, revoked_at, last_used_at FROM delegated_agents`

func (r delegatedAgentRow) agent() *hosts.Agent {
	a := r.Agent
	a.Requested, a.Granted = splitCaps(r.RawRequested), splitCaps(r.RawGranted)
	return &a
}

// CreateDelegatedAgent serialises a host's registrations on the host's row
// for the count.
func (x q) CreateDelegatedAgent(ctx context.Context, a *hosts.Agent, max int) error {
	err := x.atomic(ctx, func(x q) error {
		var id string
		if err := x.get(ctx, x.writer(), &id, "SELECT id FROM hosts WHERE id = ?"+x.forUpdate(), a.HostID); err != nil {
			return err
		}
		var n int
		if err := x.get(ctx, x.writer(), &n, "SELECT COUNT(*) FROM delegated_agents WHERE host_id = ? AND status IN (?, ?)",
			a.HostID, hosts.AgentPending, hosts.AgentActive); err != nil {
			return err
		}
		if n >= max {
			return core.ErrConflict
		}
		n64, err := x.exec(ctx, `INSERT INTO delegated_agents (id, host_id, owner_id, name, public_key, thumbprint, requested,
			granted, status, user_code_hash, device_expires_at, device_tries, approval_id, created_at, activated_at,
			revoked_at, last_used_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			a.ID, a.HostID, a.OwnerID, a.Name, a.PublicKey, a.Thumbprint, joinCaps(a.Requested), joinCaps(a.Granted),
			a.Status, a.UserCodeHash, a.DeviceExpires, a.DeviceTries, a.ApprovalID, a.CreatedAt, a.ActivatedAt,
			a.RevokedAt, a.LastUsedAt)
		if err == nil && n64 == 0 {
			err = core.ErrExists
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("create delegated agent: %w", err)
	}
	return nil
}

func (x q) GetDelegatedAgent(ctx context.Context, id string) (*hosts.Agent, error) {
	var r delegatedAgentRow
	if err := x.get(ctx, x.reader(), &r, delegatedAgentSelect+" WHERE id = ?", id); err != nil {
		return nil, fmt.Errorf("get delegated agent: %w", err)
	}
	return r.agent(), nil
}

func (x q) GetDelegatedAgentByThumbprint(ctx context.Context, thumbprint string) (*hosts.Agent, error) {
	var r delegatedAgentRow
	if err := x.get(ctx, x.reader(), &r, delegatedAgentSelect+" WHERE thumbprint = ?", thumbprint); err != nil {
		return nil, fmt.Errorf("get delegated agent by thumbprint: %w", err)
	}
	return r.agent(), nil
}

func (x q) ListDelegatedAgents(ctx context.Context, ownerID string) ([]hosts.Agent, error) {
	var rows []delegatedAgentRow
	if err := x.sel(ctx, &rows, delegatedAgentSelect+" WHERE owner_id = ? ORDER BY created_at DESC, id DESC", ownerID); err != nil {
		return nil, fmt.Errorf("list delegated agents: %w", err)
	}
	out := make([]hosts.Agent, len(rows))
	for i, r := range rows {
		out[i] = *r.agent()
	}
	return out, nil
}

func (x q) ReissueDevice(ctx context.Context, id, userCodeHash, approvalID string, expires time.Time) error {
	err := x.changing(ctx, x.db.caches.agents, func(x q) error {
		n, err := x.exec(ctx, `UPDATE delegated_agents SET user_code_hash = ?, approval_id = ?, device_expires_at = ?,
			device_tries = 0 WHERE id = ? AND status = ?`, userCodeHash, approvalID, expires, id, hosts.AgentPending)
		if err == nil && n == 0 {
			err = x.missingOrConflict(ctx, "delegated_agents", "id = ?", id)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("reissue device code: %w", err)
	}
	return nil
}

// AddDeviceTry counts in one statement, so concurrent wrong codes are all
// counted.
func (x q) AddDeviceTry(ctx context.Context, id string) (int, error) {
	var n int
	err := x.changing(ctx, x.db.caches.agents, func(x q) error {
		return x.get(ctx, x.writer(), &n, `UPDATE delegated_agents SET device_tries = device_tries + 1
			WHERE id = ? AND status = ? RETURNING device_tries`, id, hosts.AgentPending)
	})
	if err != nil {
		return 0, fmt.Errorf("add device try: %w", err)
	}
	return n, nil
}

func (x q) DecideDelegatedAgent(ctx context.Context, id, codeHash string, approve bool, granted []hosts.Capability, at time.Time) error {
	status, activated := hosts.AgentRejected, (*time.Time)(nil)
	if approve {
		status, activated = hosts.AgentActive, &at
	} else {
		granted = nil
	}
	query := "UPDATE delegated_agents SET status = ?, granted = ?, activated_at = ? WHERE id = ? AND status = ?"
	args := []any{status, joinCaps(granted), activated, id, hosts.AgentPending}
	if codeHash != "" {
		query += " AND user_code_hash = ?"
		args = append(args, codeHash)
	}
	err := x.changing(ctx, x.db.caches.agents, func(x q) error {
		n, err := x.exec(ctx, query, args...)
		if err == nil && n == 0 {
			err = x.missingOrConflict(ctx, "delegated_agents", "id = ?", id)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("decide delegated agent: %w", err)
	}
	return nil
}

func (x q) RevokeDelegatedAgent(ctx context.Context, id string, at time.Time) error {
	err := x.changing(ctx, x.db.caches.agents, func(x q) error {
		n, err := x.exec(ctx, "UPDATE delegated_agents SET status = ?, revoked_at = ? WHERE id = ? AND status IN (?, ?)",
			hosts.AgentRevoked, at, id, hosts.AgentPending, hosts.AgentActive)
		if err == nil && n == 0 {
			err = x.missingOrConflict(ctx, "delegated_agents", "id = ?", id)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("revoke delegated agent: %w", err)
	}
	return nil
}

func (x q) TouchDelegatedAgent(ctx context.Context, id string, at time.Time) error {
	if _, err := x.exec(ctx, "UPDATE delegated_agents SET last_used_at = ? WHERE id = ?", at, id); err != nil {
		return fmt.Errorf("touch delegated agent: %w", err)
	}
	// A last use is not a revocation (rowcache.go).
	x.db.caches.agents.update(func(r *agentWithHost) bool {
		if r.a.ID != id {
			return false
		}
		*r = r.clone()
		r.a.LastUsedAt = usedAt(at)
		return true
	})
	return nil
}

const delegatedSendCols = `id, owner_id, mode, host_id, agent_id, approval_id, document_id, document_sha256, to_number,
	country, pages, cover, cover_text, options, price_micros, currency, fax_id, created_at, expires_at`

func (x q) CreateDelegatedSend(ctx context.Context, d *hosts.Send) error {
	err := x.insert(ctx, `INSERT INTO delegated_sends (`+delegatedSendCols+`)
		VALUES (:id, :owner_id, :mode, :host_id, :agent_id, :approval_id, :document_id, :document_sha256, :to_number,
			:country, :pages, :cover, :cover_text, :options, :price_micros, :currency, :fax_id, :created_at, :expires_at)
		ON CONFLICT DO NOTHING`, d)
	if err != nil {
		return fmt.Errorf("create delegated send: %w", err)
	}
	return nil
}

func (x q) GetDelegatedSend(ctx context.Context, id string) (*hosts.Send, error) {
	var d hosts.Send
	if err := x.get(ctx, x.reader(), &d, "SELECT "+delegatedSendCols+" FROM delegated_sends WHERE id = ?", id); err != nil {
		return nil, fmt.Errorf("get delegated send: %w", err)
	}
	return &d, nil
}

func (x q) GetDelegatedSendByApproval(ctx context.Context, approvalID string) (*hosts.Send, error) {
	var d hosts.Send
	if err := x.get(ctx, x.reader(), &d, "SELECT "+delegatedSendCols+" FROM delegated_sends WHERE approval_id = ?", approvalID); err != nil {
		return nil, fmt.Errorf("get delegated send by approval: %w", err)
	}
	return &d, nil
}

// CountPendingDelegatedSends counts agentID's sends that have no fax, have
// not expired at now and whose approval is still pending.
func (x q) CountPendingDelegatedSends(ctx context.Context, agentID string, now time.Time) (int, error) {
	var n int
	err := x.get(ctx, x.reader(), &n, `SELECT COUNT(*) FROM delegated_sends d JOIN approvals a ON a.id = d.approval_id
		WHERE d.agent_id = ? AND d.fax_id IS NULL AND d.expires_at > ? AND a.status = ?`, agentID, now, approvals.Pending)
	if err != nil {
		return 0, fmt.Errorf("count pending delegated sends: %w", err)
	}
	return n, nil
}

func (x q) MarkDelegatedSendSent(ctx context.Context, id, faxID string) error {
	n, err := x.exec(ctx, "UPDATE delegated_sends SET fax_id = ? WHERE id = ? AND fax_id IS NULL", faxID, id)
	if err == nil && n == 0 {
		err = x.missingOrConflict(ctx, "delegated_sends", "id = ?", id)
	}
	if err != nil {
		return fmt.Errorf("mark delegated send sent: %w", err)
	}
	return nil
}

// InsertJWTID is one statement: a fresh (issuer, jti) is inserted, a row
// that expired at or before now is taken over, a live one is left alone
// and reported as ErrExists. Of concurrent inserts exactly one changes a
// row (PostgreSQL makes the loser wait on the winner's row and re-check the
// WHERE; SQLite serialises writers).
func (x q) InsertJWTID(ctx context.Context, issuer, jti string, now, expires time.Time) error {
	n, err := x.exec(ctx, `INSERT INTO jwt_ids (issuer, jti, expires_at) VALUES (?, ?, ?)
		ON CONFLICT (issuer, jti) DO UPDATE SET expires_at = excluded.expires_at WHERE jwt_ids.expires_at <= ?`,
		issuer, jti, expires, now)
	if err == nil && n == 0 {
		err = core.ErrExists
	}
	if err != nil {
		return fmt.Errorf("insert jwt id: %w", err)
	}
	return nil
}

func (x q) PurgeJWTIDs(ctx context.Context, now time.Time) (int64, error) {
	return x.purge(ctx, "jwt ids", "DELETE FROM jwt_ids WHERE expires_at <= ?", now)
}

// PurgeDelegatedSends deletes send requests created before before whose
// approval window ended before before too: sent, declined or expired long
// ago. The fax a sent one made is a row of its own and stays.
func (x q) PurgeDelegatedSends(ctx context.Context, before time.Time) (int64, error) {
	return x.purge(ctx, "delegated sends", "DELETE FROM delegated_sends WHERE created_at < ? AND expires_at < ?", before, before)
}

// PurgeUnenrolledHosts deletes hosts still waiting for enrollment whose
// token expired before before.
func (x q) PurgeUnenrolledHosts(ctx context.Context, before time.Time) (int64, error) {
	// Not marked for the agents' cache (rowcache.go): it keeps agents with
	// their host, and a host waiting for enrollment has no agent.
	return x.purge(ctx, "unenrolled hosts", "DELETE FROM hosts WHERE status = ? AND enrollment_expires_at < ?", hosts.PendingEnrollment, before)
}

// agentHostRow is an agent and its host read together (one query for the
// verifier of agent JWTs).
type agentHostRow struct {
	Agent delegatedAgentRow `db:"a"`
	Host  hostRow           `db:"h"`
}

const agentHostSelect = `SELECT a.id AS "a.id", a.host_id AS "a.host_id", a.owner_id AS "a.owner_id", a.name AS "a.name",
	a.public_key AS "a.public_key", a.thumbprint AS "a.thumbprint", a.requested AS "a.raw_requested", a.granted AS "a.raw_granted",
	a.status AS "a.status", a.user_code_hash AS "a.user_code_hash", a.device_expires_at AS "a.device_expires_at",
	a.device_tries AS "a.device_tries", a.approval_id AS "a.approval_id", a.created_at AS "a.created_at",
	a.activated_at AS "a.activated_at", a.revoked_at AS "a.revoked_at", a.last_used_at AS "a.last_used_at",
	h.id AS "h.id", h.owner_id AS "h.owner_id", h.name AS "h.name", h.public_key AS "h.public_key", h.thumbprint AS "h.thumbprint",
	h.default_capabilities AS "h.raw_caps", h.status AS "h.status", h.enrollment_hash AS "h.enrollment_hash",
	h.enrollment_expires_at AS "h.enrollment_expires_at", h.created_at AS "h.created_at", h.enrolled_at AS "h.enrolled_at",
	h.revoked_at AS "h.revoked_at", h.last_used_at AS "h.last_used_at"
	FROM delegated_agents a JOIN hosts h ON h.id = a.host_id`

// agentWithHost is what GetDelegatedAgentWithHost answers, as the agents'
// cache keeps it (rowcache.go).
type agentWithHost struct {
	a *hosts.Agent
	h *hosts.Host
}

func (r agentWithHost) clone() agentWithHost {
	a, h := *r.a, *r.h
	a.Requested, a.Granted = slices.Clone(a.Requested), slices.Clone(a.Granted)
	a.ActivatedAt, a.RevokedAt, a.LastUsedAt = cloneTime(a.ActivatedAt), cloneTime(a.RevokedAt), cloneTime(a.LastUsedAt)
	h.PublicKey, h.Thumbprint, h.EnrollmentHash = cloneString(h.PublicKey), cloneString(h.Thumbprint), cloneString(h.EnrollmentHash)
	h.DefaultCapabilities = slices.Clone(h.DefaultCapabilities)
	h.EnrollmentExpiresAt, h.EnrolledAt = cloneTime(h.EnrollmentExpiresAt), cloneTime(h.EnrolledAt)
	h.RevokedAt, h.LastUsedAt = cloneTime(h.RevokedAt), cloneTime(h.LastUsedAt)
	return agentWithHost{&a, &h}
}

// GetDelegatedAgentWithHost is read on every agent JWT (each capability
// call), so its row is scanned column by column (sqlx's reflection over
// the two nested structs was about a third of the read), and on SQLite
// kept (rowcache.go).
func (x q) GetDelegatedAgentWithHost(ctx context.Context, agentID string) (*hosts.Agent, *hosts.Host, error) {
	r, err := cachedRead(x, x.db.caches.agents, agentID, func() (agentWithHost, error) {
		var r agentHostRow
		a, h := &r.Agent, &r.Host
		// Column order: agentHostSelect's.
		rctx, err := x.rowCtx(ctx, x.reader())
		if err != nil {
			return agentWithHost{}, err
		}
		err = x.reader().QueryRowxContext(rctx, x.db.w.Rebind(agentHostSelect+" WHERE a.id = ?"), agentID).Scan(
			&a.ID, &a.HostID, &a.OwnerID, &a.Name, &a.PublicKey, &a.Thumbprint, &a.RawRequested, &a.RawGranted,
			&a.Status, &a.UserCodeHash, &a.DeviceExpires, &a.DeviceTries, &a.ApprovalID, &a.CreatedAt,
			&a.ActivatedAt, &a.RevokedAt, &a.LastUsedAt,
			&h.ID, &h.OwnerID, &h.Name, &h.PublicKey, &h.Thumbprint, &h.RawCaps, &h.Status, &h.EnrollmentHash,
			&h.EnrollmentExpiresAt, &h.CreatedAt, &h.EnrolledAt, &h.RevokedAt, &h.LastUsedAt)
		if err != nil {
			return agentWithHost{}, fmt.Errorf("get delegated agent with host: %w", dbErr(err))
		}
		return agentWithHost{r.Agent.agent(), r.Host.host()}, nil
	})
	if err != nil {
		return nil, nil, err
	}
	return r.a, r.h, nil
}
