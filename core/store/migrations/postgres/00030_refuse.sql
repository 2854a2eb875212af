-- faxhub_refuse(reason) raises an error whose SQLSTATE is FX001 and whose
-- message is reason. A statement that writes several tables at once (a
-- fax's move with its attempt's outcome and its credit hold's settlement:
-- MoveFax) calls it when one of its parts found nothing to write: a
-- data-modifying CTE that matches no row does not fail the statement, and
-- SQL has no expression that raises. Raised, it fails the whole statement,
-- so what its other parts wrote is taken back without a transaction around
-- it: a delivery's end is one round trip instead of four.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION faxhub_refuse(reason text) RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'FX001', MESSAGE = reason;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION faxhub_refuse(text);
