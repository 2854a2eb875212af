package hosts_test

import "context"

var ctx = context.Background()
