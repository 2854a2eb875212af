package testenv

import (
	"sync"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
)

// RaceApprovals decides approval a for ownerID n times at once, approving
// with user verification, and returns how many decisions won. A loser must
// fail with approval_not_pending; any other error fails the test.
func (e *Env) RaceApprovals(t *testing.T, ownerID string, a *approvals.Approval, n int) int {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range n {
		wg.Go(func() {
			_, err := e.Svc.Approvals.Decide(t.Context(), ownerID, a.ID, approvals.Decision{Approve: true, BindingHash: a.BindingHash, UserVerified: true})
			if err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			} else if core.ErrorCode(err) != approvals.CodeApprovalState {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	return wins
}
