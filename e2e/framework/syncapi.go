package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Users of the sync API tests: every API server authenticates their tokens (token auth file),
// and RBAC grants them nothing until a test binds a role.
const (
	// SyncUserToken authenticates SyncUser.
	SyncUserToken = "sync-user-token"
	// SyncUser is a user tests grant the convoy-sync roles to.
	SyncUser = "convoy-e2e-sync-user"
	// NobodyToken authenticates Nobody.
	NobodyToken = "nobody-token"
	// Nobody is a user with no RBAC at all.
	Nobody = "convoy-e2e-nobody"
)

// extraTokenLines are the token auth file lines of the users above.
var extraTokenLines = SyncUserToken + "," + SyncUser + "," + SyncUser + "\n" +
	NobodyToken + "," + Nobody + "," + Nobody + "\n"

// syncAPIFlags prepares the controller's sync API and observer flags: the sync API on a free
// port of 127.0.0.1 (self-signed), the health loop polling every 2 s, and the drift loop's token
// file holding the admin token (the controller runs as admin in the harness).
func (c *Controller) syncAPIFlags(dir string) ([]string, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	tokenFile := filepath.Join(dir, "sync-api-token")
	if err := os.WriteFile(tokenFile, []byte(adminToken+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("write sync API token file: %w", err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	c.SyncAPIURL = "https://" + addr
	return []string{
		"--sync-api-addr=" + addr,
		"--sync-api-token-file=" + tokenFile,
		"--health-interval=2s",
	}, nil
}

// withObserver adds the observer to a --controllers flag.
func withObserver(args []string) []string {
	for i, a := range args {
		if strings.HasPrefix(a, "--controllers=") && !strings.Contains(a, "observer") {
			args[i] = a + ",observer"
		}
	}
	return args
}
