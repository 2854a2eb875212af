package documents

import (
	"context"
	"fmt"

	"github.com/faxhub/faxhub/core"
)

// allowUpload charges one upload capability to the owner's upload rate in
// its mode: core.LimitUpload in live mode, the stricter
// core.LimitTestUpload in test mode. Refused: 429 rate_limited with
// Retry-After.
func (s *Service) allowUpload(ctx context.Context, p core.Principal) error {
	limit := core.LimitUpload
	if p.Mode == core.ModeTest {
		limit = core.LimitTestUpload
	}
	return s.kernel.Allow(ctx, limit, p.OwnerID+":"+string(p.Mode))
}

// checkQuota refuses adding bytes to the owner's unsent documents in mode
// when that would pass Storage.QuotaBytes: 413 storage_quota_exceeded.
// Concurrent PUTs check independently, so they can overshoot by the files
// in flight (each at most MaxUploadBytes).
func (s *Service) checkQuota(ctx context.Context, ownerID string, mode core.Mode, bytes int64) error {
	quota := s.st.QuotaBytes
	if quota < 0 {
		return nil
	}
	used, err := s.d.Store.DocumentUsage(ctx, ownerID, mode)
	if err != nil {
		return fmt.Errorf("check storage quota: %w", err)
	}
	if used+bytes > quota {
		return core.Errorf(core.KindTooLarge, CodeStorageQuota,
			"your unsent documents use %d of %d bytes; this file needs %d more. Send them, or wait: unsent documents are deleted %d days after upload",
			used, quota, bytes, int(s.st.UnsentRetention.Hours()/24)).
			With("used", used).With("limit", quota)
	}
	return nil
}
