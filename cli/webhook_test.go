package cli

import (
	"strings"
	"testing"
)

// `docsift webhook create` checks the endpoint's address as the API
// does: with no server running, by its own --allow-private-webhooks and
// --webhook-allow-cidr (and their DOCSIFT_ twins); through a running
// server, by the server's.
func TestWebhookCreateChecksTheAddress(t *testing.T) {
	dir := t.TempDir()
	p := createProject(t, dir, "acme")
	create := func(url string, flags ...string) error {
		t.Helper()
		_, err := runCLI(t, append([]string{"webhook", "create", "--project", p.ProjectID, "--url", url, "--data", dir}, flags...)...)
		return err
	}
	for url, want := range map[string]string{
		"http://127.0.0.1:9/x":                  "url: 127.0.0.1 is a loopback address, inside the server's network, where webhooks may not go unless the server's operator allows it (docsift serve --allow-private-webhooks, or --webhook-allow-cidr 127.0.0.1/32)",
		"http://[::ffff:169.254.169.254]/":      "cloud metadata service's address",
		"http://10.1.2.3/hooks":                 "10.1.2.3 is a private address (RFC 1918)",
		"http://[fd00:ec2::254]/latest/api/tok": "cloud metadata",
	} {
		if err := create(url); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("webhook create --url %s: %v; want %q", url, err, want)
		}
	}
	if err := create("http://10.1.2.3/hooks", "--allow-private-webhooks"); err != nil {
		t.Errorf("a private address with --allow-private-webhooks: %v", err)
	}
	if err := create("http://[::ffff:169.254.169.254]/", "--allow-private-webhooks"); err == nil || !strings.Contains(err.Error(), "cloud metadata") {
		t.Errorf("the metadata address with --allow-private-webhooks: %v; want it refused still", err)
	}
	if err := create("http://127.0.0.1:9/x", "--webhook-allow-cidr", "10.0.0.0/8,127.0.0.1"); err != nil {
		t.Errorf("an address --webhook-allow-cidr names: %v", err)
	}
	if err := create("http://127.0.0.1:9/x", "--webhook-allow-cidr", "127.0.0.1/33"); err == nil || !strings.Contains(err.Error(), `--webhook-allow-cidr: "127.0.0.1/33" is not a network`) {
		t.Errorf("a malformed --webhook-allow-cidr: %v", err)
	}

	// Through a running server, which allows no private address: the
	// command's own flags do not open what the server refuses.
	srv := startServe(t, dir, freeAddr(t))
	if err := create("http://127.0.0.1:9/x", "--allow-private-webhooks"); err == nil || !strings.Contains(err.Error(), "127.0.0.1 is a loopback address, inside the server's network") {
		t.Errorf("through a server that refuses it: %v", err)
	}
	if err := srv.stop(); err != nil {
		t.Fatal(err)
	}
	srv = startServe(t, dir, freeAddr(t), "--webhook-allow-cidr", "127.0.0.0/8")
	if err := create("http://127.0.0.1:9/x"); err != nil {
		t.Errorf("through a server that allows it: %v", err)
	}
	if err := srv.stop(); err != nil {
		t.Fatal(err)
	}

	// The flags' environment twins, as serve's.
	t.Setenv("DOCSIFT_WEBHOOK_ALLOW_CIDR", "192.168.7.0/24,127.0.0.1")
	if err := create("http://192.168.7.9/x"); err != nil {
		t.Errorf("an address DOCSIFT_WEBHOOK_ALLOW_CIDR names: %v", err)
	}
	t.Setenv("DOCSIFT_WEBHOOK_ALLOW_CIDR", "")
	t.Setenv("DOCSIFT_ALLOW_PRIVATE_WEBHOOKS", "true")
	if err := create("http://172.16.5.5/x"); err != nil {
		t.Errorf("a private address with DOCSIFT_ALLOW_PRIVATE_WEBHOOKS=true: %v", err)
	}
}
