package retention_test

import "context"

var ctx = context.Background()
