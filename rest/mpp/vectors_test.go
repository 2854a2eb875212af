package mpp

import (
	"encoding/json"
	"testing"
	"time"
)

// Cross-SDK challenge-id vectors published by tempoxyz/mpp-go
// (pkg/mpp/challenge_vectors_test.go, as read on 2026-11-23), reproduced
// here as data only: secret, the seven slots' inputs and the id every SDK
// computes. Passing them means our ids verify in other SDKs and theirs in
// ours.
var crossSDKVectors = []struct {
	name, secret, realm, method, intent, request, expires, digest string
	opaque                                                        map[string]string
	want                                                          string
}{
	{name: "basic charge", secret: "test-secret-key-12345", realm: "api.example.com", method: "tempo", intent: "charge",
		request: `{"amount":"1000000","currency":"0x20c0000000000000000000000000000000000000","recipient":"0x1234567890abcdef1234567890abcdef12345678"}`,
		want:    "XmJ98SdsAdzwP9Oa-8In322Uh6yweMO6rywdomWk_V4"},
	{name: "with expires", secret: "test-secret-key-12345", realm: "api.example.com", method: "tempo", intent: "charge",
		request: `{"amount":"5000000","currency":"0x20c0000000000000000000000000000000000000","recipient":"0xabcdef1234567890abcdef1234567890abcdef12"}`,
		expires: "2026-01-29T12:00:00Z", want: "EvqUWMPJjqhoVJVG3mhTYVqCa3Mk7bUVd_OjeJGek1A"},
	{name: "with digest", secret: "my-server-secret", realm: "payments.example.org", method: "tempo", intent: "charge",
		request: `{"amount":"250000","currency":"USD","recipient":"0x9999999999999999999999999999999999999999"}`,
		digest:  "sha-256=X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=", want: "qcJUPoapy4bFLznQjQUutwPLyXW7FvALrWA_sMENgAY"},
	{name: "full challenge", secret: "production-secret-abc123", realm: "api.tempo.xyz", method: "tempo", intent: "charge",
		request: `{"amount":"10000000","currency":"0x20c0000000000000000000000000000000000000","recipient":"0x742d35Cc6634C0532925a3b844Bc9e7595f1B0F2","description":"API access fee","externalId":"order-12345"}`,
		expires: "2026-02-01T00:00:00Z", digest: "sha-256=abc123def456", want: "J6w7zq6nHLnchss3AYbLxNirdpuaV8_Msn37DQSz6Bw"},
	{name: "different secret", secret: "different-secret-key", realm: "api.example.com", method: "tempo", intent: "charge",
		request: `{"amount":"1000000","currency":"0x20c0000000000000000000000000000000000000","recipient":"0x1234567890abcdef1234567890abcdef12345678"}`,
		want:    "_o55RP0duNvJYtw9PXnf44mGyY5ajV_wwGzoGdTFuNs"},
	{name: "empty request", secret: "test-key", realm: "test.example.com", method: "tempo", intent: "authorize",
		request: `{}`, want: "MYEC2oq3_B3cHa_My1Lx3NQKn_iUiMfsns6361N0SX0"},
	{name: "unicode request", secret: "unicode-test-key", realm: "api.example.com", method: "tempo", intent: "charge",
		request: `{"amount":"100","currency":"EUR","recipient":"0x1111111111111111111111111111111111111111","description":"Payment for caf\u00e9 \u2615"}`,
		want:    "1_GKJqATKvVnIUY3f8MFq48bMs18JHz_3CBK8pu52yA"},
	{name: "nested methodDetails", secret: "nested-test-key", realm: "api.tempo.xyz", method: "tempo", intent: "charge",
		request: `{"amount":"5000000","currency":"0x20c0000000000000000000000000000000000000","recipient":"0x2222222222222222222222222222222222222222","methodDetails":{"chainId":42431,"feePayer":true}}`,
		want:    "VkSq83C7vQFvdX3MqHM7s-N1QOo2nae4F1iHmbV5pgg"},
	{name: "golden required only", secret: "test-vector-secret", realm: "api.example.com", method: "tempo", intent: "charge",
		request: `{"amount":"1000000"}`, want: "X6v1eo7fJ76gAxqY0xN9Jd__4lUyDDYmriryOM-5FO4"},
	{name: "golden expires and digest", secret: "test-vector-secret", realm: "api.example.com", method: "tempo", intent: "charge",
		request: `{"amount":"1000000"}`, expires: "2025-01-06T12:00:00Z", digest: "sha-256=X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE",
		want: "m39jbWWCIfmfJZSwCfvKFFtBl0Qwf9X4nOmDb21peLA"},
	{name: "golden stripe method", secret: "test-vector-secret", realm: "api.example.com", method: "stripe", intent: "charge",
		request: `{"amount":"1000000"}`, want: "o0ra2sd7HcB4Ph0Vns69gRDUhSj5WNOnUopcDqKPLz4"},
	{name: "golden session intent", secret: "test-vector-secret", realm: "api.example.com", method: "tempo", intent: "session",
		request: `{"amount":"1000000"}`, want: "aAY7_IEDzsznNYplhOSE8cERQxvjFcT4Lcn-7FHjLVE"},
	{name: "golden opaque", secret: "test-vector-secret", realm: "api.example.com", method: "tempo", intent: "charge",
		request: `{"amount":"1000000"}`, opaque: map[string]string{"pi": "pi_3abc123XYZ"}, want: "rxzKZ2qjXvinqCH96RORTZEPs1KXsA-0AUjrCAPFOWc"},
	{name: "golden opaque and expires", secret: "test-vector-secret", realm: "api.example.com", method: "tempo", intent: "charge",
		request: `{"amount":"1000000"}`, expires: "2025-01-06T12:00:00Z", opaque: map[string]string{"pi": "pi_3abc123XYZ"},
		want: "KAfoMrA4fnzS1DPWN_cUv_b3_yHxCizdp6OhH7gluMY"},
	{name: "golden empty opaque", secret: "test-vector-secret", realm: "api.example.com", method: "tempo", intent: "charge",
		request: `{"amount":"1000000"}`, opaque: map[string]string{}, want: "vb4IyH-0LdJ3s7L0QAw8jIzcZkyxksPhIvEfmHmzA9k"},
	{name: "golden multi key opaque", secret: "test-vector-secret", realm: "api.example.com", method: "tempo", intent: "charge",
		request: `{"amount":"1000000"}`, opaque: map[string]string{"pi": "pi_3abc123XYZ", "deposit": "dep_456"},
		want: "aKskU8sadR5ZuFbUCsIwhO-ENxuVpTw17FdwHEXsJDk"},
}

func TestCrossSDKVectors(t *testing.T) {
	for _, v := range crossSDKVectors {
		t.Run(v.name, func(t *testing.T) {
			c := Challenge{Realm: v.realm, Method: v.method, Intent: v.intent,
				Request: json.RawMessage(v.request), Digest: v.digest, Opaque: v.opaque}
			if v.expires != "" {
				e, err := time.Parse(time.RFC3339, v.expires)
				if err != nil {
					t.Fatal(err)
				}
				c.Expires = e
			}
			if err := c.Bind([]byte(v.secret)); err != nil {
				t.Fatalf("Bind: %v", err)
			}
			if c.ID != v.want {
				t.Fatalf("id = %s, want %s", c.ID, v.want)
			}
			if !c.Verify([]byte(v.secret)) {
				t.Fatal("Verify refused its own binding")
			}
		})
	}
}
