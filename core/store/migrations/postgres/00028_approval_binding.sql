-- A chat app's send_fax that waits for the owner (approvals kind
-- chat_send) is found again by the exact fax it is bound to: its retry
-- with the same arguments reads the owner's newest approval of that kind
-- and binding (approvals.Service.FindByBinding).

-- +goose Up
CREATE INDEX approvals_binding ON approvals (owner_id, binding_hash, created_at DESC);

-- +goose Down
DROP INDEX approvals_binding;
