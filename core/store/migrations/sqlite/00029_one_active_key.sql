-- A role (purpose and alg) has one active signing key, held by the
-- database: replicas started at once on a database without keys each try
-- to create the first key of a role, and only one insert wins (the others
-- find it and use it), so every replica publishes and signs with the same
-- key. Before, each kept its own first key, and a replica whose key cache
-- predated another's first key published a JWKS without the key that
-- other replica signed with, for up to a minute (an id_token from one
-- replica failed against the JWKS of another). A rotation retires the
-- active key and stores its successor in one transaction.
--
-- Databases that met that race keep more than one active key of a role:
-- each but the newest (created_at, then id, as ListOAuthKeys orders) is
-- retired at the newest's creation, so it stays published for the
-- overlap and no longer signs.

-- +goose Up
UPDATE oauth_keys SET retired_at = (
    SELECT MAX(n.created_at) FROM oauth_keys n
    WHERE n.purpose = oauth_keys.purpose AND n.alg = oauth_keys.alg AND n.retired_at IS NULL
)
WHERE retired_at IS NULL AND EXISTS (
    SELECT 1 FROM oauth_keys n
    WHERE n.purpose = oauth_keys.purpose AND n.alg = oauth_keys.alg AND n.retired_at IS NULL
      AND (n.created_at > oauth_keys.created_at OR (n.created_at = oauth_keys.created_at AND n.id > oauth_keys.id))
);
CREATE UNIQUE INDEX oauth_keys_active ON oauth_keys (purpose, alg) WHERE retired_at IS NULL;

-- +goose Down
DROP INDEX oauth_keys_active;
