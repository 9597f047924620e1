package integration

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hashicorp/nomad/api"
)

// A canary deployment is promoted from the job's deployments tab: the
// button appears once the canary is placed, and after the click the
// deployment completes with the new version everywhere.
func TestUIDeploymentPromote(t *testing.T) {
	b := newBrowser(t, 1280, 800)
	a := devAgent(t)
	const wait = 60 * time.Second
	job := rawExecJob("canary", "service", 1, "echo v1; sleep 300")
	job.Update = &api.UpdateStrategy{Canary: ptr(1), MaxParallel: ptr(1), MinHealthyTime: ptr(time.Second),
		HealthyDeadline: ptr(20 * time.Second), ProgressDeadline: ptr(time.Minute), AutoPromote: ptr(false)}
	if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, wait, "version 0 deployed", func() bool {
		d, _, err := a.client.Jobs().LatestDeployment("canary", nil)
		return err == nil && d != nil && d.Status == "successful"
	})
	job.TaskGroups[0].Tasks[0].Config["args"] = []string{"-c", "echo v2; sleep 300"}
	if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	b.run("open", wait, chromedp.Navigate(a.url("/ui/jobs/canary/deployments")))
	b.waitJS("a healthy canary awaiting promotion", wait, `(() => { const p = document.querySelector(".deployment"); return p && p.innerText.includes("1/1") && p.querySelector("tbody tr td:nth-child(5)").innerText === "1" && p.querySelector('button[data-act="promote"]') })()`)
	b.shot("deployment-canary")
	// The allocations tab marks the canary; its short ID (as the CLI
	// prints it) opens its page.
	var canary string
	for _, al := range a.allocsOf("canary") {
		if al.DeploymentStatus != nil && al.DeploymentStatus.Canary {
			canary = al.ID
		}
	}
	if canary == "" {
		t.Fatal("no canary allocation in the API")
	}
	b.run("open the allocations", wait, chromedp.Navigate(a.url("/ui/jobs/canary/allocations")))
	b.waitJS("the canary marked", wait, `document.querySelectorAll("#allocs tr[data-alloc]").length === 2 && document.querySelector('#allocs tr[data-alloc=`+jsString(canary)+`] .badge.canary')`)
	if n := evalJS[int](b, `document.querySelectorAll("#allocs .badge.canary").length`); n != 1 {
		t.Errorf("%d allocations marked canary, want 1", n)
	}
	b.run("open the canary by its short ID", wait, chromedp.Navigate(a.url("/ui/allocations/"+canary[:8])))
	b.waitJS("the canary's page", wait, `location.pathname === `+jsString("/ui/allocations/"+canary)+` && document.querySelector('.task[data-task="t"]')`)
	b.run("back to the deployments", wait, chromedp.Navigate(a.url("/ui/jobs/canary/deployments")))
	b.waitJS("the promote button", wait, `document.querySelector('button[data-act="promote"]')`)
	evalJS[bool](b, `document.querySelector('button[data-act="promote"]').click(), true`)
	b.waitJS("the deployment promoted and successful", wait, `(() => { const p = document.querySelector(".deployment"); return p && p.innerText.includes("promoted") && p.innerText.includes("successful") && !p.querySelector('button[data-act="promote"]') })()`)
	d, _, err := a.client.Jobs().LatestDeployment("canary", nil)
	if err != nil || d.Status != "successful" || !d.TaskGroups["g"].Promoted {
		t.Fatalf("deployment after promote: %+v %v", d, err)
	}
}
