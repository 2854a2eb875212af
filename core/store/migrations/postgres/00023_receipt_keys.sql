-- A signing key's purpose. "token" keys sign what faxhub's OAuth server
-- issues (identity assertions, id_tokens) and leave the JWKS 31 days after
-- they retire. "receipt" keys sign delivery receipts, which must stay
-- verifiable for years: they stay in the JWKS for good. Each purpose has its
-- own active key per alg, rotated together by `faxhub admin keys rotate`.

-- +goose Up
ALTER TABLE oauth_keys ADD COLUMN purpose TEXT NOT NULL DEFAULT 'token' CHECK (purpose IN ('token', 'receipt'));
DROP INDEX oauth_keys_alg;
CREATE INDEX oauth_keys_purpose_alg ON oauth_keys (purpose, alg, created_at DESC);

-- +goose Down
DELETE FROM oauth_keys WHERE purpose <> 'token';
DROP INDEX oauth_keys_purpose_alg;
CREATE INDEX oauth_keys_alg ON oauth_keys (alg, created_at DESC);
ALTER TABLE oauth_keys DROP COLUMN purpose;
