package client

import (
	"context"
	"fmt"
	"time"

	"github.com/faxhub/faxhub/rest/client/api"
)

// Ended reports whether a fax in this status will not change any more.
func Ended(s api.FaxStatus) bool {
	switch s {
	case api.FaxStatusDelivered, api.FaxStatusFailed, api.FaxStatusCanceled, api.FaxStatusPartial:
		return true
	}
	return false
}

// WaitOptions tunes WaitFax. The zero value polls after 1 s, doubling to
// at most 15 s between polls.
type WaitOptions struct {
	// First and Max bound the pause between polls: the first pause is
	// First, each next one doubles, up to Max.
	First, Max time.Duration
	// OnChange, when set, is called with the fax each time its status or
	// attempt count changes (and with the first answer), e.g. to print a
	// live status line.
	OnChange func(*api.Fax)
	// After, when set, replaces time.After (tests inject a clock).
	After func(time.Duration) <-chan time.Time
}

// WaitFax polls a fax until it ends (delivered, failed, canceled or
// partial) and returns it, or returns the fax as last seen and ctx's error when ctx ends first:
// bound the wait with a context deadline. A refused poll (the fax does not
// exist, the key was revoked) ends the wait with that *Error.
func (c *Client) WaitFax(ctx context.Context, id string, o WaitOptions) (*api.Fax, error) {
	if o.First <= 0 {
		o.First = time.Second
	}
	if o.Max < o.First {
		o.Max = max(15*time.Second, o.First)
	}
	if o.After == nil {
		o.After = time.After
	}
	pause := o.First
	var last string
	var prev *api.Fax
	for {
		f, err := c.GetFax(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return prev, fmt.Errorf("wait for fax %s: %w", id, ctx.Err())
			}
			return prev, err
		}
		prev = f
		if seen := fmt.Sprintf("%s/%d", f.Status, f.AttemptCount); seen != last {
			last = seen
			if o.OnChange != nil {
				o.OnChange(f)
			}
		}
		if Ended(f.Status) {
			return f, nil
		}
		select {
		case <-ctx.Done():
			return f, fmt.Errorf("wait for fax %s: %w", id, ctx.Err())
		case <-o.After(pause):
		}
		pause = min(pause*2, o.Max)
	}
}
