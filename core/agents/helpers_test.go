package agents_test

import "context"

var ctx = context.Background()
