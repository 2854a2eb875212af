package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// VerifyReceiptWithNodeJose verifies a signed delivery receipt
// independently, with the jose library in Node
// (conformance/node/receipt.mjs, which also checks that a receipt changed
// by a byte fails). jwks is a JWKS file or URL. Without node or
// conformance/node_modules (make deps) the check is skipped, unless
// FAXHUB_REQUIRE_ALL is set (make check), where it fails.
func VerifyReceiptWithNodeJose(t testing.TB, receipt, jwks, issuer string) {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(here), "..", "..")
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(root, "conformance/node_modules/jose/package.json"))
	}
	if err != nil {
		if os.Getenv("FAXHUB_REQUIRE_ALL") != "" {
			t.Fatalf("node and conformance/node_modules/jose (make deps): %v", err)
		}
		t.Skipf("needs node and conformance/node_modules/jose (make deps): %v", err)
	}
	file := filepath.Join(t.TempDir(), "receipt.jws")
	if err := os.WriteFile(file, []byte(receipt+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "--test-reporter=tap", filepath.Join(root, "conformance/node/receipt.mjs"))
	cmd.Env = append(os.Environ(), "FAXHUB_RECEIPT="+file, "FAXHUB_RECEIPT_JWKS="+jwks, "FAXHUB_RECEIPT_ISSUER="+issuer)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "# fail 0") {
		t.Fatalf("receipt.mjs with %s: %v\n%s", jwks, err, out)
	}
}
