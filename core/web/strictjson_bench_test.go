package web_test

import (
	"testing"

	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/web"
)

// The strict decoder on the bodies the busiest doors read: a REST send
// and a JSON-RPC request. Run with -bench to compare a change; make bench
// holds the ratios that matter to a user.
func BenchmarkDecodeStrictJSON(b *testing.B) {
	send := []byte(`{"to":"+12125550100","uploadToken":"upl_7Yc2qg3VJxZrM0dS4bTnKw8e","cover":true,"coverText":"Invoice 2041, as discussed","header":"ACME billing","retry":{"attempts":3,"delayMinutes":5}}`)
	b.Run("send", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var req faxes.SendRequest
			if err := web.DecodeStrictJSON(send, &req); err != nil {
				b.Fatal(err)
			}
		}
	})
	rpc := []byte(`{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"id":"task_01J9Y6M2ZC5","historyLength":10,"metadata":{"a":1,"b":[1,2,{"c":"d"}]}}}`)
	b.Run("jsonrpc duplicates", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := web.CheckJSONDuplicates(rpc); err != nil {
				b.Fatal(err)
			}
		}
	})
}
