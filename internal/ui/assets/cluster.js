// Cluster pages: servers (members, leader, Raft peers), evaluations,
// topology (each node's allocated CPU and memory) and the token sign-in.
import { get, token } from './api.js';
import { html, set, status, when, id, nodeHref, jobHref, allocHref, qs, sortBy, errBox, toast } from './util.js';
import { evalTable } from './job.js';
import { failures } from './plan.js';

export function servers(ctx) {
  ctx.main.innerHTML = String(html`<h1>Servers</h1><div id="err"></div><div id="leader" class="panel"></div><h2>Members</h2><div id="members"></div><h2>Raft peers</h2><div id="peers"></div><div id="raferr"></div>`);
  ctx.watch('/v1/status/leader', (l) => set('leader', html`<dl class="kv"><dt>Leader</dt><dd class="id">${l || 'no leader'}</dd></dl>`));
  ctx.watch('/v1/agent/members', (m) => {
    const list = sortBy((m && m.Members) || [], (x) => x.Name);
    set('members', html`<div class="tablewrap"><table class="nav"><thead><tr><th>Name</th><th>Status</th><th>Address</th><th>Port</th><th class="hide-sm">Datacenter</th><th class="hide-sm">Region</th><th class="hide-sm">Build</th></tr></thead><tbody>${list.map((x) => html`<tr><td>${x.Name}${m.ServerName === x.Name ? html` <span class="muted">(this agent)</span>` : ''}</td><td>${status(x.Status)}</td><td class="id">${x.Addr}</td><td>${x.Port}</td><td class="hide-sm">${(x.Tags || {}).dc}</td><td class="hide-sm">${(x.Tags || {}).region}</td><td class="hide-sm">${(x.Tags || {}).build}</td></tr>`)}</tbody></table></div>`);
  });
  ctx.watch('/v1/operator/raft/configuration', (c) => set('peers', html`<div class="tablewrap"><table><thead><tr><th>Node</th><th>ID</th><th>Address</th><th>Leader</th><th>Voter</th></tr></thead><tbody>${((c && c.Servers) || []).map((s) => html`<tr><td>${s.Node}</td><td class="id">${s.ID}</td><td class="id">${s.Address}</td><td>${s.Leader ? status('leader', 'st-running') : ''}</td><td>${s.Voter ? 'yes' : 'no'}</td></tr>`)}</tbody></table></div>`), 'raferr');
}

export function evals(ctx) {
  const q = ctx.query;
  const st = q.get('status') || '';
  const next = q.get('next_token') || '';
  const sel = q.get('id');
  ctx.main.innerHTML = String(html`<h1>Evaluations</h1><div id="err"></div><div id="evaldetail"></div>
    <div class="filters"><select id="evalstatus" aria-label="Status">${['', 'pending', 'blocked', 'complete', 'failed', 'canceled'].map((s) => html`<option value="${s}" ${s === st ? 'selected' : ''}>${s || 'Any status'}</option>`)}</select></div>
    <div id="evals"></div><div class="pager" id="pager"></div>`);
  document.getElementById('evalstatus').addEventListener('change', (e) => ctx.navigate('/ui/evaluations' + qs({ status: e.target.value }), true));
  ctx.watch('/v1/evaluations' + qs({ namespace: '*', per_page: 50, next_token: next, filter: st ? `Status == "${st}"` : '' }), (l, res) => {
    set('evals', evalTable(l, true));
    set('pager', html`${next ? html`<a class="btn" href="/ui/evaluations${qs({ status: st })}">First page</a>` : ''}${res.next ? html`<a class="btn" href="/ui/evaluations${qs({ status: st, next_token: res.next })}">Next →</a>` : ''}`);
  });
  if (sel) {
    ctx.watch(`/v1/evaluation/${sel}${qs({ related: 'true' })}`, (e) => set('evaldetail', html`<div class="panel"><h2 style="margin-top:0">Evaluation ${id(e.ID)} ${status(e.Status)}</h2>
      <dl class="kv"><dt>Job</dt><dd>${e.JobID ? html`<a href="${jobHref(e.JobID, e.Namespace)}">${e.JobID}</a>` : '–'}</dd><dt>Triggered by</dt><dd>${e.TriggeredBy}</dd><dt>Type</dt><dd>${e.Type}</dd><dt>Node</dt><dd>${e.NodeID ? html`<a href="${nodeHref(e.NodeID)}">${e.NodeID.slice(0, 8)}</a>` : '–'}</dd><dt>Description</dt><dd>${e.StatusDescription || '–'}</dd><dt>Blocked eval</dt><dd>${e.BlockedEval ? id(e.BlockedEval, '/ui/evaluations' + qs({ id: e.BlockedEval })) : '–'}</dd><dt>Created</dt><dd>${when(e.CreateTime)}</dd></dl>
      ${failures(e.FailedTGAllocs)}</div>`));
  }
}

const PALETTE = ['#4c78a8', '#f58518', '#54a24b', '#b279a2', '#e45756', '#72b7b2', '#eeca3b', '#9d755d', '#ff9da6', '#bab0ac'];
function colour(s) { let h = 0; for (const c of s) h = (h * 31 + c.charCodeAt(0)) >>> 0; return PALETTE[h % PALETTE.length]; }

export function topology(ctx) {
  ctx.main.innerHTML = String(html`<h1>Topology</h1><div id="err"></div><div class="cards" id="topototals"></div><div class="topo" id="topo"><p class="muted">Loading…</p></div>`);
  let nodes = null; let allocs = null;
  const draw = () => {
    if (!nodes || !allocs) return;
    const byNode = {};
    for (const a of allocs) {
      if (a.ClientStatus !== 'running' && a.ClientStatus !== 'pending') continue;
      if (a.DesiredStatus !== 'run') continue;
      let cpu = 0; let mem = 0;
      for (const t of Object.values((a.AllocatedResources && a.AllocatedResources.Tasks) || {})) { cpu += (t.Cpu && t.Cpu.CpuShares) || 0; mem += (t.Memory && t.Memory.MemoryMB) || 0; }
      (byNode[a.NodeID] = byNode[a.NodeID] || []).push({ a, cpu, mem });
    }
    let tc = 0; let tm = 0; let uc = 0; let um = 0;
    const cards = sortBy(nodes, (n) => n.Name).map((n) => {
      const r = n.NodeResources || {};
      const capC = (r.Cpu && r.Cpu.CpuShares) || 0; const capM = (r.Memory && r.Memory.MemoryMB) || 0;
      const list = byNode[n.ID] || [];
      const sc = list.reduce((x, y) => x + y.cpu, 0); const sm = list.reduce((x, y) => x + y.mem, 0);
      tc += capC; tm += capM; uc += sc; um += sm;
      const barFlex = (key, cap) => html`<div class="bar">${list.map((x) => html`<span title="${x.a.JobID} ${x.a.Name}: ${x[key]}${key === 'cpu' ? ' MHz' : ' MiB'}" style="width:${cap ? (100 * x[key]) / cap : 0}%;background:${colour(x.a.JobID)}"></span>`)}</div>`;
      return html`<div class="node" data-node="${n.ID}"><div style="display:flex;gap:8px;align-items:center;flex-wrap:wrap"><a href="${nodeHref(n.ID)}"><strong>${n.Name}</strong></a> ${status(n.Status)} <span class="muted">${n.Datacenter} · ${list.length} allocations</span></div>
        <div class="row"><span>CPU</span>${barFlex('cpu', capC)}<span>${sc} / ${capC} MHz</span></div>
        <div class="row"><span>Memory</span>${barFlex('mem', capM)}<span>${sm} / ${capM} MiB</span></div></div>`;
    });
    set('topototals', html`<div class="card"><div class="muted">Clients</div><div class="big">${nodes.length}</div></div><div class="card"><div class="muted">CPU allocated</div><div class="big">${tc ? Math.round((100 * uc) / tc) : 0}%</div><div class="muted">${uc} of ${tc} MHz</div></div><div class="card"><div class="muted">Memory allocated</div><div class="big">${tm ? Math.round((100 * um) / tm) : 0}%</div><div class="muted">${um} of ${tm} MiB</div></div>`);
    set('topo', cards.length ? html`${cards}` : html`<p class="muted">No clients.</p>`);
  };
  ctx.watch('/v1/nodes?resources=true', (n) => { nodes = n || []; draw(); });
  ctx.watch('/v1/allocations?resources=true&task_states=false&namespace=*', (a) => { allocs = a || []; draw(); });
}

// tokenInfo says whose token is stored: its name, type and policies.
function tokenInfo(t) {
  const pol = [...(t.Policies || []), ...((t.Roles || []).map((r) => `role ${r.Name || r.ID}`))];
  return html`<dl class="kv" id="tokinfo-kv"><dt>Name</dt><dd>${t.Name || '–'}</dd><dt>Type</dt><dd>${t.Type}</dd><dt>Policies</dt><dd>${t.Type === 'management' ? 'all (management)' : pol.join(', ') || 'none'}</dd><dt>Accessor</dt><dd>${id(t.AccessorID)}</dd>${t.ExpirationTime ? html`<dt>Expires</dt><dd>${when(t.ExpirationTime)}</dd>` : ''}</dl>`;
}

export function tokens(ctx) {
  const cur = token.get();
  ctx.main.innerHTML = String(html`<h1>Token</h1><div id="err"></div>
    <div class="panel"><p>${cur ? html`A token is stored in this browser (${cur.slice(0, 8)}…) and sent as <span class="id">X-Nomad-Token</span> with every request.` : 'No token is stored: requests are anonymous.'}</p><div id="tokinfo"></div>
    <form id="tokform" class="filters"><input class="text" type="password" id="secret" placeholder="Secret ID" style="min-width:320px" aria-label="Secret ID" autocomplete="off"><button class="primary">Sign in</button>${cur ? html`<button type="button" data-act="signout">Sign out</button>` : ''}</form><div id="tokres"></div></div>`);
  if (cur) get('/v1/acl/token/self').then((t) => set('tokinfo', tokenInfo(t)), (e) => set('tokinfo', errBox(e)));
  // A token is checked by reading itself, which any valid token may do
  // whatever its policies (a read-only token has no agent:read).
  document.getElementById('tokform').addEventListener('submit', async (e) => {
    e.preventDefault();
    const v = document.getElementById('secret').value.trim();
    if (!v) return;
    token.set(v);
    try {
      const t = await get('/v1/acl/token/self');
      toast(`Signed in as ${t.Name || t.AccessorID}`);
      ctx.navigate('/ui/jobs');
    } catch (err) {
      token.set('');
      if (err.status === 400) set('tokres', html`<div class="notice" role="status">ACLs are not enabled on this cluster: every request is allowed without a token.</div>`);
      else set('tokres', html`<div class="error" role="alert">This token was refused: ${err.text || err.message}</div>`);
    }
  });
  ctx.on('signout', () => { token.set(''); ctx.navigate('/ui/settings/tokens', true); });
}
