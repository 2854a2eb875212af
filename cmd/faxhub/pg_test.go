package main

import (
	"testing"

	"github.com/faxhub/faxhub/conformance/storetest"
)

// testenvSchema gives the command tests a fresh PostgreSQL schema when the
// suites run on PostgreSQL.
func testenvSchema(t *testing.T, base string) string { return storetest.OpenPostgresSchema(t, base) }
