package client_test

import (
	"testing"
	"time"

	"github.com/sketchd/sketchd/client"
)

// TestExpiryCalls: Create with an expiry, SetExpiry setting, changing and
// clearing it, a bad value refused by name, and an expired sketch
// reported as not found.
func TestExpiryCalls(t *testing.T) {
	t.Parallel()
	s := startSketchd(t, nil)
	c := newClient(t, s)
	ctx := t.Context()
	sk, created, err := c.Create(ctx, "day", client.CreateRequest{Type: client.TypeHLL, ExpireAfter: "P7D"})
	if err != nil || !created || sk.ExpireAfter != "P7D" || sk.ExpiresAt == nil || !sk.ExpiresAt.Equal(sk.UpdatedAt.Add(7*24*time.Hour)) {
		t.Fatalf("Create(expire_after P7D) = %+v, %v", sk, err)
	}
	at := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	sk, err = c.SetExpiry(ctx, "day", client.Expiry{At: at})
	if err != nil || sk.ExpireAfter != "" || sk.ExpireAt == nil || !sk.ExpireAt.Equal(at) || !sk.ExpiresAt.Equal(at) {
		t.Fatalf("SetExpiry(at) = %+v, %v", sk, err)
	}
	if _, err := c.SetExpiry(ctx, "day", client.Expiry{After: "P0D"}); !client.IsInvalid(err) {
		t.Fatalf("SetExpiry(P0D) = %v, want invalid", err)
	}
	if _, err := c.SetExpiry(ctx, "day", client.Expiry{After: "P1D", At: at}); !client.IsInvalid(err) {
		t.Fatalf("SetExpiry(both) = %v, want invalid", err)
	}
	sk, err = c.SetExpiry(ctx, "day", client.Expiry{})
	if err != nil || sk.ExpiresAt != nil || sk.ExpireAt != nil {
		t.Fatalf("SetExpiry(clear) = %+v, %v", sk, err)
	}
	if _, err := c.SetExpiry(ctx, "missing", client.Expiry{After: "P1D"}); !client.IsNotFound(err) {
		t.Fatalf("SetExpiry(missing) = %v, want not found", err)
	}
	// A sketch whose instant comes in a moment is then gone. A create
	// that reaches the server after that moment (a stall of a second on a
	// loaded machine) is refused as not in the future: then a new moment.
	var soon time.Time
	for try := 1; ; try++ {
		soon = time.Now().Add(time.Second)
		_, _, err := c.Create(ctx, "brief", client.CreateRequest{ExpireAt: &soon})
		if err == nil {
			break
		}
		if !client.IsInvalid(err) || time.Now().Before(soon) || try == 5 {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Until(soon) + 10*time.Millisecond)
	if _, err := c.Describe(ctx, "brief"); !client.IsNotFound(err) {
		t.Fatalf("Describe past expire_at = %v, want not found", err)
	}
}
