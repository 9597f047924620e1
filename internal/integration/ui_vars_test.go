package integration

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hashicorp/nomad/api"
)

// The Variables page lists the variables of every namespace, filters by
// path prefix, and opens one at Nomad's URL with its values hidden until
// asked for.
func TestUIVariables(t *testing.T) {
	b := newBrowser(t, 1280, 800)
	a := devAgent(t)
	const wait = 60 * time.Second
	if _, err := a.client.Namespaces().Register(&api.Namespace{Name: "prod"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, v := range []*api.Variable{
		{Namespace: "prod", Path: "app/config", Items: api.VariableItems{"user": "admin", "pass": "s3cret"}},
		{Namespace: "default", Path: "other/thing", Items: api.VariableItems{"k": "v"}},
	} {
		if _, _, err := a.client.Variables().Create(v, nil); err != nil {
			t.Fatal(err)
		}
	}
	b.run("open", wait, chromedp.Navigate(a.url("/ui/jobs")))
	b.waitJS("the jobs page", wait, `document.querySelector('nav.side a[data-nav="variables"]')`)
	evalJS[bool](b, `document.querySelector('nav.side a[data-nav="variables"]').click(), true`)
	b.waitJS("both variables", wait, `location.pathname === "/ui/variables" && document.querySelectorAll("#varrows tr[data-var]").length === 2`)
	b.shot("variables")
	evalJS[bool](b, `(() => { const i = document.querySelector("#varfilter input"); i.value = "app"; i.dispatchEvent(new Event("input", {bubbles: true})); return true })()`)
	b.waitJS("the filtered list", wait, `location.search === "?prefix=app" && document.querySelectorAll("#varrows tr[data-var]").length === 1 && document.querySelector('#varrows tr[data-var="app/config"]')`)
	evalJS[bool](b, `document.querySelector('#varrows tr[data-var="app/config"] a').click(), true`)
	b.waitJS("the variable", wait, `location.pathname === "/ui/variables/var/app/config@prod" && document.querySelector('#varitems tr[data-key="user"]')`)
	if txt := evalJS[string](b, `document.querySelector("#varitems").innerText`); containsStr(txt, "s3cret") || containsStr(txt, "admin") {
		t.Errorf("values shown before asked for:\n%s", txt)
	}
	evalJS[bool](b, `document.querySelector("#showvals").click(), true`)
	b.waitJS("the values", wait, `document.querySelector('#varitems tr[data-key="pass"]').innerText.includes("s3cret")`)
	b.shot("variable")
	b.run("open a missing variable", wait, chromedp.Navigate(a.url("/ui/variables/var/nope@prod")))
	b.waitJS("not found", wait, `document.querySelector("main").innerText.includes("Variable not found")`)
}

func containsStr(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
