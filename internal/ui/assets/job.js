// A job (/ui/jobs/<id>[@<namespace>][/<tab>]) and the Run job page. Every
// section is its own blocking query, so each updates live on its own.
import { get, put, del, req } from './api.js';
import { html, set, status, when, id, jobHref, allocHref, nodeHref, qs, errBox, sortBy, toast, b64, short } from './util.js';
import { diff, failures, editor } from './plan.js';

const TABS = [['', 'Overview'], ['allocations', 'Allocations'], ['evaluations', 'Evaluations'], ['deployments', 'Deployments'], ['versions', 'Versions'], ['definition', 'Definition']];

// splitID reads Nomad's "<id>@<namespace>" form.
function splitID(s) {
  const at = s.lastIndexOf('@');
  return at > 0 ? [s.slice(0, at), s.slice(at + 1)] : [s, 'default'];
}

export function allocTable(allocs, { showJob = false, showNode = true } = {}) {
  const list = sortBy(allocs, (a) => -(a.CreateIndex || 0));
  if (!list.length) return html`<p class="muted">No allocations.</p>`;
  return html`<div class="tablewrap"><table class="nav allocs"><thead><tr><th>ID</th>${showJob ? html`<th>Job</th>` : ''}<th>Name</th><th>Status</th><th class="hide-sm">Desired</th><th class="hide-sm">Version</th>${showNode ? html`<th>Client</th>` : ''}<th class="hide-sm">Created</th><th class="hide-sm">Modified</th></tr></thead><tbody>
  ${list.map((a) => html`<tr data-alloc="${a.ID}" data-status="${a.ClientStatus}"><td>${id(a.ID, allocHref(a.ID))}</td>${showJob ? html`<td><a href="${jobHref(a.JobID, a.Namespace)}">${a.JobID}</a></td>` : ''}<td>${a.Name}${a.DeploymentStatus && a.DeploymentStatus.Canary ? html` <span class="badge canary" title="A canary of deployment ${short(a.DeploymentID)}">canary</span>` : ''}</td><td>${status(a.ClientStatus)}</td><td class="hide-sm">${a.DesiredStatus}</td><td class="hide-sm">${a.JobVersion ?? (a.Job ? a.Job.Version : "")}</td>${showNode ? html`<td>${a.NodeID ? html`<a href="${nodeHref(a.NodeID)}">${a.NodeName || a.NodeID.slice(0, 8)}</a>` : '–'}</td>` : ''}<td class="hide-sm">${when(a.CreateTime)}</td><td class="hide-sm">${when(a.ModifyTime)}</td></tr>`)}
  </tbody></table></div>`;
}

export function evalTable(evals, showJob = false) {
  const list = sortBy(evals, (e) => -(e.CreateIndex || 0));
  if (!list.length) return html`<p class="muted">No evaluations.</p>`;
  return html`<div class="tablewrap"><table class="nav evals"><thead><tr><th>ID</th>${showJob ? html`<th>Job</th>` : ''}<th>Status</th><th>Triggered by</th><th class="hide-sm">Priority</th><th>Placement</th><th class="hide-sm">Created</th></tr></thead><tbody>
  ${list.map((e) => html`<tr><td>${id(e.ID, '/ui/evaluations' + qs({ id: e.ID }))}</td>${showJob ? html`<td>${e.JobID ? html`<a href="${jobHref(e.JobID, e.Namespace)}">${e.JobID}</a>` : '–'}</td>` : ''}<td>${status(e.Status)}</td><td>${e.TriggeredBy}</td><td class="hide-sm">${e.Priority}</td><td>${e.FailedTGAllocs && Object.keys(e.FailedTGAllocs).length ? html`<span class="badge st-failed">failed: ${Object.keys(e.FailedTGAllocs).join(', ')}</span>` : e.BlockedEval ? html`<span class="badge st-blocked">blocked</span>` : html`<span class="muted">ok</span>`}</td><td class="hide-sm">${when(e.CreateTime)}</td></tr>`)}
  </tbody></table></div>`;
}

function summaryTable(job, sum) {
  const groups = (job.TaskGroups || []);
  const s = (sum && sum.Summary) || {};
  const cols = ['Queued', 'Starting', 'Running', 'Failed', 'Complete', 'Lost', 'Unknown'];
  const scalable = job.Type !== 'system' && job.Type !== 'sysbatch' && !job.ParameterizedJob && !job.Periodic;
  return html`<div class="tablewrap"><table class="summary"><thead><tr><th>Group</th><th>Count</th>${cols.map((c) => html`<th>${c}</th>`)}${scalable ? html`<th data-cap="scale-job|submit-job" data-ns="${job.Namespace}">Scale</th>` : ''}</tr></thead><tbody>
  ${groups.map((g) => { const x = s[g.Name] || {}; return html`<tr data-group="${g.Name}"><td>${g.Name}</td><td>${g.Count}</td>${cols.map((c) => html`<td class="c-${c.toLowerCase()}">${x[c] || 0}</td>`)}${scalable ? html`<td data-cap="scale-job|submit-job" data-ns="${job.Namespace}"><input class="text" type="number" min="0" style="width:70px" value="${g.Count}" id="scale-${g.Name}" aria-label="Count of ${g.Name}"> <button data-act="scale" data-group="${g.Name}">Scale</button></td>` : ''}</tr>`; })}
  </tbody></table></div>`;
}

// childrenTable lists a periodic or parameterized job's children, newest
// first (their IDs end with the launch time).
function childrenTable(list, ns) {
  const l = sortBy(list, (j) => -(j.SubmitTime || 0)).slice(0, 25);
  if (!l.length) return html`<p class="muted">No children yet.</p>`;
  return html`<div class="tablewrap"><table class="nav children"><thead><tr><th>Job</th><th>Status</th><th>Allocations</th><th class="hide-sm">Submitted</th></tr></thead><tbody>
  ${l.map((j) => html`<tr data-job="${j.ID}"><td><a href="${jobHref(j.ID, ns)}">${j.ID}</a></td><td>${status(j.Status)}</td><td>${childAllocs(j.JobSummary)}</td><td class="hide-sm">${when(j.SubmitTime)}</td></tr>`)}
  </tbody></table></div>${list.length > l.length ? html`<p class="muted">${list.length - l.length} older children not shown.</p>` : ''}`;
}

function childAllocs(s) {
  const t = {};
  for (const g of Object.values((s && s.Summary) || {})) for (const [k, v] of Object.entries(g)) if (v) t[k] = (t[k] || 0) + v;
  const parts = Object.entries(t).map(([k, v]) => `${v} ${k.toLowerCase()}`);
  return parts.length ? parts.join(', ') : html`<span class="muted">none</span>`;
}

// childrenSummary replaces the group table for a parent job: a parent
// never has allocations of its own, its children do.
function childrenSummary(sum) {
  const c = (sum && sum.Children) || {};
  return html`<div class="cards">${['Pending', 'Running', 'Dead'].map((k) => html`<div class="card"><div class="muted">${k} children</div><div class="big" data-children="${k.toLowerCase()}">${c[k] || 0}</div></div>`)}</div>`;
}

function deploymentPanel(d) {
  if (!d) return html`<p class="muted">No deployments.</p>`;
  const ns = d.Namespace;
  const groups = Object.entries(d.TaskGroups || {});
  const canPromote = d.Status === 'running' && groups.some(([, g]) => g.DesiredCanaries > 0 && !g.Promoted);
  const active = d.Status === 'running' || d.Status === 'paused' || d.Status === 'pending';
  return html`<div class="panel deployment" data-deployment="${d.ID}"><div style="display:flex;gap:10px;align-items:center;flex-wrap:wrap">${id(d.ID)} ${status(d.Status)} <span class="muted">version ${d.JobVersion}${d.StatusDescription ? ' · ' + d.StatusDescription : ''}</span>
    <span class="actions">${canPromote ? html`<button class="primary" data-act="promote" data-id="${d.ID}" data-cap="submit-job" data-ns="${ns}">Promote canaries</button>` : ''}${active ? html`<button class="danger" data-act="faildep" data-id="${d.ID}" data-cap="submit-job" data-ns="${ns}" data-confirm="Fail this deployment?">Fail</button>` : ''}</span></div>
    <table><thead><tr><th>Group</th><th>Desired</th><th>Canaries</th><th>Placed</th><th>Healthy</th><th>Unhealthy</th><th>Progress deadline</th></tr></thead><tbody>${groups.map(([n, g]) => html`<tr><td>${n}</td><td>${g.DesiredTotal}</td><td>${g.DesiredCanaries ? `${(g.PlacedCanaries || []).length}/${g.DesiredCanaries}${g.Promoted ? ' promoted' : ''}` : '–'}</td><td>${g.PlacedAllocs}</td><td>${g.HealthyAllocs}</td><td>${g.UnhealthyAllocs}</td><td>${active ? when(g.RequireProgressBy) : "–"}</td></tr>`)}</tbody></table></div>`;
}

export function page(ctx, rawID, tab = '') {
  const [jobID, ns] = splitID(rawID);
  const enc = encodeURIComponent(jobID);
  const q = qs({ namespace: ns });
  const base = `/v1/job/${enc}`;
  ctx.main.innerHTML = String(html`
    <div class="crumbs"><a href="/ui/jobs">Jobs</a> / ${ns}</div>
    <h1 id="jobhead">${jobID}</h1>
    <div id="err"></div>
    <div id="dispatchform"></div>
    <nav class="tabs">${TABS.map(([t, label]) => html`<a href="${jobHref(jobID, ns, t)}" class="${t === tab ? 'active' : ''}">${label}</a>`)}</nav>
    <div id="tab"></div>`);
  let job = null;
  let childrenShown = false;
  ctx.watch(base + q, (j) => {
    job = j;
    const stopped = j.Stop;
    // A dispatched child keeps its parent's ParameterizedJob block but is
    // no parameterized job: it cannot be dispatched.
    const parameterized = j.ParameterizedJob && !j.Dispatched;
    set('jobhead', html`${j.Name || j.ID} ${status(stopped && j.Status !== 'dead' ? 'stopping' : j.Status)} <span class="badge">${j.Type}</span>${j.Periodic ? html`<span class="badge">periodic</span>` : ''}${parameterized ? html`<span class="badge">parameterized</span>` : ''}${j.Dispatched ? html`<span class="badge">dispatched</span>` : ''}
      <span class="actions">
        ${j.Periodic && !stopped ? html`<button data-act="force" data-cap="submit-job" data-ns="${ns}">Force launch</button>` : ''}
        ${parameterized && !stopped ? html`<button data-act="dispatch" data-cap="dispatch-job" data-ns="${ns}">Dispatch</button>` : ''}
        ${stopped ? html`<button class="primary" data-act="start" data-cap="submit-job" data-ns="${ns}">Start</button><button class="danger" data-act="purge" data-cap="submit-job" data-ns="${ns}" data-confirm="Purge ${j.ID}? Its history is deleted.">Purge</button>` : html`<button class="danger" data-act="stop" id="stopbtn" data-cap="submit-job" data-ns="${ns}" data-confirm="Stop ${j.ID}?">Stop</button>`}
      </span>`);
    if (tab === '') set('jobmeta', html`<dl class="kv"><dt>Version</dt><dd>${j.Version}</dd><dt>Priority</dt><dd>${j.Priority}</dd><dt>Datacenters</dt><dd>${(j.Datacenters || []).join(', ')}</dd><dt>Node pool</dt><dd>${j.NodePool || 'default'}</dd><dt>Submitted</dt><dd>${when(j.SubmitTime)}</dd>${j.ParentID ? html`<dt>Parent</dt><dd><a href="${jobHref(j.ParentID, ns)}">${j.ParentID}</a></dd>` : ''}</dl>`);
    if (tab === '' && (j.Periodic || parameterized) && !childrenShown) {
      // Children are jobs of their own: read again whenever one of the
      // page's watches moves and after each action (a force launch, a
      // dispatch).
      childrenShown = true;
      set('childrensec', html`<h2>Children</h2><div id="children"><p class="muted">Loading…</p></div>`);
      ctx.refresh('/v1/jobs' + qs({ namespace: ns, filter: `ParentID == ${JSON.stringify(jobID)}` }), (l) => set('children', childrenTable(l || [], ns)));
    }
    if (tab === '') renderSummary();
  }, 'err', { notFound: 'Job not found', detail: `No job ${jobID} in namespace ${ns}: it never existed, or it was purged or garbage collected.` });
  let sum = null;
  const renderSummary = () => {
    if (!job || !sum) return;
    set('summary', job.Periodic || (job.ParameterizedJob && !job.Dispatched) ? childrenSummary(sum) : summaryTable(job, sum));
  };

  ctx.on('stop', async () => { await del(base + q); toast('Stop requested'); });
  ctx.on('purge', async () => { await del(base + qs({ namespace: ns, purge: 'true' })); ctx.navigate('/ui/jobs'); });
  ctx.on('start', async () => {
    const j = await get(base + q);
    j.Stop = false;
    await put('/v1/jobs', { Job: j });
    toast('Job started');
  });
  ctx.on('force', async () => { await put(`${base}/periodic/force${q}`); toast('Launched'); });
  // Dispatch opens a form with the payload (unless the job forbids one)
  // and a field per required and optional meta key.
  ctx.on('dispatch', () => {
    const pj = job.ParameterizedJob || {};
    const keys = [...(pj.MetaRequired || []).map((k) => [k, true]), ...(pj.MetaOptional || []).map((k) => [k, false])];
    set('dispatchform', html`<div class="panel" id="dispatchpanel"><h2 style="margin-top:0">Dispatch ${job.ID}</h2><div id="dispatch-err"></div>
      ${pj.Payload === 'forbidden' ? html`<p class="muted">This job takes no payload.</p>` : html`<label for="dispatch-payload">Payload <span class="muted">(${pj.Payload === 'required' ? 'required' : 'optional'}; the task finds it in the file its dispatch_payload names)</span></label><textarea class="code" id="dispatch-payload" rows="4" spellcheck="false" style="min-height:80px"></textarea>`}
      ${keys.length ? html`<dl class="kv">${keys.map(([k, r]) => html`<dt><label for="meta-${k}">${k}</label>${r ? html` <span class="muted">required</span>` : ''}</dt><dd><input class="text" id="meta-${k}" data-meta="${k}" data-required="${r ? '1' : ''}" aria-label="Meta ${k}"></dd>`)}</dl>` : ''}
      <div class="filters" style="margin-top:8px"><button class="primary" data-act="dodispatch" data-err="dispatch-err" id="dispatchbtn">Dispatch</button><button data-act="canceldispatch">Cancel</button></div></div>`);
    const first = document.querySelector('#dispatchpanel textarea, #dispatchpanel input');
    if (first) first.focus();
  });
  ctx.on('canceldispatch', () => set('dispatchform', ''));
  ctx.on('dodispatch', async () => {
    const pj = job.ParameterizedJob || {};
    const meta = {};
    const missing = [];
    for (const i of document.querySelectorAll('#dispatchpanel input[data-meta]')) {
      if (i.value !== '') meta[i.dataset.meta] = i.value;
      else if (i.dataset.required) missing.push(i.dataset.meta);
    }
    if (missing.length) throw new Error(`missing required meta ${missing.join(', ')}`);
    const ta = document.getElementById('dispatch-payload');
    const payload = ta ? ta.value : '';
    if (pj.Payload === 'required' && !payload) throw new Error('this job requires a payload');
    const r = await put(`${base}/dispatch${q}`, { JobID: jobID, Payload: payload ? b64(payload) : undefined, Meta: meta });
    ctx.navigate(jobHref(r.DispatchedJobID, ns));
  });
  ctx.on('scale', async (b) => {
    const g = b.dataset.group;
    const count = Number(document.getElementById('scale-' + g).value);
    await put(`${base}/scale${q}`, { Count: count, Target: { Group: g, Job: jobID, Namespace: ns }, Message: 'scaled from the UI' });
    toast(`Scaled ${g} to ${count}`);
  });
  ctx.on('promote', async (b) => { await put(`/v1/deployment/promote/${b.dataset.id}${q}`, { DeploymentID: b.dataset.id, All: true }); toast('Promoted'); });
  ctx.on('faildep', async (b) => { await put(`/v1/deployment/fail/${b.dataset.id}${q}`, { DeploymentID: b.dataset.id }); toast('Deployment failed'); });
  ctx.on('revert', async (b) => { await put(`${base}/revert${q}`, { JobID: jobID, JobVersion: Number(b.dataset.version) }); toast(`Reverted to version ${b.dataset.version}`); });

  if (tab === '') {
    set('tab', html`<div class="panel" id="jobmeta"></div><h2>Summary</h2><div id="summary"></div><div id="childrensec"></div><div id="failures"></div><h2>Latest deployment</h2><div id="latestdep"></div><h2>Recent allocations</h2><div id="allocs"></div>`);
    ctx.refresh(`${base}/summary${q}`, (s) => { sum = s; renderSummary(); });
    ctx.refresh(`${base}/deployment${q}`, (d) => set('latestdep', deploymentPanel(d)));
    ctx.watch(`${base}/allocations${q}`, (a) => set('allocs', allocTable((a || []).slice(0).sort((x, y) => y.CreateIndex - x.CreateIndex).slice(0, 10))));
    ctx.watch(`${base}/evaluations${q}`, (evs) => {
      const blocked = (evs || []).filter((e) => e.FailedTGAllocs && Object.keys(e.FailedTGAllocs).length && (e.Status === 'complete' || e.Status === 'blocked'))
        .sort((a, b) => b.CreateIndex - a.CreateIndex)[0];
      const pending = (evs || []).some((e) => e.Status === 'blocked');
      set('failures', blocked && pending ? html`<h2>Placement failures</h2>${failures(blocked.FailedTGAllocs)}` : '');
    });
  } else if (tab === 'allocations') {
    set('tab', html`<div class="filters"><select id="allocstatus" aria-label="Status"><option value="">Any status</option>${['pending', 'running', 'complete', 'failed', 'lost', 'unknown'].map((s) => html`<option>${s}</option>`)}</select></div><div id="allocs"></div>`);
    let last = [];
    const draw = () => { const f = document.getElementById('allocstatus').value; set('allocs', allocTable(f ? last.filter((a) => a.ClientStatus === f) : last)); };
    document.getElementById('allocstatus').addEventListener('change', draw);
    ctx.watch(`${base}/allocations${qs({ namespace: ns, all: 'true' })}`, (a) => { last = a || []; draw(); });
  } else if (tab === 'evaluations') {
    set('tab', html`<div id="evals"></div><div id="evalfail"></div>`);
    ctx.watch(`${base}/evaluations${q}`, (evs) => {
      set('evals', evalTable(evs));
      const withFail = sortBy(evs, (e) => -e.CreateIndex).filter((e) => e.FailedTGAllocs && Object.keys(e.FailedTGAllocs).length).slice(0, 3);
      set('evalfail', withFail.length ? html`<h2>Placement failures</h2>${withFail.map((e) => html`<p class="muted">Evaluation ${id(e.ID)} ${when(e.CreateTime)}</p>${failures(e.FailedTGAllocs)}`)}` : '');
    });
  } else if (tab === 'deployments') {
    set('tab', html`<div id="deps"></div>`);
    ctx.watch(`${base}/deployments${q}`, (ds) => set('deps', (ds || []).length ? html`${sortBy(ds, (d) => -d.CreateIndex).map(deploymentPanel)}` : html`<p class="muted">No deployments.</p>`));
  } else if (tab === 'versions') {
    set('tab', html`<div id="versions"></div>`);
    ctx.watch(`${base}/versions${qs({ namespace: ns, diffs: 'true' })}`, (v) => {
      const vs = v.Versions || [];
      const cur = vs.length ? vs[0].Version : 0;
      set('versions', html`${vs.map((j, i) => html`<div class="panel version" data-version="${j.Version}"><div style="display:flex;gap:10px;align-items:center;flex-wrap:wrap"><strong>Version ${j.Version}</strong>${j.Stable ? status('stable', 'st-running') : ''} <span class="muted">submitted ${when(j.SubmitTime)}</span>${j.VersionTag && j.VersionTag.Name ? html`<span class="badge">${j.VersionTag.Name}</span>` : ''}
        <span class="actions">${j.Version !== cur ? html`<button data-act="revert" data-version="${j.Version}" data-cap="submit-job" data-ns="${ns}" data-confirm="Revert to version ${j.Version}?">Revert to this version</button>` : html`<span class="muted">current</span>`}</span></div>
        ${v.Diffs && v.Diffs[i] ? html`<details ${i === 0 ? 'open' : ''}><summary>Changes from the version before</summary>${diff(v.Diffs[i])}</details>` : ''}</div>`)}`);
    });
  } else if (tab === 'definition') {
    set('tab', html`<div id="def"><p class="muted">Loading…</p></div>`);
    (async () => {
      try {
        const j = await get(base + q);
        let src = '';
        try {
          const sub = await get(`${base}/submission${qs({ namespace: ns, version: j.Version })}`);
          src = sub && sub.Source;
        } catch (e) { /* no submission kept: show JSON */ }
        if (!src) src = JSON.stringify({ Job: j }, null, 2);
        editor(ctx, 'def', src, { namespace: ns, onRun: () => ctx.navigate(jobHref(jobID, ns)) });
      } catch (e) { set('def', errBox(e)); }
    })();
  }
}

const EXAMPLE = `job "example" {
  datacenters = ["*"]
  type = "service"

  group "web" {
    count = 1
    task "server" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo hello from $NOMAD_ALLOC_ID; while true; do sleep 5; done"]
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`;

export function run(ctx) {
  ctx.main.innerHTML = String(html`<h1>Run job</h1><p class="muted">Paste a job in HCL or JSON, plan it to see what would change, then run it.</p><div id="err"></div><div id="editor"></div>`);
  editor(ctx, 'editor', ctx.query.get('example') ? EXAMPLE : '', {});
}
