package store

import (
	"context"
	"fmt"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/tasks"
)

var _ tasks.PushQueries = (*DB)(nil)

const pushConfigCols = `id, owner_id, mode, task_id, config_id, url, token, auth_scheme, credentials, created_at, last_pushed`

func (x q) CreatePushConfig(ctx context.Context, c *tasks.PushConfig) error {
	err := x.insert(ctx, `INSERT INTO a2a_push_configs (`+pushConfigCols+`)
		VALUES (:id, :owner_id, :mode, :task_id, :config_id, :url, :token, :auth_scheme, :credentials, :created_at, :last_pushed)
		ON CONFLICT DO NOTHING`, c)
	if err != nil {
		return fmt.Errorf("create push config: %w", err)
	}
	return nil
}

func (x q) UpdatePushConfig(ctx context.Context, c *tasks.PushConfig) error {
	n, err := x.exec(ctx, "UPDATE a2a_push_configs SET url = ?, token = ?, auth_scheme = ?, credentials = ?, last_pushed = '' WHERE id = ?",
		c.URL, c.Token, c.AuthScheme, c.Credentials, c.ID)
	if err != nil {
		return fmt.Errorf("update push config: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("update push config %s: %w", c.ID, core.ErrNoRows)
	}
	return nil
}

func (x q) SetPushConfigPushed(ctx context.Context, id, digest string) error {
	n, err := x.exec(ctx, "UPDATE a2a_push_configs SET last_pushed = ? WHERE id = ?", digest, id)
	if err != nil {
		return fmt.Errorf("set push config pushed: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("set push config pushed %s: %w", id, core.ErrNoRows)
	}
	return nil
}

func (x q) GetPushConfig(ctx context.Context, ownerID, taskID, configID string) (*tasks.PushConfig, error) {
	var c tasks.PushConfig
	if err := x.get(ctx, x.reader(), &c, "SELECT "+pushConfigCols+" FROM a2a_push_configs WHERE task_id = ? AND config_id = ? AND owner_id = ?",
		taskID, configID, ownerID); err != nil {
		return nil, fmt.Errorf("get push config: %w", err)
	}
	return &c, nil
}

func (x q) GetPushConfigByID(ctx context.Context, id string) (*tasks.PushConfig, error) {
	var c tasks.PushConfig
	if err := x.get(ctx, x.reader(), &c, "SELECT "+pushConfigCols+" FROM a2a_push_configs WHERE id = ?", id); err != nil {
		return nil, fmt.Errorf("get push config: %w", err)
	}
	return &c, nil
}

func (x q) ListPushConfigs(ctx context.Context, ownerID, taskID string) ([]tasks.PushConfig, error) {
	var out []tasks.PushConfig
	if err := x.sel(ctx, &out, "SELECT "+pushConfigCols+" FROM a2a_push_configs WHERE task_id = ? AND owner_id = ? ORDER BY created_at, id",
		taskID, ownerID); err != nil {
		return nil, fmt.Errorf("list push configs: %w", err)
	}
	return out, nil
}

func (x q) CountPushConfigs(ctx context.Context, ownerID string, mode core.Mode) (int, error) {
	var n int
	if err := x.get(ctx, x.reader(), &n, "SELECT COUNT(*) FROM a2a_push_configs WHERE owner_id = ? AND mode = ?", ownerID, mode); err != nil {
		return 0, fmt.Errorf("count push configs: %w", err)
	}
	return n, nil
}

func (x q) DeletePushConfig(ctx context.Context, ownerID, taskID, configID string) error {
	n, err := x.exec(ctx, "DELETE FROM a2a_push_configs WHERE task_id = ? AND config_id = ? AND owner_id = ?", taskID, configID, ownerID)
	if err != nil {
		return fmt.Errorf("delete push config: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("delete push config %s: %w", configID, core.ErrNoRows)
	}
	return nil
}

func (x q) DeletePushConfigByID(ctx context.Context, id string) error {
	n, err := x.exec(ctx, "DELETE FROM a2a_push_configs WHERE id = ?", id)
	if err != nil {
		return fmt.Errorf("delete push config: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("delete push config %s: %w", id, core.ErrNoRows)
	}
	return nil
}

// PushConfigTargets matches an event's subject with the tasks that follow
// it: a task's subject directly (a draft, a number, a cart), or the draft
// a fax was paid from (a fax task follows its draft, whose events are
// the fax's).
func (x q) PushConfigTargets(ctx context.Context, ownerID string, mode core.Mode, subjectID string) ([]string, error) {
	var ids []string
	err := x.sel(ctx, &ids, `SELECT c.id FROM a2a_push_configs c JOIN agent_tasks t ON t.id = c.task_id
		WHERE c.owner_id = ? AND c.mode = ? AND (t.subject_id = ?
			OR t.subject_id = (SELECT f.draft_id FROM faxes f WHERE f.id = ? AND f.owner_id = ?))
		ORDER BY c.id`, ownerID, mode, subjectID, subjectID, ownerID)
	if err != nil {
		return nil, fmt.Errorf("push config targets: %w", err)
	}
	return ids, nil
}

func (x q) PurgePushConfigs(ctx context.Context, before time.Time) (int64, error) {
	n, err := x.exec(ctx, "DELETE FROM a2a_push_configs WHERE created_at < ?", before)
	if err != nil {
		return 0, fmt.Errorf("purge push configs: %w", err)
	}
	return n, nil
}

// PushConfigsOfOwner lists an owner's configs in every mode (tests and
// operators' tooling).
func (x q) PushConfigsOfOwner(ctx context.Context, ownerID string) ([]tasks.PushConfig, error) {
	var out []tasks.PushConfig
	if err := x.sel(ctx, &out, "SELECT "+pushConfigCols+" FROM a2a_push_configs WHERE owner_id = ? ORDER BY created_at, id", ownerID); err != nil {
		return nil, fmt.Errorf("push configs of owner: %w", err)
	}
	return out, nil
}
