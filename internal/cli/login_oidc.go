package cli

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/nomad/api"
)

// oidcLogin runs the OIDC authorization code flow from the terminal: a
// local callback server on addr, the provider's URL from the cluster
// (printed, and opened in a browser), then the callback's code and state
// traded for an ACL token. Only a callback carrying this login's state is
// acted on: another (a stale tab of an earlier login, a forged request) is
// answered 400 and the login keeps waiting.
func oidcLogin(c *aclCommand, client *api.Client, method, addr string, timeout time.Duration) (*api.ACLToken, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("Error starting the OIDC callback server on %s: %v (choose another address with -oidc-callback-addr)", addr, err)
	}
	defer ln.Close()
	host, port, _ := net.SplitHostPort(addr)
	if port == "0" { // an ephemeral port: the redirect names the one given
		_, port, _ = net.SplitHostPort(ln.Addr().String())
	}
	redirect := "http://" + net.JoinHostPort(host, port) + "/oidc/callback"

	nonce, err := randomString()
	if err != nil {
		return nil, err
	}
	resp, _, err := client.ACLAuth().GetAuthURL(&api.ACLOIDCAuthURLRequest{AuthMethodName: method, RedirectURI: redirect, ClientNonce: nonce}, nil)
	if err != nil {
		return nil, fmt.Errorf("Error starting the OIDC login: %s", err)
	}
	authURL, err := url.Parse(resp.AuthURL)
	if err != nil || authURL.Scheme == "" {
		return nil, fmt.Errorf("Error starting the OIDC login: the cluster returned an unusable auth URL %q", resp.AuthURL)
	}
	state := authURL.Query().Get("state")

	cb := &oidcCallback{c: c, client: client, method: method, nonce: nonce, redirect: redirect, state: state,
		done: make(chan oidcResult, 1)}
	srv := &http.Server{Handler: cb, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer func() {
		// Let the page of the last callback reach the browser.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}()

	// The prompt goes to stderr: stdout carries only the token (-json, -t).
	c.Ui.Error("Complete the login with your OIDC provider in the browser. If no browser opens, visit:\n\n    " + resp.AuthURL + "\n")
	if err := openBrowser(resp.AuthURL); err != nil {
		c.Ui.Error(fmt.Sprintf("Could not open a browser (%v): open the URL above yourself.", err))
	}
	c.Ui.Error(fmt.Sprintf("Waiting up to %s for the provider to redirect to %s ...", timeout, redirect))

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-cb.done:
		return r.token, r.err
	case <-timer.C:
		return nil, fmt.Errorf("Error performing login: no callback from the OIDC provider within %s (-oidc-timeout); run the command again", timeout)
	case s := <-sig:
		return nil, fmt.Errorf("Login interrupted (%s)", s)
	}
}

type oidcResult struct {
	token *api.ACLToken
	err   error
}

// oidcCallback serves /oidc/callback for one login.
type oidcCallback struct {
	c                              *aclCommand
	client                         *api.Client
	method, nonce, redirect, state string
	mu                             sync.Mutex
	finished                       bool
	done                           chan oidcResult
}

func (cb *oidcCallback) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/oidc/callback" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	if cb.state != "" && q.Get("state") != cb.state {
		cb.c.Ui.Error("Ignored a callback whose state is not this login's (an earlier login's browser tab, or a forged request).")
		callbackPage(w, http.StatusBadRequest, "Login not completed",
			"This callback does not belong to the login in progress (its state does not match). It was ignored: finish the login from the URL the command printed.")
		return
	}
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if cb.finished {
		callbackPage(w, http.StatusConflict, "Login already finished", "This login has already finished; see the terminal.")
		return
	}
	cb.finished = true
	var res oidcResult
	switch {
	case q.Get("error") != "":
		msg := q.Get("error")
		if d := q.Get("error_description"); d != "" {
			msg += ": " + d
		}
		res.err = fmt.Errorf("Error performing login: the OIDC provider refused the login (%s)", msg)
		callbackPage(w, http.StatusForbidden, "Login failed", "The OIDC provider refused the login: "+msg)
	case q.Get("code") == "":
		res.err = errors.New("Error performing login: the OIDC provider's callback carries neither a code nor an error")
		callbackPage(w, http.StatusBadRequest, "Login failed", "The callback carries neither a code nor an error.")
	default:
		tok, _, err := cb.client.ACLAuth().CompleteAuth(&api.ACLOIDCCompleteAuthRequest{AuthMethodName: cb.method,
			ClientNonce: cb.nonce, State: q.Get("state"), Code: q.Get("code"), RedirectURI: cb.redirect}, nil)
		if err != nil {
			res.err = fmt.Errorf("Error performing login: %s", err)
			callbackPage(w, http.StatusForbidden, "Login failed", err.Error())
			break
		}
		res.token = tok
		callbackPage(w, http.StatusOK, "Signed in", "Signed in via "+cb.method+". You may close this window and return to the terminal.")
	}
	cb.done <- res
}

func callbackPage(w http.ResponseWriter, code int, title, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	fmt.Fprintf(w, "<!DOCTYPE html>\n<html><head><title>Drover: %s</title></head>\n<body><h1>%s</h1>\n<p>%s</p></body></html>\n",
		html.EscapeString(title), html.EscapeString(title), html.EscapeString(msg))
}

// randomString is a client nonce: 24 random bytes, URL-safe.
func randomString() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("Error making a client nonce: %v", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// openBrowser starts a browser on u without waiting for it: each command
// of $BROWSER (a list separated by ':', "%s" standing for the URL, else
// the URL is the last argument) until one starts, else the platform's
// opener. An error only means the user opens the URL themselves.
func openBrowser(u string) error {
	var cmds [][]string
	if b := os.Getenv("BROWSER"); b != "" {
		for _, part := range strings.Split(b, string(os.PathListSeparator)) {
			f := strings.Fields(part)
			if len(f) == 0 {
				continue
			}
			subst := false
			for i := range f {
				if strings.Contains(f[i], "%s") {
					f[i], subst = strings.ReplaceAll(f[i], "%s", u), true
				}
			}
			if !subst {
				f = append(f, u)
			}
			cmds = append(cmds, f)
		}
	} else {
		switch runtime.GOOS {
		case "darwin":
			cmds = [][]string{{"open", u}}
		case "windows":
			cmds = [][]string{{"rundll32", "url.dll,FileProtocolHandler", u}}
		default:
			cmds = [][]string{{"xdg-open", u}}
		}
	}
	var errs []error
	for _, argv := range cmds {
		cmd := exec.Command(argv[0], argv[1:]...)
		if err := cmd.Start(); err != nil {
			errs = append(errs, err)
			continue
		}
		go cmd.Wait()
		return nil
	}
	return errors.Join(errs...)
}
